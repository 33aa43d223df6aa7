"""A study's spec: what it searches and how, read from a study YAML and flags, validated before
anything is written. Stored as plain JSON in the Optuna study's user attribute "lpstudy"
(lpstudy.values.SPEC_ATTR), so that every worker, `status`, `export` and the dashboard read the
same space, preset, sampler and pruner; the study's user attributes "kind" and "preset" repeat two
of its keys as plain strings.

Samplers: "tpe" (the default; multivariate, constant liar: parallel workers do not all sample the
same point; it models ranges, choices and p = ∞), "cmaes" (CMA-ES: ranges, p = ∞ as the top slice
of p's axis; choices it draws at random), "random", and "grid": every cell of the space's choices is enqueued
once as a WAITING trial, and workers only pop waiting trials. Pruners: "none" (the default),
"sha" (successive halving), "median", "hyperband"; they read the validation loss reported at each
evaluation. A search's first `spread_trials` trials are spread over the space and never pruned
(lpstudy.study.spread). The defaults are the method chosen on the replay benchmark's suite of grids
(`lpstudy replay --suite`, docs/search-cost.md). Plain Python (no Optuna, no torch).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lpstudy.errors import UserError
from lpstudy.files import read_yaml_mapping
from lpstudy.design.intensify import Intensifier, RaceReserve
from lpstudy.design.options import OPTIONS
from lpstudy.design.space import DEFAULT_SPACE, Fixed, SearchSpace
from lpstudy.training.bounds import FIELD_BOUNDS
from lpstudy.training.config import TrainConfig, get_preset, resolve_config, seeds_inside
from lpstudy.design.until_decided import UntilDecided, refuse_beside_stages
from lpstudy.values import REFERENCE_P, format_p, P, json_safe

SPEC_VERSION = 1
KINDS = ("search", "replicate")
SPACE_SHORTCUTS = ("fold", "folds", "seed")  # a study YAML's shortcuts for entries of its space
# The keys of a study YAML: its space, the shortcuts, and every study option (lpstudy.design.options).
STUDY_FILE_KEYS = ("space", *OPTIONS, *SPACE_SHORTCUTS, "kind", "p")  # kind: replicate with its p: list


def _declared_options(cls: type) -> type:
    """Give the class (before @dataclass) a field for each study option (lpstudy.design.options),
    with its default, after the fields it declares itself. A reader (and a type checker) sees them
    written out in lpstudy/design/spec_fields.py."""
    own = dict(cls.__annotations__)
    cls.__annotations__ = {"space": own.pop("space"), **{o.name: (o.type | None if o.optional else o.type)
                                                         for o in OPTIONS.values()}, **own}
    for option in OPTIONS.values():
        setattr(cls, option.name, dataclasses.field(default=option.default, metadata={"help": option.help}))
    return cls


if TYPE_CHECKING:  # the option fields written out (generated from OPTIONS, checked by tests/test_types.py)
    from lpstudy.design.spec_fields import DeclaredOptions
else:
    DeclaredOptions = object


@dataclass
@_declared_options
class StudySpec(DeclaredOptions):
    """What a study searches and how: its space, the study options (each declared once in
    lpstudy.design.options), and what the kind of study adds. Stored as plain data in the study's
    user attribute 'lpstudy'."""

    space: SearchSpace
    kind: str = "search"
    folds: int = 10  # the K of K-fold cross-validation, read off the space (validate)
    p_values: list[P] | None = None  # replicate: the grid's p values
    n_cells: int | None = None  # grid: the number of cells
    # replicate --until-decided: the folds run in stages and an arm gets no more once decided
    # (lpstudy.study.stages); None: every cell at once
    until_decided: UntilDecided | None = None

    @property
    def is_grid(self) -> bool:
        return self.sampler == "grid"

    def to_plain(self) -> dict[str, Any]:
        out = {"version": SPEC_VERSION, **{f.name: getattr(self, f.name) for f in dataclasses.fields(self)}}
        out["space"] = self.space.to_plain()
        if self.p_values is None:
            del out["p_values"]
        else:
            out["p_values"] = json_safe(self.p_values)
        for option in OPTIONS.values():
            if option.written_when_set and out[option.name] == option.default:
                del out[option.name]
        if self.until_decided is None:  # written only when set: every other spec's form, and so its SHA-256, is unchanged
            del out["until_decided"]
        else:
            out["until_decided"] = self.until_decided.to_plain()
        return out

    def first_round_cells(self) -> list[dict[str, Any]] | None:
        """A sequential replicate's cells of its first round (folds below its first round's size);
        None for any other grid (every cell at once)."""
        if not self.until_decided:
            return None
        first = self.until_decided.first
        return [cell for cell in self.space.grid_cells() if int(cell["fold"]) < first]

    @classmethod
    def from_plain(cls, plain: dict[str, Any]) -> "StudySpec":
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in plain.items() if k in known}
        values["space"] = SearchSpace.from_plain(plain.get("space") or {})
        if values.get("p_values") is not None:
            values["p_values"] = [P(p) for p in values["p_values"]]
        values["until_decided"] = UntilDecided.from_plain(values.get("until_decided"))
        return cls(**values)

    def validate(self) -> "StudySpec":
        """Refuse what cannot run (UserError with the reason); fill in n_cells for a grid."""
        get_preset(self.preset)
        if self.kind not in KINDS:
            raise UserError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        for option in OPTIONS.values():
            setattr(self, option.name, option.checked(getattr(self, option.name)))
        if self.n_trials is not None and self.spread_trials > self.n_trials:
            self.spread_trials = self.n_trials  # a spread trial past the target would wait for ever
        if self.grace_period <= self.heartbeat_interval:
            raise UserError(f"grace_period ({self.grace_period} s) must be longer than heartbeat_interval "
                            f"({self.heartbeat_interval} s), or live trials would be failed")
        folds = self.space.get("folds")
        if folds is not None and not isinstance(folds, Fixed):
            raise UserError("folds must be one fixed number (the K of K-fold cross-validation), not searched")
        self.space.validate(self.preset)
        self.folds = int(self.base_config().folds)
        if self.is_grid:
            self.n_cells = len(self.space.grid_cells())
        return self

    def intensifier(self) -> Intensifier:
        """Which configuration this search returns and which it races on more folds
        (lpstudy.design.intensify): its `race` leaders, on up to `race_folds` of its K folds, the
        tuning fold (the space's fold) first."""
        return Intensifier.of(self.race, self.race_folds, int(self.base_config().fold), int(self.folds))

    def race_reserve_rule(self) -> RaceReserve:
        """The share of a run's trials kept for races (lpstudy.design.intensify.RaceReserve): none
        where nothing is raced."""
        return RaceReserve(self.race_reserve if self.race > 0 else 0.0)

    def base_config(self) -> TrainConfig:
        """The preset with the space's fixed values: what every trial shares."""
        return resolve_config(self.preset, self.space.fixed)

    def describe(self) -> str:
        extra = (f" · {self.n_cells} cells" if self.is_grid
                 else f" · {self.spread_trials} spread trials" if self.spread_trials else "")
        return (f"{self.kind} · preset {self.preset} · sampler {self.sampler} · pruner {self.pruner}{extra}")


# -- building a spec from a study YAML and flags -------------------------------------------------

def read_study_file(path: str | Path) -> dict[str, Any]:
    """The mapping in a study YAML; UserError (one line) for anything malformed."""
    data = read_yaml_mapping(path, "study file", "preset:, space:, sampler:, ...")
    unknown = sorted(set(map(str, data)) - set(STUDY_FILE_KEYS))
    if unknown:
        raise UserError(f"study file {path}: unknown key(s) {', '.join(unknown)}; allowed: "
                        f"{', '.join(STUDY_FILE_KEYS)} (training fields go under space:)")
    if data.get("space") is not None and not isinstance(data["space"], dict):
        raise UserError(f"study file {path}: space must be a mapping of field: entry")
    return data


def build_spec(file_data: dict[str, Any] | None = None, space_entries: dict[str, Any] | None = None,
               options: dict[str, Any] | None = None, base: StudySpec | None = None) -> StudySpec:
    """A search study's spec: the study YAML's mapping, then flags (space entries by field, and
    study options such as preset, sampler, pruner), later ones winning. Validated. With `base` (a
    stored spec), what is not given is the base's rather than the default: the spec a study would
    have if the values given were applied to it."""
    data = dict(file_data or {})
    options = {k: v for k, v in (options or {}).items() if v is not None}
    kind = {**data, **options}.get("kind", "search")  # the study file's keys come as options from the command line
    if kind == "replicate":
        return _replicate_from_file(data, space_entries, options)
    if kind != "search" or "p" in data or "p" in options:
        raise UserError(f"a study file's kind is search (the default) or replicate, got {kind!r}; "
                        "p: is a replicate's list of p values (kind: replicate)")
    data.pop("kind", None)
    options.pop("kind", None)
    space_map: dict[str, Any] = dict(base.space.to_plain()) if base is not None else {}
    space_map.update(data.pop("space", None) or {})
    for key in SPACE_SHORTCUTS:
        if key in data:
            space_map[key] = data.pop(key)
    space_map.update(space_entries or {})
    data.update(options)
    values = {name: getattr(base, name) for name in OPTIONS} if base is not None else {}
    values.update({k: v for k, v in data.items() if k in OPTIONS})
    sampler = str(values.get("sampler", OPTIONS["sampler"].default)).lower()
    defaults = None if sampler == "grid" or base is not None else DEFAULT_SPACE
    space = SearchSpace.from_mapping(space_map, defaults=defaults)
    kept = {"kind": base.kind, "p_values": base.p_values} if base is not None else {"kind": "search"}
    return StudySpec(space=space, **kept, **values).validate()


def _replicate_from_file(data: dict[str, Any], space_entries: dict[str, Any] | None,
                         options: dict[str, Any]) -> StudySpec:
    """A replicate's study file (`kind: replicate`, `preset:`, `p: [...]`, `folds:`, fixed fields under
    `space:`, and the trial options): the spec `lpstudy replicate` makes from the same values, so that
    `lpstudy create --config` makes the grid and its workers' `--config` checks it."""
    data = {**data, **options}
    fixed = dict(data.pop("space", None) or {})
    fixed.update(space_entries or {})
    for key in SPACE_SHORTCUTS:  # folds: (and fold:, seed:) are the replicate's own keys, not fixed fields
        if key in fixed:
            data[key] = fixed.pop(key)
    if "preset" not in data or "p" not in data:
        raise UserError("a replicate's study file (kind: replicate) names its preset: and its p: values")
    p_values = data["p"] if isinstance(data["p"], list) else [v for v in str(data["p"]).split(",") if v.strip()]
    trial_options: dict[str, Any] = {k: data[k] for k in ("heartbeat_interval", "grace_period", "max_retry", "checkpoint_interval",
                                          "repeats", "seeds") if k in data}
    return replicate_spec(str(data["preset"]), p_values, data.get("folds", 10), fixed=fixed, options=trial_options)


def replicate_spec(preset: str, p_values: Sequence[float | str], folds: int, fixed: dict[str, Any] | None = None,
                   options: dict[str, Any] | None = None,
                   until_decided: UntilDecided | dict[str, Any] | None = None) -> StudySpec:
    """The paper's protocol: a grid of p values × K folds, every other field fixed. With
    until_decided, the K folds run in stages (`replicate --until-decided --max-folds K`); its
    reference is p = 2 unless it names one."""
    if not p_values:
        raise UserError("give at least one p value (--p 1,1.5,2,...)")
    ps: list[P] = []
    for p in p_values:
        value = P(p)
        if value not in ps:
            ps.append(value)
    bound = FIELD_BOUNDS["folds"]
    if isinstance(folds, bool) or not isinstance(folds, int) or not bound.contains(folds):
        raise UserError(f"--folds must be an integer in {bound.describe()}, got {folds!r}")
    for name in ("p", "fold", "folds", "repeat"):
        if name in (fixed or {}):
            raise UserError(f"{name} is set by the replicate grid (--p, --folds, --repeats); do not --set it")
    options = {k: v for k, v in (options or {}).items()
               if v is not None and k in OPTIONS and k not in ("sampler", "pruner", "preset")}
    repeats = OPTIONS["repeats"].checked(options.get("repeats", 1))
    seeds = OPTIONS["seeds"].checked(options.get("seeds", 1))
    refuse_beside_stages(until_decided, repeats=repeats)  # seeds run inside each stage's folds
    space_map: dict[str, Any] = dict(fixed or {})
    if seeds > 1:  # the seed the outermost choice: every (p, fold) cell gets its first seed before any its second
        base = space_map.pop("seed", resolve_config(preset, {}).seed)
        space_map = {"seed": {"choices": seeds_inside(int(base), seeds)}, **space_map}
    space_map["folds"] = folds
    space_map["p"] = {"choices": ps}
    if repeats > 1:  # every (p, repeat, fold) is one cell, run once like any other (the grid's claims)
        space_map["repeat"] = {"choices": list(range(repeats))}
    space_map["fold"] = {"choices": list(range(folds))}
    until_decided = UntilDecided.from_plain(until_decided)
    if until_decided is not None:
        reference = P(REFERENCE_P if until_decided.reference is None else until_decided.reference)
        if reference not in ps:
            raise UserError(f"--until-decided compares every p with the reference p = {format_p(reference)}: add it to --p")
        until_decided = dataclasses.replace(until_decided, reference=reference)
    spec = StudySpec(space=SearchSpace.from_mapping(space_map), preset=preset, kind="replicate",
                     sampler="grid", pruner="none", p_values=ps, until_decided=until_decided, **options)
    return spec.validate()
