"""The fields a search varied, read from each trial as the analyses of p's effect need them.

What is a searched field: the fields the study's spec searches (a range or choices), else p, lr and
gain_init; each read from the trial's own parameter (`param_<name>` in the trials frame) where it
has one, else from the trial attribute of that name, and p always from the trials frame's `p`
column (lpstudy.values: ∞ is ∞ there, however the space sampled it). Left out, with why: the
blocking factors fold and seed (they tell replicates apart: a model holds them as blocks, never
ranks them), a field that is a function of p (gain_init under `gain_init: matched`), and a field
that does not vary among the trials at hand.

Each field has a kind: "p" (finite values on their axis, ∞ a category of its own), "log" (a
positive range searched on a log scale: lr, gain_init), "linear" or "choice" (any values, strings
included, as categories).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from lpstudy.design.spec import StudySpec
from lpstudy.results.analysis.cells import REPLICATE_FIELDS

DEFAULT_PARAMS = ("p", "lr", "gain_init")  # what a study without a readable space searched
BLOCKING = "a blocking factor: it tells replicates apart"
MATCHED_GAIN = "derived from p under gain_init: matched"
CONSTANT = "the same in every trial"
EXACT_LEVELS = 8  # a number with at most this many values, each run at least twice (a grid), keeps them


@dataclass(frozen=True)
class SearchedField:
    """One searched field of the trials at hand: its name, kind and values (indexed like the trials)."""

    name: str
    kind: str  # "p", "log", "linear" or "choice"
    values: pd.Series


@dataclass(frozen=True)
class Searched:
    """The searched fields that vary among the trials (in the space's order), the blocking factors
    that vary, and the fields left out with why."""

    fields: tuple[SearchedField, ...]
    blocks: tuple[str, ...] = ()
    left_out: dict = field(default_factory=dict)

    def names(self) -> list[str]:
        return [f.name for f in self.fields]

    def get(self, name: str) -> SearchedField | None:
        return next((f for f in self.fields if f.name == name), None)

    def values(self, name: str) -> pd.Series:
        """The values of a field known to be searched (KeyError for one that is not)."""
        found = self.get(name)
        if found is None:
            raise KeyError(f"{name} is not among the searched fields {self.names()}")
        return found.values


def space_entries(spec: StudySpec | None) -> dict | None:
    """The spec's searched fields as {name: Range or Choice} (lpstudy.design.space), None when the
    study has no spec or its spec no space this version reads."""
    if spec is None or not spec.space.params:
        return None
    return {param.name: param for param in spec.space.searched}


def searched_fields(spec: StudySpec | None) -> tuple[str, ...] | None:
    """The fields a study's spec searches (a range or choices), in its space's order; None when the
    spec has no space this version reads."""
    entries = space_entries(spec)
    return None if entries is None else tuple(entries)


def derived_from_p(trials: pd.DataFrame, spec: StudySpec | None) -> dict[str, str]:
    """Fields that are a function of p in this study, with why: gain_init when the spec fixes it to
    `matched`, or when every trial's gain_rule says matched."""
    from lpstudy.design.space import Fixed
    from lpstudy.training.gain import MATCHED

    entry = spec.space.get("gain_init") if spec is not None else None
    by_spec = isinstance(entry, Fixed) and entry.value == MATCHED
    rules = trials["gain_rule"].dropna() if "gain_rule" in trials else pd.Series(dtype="object")
    by_trials = len(rules) > 0 and bool((rules == MATCHED).all())
    return {"gain_init": MATCHED_GAIN} if by_spec or by_trials else {}


def field_values(trials: pd.DataFrame, name: str) -> pd.Series | None:
    """A field's value in each trial: p from the `p` column; others from the trial's parameter
    (param_<name>) where it has one, else its attribute; None where the frame has neither."""
    if name == "p":
        return trials["p"].astype("float64") if "p" in trials else None
    param, attr = f"param_{name}", name
    if param in trials and attr in trials:
        return trials[param].where(trials[param].notna(), trials[attr])
    if param in trials:
        return trials[param]
    return trials[attr] if attr in trials else None


def _numeric(values: pd.Series) -> pd.Series | None:
    present = values.dropna()
    if present.map(lambda v: isinstance(v, bool) or isinstance(v, str)).any():
        return None
    converted = pd.to_numeric(values, errors="coerce")
    return converted.astype("float64") if converted.notna().sum() == len(present) else None


def _kind(name: str, numbers: pd.Series | None, entry) -> str:
    from lpstudy.design.space import LOG_SCALE_FIELDS, Choice, Range

    if name == "p":
        return "p"
    if numbers is None or isinstance(entry, Choice) and not all(isinstance(c, (int, float)) for c in entry.choices):
        return "choice"
    positive = bool((numbers.dropna() > 0).all())
    if isinstance(entry, Choice):
        return "choice" if numbers.dropna().nunique() <= 8 else "linear"
    log = entry.log if isinstance(entry, Range) else name in LOG_SCALE_FIELDS
    return "log" if log and positive else "linear"


def varies(values: pd.Series) -> bool:
    return values.dropna().astype(str).nunique() > 1


def read_searched(trials: pd.DataFrame, spec: StudySpec | None, params=None) -> Searched:
    """The searched fields of these trials (see the module): `params` names them, else the spec,
    else DEFAULT_PARAMS."""
    entries = space_entries(spec) or {}
    names = tuple(params) if params is not None else (tuple(entries) or DEFAULT_PARAMS)
    left_out: dict[str, str] = {}
    for name in REPLICATE_FIELDS:
        values = field_values(trials, name)
        if values is not None and varies(values):
            left_out[name] = BLOCKING
    derived = derived_from_p(trials, spec)
    for name, why in derived.items():  # said even where the spec does not search it: it varies with p
        values = field_values(trials, name)
        if values is not None and varies(values):
            left_out[name] = why
    fields = []
    for name in names:
        if name in left_out:
            continue
        values = field_values(trials, name)
        if values is None:
            continue
        if name in derived:
            continue
        if not varies(values):
            if name in entries:
                left_out[name] = CONSTANT
            continue
        numbers = _numeric(values) if name != "p" else values.astype("float64")
        kind = _kind(name, numbers, entries.get(name))
        fields.append(SearchedField(name, kind, numbers if kind != "choice" else values.astype("object")))
    return Searched(tuple(fields), blocks_of(trials, [name for name in REPLICATE_FIELDS if name in left_out]),
                    left_out)


def blocks_of(trials: pd.DataFrame, varying: list[str]) -> tuple[str, ...]:
    """The blocking factors a model holds: those that vary, together where every block of their
    combination holds at least two trials, else the first that does alone; () when none does (a
    seed per trial is no block: holding it would leave nothing to explain)."""
    for names in ([tuple(varying)] if len(varying) > 1 else []) + [(name,) for name in varying]:
        sizes = trials.groupby(list(names), dropna=False).size()
        if len(sizes) > 1 and int(sizes.min()) >= 2:
            return names
    return ()


def groups_of(f: SearchedField, levels: int) -> pd.Series:
    """A field's values as categories for an analysis of variance: a choice as it is; a number with
    at most `levels` distinct values (or a grid's: up to EXACT_LEVELS, each run twice) as they are, else its quantile groups (the same on any monotone
    scale, so log or linear makes no difference); p's finite values the same way and ∞ a category
    of its own whatever number stands for it."""
    values = f.values
    if f.kind == "choice":
        return values.map(lambda v: "—" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v))
    numbers = values.astype("float64")
    infinite = np.isinf(numbers)
    finite = numbers[~infinite & numbers.notna()]
    out = pd.Series("—", index=values.index, dtype="object")
    counts = finite.value_counts()
    if len(counts) <= levels or len(counts) <= EXACT_LEVELS and int(counts.min()) >= 2:  # a grid's values
        out[finite.index] = finite.map(lambda v: f"{v:.6g}")
    else:
        ranks = finite.rank(method="average", pct=True)
        out[finite.index] = np.minimum((ranks * levels).apply(math.ceil), levels).map(lambda q: f"q{q}")
    out[infinite] = "∞"
    return out


def rank_correlation(a: pd.Series, b: pd.Series) -> float | None:
    """Spearman's rank correlation of two numeric series over the rows where both are present
    (∞ ranks above every finite value, as it should); None with fewer than 3 rows or no spread."""
    from scipy.stats import spearmanr

    both = pd.DataFrame({"a": a, "b": b}).dropna()
    if len(both) < 3 or both["a"].nunique() < 2 or both["b"].nunique() < 2:
        return None
    value = spearmanr(both["a"].to_numpy(), both["b"].to_numpy()).statistic
    return None if value is None or math.isnan(value) else float(value)


__all__ = ["BLOCKING", "DEFAULT_PARAMS", "MATCHED_GAIN", "Searched", "SearchedField", "derived_from_p",
           "field_values", "groups_of", "rank_correlation", "read_searched", "searched_fields", "space_entries"]
