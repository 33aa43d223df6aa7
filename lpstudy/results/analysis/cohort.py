"""The cohort a per-p curve is aggregated over, declared once.

A median (or any aggregate) of a metric per p and step taken over whoever still runs at that step
moves at every rung of a pruner: the trials pruned there leave it, and the aggregate jumps to
what the survivors hold. That is who survived, not how the metric moves. So every aggregate over
steps is taken over one fixed set of trials at every step it draws: the trials that reached the
chart's last step (a completed run, or a running one already there). The trials that stopped
before it (pruned, still running, stopped by a divergence when those count) are kept apart, to be
drawn on their own, never in the aggregate.

Which trials a chart may draw at all: COMPLETE, PRUNED and RUNNING ones with a p and a value of the
metric; diverged runs only where the caller asks (include_diverged). Bins of p are those of the
other charts of p: equal-width over the completed trials' p.

A search's leaders raced on several folds are one configuration each (analysis.configurations):
given the searched fields (`configurations`), the cohort's runs of one configuration are averaged
step by step into one curve, so a group's median is over configurations, not over a leader's folds,
and the caption says how many configurations and runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from lpstudy.results.analysis.configurations import configuration_ids
from lpstudy.results.analysis.groups import bin_edges, p_bins

COHORT_RULE = "the trials that reached the last step drawn"
DRAWN_STATES = ("COMPLETE", "PRUNED", "RUNNING")
BAND_COLUMNS = ["p_bin", "p_order", "p_center", "step", "median", "q25", "q75", "n"]
STOPPED_COLUMNS = ["trial_number", "state", "p_bin", "p_order", "step", "value"]


@dataclass(frozen=True)
class CurveBands:
    """Per p group and step, the median of a metric and its 25–75 % band over the cohort
    (`bands`: BAND_COLUMNS; n the cohort's trials with an evaluation at that step: the group's cohort,
    fewer where a resumed trial lacks the steps before its checkpoint), and the
    curves of the trials outside it (`stopped`: STOPPED_COLUMNS, one row per evaluation)."""

    bands: pd.DataFrame
    stopped: pd.DataFrame
    last_step: float | None  # the cohort's last step (None: nothing to draw)
    cohort: int  # trials in the cohort (configurations, where the runs were read as configurations)
    stopped_states: dict  # state -> trials outside the cohort
    cohort_runs: int | None = None  # the cohort's runs, where its members are configurations

    @property
    def n_stopped(self) -> int:
        return int(sum(self.stopped_states.values()))

    def caption(self, aggregate: str = "Median and band") -> str:
        """What the aggregate is over, in a line a chart carries."""
        if self.last_step is None:
            return ""
        step = f"{self.last_step:,.0f}"
        trials = "trial" if self.cohort == 1 else "trials"
        if self.cohort_runs is not None:
            trials = (f"configuration{'s' if self.cohort != 1 else ''} ({self.cohort_runs} runs, a configuration's "
                      "folds averaged into one curve)")
        text = f"{aggregate} over one cohort at every step: the {self.cohort} {trials} that reached step {step}"
        if self.n_stopped:
            states = ", ".join(f"{n} {state.lower()}" for state, n in sorted(self.stopped_states.items()))
            text += f". In grey, not in the {aggregate.split()[0].lower()}: {self.n_stopped} that stopped earlier ({states})"
        return text + "."


def _completed_edges(trials: pd.DataFrame, bins: int | Sequence[float] | None) -> int | Sequence[float] | None:
    """A number of bins as the edges the other charts of p give it: equal-width over the completed
    trials' finite p (per_p_summary's groups), so that a curve's "p 2–2.5" is theirs; a pruned
    trial beyond them counts in the nearest bin."""
    if not isinstance(bins, int):
        return bins
    p = trials.loc[trials["state"] == "COMPLETE", "p"].astype("float64").to_numpy()
    p = p[np.isfinite(p)]
    return list(bin_edges(p, bins)) if len(p) else bins


def with_p(curves: pd.DataFrame, trials: pd.DataFrame,
           columns: Sequence[str] = ("p", "lr", "gain_init", "fold", "state", "diverged")) -> pd.DataFrame:
    """The curves joined with each trial's p (and other columns) by trial number."""
    keep = ["number", *[c for c in columns if c in trials.columns]]
    return curves.merge(trials[keep].rename(columns={"number": "trial_number"}), on="trial_number", how="inner")


def curve_cohort(curves: pd.DataFrame, trials: pd.DataFrame, column: str = "val_loss",
                 bins: int | Sequence[float] | None = None, include_diverged: bool = False,
                 configurations: Sequence[str] = ()) -> CurveBands:
    """The cohort's bands of `column` per p group (p grouped as p_bins does, over every drawn
    trial's p, so that the groups are those of the other charts) and the curves outside it. With
    `configurations` (a search's searched fields: answers.mixed_groups.search_fields), each
    configuration of the cohort is one curve, its runs averaged step by step."""
    empty = CurveBands(pd.DataFrame(columns=BAND_COLUMNS), pd.DataFrame(columns=STOPPED_COLUMNS), None, 0, {})
    if curves.empty or column not in curves:
        return empty
    joined = with_p(curves, trials, ("p", "lr", "gain_init", "fold", "state", "diverged",
                                     *[c for c in configurations if c not in ("p", "lr", "gain_init")]))
    joined = joined[joined["state"].isin(DRAWN_STATES) & joined["p"].notna()]
    if not include_diverged:
        joined = joined[~joined["diverged"].astype(bool)]
    joined = joined.dropna(subset=[column])
    if joined.empty:
        return empty
    joined = joined.join(p_bins(joined["p"], _completed_edges(trials, bins)))
    reached = joined.groupby("trial_number")["step"].max()
    last_step = float(reached.max())
    members = set(reached.index[reached == last_step])
    inside = joined[joined["trial_number"].isin(members)]
    outside = joined[~joined["trial_number"].isin(members)]
    runs = None
    if configurations:  # one curve a configuration: its runs' mean at each step, under its first run's number
        runs = len(members)
        first = inside.drop_duplicates("trial_number").set_index("trial_number")
        ids = configuration_ids(first, configurations)
        leader = pd.Series(first.index, index=first.index).groupby(ids.to_numpy()).transform("min")
        inside = (inside.assign(trial_number=inside["trial_number"].map(leader))
                  .groupby(["trial_number", "p_order", "p_bin", "step"], as_index=False)[column].mean())
        members = set(leader.unique())
    grouped = inside.groupby(["p_order", "p_bin", "step"], sort=True)[column]
    bands = grouped.quantile([0.25, 0.5, 0.75]).unstack()
    bands.columns = ["q25", "median", "q75"]
    bands = bands.reset_index()
    # n at each step: the cohort's trials with an evaluation there. A trial resumed from a checkpoint
    # lacks the evaluations before it, so an early step can hold fewer than the group's cohort.
    at_step = inside.groupby(["p_order", "p_bin", "step"], sort=True)["trial_number"].nunique()
    bands["n"] = at_step.to_numpy().astype("int64")
    bands["p_center"] = bands["p_bin"].map(joined.groupby("p_bin")["p_center"].first())
    stopped = (outside.rename(columns={column: "value"})[STOPPED_COLUMNS]
               .sort_values(["trial_number", "step"]).reset_index(drop=True))
    states = outside.groupby("trial_number")["state"].first().value_counts().to_dict()
    return CurveBands(bands[BAND_COLUMNS], stopped, last_step, len(members), {str(k): int(v) for k, v in states.items()},
                      runs)


__all__ = ["BAND_COLUMNS", "COHORT_RULE", "CurveBands", "STOPPED_COLUMNS", "curve_cohort"]
