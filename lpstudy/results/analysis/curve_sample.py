"""Which trials' learning curves a reader fetches from a big study.

A chart of curves cannot show 100,000 trials, and reading their five million evaluations takes
longer than drawing anything: above CURVE_TRIALS_ALL trials, the curves of a sample leave the
database. The sample is deterministic (the same study gives the same sample): per p group (the
bins the charts open with, lpstudy.results.analysis.groups.default_p_groups, so that each group a
chart draws holds its share; ∞ and an unknown p each a group of their own), up to
PER_GROUP trials spread evenly over the group's trials in trial order, plus the best trial and
every running one. Everything else a reader shows (counts, the best trials, means and intervals
per p) still comes from every trial; only what the curve charts draw is a sample, and the readers
say so with `note`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from lpstudy.design.spec import StudySpec

CURVE_TRIALS_ALL = 1000  # up to this many trials (not WAITING), every curve is read
PER_GROUP = 50  # above it, at most this many trials per p group
GROUPS = 10  # equal-width groups over the finite p range where the charts show exact values


@dataclass(frozen=True)
class CurveSample:
    """The trial ids whose curves are read (None: all) and the sentence a chart shows about it."""

    trial_ids: tuple[int, ...] | None
    note: str | None = None


def _group_of(p: pd.Series, edges) -> np.ndarray:
    """Each trial's p group: the charts' bins between `edges` (∞ and an unknown p apart)."""
    values = p.to_numpy(dtype="float64")
    finite = np.isfinite(values)
    n_bins = len(edges) - 1
    groups = np.full(len(values), n_bins + 1)  # an unknown p
    groups[np.isinf(values)] = n_bins  # ∞
    if finite.any():
        groups[finite] = np.clip(np.searchsorted(edges, values[finite], side="right") - 1, 0, n_bins - 1)
    return groups


def _chart_edges(trials: pd.DataFrame, spec: StudySpec | None):
    """The bins the charts of p open with (lpstudy.results.analysis.groups.default_p_groups), as edges;
    GROUPS equal-width bins over the finite p where the charts show exact values."""
    from lpstudy.results.analysis.groups import bin_edges, default_p_groups

    edges = default_p_groups(trials, spec)
    if edges is not None:
        return np.asarray(edges, dtype="float64")
    p = trials["p"].to_numpy(dtype="float64")
    p = p[np.isfinite(p)]
    return np.asarray(bin_edges(p, GROUPS) if len(p) else [0.0, 1.0], dtype="float64")


def curve_sample(trials: pd.DataFrame, best_number: int | None = None, spec: StudySpec | None = None) -> CurveSample:
    """The sample of a trials frame (lpstudy.results.reading.frames) whose curves a reader fetches, stratified
    on the p groups the charts open with (the study's `spec` gives its searched p range)."""
    candidates = trials[trials["state"] != "WAITING"]
    if len(candidates) <= CURVE_TRIALS_ALL:
        return CurveSample(None)
    candidates = candidates.sort_values("number")
    chosen: set[int] = set()
    for _, group in candidates.groupby(_group_of(candidates["p"], _chart_edges(candidates, spec)), sort=True):
        ids = group["trial_id"].to_numpy()
        picks = np.unique(np.linspace(0, len(ids) - 1, min(PER_GROUP, len(ids))).round().astype(int))
        chosen.update(int(i) for i in ids[picks])
    always = candidates["state"] == "RUNNING"
    if best_number is not None:
        always |= candidates["number"] == best_number
    chosen.update(int(i) for i in candidates.loc[always, "trial_id"])
    note = (f"Curves of a sample of {len(chosen):,} of {len(candidates):,} trials: up to {PER_GROUP} per p group, "
            "evenly spread over each group's trials (the best and the running ones always). Counts, the best "
            "trials and the numbers per p use every trial.")
    return CurveSample(tuple(sorted(chosen)), note)


def sample_label(note: str | None) -> str | None:
    """The short form a chart carries: 'sample of 1,102 of 100,000 trials'."""
    if not note:
        return None
    head = note.split(":")[0]  # "Curves of a sample of 1,102 of 100,000 trials"
    return "curves of a " + head[len("Curves of a "):] if head.startswith("Curves of a ") else head


__all__ = ["CURVE_TRIALS_ALL", "PER_GROUP", "CurveSample", "curve_sample", "sample_label"]


IMPORTANCE_TRIALS = 2000  # parameter importance (type II shares, 400 refits) over at most this many completed trials


def importance_sample(trials: pd.DataFrame, limit: int | None = None) -> pd.DataFrame:
    """The trials parameter importance is estimated over: every trial, or in a big study the
    completed ones spread evenly in trial order, at most `limit` (IMPORTANCE_TRIALS): its intervals
    and null refit the model 400 times, and the shares hardly move past a few thousand runs."""
    limit = IMPORTANCE_TRIALS if limit is None else limit
    done = trials[trials["state"] == "COMPLETE"].sort_values("number")
    if len(done) <= limit:
        return trials
    picks = np.unique(np.linspace(0, len(done) - 1, limit).round().astype(int))
    return done.iloc[picks]
