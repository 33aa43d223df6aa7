"""Parameter importance that measures the parameters, not the design of the study.

What is ranked: the fields the study searches (its spec's space), as each trial stored them. What
is not, and why, said with the result:

  blocking factors  fold and seed (lpstudy.results.cells.REPLICATE_FIELDS) tell the replicates of
                    one configuration apart; they are not causes a user could set. Where they vary,
                    each trial's value is centred within its block (its value minus its block's
                    mean) before anything is ranked, so that a large fold effect is not read as the
                    effect of whatever was run on the easy fold: p's effect is measured within folds.
  derived from p    a field that is a function of p is not a cause of its own: gain_init under
                    `gain_init: matched` (the spec says so, or every trial's gain_rule does).

The ranking is Optuna's PED-ANOVA (no extra dependency) over the completed trials, diverged runs at
their value ln V; with one parameter left there is nothing to rank against and it gets all of it.
Where the values were centred, `p_within` is the share of the centred variation that p's groups
explain (between-group sum of squares over the total, p grouped as the charts group it): on a
p × fold grid, p's sum of squares over p's and the residual's in the two-way analysis of variance.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Sequence

import pandas as pd

from lpstudy.results.analysis.groups import default_p_bins, p_bins, p_positions
from lpstudy.results.cells import REPLICATE_FIELDS

MIN_TRIALS = 4  # fewer completed trials than this: no importance
DEFAULT_PARAMS = ("p", "lr", "gain_init")  # what a study without a readable space searched
LOG_PARAMS = ("lr", "gain_init")  # drawn on a log scale by PED-ANOVA's density estimate
BLOCKING = "a blocking factor: it tells replicates apart"
MATCHED_GAIN = "derived from p under gain_init: matched"


@dataclass(frozen=True)
class Importance:
    """shares: per ranked parameter, its share of the importance (summing to 1, largest first; empty
    when nothing could be ranked, `reason` says why). left_out: field -> why it is not ranked.
    centred_on: the blocking factors the values were centred within. p_within: the share of the
    centred variation p explains (None where nothing was centred)."""

    shares: pd.Series
    left_out: dict = field(default_factory=dict)
    centred_on: tuple = ()
    n_trials: int = 0
    p_within: float | None = None
    reason: str | None = None

    @property
    def empty(self) -> bool:
        return self.shares.empty

    def caption(self) -> str:
        """What was ranked, what was left out and why, in a line a chart carries."""
        if self.empty:  # the chart says why in its middle: here only what it would leave out
            if not self.left_out:
                return ""
            text = "Left out: " + "; ".join(f"{name} ({why})" for name, why in self.left_out.items())
            return text + "."
        else:
            ranked = ", ".join(self.shares.index)
            text = f"Ranked: {ranked}, over {self.n_trials} completed trials"
            if self.centred_on:
                text += f", each value centred within its {' × '.join(self.centred_on)}"
        if self.left_out:
            text += ". Left out: " + "; ".join(f"{name} ({why})" for name, why in self.left_out.items())
        if self.p_within is not None:
            text += (f". Within each {' × '.join(self.centred_on)}, p's groups explain "
                     f"{self.p_within:.0%} of the variation of the final loss")
        return text + "."


def searched_fields(spec: dict | None) -> tuple[str, ...] | None:
    """The fields a study's spec searches (a range or choices), in its space's order; None when the
    spec has no space this version reads."""
    from lpstudy.study.space import SearchSpace

    plain = (spec or {}).get("space")
    if not plain:
        return None
    try:
        space = SearchSpace.from_plain(plain)
    except Exception:  # a space this version cannot read
        return None
    return tuple(param.name for param in space.searched)


def derived_from_p(trials: pd.DataFrame, spec: dict | None) -> dict[str, str]:
    """Fields that are a function of p in this study, with why: gain_init when the spec fixes it to
    `matched`, or when every trial's gain_rule says matched."""
    from lpstudy.training.gain import MATCHED

    entry = ((spec or {}).get("space") or {}).get("gain_init")
    by_spec = isinstance(entry, dict) and entry.get("type") == "fixed" and entry.get("value") == MATCHED
    rules = trials["gain_rule"].dropna() if "gain_rule" in trials else pd.Series(dtype="object")
    by_trials = len(rules) > 0 and bool((rules == MATCHED).all())
    return {"gain_init": MATCHED_GAIN} if by_spec or by_trials else {}


def _varies(frame: pd.DataFrame, name: str) -> bool:
    return name in frame.columns and frame[name].dropna().nunique() > 1


def _blocks(done: pd.DataFrame) -> tuple[str, ...]:
    """The blocking factors to centre within: those that vary, together where every block of their
    combination holds at least two trials, else the first that does alone; () when none does (a
    seed per trial is no block: centring on it would leave nothing)."""
    varying = [name for name in REPLICATE_FIELDS if _varies(done, name)]
    for names in ([tuple(varying)] if len(varying) > 1 else []) + [(name,) for name in varying]:
        sizes = done.groupby(list(names), dropna=False).size()
        if len(sizes) > 1 and int(sizes.min()) >= 2:
            return names
    return ()


def _ped_anova(values: pd.DataFrame, target: pd.Series) -> pd.Series | None:
    """PED-ANOVA importances of `values`' columns for `target` (minimised), normalised; None when
    Optuna cannot estimate them."""
    import optuna
    from optuna.distributions import FloatDistribution

    columns = list(values.columns)
    distributions = {}
    for name in columns:
        low, high = float(values[name].min()), float(values[name].max())
        distributions[name] = FloatDistribution(low, high, log=name in LOG_PARAMS and low > 0)
    frozen = [optuna.trial.create_trial(params=dict(zip(columns, row)), distributions=distributions, value=value)
              for row, value in zip(values.to_numpy().tolist(), target.astype("float64").tolist())]
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.create_study(direction="minimize", storage=optuna.storages.InMemoryStorage())
    finally:
        optuna.logging.set_verbosity(verbosity)
    study.add_trials(frozen)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            found = optuna.importance.get_param_importances(
                study, evaluator=optuna.importance.PedAnovaImportanceEvaluator(), normalize=True)
        except (ValueError, RuntimeError, ZeroDivisionError):
            return None
    return pd.Series(found, dtype="float64").reindex(columns).fillna(0.0)


def p_within_share(done: pd.DataFrame, centred: pd.Series) -> float | None:
    """The share of the centred values' sum of squares that p's groups explain (exact values where
    they fit an axis, else the charts' default bins)."""
    p = done["p"].astype("float64")
    groups = p_bins(p, default_p_bins(p))["p_bin"]
    total = float(((centred - centred.mean()) ** 2).sum())
    if total <= 0 or groups.nunique() < 2:
        return None
    means = centred.groupby(groups).transform("mean")
    return float(((means - centred.mean()) ** 2).sum() / total)


def param_importance(trials: pd.DataFrame, spec: dict | None = None,
                     params: Sequence[str] | None = None) -> Importance:
    """The importance of the fields the study searched (`params`, else its spec's searched fields,
    else p, lr and gain_init) for the trial value, over the COMPLETE trials: blocking factors left
    out and centred within, fields derived from p left out (see the module)."""
    empty_series = pd.Series(dtype="float64", name="importance")
    done = trials[(trials["state"] == "COMPLETE") & trials["value"].notna()] if len(trials) else trials
    candidates = tuple(params) if params is not None else (searched_fields(spec) or DEFAULT_PARAMS)
    left_out: dict[str, str] = {}
    for name in REPLICATE_FIELDS:
        if _varies(done, name):
            left_out[name] = BLOCKING
    for name, why in derived_from_p(done, spec).items():
        if _varies(done, name):
            left_out[name] = why
    columns = [c for c in candidates if c not in left_out and c in done.columns and _varies(done, c)]
    done = done.dropna(subset=columns)  # a trial without one of them (added by hand, an older version) is left out
    columns = [c for c in columns if _varies(done, c)]
    if len(done) < MIN_TRIALS or not columns:
        why = (f"needs at least {MIN_TRIALS} completed trials" if len(done) < MIN_TRIALS
               else "needs a searched parameter that varies")
        return Importance(empty_series, left_out, n_trials=len(done), reason=why)
    blocks = _blocks(done)
    target = done["value"].astype("float64")
    if blocks:
        target = target - target.groupby([done[b] for b in blocks], dropna=False).transform("mean")
    values = done[columns].astype("float64").copy()
    if "p" in values:
        values["p"] = p_positions(values["p"])
    if len(columns) == 1:
        shares = pd.Series({columns[0]: 1.0}, dtype="float64")
    else:
        shares = _ped_anova(values, target)
        if shares is None:
            return Importance(empty_series, left_out, blocks, len(done), reason="PED-ANOVA could not rank them")
    within = p_within_share(done, target) if blocks and "p" in columns else None
    return Importance(shares.sort_values(ascending=False).rename("importance"), left_out, blocks, len(done),
                      None if within is None or math.isnan(within) else within)


__all__ = ["Importance", "derived_from_p", "p_within_share", "param_importance", "searched_fields"]
