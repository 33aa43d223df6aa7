"""Synthetic studies for tests, demos and benchmarks: Optuna studies written exactly as the study
service writes them (see lpstudy.results.frames for the contract), with learning curves that depend on
p, the learning rate and the gain in a plausible way, some runs diverged, and trials in every state.
Each trial's attributes are written through lpstudy.study.trial_attributes, as the worker writes
its own, from a TrainConfig of the run it stands for.

    python -m lpstudy.study.synthetic sqlite:///demo.db --trials 200 --evals 30
    python -m lpstudy.study.synthetic sqlite:///demo.db --kind replicate --folds 10

The shape (not the numbers) follows the paper: p > 2 converges faster and ends a little lower than
p = 2, flat over 2.5–4; too large a learning rate or gain diverges, more often at large p.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Sequence

import numpy as np

from lpstudy.db.metrics_table import write_metrics
from lpstudy.db.optuna_storage import open_storage
from lpstudy.study.spec import build_spec, replicate_spec
from lpstudy.study.studies import create_study
from lpstudy.study.trial_attributes import end_attributes, evaluation_attribute, start_attributes
from lpstudy.training.config import resolve_config
from lpstudy.training.gain import gain_rule_of
from lpstudy.training.metrics import MetricRecord, RunSummary, uniform_guess_loss
from lpstudy.values import STATES, json_safe

VOCAB_SIZE = 65
PAPER_P_VALUES = (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0)
EVAL_INTERVAL = 25
TOKENS_PER_S = 40_000.0

@dataclass
class SyntheticStudy:
    """What was written: the study's name, its kind, and how many trials of each state."""

    storage_url: str
    study_name: str
    kind: str
    counts: dict[str, int]
    n_evals: int

@dataclass
class _Run:
    p: float
    lr: float
    gain_init: float
    fold: int
    seed: int
    state: str  # COMPLETE, PRUNED, FAIL, RUNNING, WAITING
    diverge: bool

def _final_loss(p: float, lr: float, gain: float, fold_offset: float, rng: np.random.Generator) -> float:
    p_eff = 4.3 if math.isinf(p) else p
    p_term = 0.025 * (1 + math.tanh(2.0 * (2.3 - p_eff))) + (0.006 if math.isinf(p) else 0.0)
    lr_term = 0.08 * math.log10(lr / 2e-3) ** 2
    gain_term = 0.012 * math.log2(gain / 12.0) ** 2
    return 1.55 + p_term + lr_term + gain_term + fold_offset + float(rng.normal(0, 0.004))

def _divergence_probability(p: float, lr: float, gain: float) -> float:
    p_eff = 4.5 if math.isinf(p) else p
    score = 3.0 * (math.log10(lr) - math.log10(8e-3)) + 0.9 * (p_eff - 3.0) + 1.5 * math.log2(gain / 24.0)
    return 1 / (1 + math.exp(-score))

def _curve(run: _Run, n_evals: int, fold_offset: float, rng: np.random.Generator, stop_at: int | None = None,
           device: str = "cpu") -> RunSummary:
    """One run's summary, its evaluation records as its history."""
    total = n_evals * EVAL_INTERVAL
    start_loss = math.log(VOCAB_SIZE) + 0.05
    final = _final_loss(run.p, run.lr, run.gain_init, fold_offset, rng)
    p_eff = 4.3 if math.isinf(run.p) else run.p
    tau = 0.22 * (1 + 0.35 * max(0.0, 2.5 - p_eff)) * (1e-3 / run.lr) ** 0.3 * total
    gain_target = run.gain_init * (1 + 0.25 * (2.0 / max(p_eff, 1.0) - 0.5))
    diverged_step = int(EVAL_INTERVAL * rng.integers(2, max(3, n_evals))) if run.diverge else None
    records: list[MetricRecord] = []
    peak = run.lr
    for k in range(1, n_evals + 1):
        step = k * EVAL_INTERVAL
        if stop_at is not None and k > stop_at:
            break
        lr_now = peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * step / total)))
        val = final + (start_loss - final) * math.exp(-step / tau) + float(rng.normal(0, 0.004))
        train = val - 0.04 * step / total + float(rng.normal(0, 0.006))
        grad = 0.4 + 2.5 * math.exp(-step / tau) + abs(float(rng.normal(0, 0.08)))
        gain = run.gain_init + (gain_target - run.gain_init) * (1 - math.exp(-step / (0.3 * total)))
        if diverged_step is not None and step >= diverged_step - 2 * EVAL_INTERVAL:
            blow = 1 + (step - (diverged_step - 2 * EVAL_INTERVAL)) / EVAL_INTERVAL
            val = min(start_loss + 2.0, val + 0.9 * blow)
            train = val + 0.1
            grad *= 10 ** blow
            gain *= 1 + 0.3 * blow
        entropy = 1.2 + 2.2 * math.exp(-step / (0.8 * tau)) - 0.05 * (p_eff - 2)
        records.append(MetricRecord(
            step=step, train_loss=train, val_loss=val, lr=lr_now, grad_norm=grad,
            grad_norm_max=grad * (1.3 + abs(float(rng.normal(0, 0.2)))),
            gain_mean=gain, gain_min=gain * 0.9, gain_max=gain * 1.1, attn_entropy=entropy,
            tokens_per_s=TOKENS_PER_S * (1 + float(rng.normal(0, 0.03))),
            elapsed_s=step * 2048 / TOKENS_PER_S,
            # the stability lens, without drawing from rng (the other numbers stay as they were)
            max_logit=gain * (0.3 + 0.1 * p_eff) * (1 + step / total), min_head_entropy=0.6 * entropy,
            logit_bound=gain * 1.1 * 16 ** max(0.0, 1 - 2 / p_eff),
            loss_spikes=float(max(0, k - n_evals + 2)) if diverged_step is not None else 0.0))
        if diverged_step is not None and step >= diverged_step:
            break
    vals = [r.val_loss for r in records]
    best = int(np.argmin(vals)) if vals else 0
    diverged = diverged_step is not None and bool(records) and records[-1].step >= diverged_step
    return RunSummary(
        final_val_loss=math.nan if diverged or not records else records[-1].val_loss,
        best_val_loss=vals[best] if vals else math.nan,
        best_step=records[best].step if records else 0,
        steps=records[-1].step if records else 0,
        diverged=diverged,
        diverged_step=diverged_step if diverged else None,
        stopped=stop_at is not None,
        steps_to_threshold=next((r.step for r in records if r.val_loss <= 2.0), None),
        loss_threshold=2.0,
        tokens_per_s=TOKENS_PER_S,
        wall_time_s=records[-1].elapsed_s if records else 0.0,
        device=device,
        n_params=27_000,
        history=records)

def _runs(kind: str, n_trials: int, rng: np.random.Generator, p_values: Sequence[float], folds: int,
          include_inf: bool, states: bool, all_diverged: bool, diverge_scale: float) -> list[_Run]:
    runs: list[_Run] = []
    if kind == "replicate":
        cells = [(p, f) for p in p_values for f in range(folds)]
        for i, (p, fold) in enumerate(cells):
            lr, gain = 1e-3, 16.0
            diverge = all_diverged or rng.random() < diverge_scale * _divergence_probability(p, lr, gain)
            runs.append(_Run(p, lr, gain, fold, i, "COMPLETE", bool(diverge)))
    else:
        for i in range(n_trials):
            p = math.inf if include_inf and rng.random() < 0.06 else float(rng.uniform(1.0, 4.0))
            lr = float(10 ** rng.uniform(-3.7, -1.7))
            gain = float(2 ** rng.uniform(2.0, 5.0))
            diverge = all_diverged or rng.random() < diverge_scale * _divergence_probability(p, lr, gain)
            runs.append(_Run(p, lr, gain, 0, i, "COMPLETE", bool(diverge)))
    if states and len(runs) >= 8 and not all_diverged:
        # the newest trials: two running, one waiting; a few pruned, one failed
        tail = runs[-3:]
        tail[0].state, tail[1].state, tail[2].state = "RUNNING", "RUNNING", "WAITING"
        for run in (runs[len(runs) // 3], runs[len(runs) // 2]):
            run.state, run.diverge = "PRUNED", False
        runs[len(runs) // 4].state = "FAIL"
    return runs

def write_synthetic_study(storage_url: str, study_name: str = "lp-search", *, kind: str = "search",
                          n_trials: int = 60, n_evals: int = 20, seed: int = 0,
                          p_values: Sequence[float] = PAPER_P_VALUES, folds: int = 5,
                          include_inf: bool = True, states: bool = True, all_diverged: bool = False,
                          diverge_scale: float = 1.0, metrics: str = "table",
                          preset: str = "smoke", now: datetime | None = None) -> SyntheticStudy:
    """Write a seeded synthetic study into storage_url (created if absent) and return what it holds.

    kind: "search" (n_trials trials sampling p, lr, gain_init) or "replicate" (p_values × folds,
    params p and fold). metrics: "table" (the metrics table, as SQL storages get it), "attrs"
    (`lpstudy_metrics:<step>` system attributes, as journal/gRPC-fed studies get it) or "both".
    states: the newest trials RUNNING/WAITING and a few PRUNED/FAIL. all_diverged: every run diverges.
    now: the clock the trials' times are relative to (default: now; fix it for identical studies).
    """
    import optuna
    from optuna.distributions import CategoricalDistribution, FloatDistribution
    from optuna.trial import TrialState, create_trial

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    rng = np.random.default_rng(seed)
    runs = _runs(kind, n_trials, rng, p_values, folds, include_inf, states, all_diverged, diverge_scale)
    fold_offsets = rng.normal(0, 0.015, size=max(folds, 1))
    ln_v = uniform_guess_loss(VOCAB_SIZE)
    if kind == "replicate":
        spec = replicate_spec(preset, list(p_values), folds, options={"loss_threshold": 2.0})
        distributions = {"p": CategoricalDistribution(tuple(json_safe(spec.p_values))),
                         "fold": CategoricalDistribution(tuple(range(folds)))}
    else:
        spec = build_spec(space_entries={"p": {"low": 1.0, "high": 4.0, "inf": include_inf},
                                         "lr": {"low": 1e-4, "high": 3e-2, "log": True},
                                         "gain_init": {"low": 3.0, "high": 40.0, "log": True},
                                         "folds": folds},
                          options={"preset": preset, "loss_threshold": 2.0})
        distributions = {"p": FloatDistribution(1.0, 4.0), "lr": FloatDistribution(1e-4, 3e-2, log=True),
                         "gain_init": FloatDistribution(3.0, 40.0, log=True),
                         "p_inf": CategoricalDistribution((False, True))}
    opened = open_storage(storage_url, create_tables=True)
    storage = opened.optuna
    study, _ = create_study(opened, study_name, spec)
    engine = opened.engine if metrics in ("table", "both") else None
    study_id = study._study_id
    now = now or datetime.now()
    start = now - timedelta(hours=2)
    counts = {s: 0 for s in STATES}
    for i, run in enumerate(runs):
        counts[run.state] += 1
        if kind == "replicate":  # as lpstudy.study.space encodes choices: p = ∞ as the string "inf"
            params = {"p": json_safe(float(run.p)), "fold": run.fold}
        else:  # a range of p with ∞ adds p_inf; p itself is sampled only when p_inf is False
            params = {"lr": run.lr, "gain_init": run.gain_init}
            if include_inf:
                params["p_inf"] = math.isinf(run.p)
            if math.isfinite(run.p):
                params["p"] = run.p
        dists = {name: distributions[name] for name in params}
        if run.state == "WAITING":
            study.enqueue_trial(params)
            continue
        stop_at = {"PRUNED": n_evals // 2, "RUNNING": max(1, n_evals // 3), "FAIL": n_evals // 4}.get(run.state)
        host, pid, device = f"node{i % 3 + 1}", 1000 + i % 4, "cuda:0" if i % 2 else "cpu"
        summary = _curve(run, n_evals, float(fold_offsets[run.fold % len(fold_offsets)]), rng, stop_at, device)
        records = summary.history
        began = start + timedelta(seconds=40 * i)
        if run.state == "RUNNING":
            began = now - timedelta(seconds=30 + 20 * i % 60)
        cfg = resolve_config(preset, {"p": run.p, "lr": run.lr, "gain_init": run.gain_init, "fold": run.fold,
                                      "folds": folds, "seed": run.seed, "max_steps": n_evals * EVAL_INTERVAL,
                                      "eval_interval": EVAL_INTERVAL, "device": device,
                                      "threads": 1 if device == "cpu" else 0})
        identity = {"host": host, "pid": pid, "device": device, "worker": f"{host}/{pid}/{device}"}
        user_attrs = start_attributes(cfg, preset, gain_rule_of(run.gain_init), identity, began)
        if run.state in ("COMPLETE", "PRUNED"):
            user_attrs.update(end_attributes(summary, began + timedelta(seconds=summary.wall_time_s),
                                             pruned=run.state == "PRUNED"))
        value = None
        if run.state == "COMPLETE":
            value = ln_v if summary.diverged else summary.final_val_loss
        elif run.state == "PRUNED":
            value = records[-1].val_loss if records else None
        system_attrs = dict(evaluation_attribute(r) for r in records) if metrics in ("attrs", "both") else {}
        frozen = create_trial(
            state=TrialState[run.state], value=value, params=params, distributions=dists,
            user_attrs=user_attrs, system_attrs=system_attrs,
            intermediate_values={r.step: r.val_loss for r in records if math.isfinite(r.val_loss)})
        frozen.datetime_start = began
        frozen.datetime_complete = None if run.state == "RUNNING" else began + timedelta(
            seconds=summary.wall_time_s or 1.0)
        trial_id = storage.create_new_trial(study_id, template_trial=frozen)
        if engine is not None and records:
            write_metrics(engine, study_name, trial_id, storage.get_trial_number_from_id(trial_id), records)
    if opened.engine is not None:
        opened.engine.dispose()
    return SyntheticStudy(storage_url, study_name, kind, counts, n_evals)

class _OneLineParser(argparse.ArgumentParser):
    """A usage mistake is one line and exit status 2, as everywhere in lpstudy."""

    def error(self, message: str):  # noqa: D102 - argparse's hook
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")


def _bounded(low: int, high: int):
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be in [{low}, {high}], got {value}")
        return value
    return parse


def main(argv: list[str] | None = None) -> None:
    from lpstudy.errors import UserError
    from lpstudy.names import check_study_name
    from lpstudy.study.undo import undo_on_failure

    parser = _OneLineParser(prog="python -m lpstudy.study.synthetic", description=__doc__.split("\n\n")[0])
    parser.add_argument("storage", help="storage URL, e.g. sqlite:///demo.db")
    parser.add_argument("--study", default=None, help="study name (default lp-search or lp-replicate)")
    parser.add_argument("--kind", choices=("search", "replicate"), default="search")
    parser.add_argument("--trials", type=_bounded(1, 100_000), default=120)
    parser.add_argument("--evals", type=_bounded(1, 10_000), default=20)
    parser.add_argument("--folds", type=_bounded(2, 1000), default=5)
    parser.add_argument("--seed", type=_bounded(0, 2**32 - 1), default=0)
    parser.add_argument("--metrics", choices=("table", "attrs", "both"), default="table")
    args = parser.parse_args(argv)
    name = args.study or ("lp-replicate" if args.kind == "replicate" else "lp-search")
    try:
        check_study_name(name)
        with undo_on_failure(args.storage):
            written = write_synthetic_study(args.storage, name, kind=args.kind, n_trials=args.trials,
                                            n_evals=args.evals, folds=args.folds, seed=args.seed,
                                            metrics=args.metrics)
    except UserError as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    print(json.dumps({"study": written.study_name, "kind": written.kind, "counts": written.counts}))

if __name__ == "__main__":
    main()
