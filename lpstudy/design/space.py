"""The search space, declared once: which training fields a study searches, over what, and how a
trial's parameters become the overrides of a run.

Every TrainConfig field (except `device`, which each worker chooses) can be fixed or searched. A
field's entry, in a study YAML under `space:` or on the command line, is one of

    2.5            fixed                          (--set FIELD=VALUE, --p 2.5)
    [1, 2, inf]    a choice among values          ("1,2,inf" on the command line)
    {low: 1e-4, high: 1e-2, log: true}            a range ("1e-4:1e-2:log"); `step:` for a grid
                                                  of values, integers for integer fields
    {low: 1, high: 4, inf: true}                  p only: the range plus p = ∞ ("1:4,inf")

Unless a search study says otherwise, the fields declared with a default search range
(lpstudy.training.fields: p, the learning rate and the gain's initial value) are searched over
DEFAULT_SPACE. Optuna's parameter names are the field names, except a range of p that includes ∞:
it is one float parameter `p_or_inf` over the range stretched by a top slice, INF_SHARE (1/8) of
the stretched axis, that stands for ∞. Every sampler (random, TPE, CMA-ES, GP) and the spread phase
then draw ∞ at that one share and model it beside the range; a 50/50 switch beside p (`p_inf`,
what studies made before this wrote: values.p_of_params still reads it) gave ∞ half of random
search's trials whatever the range. Each trial's user attribute `p` holds the effective value.
Every value of p lpstudy writes (a choice among Optuna's parameters, the stored spec, a trial's
user attribute `p`, always the effective value) writes ∞ as the string "inf" (values.json_safe).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lpstudy.errors import UserError
from lpstudy.training.config import coerce_field, resolve_config
from lpstudy.training.fields import FIELDS
from lpstudy.values import P_INF_PARAM, P, P_OR_INF_PARAM, json_safe, parse_bool, read_p

if TYPE_CHECKING:
    from optuna.trial import BaseTrial

# The space of a search study unless its YAML or flags say otherwise: every field declared with a
# default search range, on its scale.
DEFAULT_SPACE: dict[str, Any] = {
    f.name: {"low": f.search[0], "high": f.search[1], **({"log": True} if f.log else {})}
    for f in FIELDS.values() if f.search is not None}
# Ranges of these fields are searched on a log scale unless `log: false` is given.
LOG_SCALE_FIELDS = tuple(f.name for f in FIELDS.values() if f.log)
# Chosen by each worker (--devices), never by a study.
WORKER_FIELDS = tuple(f.name for f in FIELDS.values() if f.by_worker)
# Of a range of p that includes ∞, the top slice of its axis that stands for ∞: one share, whichever
# sampler draws it and in the spread phase (one spread trial in 8).
INF_SHARE = 1 / 8
# A grid study enqueues every cell as a trial: beyond this many, a typo, not a plan.
MAX_GRID_CELLS = 100_000


def _check_field(name: str) -> None:
    if name in WORKER_FIELDS:
        raise UserError(f"{name} is chosen by each worker (lpstudy worker --devices), not by the study's space")
    if name not in FIELDS:
        known = ", ".join(sorted(set(FIELDS) - set(WORKER_FIELDS)))
        from lpstudy.names import did_you_mean

        raise UserError(f"unknown field {name!r} in the search space{did_you_mean(name, set(FIELDS) - set(WORKER_FIELDS))} "
                        f"(known fields: {known})")


@dataclass(frozen=True)
class Fixed:
    name: str
    value: Any

    def to_plain(self) -> dict[str, Any]:
        return {"type": "fixed", "value": json_safe(self.value)}

    def suggest(self, trial: BaseTrial) -> Any:
        return self.value

    def optuna_params(self, value: Any) -> dict[str, Any]:
        return {}  # a fixed field is no parameter of Optuna's

    def describe(self) -> str:
        return f"{self.name}={_fmt(self.value)}"


@dataclass(frozen=True)
class Choice:
    name: str
    choices: tuple[Any, ...]

    def to_plain(self) -> dict[str, Any]:
        return {"type": "choice", "choices": json_safe(self.choices)}

    def suggest(self, trial: BaseTrial) -> Any:
        return coerce_field(self.name, trial.suggest_categorical(self.name, json_safe(self.choices)))

    def optuna_params(self, value: Any) -> dict[str, Any]:
        return {self.name: json_safe(value)}

    def describe(self) -> str:
        return f"{self.name} ∈ {{{', '.join(_fmt(c) for c in self.choices)}}}"


@dataclass(frozen=True)
class Range:
    name: str
    low: float
    high: float
    log: bool = False
    step: float | None = None
    integer: bool = False
    with_inf: bool = False  # p only: p = ∞ is a further choice

    def to_plain(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": "range", "low": json_safe(self.low), "high": json_safe(self.high),
                               "log": self.log}
        if self.step is not None:
            out["step"] = self.step
        if self.with_inf:
            out["inf"] = True
        return out

    @property
    def stretched_high(self) -> float:
        """The top of `p_or_inf`'s axis: the range stretched on its own scale so that the slice above
        its high, which stands for ∞, is INF_SHARE of it."""
        stretch = INF_SHARE / (1 - INF_SHARE)
        if self.log:
            return math.exp(math.log(self.high) + stretch * (math.log(self.high) - math.log(self.low)))
        if self.step is not None:  # whole steps: ∞ takes as many grid values as its share asks, one at least
            values = round((self.high - self.low) / self.step) + 1
            return self.high + max(1, round(values * stretch)) * self.step
        return self.high + stretch * (self.high - self.low)

    def value_of(self, params: dict[str, Any]) -> Any:
        """The field's value from a trial's Optuna parameters (as suggest() reads them); with ∞, the
        new encoding and the old switch (`p_inf`) alike."""
        if not self.with_inf:
            return params[self.name]
        if P_OR_INF_PARAM in params:
            x = float(params[P_OR_INF_PARAM])
            return math.inf if x > self.high else x
        return math.inf if params.get(P_INF_PARAM) is True else params[self.name]

    def suggest(self, trial: BaseTrial) -> Any:
        if self.with_inf:
            return self.value_of({P_OR_INF_PARAM: trial.suggest_float(
                P_OR_INF_PARAM, self.low, self.stretched_high, log=self.log, step=self.step)})
        if self.integer:
            return trial.suggest_int(self.name, int(self.low), int(self.high), log=self.log,
                                     step=int(self.step or 1))
        return trial.suggest_float(self.name, self.low, self.high, log=self.log, step=self.step)

    def optuna_params(self, value: Any) -> dict[str, Any]:
        """The parameters that make suggest() return value: with ∞, `p_or_inf` (∞: its top)."""
        if not self.with_inf:
            return {self.name: value}
        return {P_OR_INF_PARAM: self.stretched_high if math.isinf(float(value)) else float(value)}

    def describe(self) -> str:
        scale = " log" if self.log else ""
        step = f" step {_fmt(self.step)}" if self.step is not None else ""
        inf = " ∪ {∞}" if self.with_inf else ""
        return f"{self.name} ∈ [{_fmt(self.low)}, {_fmt(self.high)}]{scale}{step}{inf}"


Param = Fixed | Choice | Range
# A grid cell as a hashable key (SearchSpace.cell_of): each choice field's name and its value as stored.
CellKey = tuple[tuple[str, Any], ...]


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:g}"
    return str(value)


def _number(name: str, value: Any, what: str) -> float:
    if isinstance(value, bool) or value is None:
        raise UserError(f"{name}: {what} must be a number, got {value!r}")
    if isinstance(value, str) and read_p(value) == math.inf:  # "∞" too
        return math.inf
    try:
        return float(value)
    except (TypeError, ValueError):
        raise UserError(f"{name}: {what} must be a number, got {value!r}") from None


def parse_text(name: str, text: str) -> Any:
    """A field's entry in command-line form: 'LOW:HIGH[:log|:linear]' (p: ',inf' or '+inf' adds ∞),
    'A,B,C' (choices) or a single value (fixed). Returns the YAML-form entry."""
    text = text.strip()
    if ":" in text:
        body, with_inf = text, False
        for suffix in (",inf", "+inf", ",∞", "+∞"):
            if body.lower().endswith(suffix):
                body, with_inf = body[: -len(suffix)], True
        parts = [s.strip() for s in body.split(":")]
        entry: dict[str, Any] = {}
        if parts and parts[-1].lower() in ("log", "linear"):
            entry["log"] = parts.pop().lower() == "log"
        if len(parts) != 2 or not all(parts):
            raise UserError(f"{name}: a range is LOW:HIGH or LOW:HIGH:log, got {text!r}")
        entry["low"], entry["high"] = parts
        if with_inf:
            entry["inf"] = True
        return entry
    if "," in text:
        return [s.strip() for s in text.split(",") if s.strip()]
    return text


def parse_param(name: str, entry: Any) -> Param:
    """One field's entry (YAML form, command-line text, or the plain data a study stores)."""
    _check_field(name)
    if isinstance(entry, str) and (":" in entry or "," in entry):
        entry = parse_text(name, entry)
    if isinstance(entry, (list, tuple)):
        entry = {"choices": list(entry)}
    if not isinstance(entry, dict):
        return Fixed(name, coerce_field(name, entry))
    keys = set(entry) - {"type"}
    allowed = {"low", "high", "log", "step", "inf", "choices", "value"}
    unknown = sorted(keys - allowed)
    if unknown:
        raise UserError(f"{name}: unknown key(s) {', '.join(unknown)}; use value, choices, or low/high "
                        "with optional log, step (and inf for p)")
    if "value" in entry:
        if keys != {"value"}:
            raise UserError(f"{name}: a fixed value takes no other keys")
        return Fixed(name, coerce_field(name, entry["value"]))
    if "choices" in entry:
        if keys != {"choices"}:
            raise UserError(f"{name}: choices take no other keys")
        return _parse_choice(name, entry["choices"])
    if "low" not in entry or "high" not in entry:
        raise UserError(f"{name}: a range needs both low and high (or give value: or choices:)")
    return _parse_range(name, entry)


def _parse_choice(name: str, choices: Any) -> Choice:
    if not isinstance(choices, (list, tuple)) or not choices:
        raise UserError(f"{name}: choices must be a non-empty list")
    values: list[Any] = []
    for c in choices:
        value = coerce_field(name, c)
        if value not in values:
            values.append(value)
    return Choice(name, tuple(values))


def _parse_range(name: str, entry: dict[str, Any]) -> Range:
    field = FIELDS[name]
    if not field.numeric:
        raise UserError(f"{name} is a {field.type.__name__} field: give a value or a list of choices, not a range")
    low = _number(name, entry["low"], "low")
    high = _number(name, entry["high"], "high")
    with_inf = entry.get("inf", False)
    if not isinstance(with_inf, bool):  # YAML's own true/false only: bool("no") is True
        raise UserError(f"{name}: inf must be true or false, got {with_inf!r}")
    if with_inf and field.type is not P:
        raise UserError(f"{name}: only p can include inf")
    if field.type is P:
        low = P(low)
        if math.isinf(high):
            raise UserError("p: a range's high must be finite; add p = ∞ with `inf: true` (or '1:4,inf')")
        high = P(high)
    elif not (math.isfinite(low) and math.isfinite(high)):
        raise UserError(f"{name}: low and high must be finite numbers")
    if low > high:
        raise UserError(f"{name}: low ({_fmt(low)}) is above high ({_fmt(high)}); swap them")
    try:
        log_value = parse_bool(entry.get("log", name in LOG_SCALE_FIELDS))
    except ValueError:
        raise UserError(f"{name}: log must be true or false, got {entry['log']!r}") from None
    step = entry.get("step")
    if step is not None:
        step = _number(name, step, "step")
        if not step > 0:
            raise UserError(f"{name}: step must be positive, got {_fmt(step)}")
        if log_value:
            raise UserError(f"{name}: a range cannot have both log and step")
    if log_value and low <= 0:
        raise UserError(f"{name}: a log-scale range needs low > 0, got {_fmt(low)}")
    integer = field.type is int
    if integer:
        for what, v in (("low", low), ("high", high), ("step", step)):
            if v is not None and not float(v).is_integer():
                raise UserError(f"{name} is an integer field: {what} must be an integer, got {_fmt(v)}")
        low, high = int(low), int(high)
        step = int(step) if step is not None else None
    # the endpoints must be valid values of the field
    coerce_field(name, low)
    coerce_field(name, high)
    return Range(name, low, high, log=log_value, step=step, integer=integer, with_inf=with_inf)


@dataclass(frozen=True)
class SearchSpace:
    """The fields a study fixes or searches, in order. Build with from_mapping; store with to_plain."""

    params: tuple[Param, ...]

    @classmethod
    def from_mapping(cls, mapping: dict[str, Any] | None, defaults: dict[str, Any] | None = None) -> "SearchSpace":
        """Parse {field: entry}; fields of `defaults` not in mapping are added first."""
        merged: dict[str, Any] = dict(defaults or {})
        if mapping is not None and not isinstance(mapping, dict):
            raise UserError(f"the space must be a mapping of field: entry, got {type(mapping).__name__}")
        merged.update(mapping or {})
        return cls(tuple(parse_param(str(name), entry) for name, entry in merged.items()))

    @classmethod
    def from_plain(cls, plain: dict[str, Any]) -> "SearchSpace":
        return cls.from_mapping(plain)

    def to_plain(self) -> dict[str, Any]:
        return {p.name: p.to_plain() for p in self.params}

    def __contains__(self, name: str) -> bool:
        return any(p.name == name for p in self.params)

    def get(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)

    @property
    def fixed(self) -> dict[str, Any]:
        return {p.name: p.value for p in self.params if isinstance(p, Fixed)}

    @property
    def searched(self) -> tuple[Param, ...]:
        return tuple(p for p in self.params if not isinstance(p, Fixed))

    def suggest(self, trial: BaseTrial) -> dict[str, Any]:
        """The run's overrides for an Optuna trial: fixed values and sampled (or enqueued) ones."""
        return {p.name: p.suggest(trial) for p in self.params}

    def describe(self) -> str:
        return "; ".join(p.describe() for p in self.params) or "(preset values only)"

    def validate(self, preset: str) -> None:
        """Refuse a space that cannot be sampled into valid runs: every fixed value, and every
        range's ends and every choice, with the other fields fixed, must make a valid config."""
        fixed = self.fixed
        resolve_config(preset, fixed)
        for param in self.searched:
            if isinstance(param, Choice):
                corners = list(param.choices)
            elif isinstance(param, Range):
                corners = [param.low, param.high] + ([math.inf] if param.with_inf else [])
            else:  # searched() holds no Fixed
                raise TypeError(f"{param.name}: a fixed value among the searched fields")
            for value in corners:
                try:
                    resolve_config(preset, {**fixed, param.name: value})
                except UserError as exc:
                    raise UserError(f"{param.name} = {_fmt(value)} in the space gives an invalid run: {exc}") from None

    # -- grids ---------------------------------------------------------------------------------
    def grid_cells(self) -> list[dict[str, Any]]:
        """Every combination of the choices (fields' values), for a grid study; ranges are refused."""
        ranges = [p.name for p in self.params if isinstance(p, Range)]
        if ranges:
            raise UserError(f"a grid needs a list of choices for every searched field; "
                            f"{', '.join(ranges)} {'is a range' if len(ranges) == 1 else 'are ranges'}")
        choices = [p for p in self.params if isinstance(p, Choice)]
        if not choices:
            raise UserError("a grid needs at least one field with a list of choices")
        size = math.prod(len(c.choices) for c in choices)
        if size > MAX_GRID_CELLS:
            raise UserError(f"the grid has {size:,} cells ({' × '.join(str(len(c.choices)) for c in choices)}); "
                            f"at most {MAX_GRID_CELLS:,} can be enqueued")
        return [dict(zip([c.name for c in choices], combo))
                for combo in itertools.product(*(c.choices for c in choices))]

    def optuna_params(self, values: dict[str, Any]) -> dict[str, Any]:
        """Fields' values (a grid cell, a run's overrides) as the Optuna parameters from which
        suggest() gives them back (for enqueue_trial, or a trial written by hand)."""
        return {key: encoded for param in self.params if param.name in values
                for key, encoded in param.optuna_params(values[param.name]).items()}

    def cell_of(self, params: dict[str, Any]) -> CellKey:
        """The grid cell a trial's Optuna parameters belong to, as a hashable key."""
        return tuple((c.name, json_safe(coerce_field(c.name, params[c.name])) if c.name in params else None)
                     for c in self.params if isinstance(c, Choice))


def describe_overrides(overrides: dict[str, Any], names: tuple[str, ...] | None = None) -> str:
    """'p=2.5 lr=0.001 gain_init=10' for the given (or all) fields, floats to 4 significant digits."""
    keys = names if names is not None else tuple(overrides)

    def short(value: Any) -> str:
        if isinstance(value, float) and math.isfinite(value):
            return f"{value:.4g}"
        return _fmt(value)

    return " ".join(f"{k}={short(overrides[k])}" for k in keys if k in overrides)
