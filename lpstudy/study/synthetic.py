"""Synthetic studies for tests, demos and benchmarks: Optuna studies written exactly as the study
service writes them (see lpstudy.results.reading.frames for the contract), with learning curves that depend on
p, the learning rate and the gain in a plausible way, some runs diverged, and trials in every state.
Each trial's attributes are written through lpstudy.study.trial_attributes, as the worker writes
its own, from a TrainConfig of the run it stands for.

    python -m lpstudy.study.synthetic sqlite:///demo.db --trials 200 --evals 30
    python -m lpstudy.study.synthetic sqlite:///demo.db --kind replicate --folds 10
    lpstudy dashboard --study synthetic --storage sqlite:///demo.db

A synthetic study says so: its user attribute SYNTHETIC_ATTR is true, which every page of the
dashboard shows as a banner, `lpstudy studies` in its kind column, and the Export page and
`lpstudy export` by offering no run file (no training run stands behind its losses).

The shape (not the numbers) follows the paper: p > 2 converges faster and ends a little lower than
p = 2, flat over 2.5–4; too large a learning rate or gain diverges, more often at large p.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, Literal, Optional, Sequence

import numpy as np
import typer

from lpstudy.db import optuna_private
from lpstudy.db.optuna_storage import open_storage
from lpstudy.design.space import SearchSpace
from lpstudy.design.spec import StudySpec, build_spec, replicate_spec
from lpstudy.study.studies import create_study
from lpstudy.study.trial_context import TrialOutcome
from lpstudy.study.trial_attributes import end_attributes, evaluation_attribute, start_attributes
from lpstudy.training.config import resolve_config
from lpstudy.training.gain import gain_rule_of
from lpstudy.training.metrics import MetricRecord, RunSummary
from lpstudy.values import STATES, SYNTHETIC_ATTR, json_safe

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution

VOCAB_SIZE = 65
PAPER_P_VALUES = (1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0)
EVAL_INTERVAL = 25
TOKENS_PER_S = 40_000.0
REPLICATE_LR, REPLICATE_GAIN = 1e-3, 16.0  # what a synthetic replicate study fixes
DEFAULT_NAMES = {"search": "synthetic", "replicate": "synthetic-replicate"}  # never a real study's default name

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
    peak = run.lr
    # the evaluation before the first update, as the trainer records it (the entropy at
    # initialisation): drawn without rng, so that the later numbers stay as they were
    entropy0 = 1.2 + 2.2 - 0.05 * (p_eff - 2)
    records: list[MetricRecord] = [MetricRecord(
        step=0, train_loss=start_loss, val_loss=start_loss, lr=0.0, grad_norm=2.9, grad_norm_max=3.8,
        gain_mean=run.gain_init, gain_min=run.gain_init * 0.9, gain_max=run.gain_init * 1.1, attn_entropy=entropy0,
        tokens_per_s=TOKENS_PER_S, elapsed_s=0.0, max_logit=run.gain_init * (0.3 + 0.1 * p_eff),
        min_head_entropy=0.6 * entropy0, logit_bound=run.gain_init * 1.1 * 16 ** max(0.0, 1 - 2 / p_eff),
        loss_spikes=0.0)]
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
            lr, gain = REPLICATE_LR, REPLICATE_GAIN
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

@dataclass
class SyntheticTrial:
    """One trial as the worker would have written it: Optuna's columns, its user and system
    attributes, and its evaluations (the metrics table's rows)."""

    number: int
    state: str
    params: dict[str, Any]
    distributions: dict[str, BaseDistribution]
    user_attrs: dict[str, Any]
    system_attrs: dict[str, Any]
    value: float | None
    records: list[MetricRecord]
    datetime_start: datetime | None
    datetime_complete: datetime | None


def synthetic_spec(kind: str, preset: str, p_values: Sequence[float], folds: int, include_inf: bool) -> StudySpec:
    """The study spec of a synthetic study: a replicate grid of p_values × folds, or a search over p
    (with ∞ when include_inf), the learning rate and the gain's initial value."""
    if kind == "replicate":
        return replicate_spec(preset, list(p_values), folds, fixed={"lr": REPLICATE_LR, "gain_init": REPLICATE_GAIN},
                              options={"loss_threshold": 2.0})
    return build_spec(space_entries={"p": {"low": 1.0, "high": 4.0, "inf": include_inf},
                                     "lr": {"low": 1e-4, "high": 3e-2, "log": True},
                                     "gain_init": {"low": 3.0, "high": 40.0, "log": True},
                                     "folds": folds},
                      # the synthetic study writes every trial itself: no spread trial waits for a worker
                      options={"preset": preset, "loss_threshold": 2.0, "spread_trials": 0})


def trial_params(space: SearchSpace, values: dict[str, Any]
                 ) -> tuple[dict[str, Any], dict[str, BaseDistribution], dict[str, Any]]:
    """What a worker's trial holds for these fields' values: (Optuna's parameters, their
    distributions, the run's overrides). The space encodes the values (p = ∞ its own way) and its
    suggest path, the worker's, reads them back on a fixed trial and records the distributions."""
    from optuna.trial import FixedTrial

    trial = FixedTrial(space.optuna_params(values))
    overrides = space.suggest(trial)
    return dict(trial.params), dict(trial.distributions), overrides


def told_value(outcome: TrialOutcome, intermediate_values: dict[int, float]) -> float | None:
    """The value study.tell stores for the outcome: its own, or for a pruned trial (told without
    one) the last value it reported, as Optuna's tell does."""
    if outcome.state.name == "PRUNED" and intermediate_values:
        return intermediate_values[max(intermediate_values)]
    return outcome.value


def synthetic_trials(*, kind: str = "search", n_trials: int = 60, n_evals: int = 20, seed: int = 0,
                     p_values: Sequence[float] = PAPER_P_VALUES, folds: int = 5, include_inf: bool = True,
                     states: bool = True, all_diverged: bool = False, diverge_scale: float = 1.0,
                     attrs_metrics: bool = False, preset: str = "smoke", now: datetime | None = None
                     ) -> Iterator[SyntheticTrial]:
    """The trials of a synthetic study (write_synthetic_study's arguments), one SyntheticTrial at a
    time, numbered from 0: what write_synthetic_study stores trial by trial through Optuna and a bulk
    writer (benchmarks/bench_scale.py) stores many at once. attrs_metrics: the evaluations also as
    `lpstudy_metrics:<step>` system attributes."""
    rng = np.random.default_rng(seed)
    runs = _runs(kind, n_trials, rng, p_values, folds, include_inf, states, all_diverged, diverge_scale)
    fold_offsets = rng.normal(0, 0.015, size=max(folds, 1))
    space = synthetic_spec(kind, preset, p_values, folds, include_inf).space
    now = now or datetime.now()
    start = now - timedelta(hours=2)
    for i, run in enumerate(runs):
        sampled = {"p": run.p, "fold": run.fold} if kind == "replicate" else \
            {"p": run.p, "lr": run.lr, "gain_init": run.gain_init}
        params, dists, overrides = trial_params(space, sampled)
        if run.state == "WAITING":
            yield SyntheticTrial(i, "WAITING", params, dists, {}, {}, None, [], None, None)
            continue
        stop_at = {"PRUNED": n_evals // 2, "RUNNING": max(1, n_evals // 3), "FAIL": n_evals // 4}.get(run.state)
        host, pid, device = f"node{i % 3 + 1}", 1000 + i % 4, "cuda:0" if i % 2 else "cpu"
        summary = _curve(run, n_evals, float(fold_offsets[run.fold % len(fold_offsets)]), rng, stop_at, device)
        records = summary.history
        began = start + timedelta(seconds=40 * i)
        if run.state == "RUNNING":
            began = now - timedelta(seconds=30 + 20 * i % 60)
        cfg = resolve_config(preset, {**overrides, "fold": run.fold, "folds": folds, "seed": run.seed,
                                      "max_steps": n_evals * EVAL_INTERVAL, "eval_interval": EVAL_INTERVAL,
                                      "device": device, "threads": 1 if device == "cpu" else 0})
        identity = {"host": host, "pid": pid, "device": device, "worker": f"{host}/{pid}/{device}"}
        user_attrs = start_attributes(cfg, preset, gain_rule_of(cfg.gain_init), identity, began)
        state, value = "RUNNING", None
        if run.state != "RUNNING":  # ended as the worker ends a run: pruned, interrupted (FAIL) or trained
            outcome = TrialOutcome.of_run(summary, VOCAB_SIZE, pruned=run.state == "PRUNED",
                                          interrupted=run.state == "FAIL")
            state = outcome.state.name
            value = told_value(outcome, intermediate_values(records))
        if state in ("COMPLETE", "PRUNED"):
            user_attrs.update(end_attributes(summary, began + timedelta(seconds=summary.wall_time_s),
                                             pruned=state == "PRUNED"))
        system_attrs = dict(evaluation_attribute(r) for r in records) if attrs_metrics else {}
        complete = None if state == "RUNNING" else began + timedelta(seconds=summary.wall_time_s or 1.0)
        yield SyntheticTrial(i, state, params, dists, user_attrs, system_attrs, value, records, began, complete)


def intermediate_values(records: Sequence[MetricRecord]) -> dict[int, float]:
    """The values a worker reports to Optuna: each evaluation's validation loss by step (finite ones)."""
    return {r.step: r.val_loss for r in records if math.isfinite(r.val_loss)}


def write_synthetic_study(storage_url: str, study_name: str = "lp-search", *, kind: str = "search",
                          n_trials: int = 60, n_evals: int = 20, seed: int = 0,
                          p_values: Sequence[float] = PAPER_P_VALUES, folds: int = 5,
                          include_inf: bool = True, states: bool = True, all_diverged: bool = False,
                          diverge_scale: float = 1.0, metrics: str = "table",
                          preset: str = "smoke", now: datetime | None = None, marked: bool = False) -> SyntheticStudy:
    """Write a seeded synthetic study into storage_url (created if absent) and return what it holds.

    kind: "search" (n_trials trials sampling p, lr, gain_init) or "replicate" (p_values × folds,
    params p and fold). metrics: "table" (where the storage keeps a worker's
    curves, as a worker writes them: the metrics table on SQL, system attributes on a journal), "attrs"
    (`lpstudy_metrics:<step>` system attributes, as journal/gRPC-fed studies get it) or "both".
    states: the newest trials RUNNING/WAITING and a few PRUNED/FAIL. all_diverged: every run diverges.
    now: the clock the trials' times are relative to (default: now; fix it for identical studies).
    marked: the study says it is synthetic (SYNTHETIC_ATTR), as the demo command's does; tests that
    stand such a study in for a real one leave it unmarked.
    """
    import optuna
    from optuna.trial import TrialState, create_trial

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    spec = synthetic_spec(kind, preset, p_values, folds, include_inf)
    opened = open_storage(storage_url, create_tables=True)
    study, _ = create_study(opened, study_name, spec)
    if marked:
        study.set_user_attr(SYNTHETIC_ATTR, True)
    through_storage = metrics in ("table", "both")  # where the storage keeps curves: its kind says
    study_id = optuna_private.study_id(study)
    counts = {s: 0 for s in STATES}
    for trial in synthetic_trials(kind=kind, n_trials=n_trials, n_evals=n_evals, seed=seed, p_values=p_values,
                                  folds=folds, include_inf=include_inf, states=states, all_diverged=all_diverged,
                                  diverge_scale=diverge_scale, attrs_metrics=metrics in ("attrs", "both"),
                                  preset=preset, now=now):
        counts[trial.state] += 1
        if trial.state == "WAITING":  # p beside its parameters, as the spread phase enqueues it (p_or_inf needs the space)
            from optuna.trial import FixedTrial

            p = spec.space.suggest(FixedTrial(trial.params))["p"]  # read back as the worker reads it
            study.enqueue_trial(trial.params, user_attrs={"p": json_safe(p)})
            continue
        frozen = create_trial(
            state=TrialState[trial.state], value=trial.value, params=trial.params, distributions=trial.distributions,
            user_attrs=trial.user_attrs, system_attrs=trial.system_attrs,
            intermediate_values=intermediate_values(trial.records))
        frozen.datetime_start = trial.datetime_start
        frozen.datetime_complete = trial.datetime_complete
        opened.add_finished_trial(study_name, study_id, frozen, trial.records if through_storage else [])
    opened.close()
    return SyntheticStudy(storage_url, study_name, kind, counts, n_evals)

PROG = "python -m lpstudy.study.synthetic"
cli = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
                  context_settings={"help_option_names": ["-h", "--help"]})


@cli.command(help=__doc__.split("\n\n")[0])
def write_command(
    storage: Annotated[str, typer.Argument(help="storage URL, e.g. sqlite:///demo.db")],
    study: Annotated[Optional[str], typer.Option(help=f"study name (default {DEFAULT_NAMES['search']} or "
                                                      f"{DEFAULT_NAMES['replicate']})")] = None,
    kind: Annotated[Literal["search", "replicate"], typer.Option()] = "search",
    trials: Annotated[int, typer.Option(min=1, max=100_000)] = 120,
    evals: Annotated[int, typer.Option(min=1, max=10_000)] = 20,
    folds: Annotated[int, typer.Option(min=2, max=1000)] = 5,
    seed: Annotated[int, typer.Option(min=0, max=2**32 - 1)] = 0,
    metrics: Annotated[Literal["table", "attrs", "both"], typer.Option()] = "table",
) -> None:
    from lpstudy.db.kinds import storage_at
    from lpstudy.names import check_study_name, shell_quoted
    from lpstudy.study.undo import undo_on_failure

    name = study or DEFAULT_NAMES[kind]
    check_study_name(name)
    with undo_on_failure(storage_at(storage)):  # the URL checked; what a failure made is removed
        written = write_synthetic_study(storage, name, kind=kind, n_trials=trials, n_evals=evals, folds=folds,
                                        seed=seed, metrics=metrics, marked=True)
    print(json.dumps({"study": written.study_name, "kind": written.kind, "synthetic": True, "counts": written.counts}))
    print(f"a synthetic {written.kind} study (made-up curves, no training run behind them); open it with: "
          f"lpstudy dashboard --study {shell_quoted(name)} --storage {shell_quoted(storage)}", file=sys.stderr)


def main(argv: list[str] | None = None) -> None:
    """Run the command; a mistake (a bad option, a URL that names no database) is one line and exit 2."""
    try:  # typer ≥ 0.25 vendors click
        from typer._click.exceptions import ClickException
    except ImportError:  # pragma: no cover - older typer on top of click
        from click.exceptions import ClickException  # type: ignore[assignment]  # the same class, before typer vendored it
    from lpstudy.errors import UserError

    try:
        cli(args=argv, prog_name=PROG, standalone_mode=False)
    except UserError as exc:
        _fail(str(exc))
    except ClickException as exc:
        _fail(f"{exc.format_message()} (see --help)")


def _fail(message: str) -> None:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


if __name__ == "__main__":
    main()
