"""What a trial stores besides Optuna's own columns, declared once: the worker writes its trials
through here, and so does lpstudy.study.synthetic, so that the two cannot drift apart.

  at the start   user attributes: every field declared `trial_attr` (lpstudy.training.fields: p, lr,
                 gain_init, fold, folds, seed, max_steps, threads), the preset, who runs it (host,
                 pid, device, worker), the version, when it started, the fields it changed from its
                 preset (`overrides`) and how its initial gain was chosen (`gain_rule`)
  each evaluation  a row of the metrics table (SQL storages), else the system attribute
                 lpstudy_metrics:<step> (evaluation_attribute)
  at the end     user attributes: the run's summary (lpstudy.training.metrics.SUMMARY_FIELDS), when it
                 finished, and whether it was interrupted or pruned

Values are written the one way lpstudy writes (values.json_safe): NaN as null, p = ∞ as "inf".
Plain Python (no torch, no Optuna).
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from lpstudy import __version__
from lpstudy.db.metrics_table import evaluation_attribute  # one evaluation without SQL, as the storage writes it
from lpstudy.training.config import TrainConfig, overrides_of
from lpstudy.training.fields import FIELDS
from lpstudy.training.metrics import SUMMARY_FIELDS, RunSummary
from lpstudy.values import json_safe

__all__ = ["end_attributes", "evaluation_attribute", "start_attributes", "timestamp"]


def timestamp(when: datetime) -> str:
    """A moment as trials store it: ISO 8601 in UTC, to the second."""
    return when.astimezone(timezone.utc).isoformat(timespec="seconds")


def start_attributes(cfg: TrainConfig, preset: str, gain_rule: str, identity: dict[str, Any],
                     started_at: datetime, version: str = __version__) -> dict[str, Any]:
    """A trial's user attributes when its run starts. cfg: the run as it trains (its gain_init
    resolved to a number, its device the worker's); gain_rule: how gain_init was chosen
    (training.gain.gain_rule_of); identity: host, pid, device and worker (objective.worker_identity)."""
    attrs: dict[str, Any] = {f.name: getattr(cfg, f.name) for f in FIELDS.values() if f.trial_attr}
    if cfg.device != "cpu":
        attrs["threads"] = None  # torch's thread count shapes a run's float sums only on a CPU
    attrs.update(preset=preset, **identity, version=version, started_at=timestamp(started_at),
                 overrides={k: v for k, v in overrides_of(cfg, preset).items() if k != "device"},
                 gain_rule=gain_rule)
    written: dict[str, Any] = json_safe(attrs)  # a dict stays a dict, its values as JSON holds them
    return written


def end_attributes(summary: RunSummary, finished_at: datetime, interrupted: bool = False,
                   pruned: bool = False) -> dict[str, Any]:
    """A trial's user attributes when its run ends: the summary, when, and how it ended."""
    attrs = {name: getattr(summary, name) for name in SUMMARY_FIELDS}
    attrs.update(finished_at=timestamp(finished_at), interrupted=interrupted, pruned=pruned, error=None)
    written: dict[str, Any] = json_safe(attrs)
    return written
