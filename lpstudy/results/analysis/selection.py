"""Which trials count (finished, successful), why a study has nothing to chart, and the overview:
states, the best trials, who runs what, a grid's progress, filters."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any, Iterable

import numpy as np
import pandas as pd

from lpstudy.results.analysis.cells import cells_done, grid_fields
from lpstudy.design.best import ranked_frame
from lpstudy.design.spec import StudySpec
from lpstudy.values import STATES


def finished(trials: pd.DataFrame) -> pd.DataFrame:
    """COMPLETE trials (diverged ones included), each with `loss`: its final validation loss, NaN
    for a diverged run."""
    done = trials[trials["state"] == "COMPLETE"].copy()
    value = done["value"].where(done["value"].notna(), done.get("final_val_loss"))
    done["loss"] = value.where(~done["diverged"].astype(bool))
    return done


def successful(trials: pd.DataFrame) -> pd.DataFrame:
    """COMPLETE trials that did not diverge and have a loss."""
    done = finished(trials)
    return done[done["loss"].notna()]


def data_problem(trials: pd.DataFrame, study: str) -> str | None:
    """Why the study named `study` has nothing to chart yet (no trials, none completed, all
    diverged), as one sentence for the page; None when there are results."""
    if trials is None or trials.empty:
        return f"This study has no trials yet. Start workers with `lpstudy worker --study {study} --storage URL`."
    counts = state_counts(trials)
    if counts["COMPLETE"] == 0:
        busy = f"{counts['RUNNING']} running, {counts['WAITING']} waiting"
        return f"No trial has completed yet ({busy}); results appear here as trials finish."
    if successful(trials).empty:
        return (f"Every completed trial diverged ({counts['COMPLETE']} of them): there is no validation "
                "loss to compare. Try smaller learning rates or gains; divergence rates are on the Stability page.")
    return None


def interrupted(trials: pd.DataFrame) -> pd.Series:
    """The FAIL trials a signal stopped (Ctrl-C, SIGTERM): each was enqueued again with its parameters
    (lpstudy.study.worker), so its run counts once, as its retry; never a failure. A run the
    evaluation callback stopped is `stopped`; one stopped so and FAIL (not PRUNED) was interrupted."""
    stopped = trials["stopped"].fillna(False).astype(bool) if "stopped" in trials else False
    return (trials["state"] == "FAIL") & stopped


def state_counts(trials: pd.DataFrame) -> pd.Series:
    """Trials per state, every state present (0 where none), in the order of STATES; an interrupted
    trial (enqueued again: `interrupted`) is not counted, its retry is."""
    kept = trials[~interrupted(trials)] if len(trials) else trials
    counts = kept["state"].value_counts() if len(kept) else pd.Series(dtype="int64")
    return counts.reindex(STATES, fill_value=0).astype("int64")


def top_trials(trials: pd.DataFrame, k: int = 10) -> pd.DataFrame:
    """The k best trials (lpstudy.design.best), best first, with `loss`."""
    return ranked_frame(trials, k)


def best_trial(trials: pd.DataFrame) -> pd.Series | None:
    """The best trial (lpstudy.design.best), or None."""
    best = top_trials(trials, 1)
    return None if best.empty else best.iloc[0]


def running_trials(trials: pd.DataFrame, now: pd.Timestamp | None = None) -> pd.DataFrame:
    """RUNNING trials with who runs them and for how long: number, p, lr, gain_init, fold, device,
    host, worker, since, running_s, last_step, last_val_loss."""
    running = trials[trials["state"] == "RUNNING"].copy()
    columns = ["number", "p", "lr", "gain_init", "fold", "device", "host", "worker", "since",
               "running_s", "last_step", "last_val_loss"]
    if running.empty:
        return pd.DataFrame(columns=columns)
    since = pd.to_datetime(running["started_at"], utc=True, errors="coerce")
    fallback = pd.to_datetime(running["datetime_start"], errors="coerce")
    if fallback.dt.tz is None:  # Optuna stores the start as naive local time
        local = datetime.now().astimezone().tzinfo
        fallback = fallback.dt.tz_localize(local).dt.tz_convert("UTC")
    running["since"] = since.where(since.notna(), fallback)
    now = now or pd.Timestamp.now(tz="UTC")
    running["running_s"] = (now - running["since"]).dt.total_seconds()
    return running[columns].sort_values("number", ignore_index=True)


@dataclass(frozen=True)
class GridProgress:
    """How far a grid study has got (grid_progress): Home's bar, `lpstudy status`'s grid line and its JSON."""

    n_cells: int  # cells in the grid (at least those done)
    done: int  # cells with a COMPLETE trial, each counted once
    running: int  # trials running
    waiting: int  # trials waiting (cells enqueued, retries)

    @property
    def fraction(self) -> float:
        return self.done / self.n_cells if self.n_cells else 0.0

    def to_plain(self) -> dict[str, Any]:
        """As `lpstudy status --json` writes it: the counts and the fraction done."""
        return {**asdict(self), "fraction": self.fraction}


def grid_progress(trials: pd.DataFrame, spec: StudySpec | None = None) -> GridProgress | None:
    """For a grid study (replicate, or `create --sampler grid`): cells in the grid, cells done (a
    COMPLETE trial; a cell is every gridded field, lpstudy.results.analysis.cells), running and
    waiting; None for a study that is not a grid."""
    fields = grid_fields(spec)
    if spec is None or not fields:
        return None
    n_cells = int(spec.n_cells or (len(spec.p_values or []) * int(spec.folds or 0)) or 0)
    done = cells_done(trials, fields) if len(trials) else 0
    running = int((trials["state"] == "RUNNING").sum())
    waiting = int((trials["state"] == "WAITING").sum())
    n_cells = max(n_cells, done)
    return GridProgress(n_cells=n_cells, done=done, running=running, waiting=waiting)


def filter_trials(trials: pd.DataFrame, states: Iterable[str] | None = None,
                  p_range: tuple[float, float] | None = None, lr_range: tuple[float, float] | None = None,
                  diverged: bool | None = None, include_inf: bool = True) -> pd.DataFrame:
    """The trials matching every given condition: state in states, p within p_range (inclusive; ∞
    kept when include_inf), lr within lr_range (inclusive), diverged equal to the flag."""
    mask = pd.Series(True, index=trials.index)
    if states is not None:
        mask &= trials["state"].isin(list(states))
    if p_range is not None:
        finite = trials["p"].between(p_range[0], p_range[1])
        mask &= finite | (np.isinf(trials["p"]) & include_inf)
    if lr_range is not None:
        mask &= trials["lr"].between(lr_range[0], lr_range[1])
    if diverged is not None:
        mask &= trials["diverged"].astype(bool) == diverged
    return trials[mask]
