"""The trainer: AdamW with warm-up and cosine decay, gradient clipping, an evaluation every
`eval_interval` steps that emits a MetricRecord, divergence detection, and a callback that may
stop the run (pruning, signals)."""

from __future__ import annotations

import contextlib
import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

import torch

from lpstudy.errors import UserError
from lpstudy.model.gpt import GPT
from lpstudy.training.checkpoint import Checkpoint, capture
from lpstudy.training.config import TrainConfig
from lpstudy.training.fits import check_fits
from lpstudy.training.data import BatchSampler, Corpus, fold_split
from lpstudy.training.metrics import MetricRecord, RunSummary
from lpstudy.training.spikes import LossSpikes

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
        raise UserError(f"device {name} asked for, but this machine has no CUDA GPU; use the device cpu "
                        "(`lpstudy train --device cpu`, `--devices cpu` for a study's workers)")
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


def adamw(model: GPT, cfg: TrainConfig, device_type: str) -> torch.optim.AdamW:
    """The run's AdamW over the model's parameter groups (weight decay on matrices only), fused on CUDA."""
    return torch.optim.AdamW(model.param_groups(cfg.weight_decay), lr=cfg.lr, betas=(cfg.beta1, cfg.beta2),
                             fused=device_type == "cuda")


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


@dataclass
class Interval:
    """What the steps since the previous evaluation did: their time, tokens and gradient norms."""

    time_s: float = 0.0
    tokens: int = 0
    grad_norm: float = math.nan  # of the last step
    grad_norm_max: float = math.nan

    def add_step(self, seconds: float, tokens: int, grad_norm: float) -> None:
        self.time_s += seconds
        self.tokens += tokens
        self.grad_norm = grad_norm
        self.grad_norm_max = grad_norm if not grad_norm <= self.grad_norm_max else self.grad_norm_max

    @property
    def tokens_per_s(self) -> float:
        return self.tokens / self.time_s if self.time_s > 0 else math.nan


class Evaluator:
    """nanoGPT's estimate_loss, plus what the study records at each evaluation. The same batches
    are drawn every time (the samplers are reset), so that successive points of a curve differ by
    the model alone."""

    def __init__(self, cfg: TrainConfig, corpus: Corpus, split, device: torch.device, autocast) -> None:
        tokens = corpus.tokens
        self.cfg, self.device, self.autocast = cfg, device, autocast
        self.train_batches = BatchSampler(tokens, split.training, cfg.block_size, cfg.batch_size, cfg.run_seed + 1)
        self.val_batches = BatchSampler(tokens, split.validation, cfg.block_size, cfg.batch_size, cfg.run_seed + 2)

    @torch.no_grad()
    def estimate_loss(self, model: torch.nn.Module, sampler: BatchSampler) -> float:
        sampler.reset()
        losses = torch.zeros(self.cfg.eval_iters)
        for i in range(self.cfg.eval_iters):
            x, y = to_device(sampler.next(), self.device)
            with self.autocast:
                _, loss = model(x, y)
            losses[i] = loss.float().cpu()
        return float(losses.mean())

    @torch.no_grad()
    def evaluate(self, model: GPT, step_model: torch.nn.Module, step: int, lr: float, interval: Interval,
                 started: float, loss_spikes: int = 0) -> MetricRecord:
        model.eval()
        train_loss = self.estimate_loss(step_model, self.train_batches)
        val_loss = self.estimate_loss(step_model, self.val_batches)
        self.val_batches.reset()
        x, _ = to_device(self.val_batches.next(), self.device)
        with self.autocast:
            stats = model.attention_stats(x)  # one extra forward pass on one batch
        model.train()
        gains = model.gains()
        return MetricRecord(
            step=step, train_loss=train_loss, val_loss=val_loss, lr=lr,
            grad_norm=interval.grad_norm, grad_norm_max=interval.grad_norm_max,
            gain_mean=float(gains.mean()) if gains.numel() else math.nan,
            gain_min=float(gains.min()) if gains.numel() else math.nan,
            gain_max=float(gains.max()) if gains.numel() else math.nan,
            attn_entropy=stats["entropy"], tokens_per_s=interval.tokens_per_s,
            elapsed_s=time.perf_counter() - started,
            max_logit=stats["max_logit"], min_head_entropy=stats["min_head_entropy"],
            logit_bound=stats["logit_bound"], loss_spikes=float(loss_spikes),
        )


def to_device(batch: tuple[torch.Tensor, torch.Tensor], device: torch.device):
    x, y = batch
    return x.to(device, non_blocking=True), y.to(device, non_blocking=True)


def note_evaluation(summary: RunSummary, record: MetricRecord, loss_threshold: float | None) -> None:
    """Fold one evaluation into the run's summary (best, final, threshold, divergence)."""
    summary.history.append(record)
    val_loss = record.val_loss
    if math.isfinite(val_loss) and not val_loss >= summary.best_val_loss:
        summary.best_val_loss, summary.best_step = val_loss, record.step
    summary.final_val_loss = val_loss
    if loss_threshold is not None and summary.steps_to_threshold is None and val_loss <= loss_threshold:
        summary.steps_to_threshold = record.step
    if not math.isfinite(val_loss):
        summary.diverged, summary.diverged_step = True, record.step


def train(
    cfg: TrainConfig,
    corpus: Corpus,
    on_eval: EvalCallback | None = None,
    on_step: StepCallback | None = None,
    loss_threshold: float | None = None,
    should_stop: StopCheck | None = None,
    resume: "Checkpoint | None" = None,
    on_checkpoint: "Callable[[Checkpoint], None] | None" = None,
    checkpoint_every: int = 0,
) -> TrainedRun:
    """Train cfg on corpus. resume: carry on from a checkpoint (lpstudy.training.checkpoint; its
    evaluations are in the summary, on_eval sees only the new ones). on_checkpoint: called with a
    checkpoint after every checkpoint_every-th evaluation (step 0 not counted)."""
    device = pick_device(cfg.device)
    if device.type == "cpu":
        keep_freed_memory()
        if cfg.threads > 0:
            torch.set_num_threads(cfg.threads)
    torch.manual_seed(cfg.run_seed)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    split = fold_split(len(corpus), cfg.fold, cfg.folds, cfg.repeat)
    train_batches = BatchSampler(corpus.tokens, split.training, cfg.block_size, cfg.batch_size, cfg.run_seed)
    check_fits(cfg, device, corpus.vocab_size)
    model = GPT(cfg.model_config(corpus.vocab_size)).to(device)
    optimizer = adamw(model, cfg, device.type)
    # torch.compile of a Module returns an OptimizedModule (a Module); its stub types it as any callable
    step_model = cast(torch.nn.Module, torch.compile(model)) if cfg.compile else model
    autocast = autocast_for(cfg, device)
    evaluator = Evaluator(cfg, corpus, split, device, autocast)
    params = list(model.parameters())
    max_norm = cfg.grad_clip if cfg.grad_clip > 0 else math.inf
    tokens_per_step = cfg.batch_size * cfg.block_size
    summary = RunSummary(device=str(device), n_params=model.num_params(), loss_threshold=loss_threshold)

    def evaluate(step: int, lr: float, interval: Interval) -> bool:
        """Evaluate, record, and say whether the run stops here (divergence, or the callback)."""
        record = evaluator.evaluate(model, step_model, step, lr, interval, started, spikes.count)
        note_evaluation(summary, record, loss_threshold)
        if summary.diverged:
            return True
        return bool(on_eval(record)) if on_eval else False

    spikes = LossSpikes()
    started = time.perf_counter()
    model.train()
    interval = Interval()
    if resume is not None:
        model.load_state_dict(resume.model)
        optimizer.load_state_dict(resume.optimizer)
        train_batches.generator.set_state(resume.sampler)
        torch.set_rng_state(resume.rng)
        summary = copy.deepcopy(resume.summary)
        summary.device = str(device)
        if resume.spikes is not None:  # a checkpoint from before the counter was saved starts it afresh
            spikes = copy.deepcopy(resume.spikes)
        step, first_loss, evals, stop = resume.step, resume.first_loss, resume.evals, False
    else:
        stop = evaluate(0, lr_at(0, cfg), interval)
        step, first_loss, evals = 0, None, 1
    while not stop and step < cfg.max_steps:
        t0 = time.perf_counter()
        lr = lr_at(step, cfg)
        for group in optimizer.param_groups:
            group["lr"] = lr
        x, y = to_device(train_batches.next(), device)
        with autocast:
            _, loss = step_model(x, y)
        loss.backward()
        norm = float(torch.nn.utils.clip_grad_norm_(params, max_norm))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss_value = loss.item()
        step += 1
        interval.add_step(time.perf_counter() - t0, tokens_per_step, norm)
        summary.steps = step
        if on_step:
            on_step(step, loss_value)
        first_loss = loss_value if first_loss is None else first_loss
        spikes.add(loss_value)
        if not math.isfinite(loss_value) or loss_value > cfg.divergence_factor * first_loss:
            summary.diverged, summary.diverged_step = True, step
            break
        if step % cfg.eval_interval == 0 or step == cfg.max_steps:
            stop = evaluate(step, lr, interval)
            interval = Interval()
            evals += 1
            if (on_checkpoint is not None and checkpoint_every > 0 and not stop and step < cfg.max_steps
                    and (evals - 1) % checkpoint_every == 0):
                on_checkpoint(capture(step, model, optimizer, train_batches, first_loss, summary, evals, spikes))
        if should_stop is not None and should_stop():
            stop = True

    summary.stopped = stop and not summary.diverged
    summary.wall_time_s = time.perf_counter() - started
    rates = [r.tokens_per_s for r in summary.history if math.isfinite(r.tokens_per_s)]
    summary.tokens_per_s = sum(rates) / len(rates) if rates else math.nan
    return TrainedRun(summary=summary, model=model, config=cfg)
