"""The trainer: AdamW with warm-up and cosine decay, gradient clipping, an evaluation every
`eval_interval` steps that emits a MetricRecord, divergence detection, and a callback that may
stop the run (pruning, signals)."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch

from lpstudy.config import TrainConfig
from lpstudy.data import BatchSampler, Corpus, fold_split
from lpstudy.errors import UserError
from lpstudy.metrics import MetricRecord, RunSummary
from lpstudy.model import GPT

# Called after each evaluation; returning True stops the run (summary.stopped is then set).
EvalCallback = Callable[[MetricRecord], bool | None]
# Called after each optimisation step with (step, train loss of that step), for progress bars.
StepCallback = Callable[[int, float], None]
# Polled after each optimisation step; True stops the run at once (a signal, a deadline).
StopCheck = Callable[[], bool]


def pick_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise UserError(f"unknown device {name!r}; use auto, cpu, cuda or cuda:N") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise UserError(f"device {name} asked for, but this machine has no CUDA GPU; use --device cpu")
    return device


def keep_freed_memory() -> None:
    """Let glibc's malloc keep freed blocks instead of handing each large one back to the kernel.

    A CPU training step allocates and frees the same activation-sized tensors every step; above
    glibc's mmap threshold each one is a fresh mmap, page faults on first touch, then munmap. Raising
    the mmap and trim thresholds makes the step reuse them (benchmarks/bench_step.py, `cpu` preset,
    one thread, runs on a shared 2-core machine: steps a few per cent faster, a p = 3.5 step at
    1.10–1.13× the baseline's instead of 1.12–1.19×; `--default-malloc` compares). Does nothing
    outside glibc."""
    import ctypes
    import ctypes.util

    global _freed_memory_kept
    if _freed_memory_kept:
        return
    _freed_memory_kept = True
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
    mallopt(M_MMAP_THRESHOLD, 1 << 30)  # tensors up to 1 GiB come from the heap and are reused
    mallopt(M_TRIM_THRESHOLD, 1 << 30)  # the heap is not shrunk after every step ...
    mallopt(M_TOP_PAD, 64 << 20)  # ... and grows in large steps


_freed_memory_kept = False


def lr_at(step: int, cfg: TrainConfig) -> float:
    """Learning rate for optimisation step `step` (0-based): linear warm-up, then cosine decay
    from lr to lr · min_lr_ratio at max_steps."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / (cfg.warmup_steps + 1)
    span = max(1, cfg.max_steps - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    return cfg.min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (cfg.lr - cfg.min_lr)


def autocast_for(cfg: TrainConfig, device: torch.device):
    dtype = cfg.dtype
    if dtype == "auto":
        dtype = "bfloat16" if device.type == "cuda" else "float32"
    if dtype == "float32":
        return contextlib.nullcontext()
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16)


@dataclass
class TrainedRun:
    summary: RunSummary
    model: GPT
    config: TrainConfig


def train(
    cfg: TrainConfig,
    corpus: Corpus,
    on_eval: EvalCallback | None = None,
    on_step: StepCallback | None = None,
    loss_threshold: float | None = None,
    should_stop: StopCheck | None = None,
) -> TrainedRun:
    device = pick_device(cfg.device)
    if device.type == "cpu":
        keep_freed_memory()
        if cfg.threads > 0:
            torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.seed)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    split = fold_split(len(corpus), cfg.fold, cfg.folds)
    tokens = corpus.tokens
    train_batches = BatchSampler(tokens, split.training, cfg.block_size, cfg.batch_size, cfg.seed)
    # Evaluation draws the same batches every time (reset before each evaluation), so that
    # successive points of a curve differ by the model alone.
    eval_train = BatchSampler(tokens, split.training, cfg.block_size, cfg.batch_size, cfg.seed + 1)
    eval_val = BatchSampler(tokens, [split.validation], cfg.block_size, cfg.batch_size, cfg.seed + 2)

    model = GPT(cfg, corpus.vocab_size).to(device)
    optimizer = model.optimizer(cfg, device.type)
    step_model = torch.compile(model) if cfg.compile else model
    autocast = autocast_for(cfg, device)
    params = [p for p in model.parameters()]
    max_norm = cfg.grad_clip if cfg.grad_clip > 0 else math.inf

    summary = RunSummary(device=str(device), n_params=model.num_params(), loss_threshold=loss_threshold)
    tokens_per_step = cfg.batch_size * cfg.block_size

    def to_device(batch):
        x, y = batch
        return x.to(device, non_blocking=True), y.to(device, non_blocking=True)

    @torch.no_grad()
    def estimate(sampler: BatchSampler) -> tuple[float, tuple[torch.Tensor, torch.Tensor]]:
        sampler.reset()
        losses = torch.zeros(cfg.eval_iters)
        first = None
        for i in range(cfg.eval_iters):
            x, y = to_device(sampler.next())
            first = first or (x, y)
            with autocast:
                _, loss = step_model(x, y)
            losses[i] = loss.float().cpu()
        return float(losses.mean()), first

    start = time.perf_counter()
    train_time = 0.0  # time spent in optimisation steps since the previous evaluation
    train_tokens = 0
    grad_norm = grad_norm_max = math.nan
    first_loss: float | None = None
    lr = lr_at(0, cfg)

    def evaluate(step: int) -> bool:
        nonlocal train_time, train_tokens, grad_norm_max
        model.eval()
        train_loss, _ = estimate(eval_train)
        val_loss, (vx, _) = estimate(eval_val)
        with autocast:
            entropy = model.mean_attention_entropy(vx)
        model.train()
        gains = model.gains()
        record = MetricRecord(
            step=step, train_loss=train_loss, val_loss=val_loss, lr=lr,
            grad_norm=grad_norm, grad_norm_max=grad_norm_max,
            gain_mean=float(gains.mean()) if gains.numel() else math.nan,
            gain_min=float(gains.min()) if gains.numel() else math.nan,
            gain_max=float(gains.max()) if gains.numel() else math.nan,
            attn_entropy=entropy,
            tokens_per_s=train_tokens / train_time if train_time > 0 else math.nan,
            elapsed_s=time.perf_counter() - start,
        )
        train_time, train_tokens, grad_norm_max = 0.0, 0, math.nan
        summary.history.append(record)
        if math.isfinite(val_loss) and not val_loss >= summary.best_val_loss:
            summary.best_val_loss, summary.best_step = val_loss, step
        summary.final_val_loss = val_loss
        if (loss_threshold is not None and summary.steps_to_threshold is None
                and val_loss <= loss_threshold):
            summary.steps_to_threshold = step
        if not math.isfinite(val_loss):
            summary.diverged, summary.diverged_step = True, step
            return True
        return bool(on_eval(record)) if on_eval else False

    model.train()
    stop = evaluate(0)
    step = 0
    while not stop and step < cfg.max_steps:
        t0 = time.perf_counter()
        lr = lr_at(step, cfg)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = to_device(train_batches.next())
        with autocast:
            _, loss = step_model(x, y)
        loss.backward()
        norm = float(torch.nn.utils.clip_grad_norm_(params, max_norm))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss_value = loss.item()
        step += 1
        train_time += time.perf_counter() - t0
        train_tokens += tokens_per_step
        grad_norm = norm
        grad_norm_max = norm if not norm <= grad_norm_max else grad_norm_max
        summary.steps = step
        if on_step:
            on_step(step, loss_value)
        first_loss = loss_value if first_loss is None else first_loss
        if not math.isfinite(loss_value) or loss_value > cfg.divergence_factor * first_loss:
            summary.diverged, summary.diverged_step = True, step
            break
        if step % cfg.eval_interval == 0 or step == cfg.max_steps:
            stop = evaluate(step)
        if should_stop is not None and should_stop():
            stop = True

    summary.stopped = stop and not summary.diverged
    summary.wall_time_s = time.perf_counter() - start
    rates = [r.tokens_per_s for r in summary.history if math.isfinite(r.tokens_per_s)]
    summary.tokens_per_s = sum(rates) / len(rates) if rates else math.nan
    return TrainedRun(summary=summary, model=model, config=cfg)
