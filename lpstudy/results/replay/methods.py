"""The search methods the replay benchmark compares: a sampler and a pruner each, by name.

Where a method is lpstudy's own (a sampler or pruner a study spec can name: the one catalogue of
them, lpstudy.design.options' SEARCH_SAMPLERS and PRUNERS), it is built by the very code a study uses
(lpstudy.study.studies' make_sampler and make_pruner, from a spec of the grid's space), so the method
marked `default` is what `lpstudy search` runs. The others are Optuna's, with Optuna's defaults
unless said here (its samplers in REPLAY_ONLY_SAMPLERS):

    samplers  random, cmaes (CmaEsSampler), tpe (multivariate, constant liar, 10 random trials):
              lpstudy's; tpe-optuna (Optuna's default TPESampler(seed=...): since Optuna 5 it is
              multivariate with the constant liar too; it is lpstudy's TPE wherever lpstudy's
              leaves `group` off, which since p = ∞ became the top slice of p's one parameter
              (issue 37) is every space, so the replay measures it with no pruner only, by
              default, as a check), gp (Optuna's GPSampler)
    pruners   none, sha (successive halving from one evaluation interval, η = 3), median (5
              trials, none during warm-up), hyperband (from one evaluation interval to max_steps,
              η = 3): lpstudy's; wilcoxon (WilcoxonPruner over the folds: each trial runs
              the configuration fold by fold, as `compare` replicates it, and stops once it is
              significantly worse than the best)
    race      /raceR after a name: the R leading configurations raced on more folds before one is
              returned (lpstudy.design.intensify, as a study's `race` option), its evaluations
              counted in the budget; search's default has its `race`. /raceRrP: the last P % of
              the budget kept for races: past (100 − P) % of it, a worker takes only a race, so the
              leaders of a wave that many workers ran at once are still raced (issue 54; the study
              option `race_reserve`, kept by the worker through the same rule: the default's r20)
"""

from __future__ import annotations

import dataclasses
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import optuna

from lpstudy.errors import UserError
from lpstudy.design.options import OPTIONS, PRUNERS, SEARCH_SAMPLERS
from lpstudy.design.spec import StudySpec
from lpstudy.study.studies import make_pruner, make_sampler


@dataclass(frozen=True)
class OptunaSampler:
    """One of Optuna's samplers the replay measures beside a study's own (a study cannot name it)."""
    build: Callable[[int], optuna.samplers.BaseSampler]  # from the seed, with Optuna's defaults
    with_pruners: bool = True  # False: measured with no pruner only (with the others when --methods names them)
    on_request: bool = False  # measured only when --methods names it


# The replay-only samplers, declared here once; every other sampler is a study's (SEARCH_SAMPLERS).
REPLAY_ONLY_SAMPLERS = {
    # Optuna's default TPESampler: lpstudy's TPE wherever lpstudy's leaves `group` off (every space
    # since issue 37), so a check, measured with no pruner only.
    "tpe-optuna": OptunaSampler(lambda seed: optuna.samplers.TPESampler(seed=seed), with_pruners=False),
    # A GP fit per trial: about 40 times a CMA-ES seed's time.
    "gp": OptunaSampler(lambda seed: optuna.samplers.GPSampler(seed=seed), on_request=True),
}
SAMPLER_NAMES = (*SEARCH_SAMPLERS, *REPLAY_ONLY_SAMPLERS)
FOLD_PRUNER = "wilcoxon"  # prunes across folds, not along a curve
# Samplers paired with the fold pruner (Optuna's example pairs WilcoxonPruner with TPE).
FOLD_SAMPLERS = ("tpe",)
SAMPLERS_WITHOUT_PRUNERS = tuple(name for name, s in REPLAY_ONLY_SAMPLERS.items() if not s.with_pruners)
SAMPLERS_ON_REQUEST = tuple(name for name, s in REPLAY_ONLY_SAMPLERS.items() if s.on_request)
MAX_SPREAD = int(OPTIONS["spread_trials"].bounds[1])  # what a study's spread phase may have
RACE_FOLDS = int(OPTIONS["race_folds"].default)


@dataclass(frozen=True)
class Method:
    sampler: str
    pruner: str
    spread: int = 0  # the spread phase's trials (lpstudy.study.spread): Sobol points, never pruned
    race: int = 0  # the leaders raced on more folds before one is returned (lpstudy.design.intensify; 0: none)
    race_folds: int = RACE_FOLDS
    reserve: float = 0.0  # the share of the budget past which only enqueued trials (races) are taken

    @property
    def name(self) -> str:
        return (f"{self.sampler}+{self.pruner}" + (f"@{self.spread}" if self.spread else "")
                + (f"/race{self.race}" if self.race else "")
                + (f"x{self.race_folds}" if self.race and self.race_folds != RACE_FOLDS else "")
                + (f"r{round(100 * self.reserve)}" if self.race and self.reserve else ""))

    @property
    def over_folds(self) -> bool:
        return self.pruner == FOLD_PRUNER


def default_method() -> Method:
    """What `lpstudy search` runs unless told otherwise: the spec's default sampler, pruner, spread
    phase and race."""
    spec = StudySpec(space=None)  # type: ignore[arg-type]  # only its defaults are read
    return Method(spec.sampler, spec.pruner, spec.spread_trials, spec.race, spec.race_folds, spec.race_reserve)


def all_methods() -> list[Method]:
    """The catalogue: every sampler with every pruner, without a spread phase and with the default's;
    the GP sampler only when asked (a GP fit a trial: about 40 times a CMA-ES seed's time)."""
    spread = default_method().spread
    methods = [Method(s, p, n) for n in (0, spread) for s in SAMPLER_NAMES for p in PRUNERS
               if s not in SAMPLERS_ON_REQUEST and (s not in SAMPLERS_WITHOUT_PRUNERS or p == "none")
               and not (n and s in SAMPLERS_WITHOUT_PRUNERS)]
    methods += [Method(s, FOLD_PRUNER) for s in FOLD_SAMPLERS]
    default = default_method()
    if default not in methods:  # a default this catalogue does not list yet still gets measured
        methods.insert(0, default)
    return methods


def pick_methods(text: str | None) -> list[Method]:
    """The methods named in a comma-separated list, or the catalogue (all_methods) when None.
    Each name is SAMPLER+PRUNER, with `@N` for a spread phase of N trials (`cmaes+sha@8`) and
    `/raceR` for R leading configurations raced on more folds (`tpe+none@8/race3`; `/raceRxF`: on
    up to F folds); `*` stands for every sampler, pruner or (after @) spread count of the
    catalogue: `random+*`, `*+sha@*`. A list that names nothing is refused."""
    methods = all_methods()
    if text is None:
        return methods
    methods += [Method(s, p) for s in SAMPLER_NAMES for p in PRUNERS if Method(s, p) not in methods]
    picked: list[Method] = []
    for part in (s.strip() for s in text.split(",")):
        if not part:
            continue
        part, race, race_folds, reserve = _race_of(part)
        head, at, spread_text = part.partition("@")
        sampler, sep, pruner = head.partition("+")
        if not sep or (at and spread_text != "*" and not spread_text.isdigit()):
            raise UserError(f"--methods takes SAMPLER+PRUNER[@N] names, got {part!r}; e.g. tpe+median, cmaes+sha@8, "
                            f"gp+*; samplers: {', '.join(SAMPLER_NAMES)}; pruners: {', '.join(PRUNERS)}, "
                            f"{FOLD_PRUNER}")
        spread = 0 if not at else None if spread_text == "*" else int(spread_text)
        if spread is not None and spread > MAX_SPREAD:
            raise UserError(f"--methods: {part!r} asks for a spread phase of {spread_text} trials; at most "
                            f"{MAX_SPREAD:,}, as --spread-trials takes")
        found = [m for m in methods if sampler in ("*", m.sampler) and pruner in ("*", m.pruner)
                 and spread in (None, m.spread) and not m.race]
        if not found and spread and sampler in SAMPLER_NAMES and pruner in PRUNERS:
            found = [Method(sampler, pruner, spread)]  # any spread count of a known method
        if not found:
            raise UserError(f"--methods: no method {part!r}; samplers: {', '.join(SAMPLER_NAMES)}; pruners: "
                            f"{', '.join(PRUNERS)} ({FOLD_PRUNER} with {', '.join(FOLD_SAMPLERS)}); "
                            "@N adds a spread phase of N trials")
        if race is not None:
            found = [dataclasses.replace(m, race=race, race_folds=race_folds, reserve=reserve) for m in found
                     if not m.over_folds]
        picked += [m for m in found if m not in picked]
    if not picked:
        raise UserError(f"--methods names no method ({text!r}); give SAMPLER+PRUNER names such as cmaes+sha,random+sha, "
                        "or leave --methods out for the whole catalogue")
    return picked


def _race_of(part: str) -> tuple[str, int | None, int, float]:
    """A method's name split from its race suffix: `tpe+none@8/race3` (the 3 leaders raced on up to
    RACE_FOLDS folds), `/race3x2` (on up to 2 folds), `/race3r20` (the last 20 % of the budget kept
    for races), `/race0` (none); None where no suffix."""
    import re

    head, slash, race_text = part.partition("/")
    if not slash:
        return part, None, RACE_FOLDS, 0.0
    match = re.fullmatch(r"race(\d+)(?:x(\d+))?(?:r(\d+))?", race_text)
    if match is None or (match[2] is not None and int(match[2]) < 2) or (match[3] is not None and int(match[3]) >= 100):
        raise UserError(f"--methods: {part!r}: a race is written /raceN, /raceNxF or /raceNxFrP (N leaders raced on "
                        "up to F folds, F at least 2; the last P % of the budget, under 100, kept for races), e.g. "
                        "tpe+none@8/race3 or tpe+none@8/race2r20")
    return (head, int(match[1]), int(match[2]) if match[2] is not None else RACE_FOLDS,
            int(match[3]) / 100 if match[3] is not None else 0.0)


def build_sampler(method: Method, spec: StudySpec, seed: int) -> optuna.samplers.BaseSampler:
    """The method's sampler, seeded; lpstudy's own through make_sampler."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ExperimentalWarning (GP, constant liar)
        if method.sampler in SEARCH_SAMPLERS:
            return make_sampler(_with(spec, sampler=method.sampler, sampler_seed=seed))
        if method.sampler in REPLAY_ONLY_SAMPLERS:
            return REPLAY_ONLY_SAMPLERS[method.sampler].build(seed)
    raise UserError(f"no sampler {method.sampler!r}")  # pragma: no cover - pick_methods refuses it first


def build_pruner(method: Method, spec: StudySpec) -> optuna.pruners.BasePruner:
    """The method's pruner; lpstudy's own through make_pruner."""
    if method.pruner in PRUNERS:
        return make_pruner(_with(spec, pruner=method.pruner, spread_trials=method.spread))
    if method.pruner == FOLD_PRUNER:
        return optuna.pruners.WilcoxonPruner(p_threshold=0.1)
    raise UserError(f"no pruner {method.pruner!r}")  # pragma: no cover


def _with(spec: StudySpec, **changes) -> StudySpec:
    import dataclasses

    return dataclasses.replace(spec, **changes)
