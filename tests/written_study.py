"""Hand-made studies written through the code the worker uses: a real Optuna study created as
`lpstudy replicate` creates it (its spec, its grid of cells), run by lpstudy's own worker loop
(claims, heartbeats, tells) with an objective that writes, in place of training, a planned curve:
the trial's user attributes as the worker writes them (trial_attributes), one metrics row per
evaluation through the worker's record_evaluation, each reported to Optuna, and the trial PRUNED
or COMPLETE as planned. What the read side then reads is what a worker stores, with curves whose
every number the test chose."""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime, timezone
from typing import Callable

from optuna.trial import TrialState

from lpstudy.training.metrics import MetricRecord, RunSummary

# plan(cfg) -> (the run's evaluations, whether it is pruned after the last of them)
Plan = Callable[[object], tuple[list[MetricRecord], bool]]


def record(step: int, val_loss: float, gain: float = 16.0, max_logit: float = 5.0,
           min_head_entropy: float = 2.0) -> MetricRecord:
    """One evaluation with the numbers a test sets, the others plausible constants."""
    return MetricRecord(step=step, train_loss=val_loss - 0.01, val_loss=val_loss, lr=1e-3, grad_norm=1.0,
                        grad_norm_max=1.5, gain_mean=gain, gain_min=gain, gain_max=gain, attn_entropy=2.5,
                        tokens_per_s=1000.0, elapsed_s=step / 100, max_logit=max_logit,
                        min_head_entropy=min_head_entropy, logit_bound=10.0, loss_spikes=0.0)


class PlannedObjective:
    """The worker's objective (lpstudy.study.trial_context), writing plan(cfg) as the trial's run."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan

    def __call__(self, ctx, trial):
        from lpstudy.study.objective import record_evaluation, worker_identity
        from lpstudy.study.races import run_overrides
        from lpstudy.study.trial_attributes import end_attributes, start_attributes
        from lpstudy.study.trial_context import TrialOutcome
        from lpstudy.training.config import resolve_config
        from lpstudy.training.gain import gain_rule_of

        cfg = resolve_config(ctx.spec.preset, run_overrides(ctx.spec, trial))  # a race's fold, as the worker runs it
        rule = gain_rule_of(cfg.gain_init)
        cfg = dataclasses.replace(cfg, gain_init=cfg.resolved_gain_init, device="cpu")
        now = datetime.now(timezone.utc)
        for key, value in start_attributes(cfg, ctx.spec.preset, rule, worker_identity("cpu"), now).items():
            trial.set_user_attr(key, value)
        records, pruned = self.plan(cfg)
        for evaluation in records:
            record_evaluation(ctx, trial, evaluation)
            trial.report(evaluation.val_loss, evaluation.step)
        losses = [r.val_loss for r in records]
        best = min(range(len(losses)), key=losses.__getitem__)
        summary = RunSummary(final_val_loss=losses[-1], best_val_loss=losses[best], best_step=records[best].step,
                             steps=records[-1].step, stopped=pruned, device="cpu", history=records)
        for key, value in end_attributes(summary, datetime.now(timezone.utc), pruned=pruned).items():
            trial.set_user_attr(key, value)
        if pruned:
            return TrialOutcome(TrialState.PRUNED, None, summary)
        return TrialOutcome(TrialState.COMPLETE, summary.final_val_loss, summary)


def write_replicate(url: str, name: str, p_values: list[float], folds: int, plan: Plan,
                    fixed: dict | None = None) -> None:
    """A replicate study (p_values × folds, `fixed` as `--set`/`--gain-init` give it) whose every
    cell one in-process worker runs with plan(cfg)."""
    from lpstudy.design.spec import replicate_spec
    from lpstudy.study.studies import creating_storage, open_and_create
    from lpstudy.study.worker import WorkerOptions, run_worker

    spec = replicate_spec("smoke", p_values, folds, fixed=fixed)
    storage = creating_storage(url)
    open_and_create(storage, name, spec)  # as `lpstudy replicate`: the study and its cells
    with storage:
        report = run_worker(WorkerOptions(study=name, storage=url, device="cpu", show_progress=False, announce=False),
                            say=lambda message: None, objective=PlannedObjective(plan), storage=storage)
    assert report.exit_code == 0 and sum(report.trials.values()) == len(p_values) * folds, report
