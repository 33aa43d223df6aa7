"""Parameter importance that measures the parameters, not the design of the study.

Each searched field (lpstudy.results.analysis.searched: every field the spec searches, string
choices included, read from the trial's parameters) enters one least-squares model of the final
loss as a factor: a choice as its values, a number as its quantile groups, p as the groups of its
finite values with ∞ a group of its own (so where ∞ is stored makes no difference). The blocking
factors (fold, seed) enter the model too, and are never ranked. A field's importance is its type II
sum of squares (what it explains beyond every other field and the blocks: Langsrud, "ANOVA for
unbalanced data: Use Type II instead of Type III sums of squares", Statistics and Computing 2003;
statsmodels' `anova_lm(typ=2)` gives the same numbers) as a share of the loss's variation within
blocks. On an unbalanced search this is what the field does with the others held apart: a field
merely sampled together with an important one gets little (where the two are so tied that nothing
is left apart, both get little, and p's surrogate profile says it cannot separate them).

With it: a 95 % bootstrap interval per share (trials resampled, the model refitted), and a null
reference: the largest share any field reaches when the losses are shuffled among the trials
(within blocks), 95th percentile. A bar below that line is what noise alone gives. Fewer completed
trials than MIN_TRIALS: no shares at all, and the reason says why. Diverged runs are left out (their
value ln V is no loss)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd

from lpstudy.results.analysis.searched import (  # noqa: F401 - read here by older callers
    BLOCKING, MATCHED_GAIN, Searched, derived_from_p, groups_of, read_searched, searched_fields)
from lpstudy.design.spec import StudySpec
from lpstudy.results.analysis.selection import successful

MIN_TRIALS = 30  # fewer completed runs than this: no importance (the shares would be what noise gives)
LEVELS = 4  # a number's quantile groups (3 below 60 trials), p's finite groups likewise
BOOTSTRAP = 200
SHUFFLES = 200
SEED = 0
TITLE = "Parameter importance (type II sums of squares)"


@dataclass(frozen=True)
class Importance:
    """shares: per ranked field, the share of the loss's variation (within blocks) it explains
    beyond the other fields (largest first; empty when nothing could be ranked, `reason` says why);
    low/high: its 95 % bootstrap interval; null: the largest share shuffled losses give (95th
    percentile). left_out: field -> why it is not ranked. adjusted_for: the blocking factors in
    the model."""

    shares: pd.Series
    left_out: dict = field(default_factory=dict)
    adjusted_for: tuple = ()
    n_trials: int = 0
    low: pd.Series = field(default_factory=lambda: pd.Series(dtype="float64"))
    high: pd.Series = field(default_factory=lambda: pd.Series(dtype="float64"))
    null: float | None = None
    reason: str | None = None

    @property
    def empty(self) -> bool:
        return self.shares.empty

    def caption(self) -> str:
        """What was ranked, what was left out and why, in a line a chart carries."""
        parts = []
        if not self.empty:
            text = (f"Share of the final loss's variation each field explains beyond the others, over "
                    f"{self.n_trials:,} completed runs, with 95 % bootstrap intervals")
            if self.adjusted_for:
                text += f", within each {' × '.join(self.adjusted_for)}"
            if self.null is not None:
                text += f"; shuffled losses reach {self.null:.0%} (dashed): a bar below it is noise"
            parts.append(text)
        if self.left_out:
            parts.append("Left out: " + "; ".join(f"{name} ({why})" for name, why in self.left_out.items()))
        return ". ".join(parts) + ("." if parts else "")

    def to_answer(self) -> dict:
        """The JSON-ready `importance` of lpstudy.results.answers."""
        def plain(series):
            return {str(k): float(v) for k, v in series.items()}

        return {"shares": plain(self.shares), "low": plain(self.low), "high": plain(self.high),
                "null": self.null, "reason": self.reason or "", "left_out": dict(self.left_out),
                "n_trials": self.n_trials}


def _dummies(groups: pd.Series) -> np.ndarray:
    """Treatment-coded columns of a factor (its first level the baseline)."""
    codes, levels = pd.factorize(groups, sort=True)
    if len(levels) < 2:
        return np.zeros((len(groups), 0))
    return (codes[:, None] == np.arange(1, len(levels))[None, :]).astype("float64")


def _rss(y: np.ndarray, blocks: list[np.ndarray]) -> float:
    x = np.column_stack([np.ones(len(y)), *blocks]) if blocks else np.ones((len(y), 1))
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    residual = y - x @ coef
    return float(residual @ residual)


def type2_shares(y: np.ndarray, factors: dict[str, np.ndarray], blocks: list[np.ndarray]) -> dict[str, float]:
    """Each factor's type II sum of squares (the residual sum of squares of the main-effects model
    without it, less the full model's) over the residual sum of squares of the blocks alone."""
    total = _rss(y, blocks)
    everything = [*blocks, *factors.values()]
    full = _rss(y, everything)
    out = {}
    for name, columns in factors.items():
        others = [*blocks, *(c for n, c in factors.items() if n != name)]
        out[name] = max(0.0, _rss(y, others) - full) / total if total > 0 else 0.0
    return out


def param_importance(trials: pd.DataFrame, spec: StudySpec | None = None,
                     params: Sequence[str] | None = None, bootstrap: int = BOOTSTRAP,
                     shuffles: int = SHUFFLES) -> Importance:
    """The importance of the fields the study searched (`params`, else its spec's searched fields,
    else p, lr and gain_init) for the final loss of the completed runs that did not diverge (see
    the module). Its 400 small least-squares fits run on one BLAS thread (more only wait on each
    other)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return _importance(trials, spec, params, bootstrap, shuffles)


def _importance(trials: pd.DataFrame, spec: StudySpec | None, params: Sequence[str] | None, bootstrap: int,
                shuffles: int) -> Importance:
    empty = pd.Series(dtype="float64", name="importance")
    done = successful(trials) if len(trials) else trials.assign(loss=pd.Series(dtype="float64"))
    searched: Searched = read_searched(done, spec, params)
    left_out = dict(searched.left_out)
    n = len(done)
    if n < MIN_TRIALS:
        return Importance(empty, left_out, searched.blocks, n, reason=(
            f"{n} completed run{'s' if n != 1 else ''}: importance needs at least {MIN_TRIALS}, with fewer "
            "any ranking of the fields is what noise gives"))
    if not searched.fields:
        return Importance(empty, left_out, searched.blocks, n, reason="no searched field varies among the runs")
    levels = LEVELS if n >= 60 else 3
    factors = {f.name: _dummies(groups_of(f, levels)) for f in searched.fields}
    blocks = [_dummies(done[name].astype(str)) for name in searched.blocks]
    y = done["loss"].to_numpy(dtype="float64")
    rng = np.random.default_rng(SEED)
    point = type2_shares(y, factors, blocks)
    draws = []
    for _ in range(bootstrap):
        rows = rng.integers(0, n, n)
        draws.append(type2_shares(y[rows], {k: v[rows] for k, v in factors.items()}, [b[rows] for b in blocks]))
    block_ids = (done[list(searched.blocks)].astype(str).agg("/".join, axis=1).to_numpy() if searched.blocks
                 else np.zeros(n, dtype=object))
    largest = []
    for _ in range(shuffles):
        shuffled = y.copy()
        for block in pd.unique(block_ids):
            where = np.flatnonzero(block_ids == block)
            shuffled[where] = y[rng.permutation(where)]
        largest.append(max(type2_shares(shuffled, factors, blocks).values()))
    draws_frame = pd.DataFrame(draws)
    shares = pd.Series(point, dtype="float64").sort_values(ascending=False).rename("importance")
    return Importance(shares, left_out, searched.blocks, n,
                      low=draws_frame.quantile(0.025).reindex(shares.index),
                      high=draws_frame.quantile(0.975).reindex(shares.index),
                      null=float(np.quantile(largest, 0.95)) if largest else None)


__all__ = ["Importance", "MIN_TRIALS", "TITLE", "derived_from_p", "param_importance", "searched_fields",
           "type2_shares"]
