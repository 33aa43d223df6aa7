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
from typing import Any

from lpstudy.errors import UserError
from lpstudy.files import read_yaml_mapping
from lpstudy.study.space import DEFAULT_SPACE, Fixed, SearchSpace
from lpstudy.training.bounds import FIELD_BOUNDS
from lpstudy.training.config import TrainConfig, get_preset, resolve_config
from lpstudy.values import P, json_safe

SPEC_VERSION = 1
SAMPLERS = ("cmaes", "tpe", "random", "grid")
PRUNERS = ("sha", "median", "hyperband", "none")
# What a search runs unless told otherwise: the method chosen on the replay benchmark's suite of
# grids (docs/search-cost.md: the highest worst-grid share of seeds within ε among the methods with
# a spread phase): TPE without a pruner after 8 spread trials. Pruning paid little there once the
# spread phase ran, and on a grid where p's effect shows late (the matched gain, 800 steps) every
# pruner lost the best configuration in most seeds. A pruner runs only where a study names one.
# A search's spread phase (lpstudy.study.spread): this many first trials cover the space evenly and
# run to the end, before the sampler models the space and the pruner stops trials.
SPREAD_TRIALS = 8
KINDS = ("search", "replicate")
# The keys of a study YAML besides `space:`; fold, folds and seed are shortcuts for space entries.
STUDY_FILE_KEYS = ("preset", "space", "sampler", "pruner", "loss_threshold", "n_trials", "spread_trials", "n_startup_trials",
                   "sampler_seed", "heartbeat_interval", "grace_period", "max_retry", "fold", "folds", "seed",
                   "checkpoint_interval")
SPACE_SHORTCUTS = ("fold", "folds", "seed")
# The integer options of a study and the range each can have (sampler seeds: NumPy's 32 bits).
SPEC_BOUNDS = {"heartbeat_interval": (1, 86_400), "grace_period": (1, 7 * 86_400), "max_retry": (0, 1000),
               "spread_trials": (0, 4096), "n_startup_trials": (0, 10**6), "n_trials": (1, 10**7), "sampler_seed": (0, 2**32 - 1),
               "checkpoint_interval": (0, 10**6)}


@dataclass
class StudySpec:
    """What a study searches and how. Stored as plain data in the study's user attribute 'lpstudy'."""

    space: SearchSpace
    preset: str = "cpu"
    kind: str = "search"
    folds: int = 10
    sampler: str = "tpe"  # chosen on the replay benchmark's suite (docs/search-cost.md)
    pruner: str = "none"
    loss_threshold: float | None = None
    n_trials: int | None = None  # a target: workers stop once this many trials COMPLETE or PRUNED
    # The spread phase (lpstudy.study.spread): the first trials, spread over the space by a Sobol
    # sequence and never pruned. A study stored without the key reads the default: it changes
    # nothing there (only trials enqueued as spread trials are exempt from pruning).
    spread_trials: int = SPREAD_TRIALS
    n_startup_trials: int = 10  # TPE's random trials before it models the space
    sampler_seed: int | None = None
    heartbeat_interval: int = 10  # seconds between heartbeats of a running trial (SQL storages)
    grace_period: int = 60  # a RUNNING trial without heartbeat for this long is failed and retried
    max_retry: int = 2  # how often a failed (dead, interrupted) trial is retried with its parameters
    checkpoint_interval: int = 5  # save a resumable checkpoint every this many evaluations (0: never)
    p_values: list[P] | None = None  # replicate: the grid's p values
    n_cells: int | None = None  # grid: the number of cells

    @property
    def is_grid(self) -> bool:
        return self.sampler == "grid"

    def to_plain(self) -> dict[str, Any]:
        out = {
            "version": SPEC_VERSION, "kind": self.kind, "preset": self.preset, "folds": self.folds,
            "space": self.space.to_plain(), "sampler": self.sampler, "pruner": self.pruner,
            "loss_threshold": self.loss_threshold, "n_trials": self.n_trials, "spread_trials": self.spread_trials,
            "n_startup_trials": self.n_startup_trials, "sampler_seed": self.sampler_seed,
            "heartbeat_interval": self.heartbeat_interval, "grace_period": self.grace_period,
            "max_retry": self.max_retry, "n_cells": self.n_cells, "checkpoint_interval": self.checkpoint_interval,
        }
        if self.p_values is not None:
            out["p_values"] = json_safe(self.p_values)
        return out

    @classmethod
    def from_plain(cls, plain: dict[str, Any]) -> "StudySpec":
        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in plain.items() if k in known}
        values["space"] = SearchSpace.from_plain(plain.get("space") or {})
        if values.get("p_values") is not None:
            values["p_values"] = [P(p) for p in values["p_values"]]
        return cls(**values)

    def validate(self) -> "StudySpec":
        """Refuse what cannot run (UserError with the reason); fill in n_cells for a grid."""
        get_preset(self.preset)
        if self.kind not in KINDS:
            raise UserError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.sampler not in SAMPLERS:
            raise UserError(f"unknown sampler {self.sampler!r}; choose one of: {', '.join(SAMPLERS)}")
        if self.pruner not in PRUNERS:
            raise UserError(f"unknown pruner {self.pruner!r}; choose one of: {', '.join(PRUNERS)}")
        for name, (low, high) in SPEC_BOUNDS.items():
            value = getattr(self, name)
            if value is None and name in ("n_trials", "sampler_seed"):
                continue
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise UserError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
        if self.n_trials is not None and self.spread_trials > self.n_trials:
            self.spread_trials = self.n_trials  # a spread trial past the target would wait for ever
        if self.grace_period <= self.heartbeat_interval:
            raise UserError(f"grace_period ({self.grace_period} s) must be longer than heartbeat_interval "
                            f"({self.heartbeat_interval} s), or live trials would be failed")
        if self.loss_threshold is not None:
            try:
                self.loss_threshold = float(self.loss_threshold)
            except (TypeError, ValueError):
                raise UserError(f"loss_threshold must be a number, got {self.loss_threshold!r}") from None
            if not 0 < self.loss_threshold <= 1000:  # a cross-entropy in nats; NaN fails too
                raise UserError(f"loss_threshold must be in (0, 1000] nats, got {self.loss_threshold!r}")
        folds = self.space.get("folds")
        if folds is not None and not isinstance(folds, Fixed):
            raise UserError("folds must be one fixed number (the K of K-fold cross-validation), not searched")
        self.space.validate(self.preset)
        self.folds = int(self.base_config().folds)
        if self.is_grid:
            self.n_cells = len(self.space.grid_cells())
        return self

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
               options: dict[str, Any] | None = None) -> StudySpec:
    """A search study's spec: the study YAML's mapping, then flags (space entries by field, and
    study options such as preset, sampler, pruner), later ones winning. Validated."""
    data = dict(file_data or {})
    options = {k: v for k, v in (options or {}).items() if v is not None}
    space_map: dict[str, Any] = dict(data.pop("space", None) or {})
    for key in SPACE_SHORTCUTS:
        if key in data:
            space_map[key] = data.pop(key)
    space_map.update(space_entries or {})
    data.update(options)
    sampler = str(data.get("sampler", StudySpec.sampler)).lower()
    defaults = None if sampler == "grid" else DEFAULT_SPACE
    space = SearchSpace.from_mapping(space_map, defaults=defaults)
    known = {f.name for f in dataclasses.fields(StudySpec)} - {"space", "kind", "p_values", "n_cells", "folds"}
    spec = StudySpec(space=space, kind="search", **{k: v for k, v in data.items() if k in known})
    spec.sampler = sampler
    spec.pruner = str(spec.pruner).lower()
    return spec.validate()


def replicate_spec(preset: str, p_values: list[float], folds: int, fixed: dict[str, Any] | None = None,
                   options: dict[str, Any] | None = None) -> StudySpec:
    """The paper's protocol: a grid of p values × K folds, every other field fixed."""
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
    for name in ("p", "fold", "folds"):
        if name in (fixed or {}):
            raise UserError(f"{name} is set by the replicate grid (--p, --folds); do not --set it")
    space_map: dict[str, Any] = dict(fixed or {})
    space_map["folds"] = folds
    space_map["p"] = {"choices": ps}
    space_map["fold"] = {"choices": list(range(folds))}
    options = {k: v for k, v in (options or {}).items() if v is not None}
    known = {f.name for f in dataclasses.fields(StudySpec)} - {"space", "kind", "p_values", "n_cells", "folds",
                                                            "sampler", "pruner", "preset"}
    spec = StudySpec(space=SearchSpace.from_mapping(space_map), preset=preset, kind="replicate",
                     sampler="grid", pruner="none", p_values=ps,
                     **{k: v for k, v in options.items() if k in known})
    return spec.validate()
