"""Plain values that every layer shares, declared once: how p is read and written, how a value
becomes JSON, how a yes/no is read, and the names under which lpstudy stores things in Optuna.

Nothing here imports torch, Optuna or a database driver: the read side (db/, results/, cli/, app/)
and the training side both build on it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from lpstudy.errors import UserError

# -- names lpstudy stores under in an Optuna study ----------------------------------------------

SPEC_ATTR = "lpstudy"  # the study's user attribute that holds its spec (plain JSON)
SYNTHETIC_ATTR = "synthetic"  # a study attribute: made by lpstudy.study.synthetic, no training run behind it
# The study's system attribute that `create`/`replicate` writes once it has succeeded: the SHA-256 of
# the canonical spec (lpstudy.study.studies.spec_sha256), which a worker given the study file checks.
SPEC_SHA256_ATTR = "lpstudy_spec_sha256"
METRICS_ATTR_PREFIX = "lpstudy_metrics:"  # trial system attributes holding one evaluation each (no SQL)
LEASE_ATTR = "lpstudy_heartbeat"  # a running trial's last beat where Optuna has no heartbeats (lpstudy.db.liveness.Lease)
FIXED_PARAMS_ATTR = "fixed_params"  # Optuna's system attribute of an enqueued trial's parameters
RACE_FOLD_ATTR = "race_fold"  # user attribute of a trial a race enqueued: the fold it runs on (lpstudy.design.intensify)
RACE_OF_ATTR = "race_of"  # ... and the number of the trial that first ran its configuration (lpstudy.study.races)
STATES = ("COMPLETE", "PRUNED", "FAIL", "RUNNING", "WAITING")  # Optuna's trial states, in display order
SPENT_STATES = ("COMPLETE", "PRUNED", "FAIL", "RUNNING")  # the states of trials that spent compute (not WAITING)
# Fields a run file (`lpstudy export`, `lpstudy train --out`) always names, even where they equal
# the preset's: what a reader needs to tell two runs apart at a glance.
RUN_FILE_ALWAYS = ("p", "lr", "gain_init", "fold", "folds", "seed")
REFERENCE_P = 2.0  # QKNorm: the p every other p is compared with by default


def metrics_attr_name(step: int) -> str:
    """The system attribute that holds the evaluation at `step` (sorted by name = by step)."""
    return f"{METRICS_ATTR_PREFIX}{step:08d}"


# -- p ------------------------------------------------------------------------------------------

INF_TEXT = "inf"  # how lpstudy writes p = ∞ (and any ∞) wherever it writes: JSON, YAML, Optuna
_INF_WORDS = frozenset({INF_TEXT, "+inf", "infinity", "+infinity", "∞"})  # what it reads as ∞


class P(float):
    """The norm exponent p of an Lp norm: a float in [1, ∞], never NaN, checked once when it is made.

    `P(value)` takes a number or text ('inf', '∞' for ∞; '1e400' is refused rather than silently
    made ∞) and raises the one-line UserError for anything else; `P(a_p)` is `a_p`, not checked
    again. Where p enters (a flag, a run file, a study's space, an Optuna parameter, a TrainConfig)
    it becomes a P, and everything after takes the P as it is: the model computes with it as the
    float it is. What lpstudy writes, json_safe writes (∞ as the string 'inf')."""

    __slots__ = ()

    def __new__(cls, value: object) -> "P":
        if isinstance(value, P):
            return value
        return super().__new__(cls, _checked_p(value))


def _checked_p(p: object) -> float:
    if isinstance(p, str):
        text = p.strip().lower()
        if text in _INF_WORDS:
            return math.inf
        try:
            p = float(text)
        except ValueError:
            raise UserError(f"p must be a number ≥ 1 or 'inf', got {text!r}") from None
        if p == math.inf:  # text such as 1e400, not ∞'s own word (-inf is below 1: refused as such)
            raise UserError(f"p = {text} overflows a float; write 'inf' for p = ∞")
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise UserError(f"p must be a number ≥ 1 or 'inf', got {p!r}")
    p = float(p)
    if math.isnan(p) or p < 1:
        raise UserError(f"p must be a number ≥ 1 or 'inf' (an Lp norm needs p ≥ 1), got {p}")
    return p


def read_p(value: Any) -> float:
    """p as stored by any version of lpstudy (a number, 'inf', 'Infinity', '∞', None): a float,
    math.inf, or NaN when it cannot be read. For reading a database, where a bad value must not
    stop the page."""
    if value is None or isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip().lower()
    if text in _INF_WORDS:
        return math.inf
    try:
        return float(text)
    except ValueError:
        return math.nan


# How a study's Optuna parameters hold p (lpstudy.design.space encodes it; this is the one decoder):
# a choice among values holds p itself, ∞ as "inf"; a range of p that includes ∞ samples a further
# categorical parameter P_INF_PARAM (True: p = ∞, and no p is sampled) in studies made before
# issue 37; since then one float parameter P_OR_INF_PARAM over the range stretched by a top slice
# that stands for ∞ (lpstudy.design.space.Range: decoding it needs the range, so a trial's user
# attribute `p`, which every reader reads first, holds the effective value).
P_INF_PARAM = "p_inf"
P_OR_INF_PARAM = "p_or_inf"


def is_inf(value: Any) -> bool:
    """Whether a stored value is ∞: the float, or "inf" as lpstudy writes it (any of the spellings
    read_p reads)."""
    return not isinstance(value, bool) and isinstance(value, (int, float, str)) and read_p(value) == math.inf


def p_of_params(params: Mapping[str, Any]) -> float:
    """p as a trial's Optuna parameters hold it (either encoding above): a float, math.inf, or NaN
    where they hold no p."""
    if params.get(P_INF_PARAM) is True:
        return math.inf
    return read_p(params.get("p"))


def format_p(p: float) -> str:
    """p for people: '∞', else the shortest form with three digits at most ('2', '2.5', '3.14')."""
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return "?"
    return "∞" if math.isinf(p) else f"{p:.3g}"


def arm_name(field: str, value: Any) -> str:
    """An arm of a replicate, grid or comparison for people: 'p = 2', 'p = ∞', 'n_layer = 4' (a p
    that is no number as it is written)."""
    if field == "p":
        try:
            return f"p = {format_p(float(value))}"
        except (TypeError, ValueError):
            pass
    return f"{field} = {value}"


# -- numbers and JSON ---------------------------------------------------------------------------

def to_float(value: Any) -> float:
    """A number as a float; NaN for None or anything that is not one (a read must not fail on it)."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def finite_or_none(value: Any) -> float | None:
    """A finite float, else None (NaN and ±∞ have no place in a SQL float column or JSON)."""
    if value is None or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def json_safe(value: Any) -> Any:
    """value as lpstudy writes it (strict JSON): NaN becomes null, ±∞ the strings 'inf'/'-inf'
    (p = ∞ included: the one way ∞ is written), P a plain float, tuples lists,
    numpy and pandas scalars plain Python; recursively through dicts and lists."""
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)) and callable(value.item):
        try:
            value = value.item()  # numpy / pandas scalar
        except (TypeError, ValueError):
            return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return None
        if math.isinf(value):
            return INF_TEXT if value > 0 else "-" + INF_TEXT
        return float(value)  # a P too: YAML writes plain floats only
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


def json_or_text(text: Any) -> Any:
    """A value stored as JSON text (Optuna's value_json columns), decoded; the text itself where it
    is not JSON; None for a missing one (None, or pandas' NaN)."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return None
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def parse_bool(value: Any) -> bool:
    """A yes/no from a flag, YAML or the environment; ValueError for anything else."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a yes/no value: {value!r}")


# -- the method's one formula that configs need without torch ----------------------------------

def default_gain_init(block_size: int) -> float:
    """QKNorm's initial gain, g₀ = log₂(L² − L) for context length L (≈ 16 for L = 256; Henry et
    al., arXiv:2010.04245), which arXiv:2602.05006 keeps for every p."""
    return math.log2(block_size * block_size - block_size)


def format_duration(seconds: float | None) -> str:
    """'45 s', '2 min 54 s', '3 h 10 min', '2.5 days': a duration a person reads at a glance."""
    if seconds is None or seconds != seconds or seconds < 0:
        return "–"
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60} s" if s % 60 else f"{s // 60} min"
    if s < 86400 * 2:
        h, m = divmod(s // 60, 60)
        return f"{h} h {m} min" if m else f"{h} h"
    return f"{seconds / 86400:.1f} days"


def seconds_from_environment(name: str, default: float, meaning: str) -> float:
    """A number of seconds >= 0 from the environment variable `name`, else `default`; UserError (one
    line, saying what it is for: `meaning`) for any other value."""
    import os

    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds >= 0):
        raise UserError(f"{name} must be a number of seconds >= 0 ({meaning}), got {text!r}")
    return seconds
