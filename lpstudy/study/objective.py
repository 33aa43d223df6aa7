"""The objective: one trial trains one run, and its curve and summary land on the trial.

Direction: minimise. Value: the final validation loss, or ln(vocabulary size) for a run that
diverged (it COMPLETES with the user attribute diverged=True, so samplers learn to avoid it): the
rule is TrialOutcome.of_run (lpstudy.study.trial_context), which the synthetic studies follow too.
Each evaluation is stored as it happens: a row of the metrics table on SQL storages, a trial system
attribute lpstudy_metrics:<step> on journal and gRPC storages.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import socket
from datetime import datetime, timezone
from typing import Any

import optuna

from lpstudy.db import optuna_private
from lpstudy.study.checkpoints import TrialCheckpoints
from lpstudy.study import telemetry
from lpstudy.study.races import run_overrides
from lpstudy.design.space import describe_overrides
from lpstudy.study.trial_attributes import end_attributes, start_attributes
from lpstudy.study.trial_context import TrialContext, TrialOutcome
from lpstudy.training.gain import gain_rule_of
from lpstudy.training.config import resolve_config, with_cpu_threads
from lpstudy.training.metrics import MetricRecord
from lpstudy.training.progress import TrainingProgress, say_stderr
# `as train`: a name of this module's that benchmarks/bench_storage.py replaces (a run's clock, a trivial run)
from lpstudy.training.trainer import train as train


def worker_identity(device: str) -> dict[str, Any]:
    host = socket.gethostname()
    return {"host": host, "pid": os.getpid(), "device": device, "worker": f"{host}/{os.getpid()}/{device}"}


def record_evaluation(ctx: TrialContext, trial: optuna.Trial, record: MetricRecord) -> None:
    """Store one evaluation: a batch in the metrics table (SQL storages), else a trial system
    attribute lpstudy_metrics:{step:08d} (journal, gRPC)."""
    ctx.storage.write_evaluation(ctx.study.study_name, optuna_private.trial_id(trial), trial.number, record)


def run_trial(ctx: TrialContext, trial: optuna.Trial) -> TrialOutcome:
    """Train the run that `trial` stands for; store its curve and summary on the trial. Does not
    tell Optuna the result (the worker does), so that a crash here still ends the trial."""
    spec = ctx.spec
    overrides = run_overrides(spec, trial)  # on a race's fold where a race enqueued it (lpstudy.study.races)
    cfg = resolve_config(spec.preset, overrides)
    gain_rule = gain_rule_of(cfg.gain_init)
    cfg = dataclasses.replace(cfg, gain_init=cfg.resolved_gain_init)  # resolved: the export reproduces it
    cfg = with_cpu_threads(cfg, ctx.device, ctx.threads)  # on CPU the thread count too
    cfg = dataclasses.replace(cfg, device=ctx.device)

    identity = worker_identity(ctx.device)
    for key, value in start_attributes(cfg, spec.preset, gain_rule, identity, datetime.now(timezone.utc)).items():
        trial.set_user_attr(key, value)

    shown = describe_overrides({"p": cfg.p, "lr": cfg.lr, "gain_init": cfg.gain_init, "fold": cfg.fold,
                                **{p.name: overrides[p.name] for p in spec.space.searched}})
    if ctx.show_progress:
        say_stderr(f"[bold]trial {trial.number}[/] {shown} on {ctx.device} ({identity['worker']})")

    checkpoints = resume = None
    if ctx.artifact_store is not None and spec.checkpoint_interval > 0:
        checkpoints = TrialCheckpoints(ctx.artifact_store, ctx.study, trial)
        resume = checkpoints.load()
    if resume is not None:
        trial.set_user_attr("resumed_from_step", resume.step)
        if ctx.show_progress:
            say_stderr(f"trial {trial.number} resumes from its checkpoint at step {resume.step}")
    written: set[int] = {r.step for r in resume.summary.history} if resume is not None else set()
    pruned = [False]
    def on_eval(record: MetricRecord) -> bool:
        telemetry.steps_measured(record.tokens_per_s / (cfg.batch_size * cfg.block_size))  # as the bar's tok/s
        record_evaluation(ctx, trial, record)
        written.add(record.step)
        trial.report(record.val_loss, record.step)
        if bar is not None:
            bar.on_eval(record)
        if trial.should_prune():
            pruned[0] = True
            return True
        return False

    progress = (TrainingProgress(cfg.max_steps, description=f"trial {trial.number}") if ctx.show_progress
                else contextlib.nullcontext())
    with progress as bar:  # None without a bar
        run = train(cfg, ctx.corpus, on_eval=on_eval, on_step=bar.on_step if bar is not None else None,
                    loss_threshold=spec.loss_threshold, should_stop=ctx.should_stop, resume=resume,
                    on_checkpoint=checkpoints.save if checkpoints else None,
                    checkpoint_every=spec.checkpoint_interval)
    summary = run.summary
    for record in summary.history:  # the evaluation that found the divergence never reached on_eval
        if record.step not in written:
            record_evaluation(ctx, trial, record)

    interrupted = (not pruned[0] and not summary.diverged and summary.steps < cfg.max_steps
                   and ctx.should_stop())
    for key, value in end_attributes(summary, datetime.now(timezone.utc), interrupted, pruned[0]).items():
        trial.set_user_attr(key, value)

    if checkpoints is not None and (pruned[0] or summary.diverged or not interrupted
                                    and math.isfinite(summary.final_val_loss)):
        checkpoints.finish()  # it will not be retried
    return TrialOutcome.of_run(summary, ctx.corpus.vocab_size, pruned=pruned[0], interrupted=interrupted,
                               overrides=overrides)
