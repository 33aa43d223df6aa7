"""The answer a study gives about p, as typed objects: what `study_answer` returns and what every
page, table, the CLI, `status` and the report read, by attribute. `answer.to_json()` gives the JSON
`lpstudy verdict --json` and the report embed (numbers as lpstudy.values.json_safe writes them, ∞ as
"inf"; the keys in the order their fields are declared here).

Each part is a frozen dataclass whose field names are the JSON's keys, commented once here: this is
the answer's schema, and its declared order is the JSON's. A field without a default is one every
answer has (typed `X | None` where its value may be null): no field reads as a believable 0.0 the
engine never wrote, and a number the engine has not (NaN) is None. A field the engine leaves out in a
case (an arm's `p` where the compared field is not p, `sequential` where the study did not run
--until-decided, `to_decide` where no arm is undecided) is declared `X | None = None`, reads as None
and is left out of the JSON; where one kind of a part writes such a field as null while another
leaves it out, the part says so (`written_null`: a divergence verdict has no interval's level, every
other verdict writes it, null where it has none).

The engine (lpstudy.results.answers) builds these parts directly, each once its pieces are computed
(dataclasses.replace where a later step adds to a frozen part). `Part.of` reads an answer's JSON back
(what `status --json` carries, a stored answer): it refuses a key the types do not declare and a
required one missing, and keeps the keys' order, so the JSON it read is the JSON it writes.

Statistics libraries answer the same way (statsmodels' results, scipy.stats' result objects): named
fields and a summary, not a dict of strings.
"""

from __future__ import annotations

import math
from dataclasses import MISSING, dataclass, fields
from dataclasses import field as _field  # a part has a field named `field`
from typing import Any, ClassVar, Self, Union

Number = Union[float, int]
Value = Union[float, int, str]  # an arm's value: a p (∞ as "inf"), or a compared field's value


@dataclass(frozen=True, kw_only=True)
class Part:
    """A part of the answer: built by the engine, given as JSON (`to_json`), read back from it (`of`)."""

    _keys: tuple[str, ...] = _field(default=(), repr=False, compare=False)  # read back (`of`): the JSON's keys
    # the fields that hold parts: a class, [class] for a list of them, {"*": class} for a mapping by name
    PARTS: ClassVar[dict[str, Any]] = {}

    def __post_init__(self) -> None:
        # a number the engine has not (NaN) is None, as the JSON writes it (null) and every reader tests it
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, float) and math.isnan(value):
                object.__setattr__(self, f.name, None)

    @classmethod
    def of(cls, data: dict[str, Any]) -> Self:
        declared = {f.name for f in fields(cls)} - {"_keys"}
        unknown = [key for key in data if key not in declared]
        if unknown:
            raise TypeError(f"{cls.__name__} has no field for the answer's key(s) {unknown}: declare them in "
                            "lpstudy/results/answers/answer_types.py")
        missing = [name for name in required(cls) if name not in data]
        if missing:
            raise TypeError(f"{cls.__name__} is missing the answer's required key(s) {missing}: the engine must "
                            "write them (a value it may leave out is declared `X | None = None`)")
        values = {key: _built(cls.PARTS.get(key), value) for key, value in data.items()}
        return cls(_keys=tuple(data), **values)

    def to_json(self) -> dict[str, Any]:
        """The part as JSON: its fields in their declared order, a required one always (null where None),
        one that may be left out where it is not None or where the part writes it as null (`written_null`);
        a part read back from JSON (`of`), the keys it was read from, in their order."""
        keys = self._keys or tuple(f.name for f in fields(self) if f.name != "_keys" and (
            f.name in required(type(self)) or getattr(self, f.name) is not None or f.name in self.written_null()))
        return {key: _plain(getattr(self, key)) for key in keys}

    def written_null(self) -> tuple[str, ...]:
        """The fields with a default that this part writes even where they are None (null): fields its kind
        always has where another kind of the same part leaves them out (a divergence verdict has no
        interval's level, every other verdict has one, null where it has no value)."""
        return ()


def required(cls: type[Part]) -> list[str]:
    """The fields of a part that every answer writes: those without a default."""
    return [f.name for f in fields(cls) if f.default is MISSING and f.default_factory is MISSING]


def _built(kind: Any, value: Any) -> Any:
    if kind is None or value is None or isinstance(value, Part):  # a part the engine built typed: as it is
        return value
    if isinstance(kind, list):
        return [_built(kind[0], v) for v in value]
    if isinstance(kind, dict):
        return {name: _built(kind["*"], v) for name, v in value.items()}
    return kind.of(value)


def _plain(value: Any) -> Any:
    """A value as the JSON writes it: a part's JSON, lists and mappings through, a number or text as
    lpstudy.values.json_safe writes it (∞ as "inf", a numpy scalar plain, NaN null)."""
    from lpstudy.values import json_safe

    if isinstance(value, Part):
        return value.to_json()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return json_safe(value)


# --- every study ------------------------------------------------------------------------------------
# A field without a default is one every answer writes (None where it says "| None": written as null);
# a field `X | None = None` is one the engine leaves out in some case, said beside it.

@dataclass(frozen=True, kw_only=True)
class Importance(Part):
    """How much of the loss's variation each field explains (shares empty and reason set where
    nothing can be estimated). A replicate's or grid's (answers.fold_importance): the within-fold
    ANOVA, shares are partial ω², median-unbiased (inside low–high); a search's (analysis.importance): its own type II shares."""

    shares: dict[str, float]  # {field: share}
    low: dict[str, float]  # {field: the share's interval, low end} (noncentral F)
    high: dict[str, float]  # {field: its high end}
    null: float | None  # what noise alone gives
    # the within-fold ANOVA's (a replicate's or grid's where it could be estimated):
    omega_squared: float | None = None  # a replicate's: the moment estimate of ω², unclipped (shares: median-unbiased)
    p_value: float | None = None  # its F test corrected for the folds' correlation
    f_corrected: float | None = None  # its F
    eta_squared: float | None = None
    eta_squared_null: float | None = None  # what noise alone gives
    n_folds: int | None = None
    n_arms: int | None = None
    k: int | None = None
    confidence: float | None = None  # of low/high
    method: str | None = None
    reason: str | None  # why there are no shares, or what the bar means
    left_out: dict[str, str] | None = None  # a search's: {field: why it is not ranked}
    n_trials: int | None = None  # a search's: the runs it ranked on


@dataclass(frozen=True, kw_only=True)
class StudyAnswer(Part):
    """What every study's answer has."""

    study: str
    kind: str  # "search", "replicate", "grid" or "compare"
    metric: str  # what the numbers are of
    # and, declared by each answer at its place in the JSON: sentence (the plain words a page shows above its
    # charts: what the data let the user conclude) and importance

    PARTS: ClassVar[dict[str, Any]] = {"importance": Importance}


# --- a replicate, grid or comparison: verdicts per arm (answers.verdicts, answers.endpoint_verdicts) ---

@dataclass(frozen=True, kw_only=True)
class Rope(Part):
    """The region of practical equivalence the verdicts were read with."""

    relative: float | None  # the ROPE over the reference's mean loss (None where that mean is 0 or unknown)
    absolute: float | None  # the ROPE in nats (None before any arm has a finished run)
    set: str  # "nats" | "relative": how it was given
    given: str  # as typed: "0.01", "0.5%"
    words: str  # how outputs state it


@dataclass(frozen=True, kw_only=True)
class Reference(Part):
    """The arm every other is compared with."""

    field: str  # the compared field ("p", or a comparison's factor)
    value: Value
    mean: float | None  # its mean final loss over its finished folds (None where every run of it failed)
    n_folds: int
    failed_runs: int  # runs that diverged or ended without a finite loss
    runs_in: int  # runs of the design that are over (usable or failed)
    p: Value | None = None  # its p, left out where the field is not p


@dataclass(frozen=True, kw_only=True)
class ArmVerdict(Part):
    """One arm against the reference on the folds both ran (the one engine: answers.endpoint_verdicts)."""

    field: str
    value: Value
    p: Value | None = None  # left out where the field is not p
    endpoint: str | None = None  # another endpoint's verdict (StabilityVerdict, ConvergenceArm): which; the final loss's: none
    unit: str | None = None  # its unit, as endpoint
    interim: bool  # runs of the design are still to come: the verdict is then "undecided"
    failed_runs: int
    reference_failed_runs: int
    runs: int  # run positions of the design: R × K
    barred_by_failures: bool  # a verdict the failed runs took away
    all_failed: bool | None = None  # true where every run failed: "worse" by the failure rule (left out otherwise)
    n_folds: int  # folds paired with the reference
    mean: float | None  # None where no fold is paired
    diff: float | None  # mean difference from the reference (nats; below 0: lower loss); None without pairs
    rel_diff: float | None  # relative to the reference's mean
    low: float | None  # the 1 − alpha interval of diff, corrected for the K-fold CV
    high: float | None
    rel_low: float | None
    rel_high: float | None
    equivalence_low: float | None  # the 1 − 2·alpha interval TOST uses
    equivalence_high: float | None
    p_value_difference: float | None  # Holm-adjusted across arms (a sequential study: its last look's)
    p_value_equivalence: float | None  # Holm-adjusted
    p_value_beyond_rope: float | None  # Holm-adjusted; it decides better/worse
    # confidence and the four sources of variance below: every verdict but divergence's (answers.stability_verdicts:
    # counts, no t interval) has them, written as null where they have no value (`written_null`)
    confidence: float | None = None  # the level of low/high: the one the verdict was decided at (Holm's step)
    verdict: str  # "better" | "equivalent" | "worse" | "undecided"
    region: str  # "beyond the ROPE" | "within the ROPE" | "different, size undecided" | "undecided" | "interim"
    # | "below the resolution" (convergence's steps: the evaluations cannot decide it)
    holds_up_to_rho: float | None  # the largest fold correlation at which the verdict stands
    measured_rho: float | None  # what the repeats' spread implies; None with one repeat
    folds_to_decide: int | None  # runs per arm that would decide it (answers.decide), or None
    decided_by: str | None  # "equivalence" | "beyond the ROPE": the verdict's test folds_to_decide expects to decide
    # the sources of variance of one run's difference (answers.fold_tests.variance_components): the partition's
    # share as the folds show it (with one seed a cell, the seeds' noise too), the training seed's (None without two
    # seeds in a cell), the (repeat, fold) cells paired and the mean number of seeds a cell
    sigma_fold: float | None = None
    sigma_seed: float | None = None
    cells: int | None = None
    seeds: float | None = None
    tunings: int | None = None  # compare --tunings T (T >= 2): the tunings the interval spans, one observation each
    runs_in: int | None = None  # the final loss's: runs of the design that are over (usable or failed)
    # why the runs cannot decide it (undecided), where they cannot: paired differences that do not vary
    # (endpoint_verdicts), steps below the evaluations' resolution (convergence)
    unresolved: str | None = None

    VARIANCE: ClassVar[tuple[str, ...]] = ("confidence", "sigma_fold", "sigma_seed", "cells", "seeds")

    def written_null(self) -> tuple[str, ...]:
        return self.VARIANCE


@dataclass(frozen=True, kw_only=True)
class StabilityRow(Part):
    """One arm on a stability endpoint (answers.stability_verdicts): each endpoint writes its own fields."""

    value: Value
    diverged: int | None = None  # divergence: runs that diverged
    runs: int | None = None  # divergence: runs counted
    rate: float | None = None  # divergence: diverged / runs
    mean: float | None = None  # logit growth, min entropy: the arm's mean
    n_folds: int | None = None
    diff: float | None = None  # against the reference
    low: float | None = None  # Wilson (divergence) or corrected-t interval
    high: float | None = None
    p_value: float | None = None  # Fisher's exact test (divergence) or the paired test, Holm-adjusted

    @property
    def compared(self) -> bool:
        """A row of an arm against the reference (logit growth, min entropy): it has a difference,
        which may be None where the folds give none; the reference's row has none."""
        return isinstance(self, ComparedRow) or "diff" in self._keys or self.diff is not None

    def written_null(self) -> tuple[str, ...]:
        return ("p_value",) if self.diverged is not None else ()  # divergence's: null for the reference


@dataclass(frozen=True, kw_only=True)
class ComparedRow(StabilityRow):
    """Logit growth's or min entropy's row of an arm other than the reference: its difference from the
    reference, interval and p-value written even where they have no value (null)."""

    def written_null(self) -> tuple[str, ...]:
        return ("diff", "low", "high", "p_value")


@dataclass(frozen=True, kw_only=True)
class StabilityVerdict(ArmVerdict):
    """An arm's verdict on one stability endpoint (answers.stability_verdicts): ArmVerdict's fields
    (divergence: diff a difference of rates, low/high Newcombe's interval, n_folds and runs the arm's
    runs, p_value_difference Fisher's, Holm-adjusted; no interval's level nor sources of variance) and these."""

    endpoint: str  # "max_logit" | "min_entropy" | "loss_spikes" | "lr_sensitivity" | "divergence"
    unit: str
    diverged: int | None = None  # divergence: the arm's runs that diverged
    reference_diverged: int | None = None  # divergence
    reference_runs: int | None = None  # divergence

    def written_null(self) -> tuple[str, ...]:
        return () if self.endpoint == "divergence" else self.VARIANCE


@dataclass(frozen=True, kw_only=True)
class StabilityDecide(Part):
    """What would decide a stability endpoint's undecided arms at 80 % power (answers.decide.stability_to_decide)."""

    endpoint: str
    arms: list[Value]  # the arms it decides (the reference runs too)
    test: list[str]  # the verdict's tests that would decide them
    folds: int
    repeats: int
    seeds: int
    runs_per_arm: int  # the most any of its arms needs (divergence: by Fisher's exact test and Newcombe's interval)
    runs: int  # the design's runs, the reference's included
    command: str | None  # the replicate that runs it (None for a comparison or a grid, or a study without a preset)
    time: str | None  # its time on one CPU thread and one GPU (None for a study without a preset: one lpstudy did not make)


@dataclass(frozen=True, kw_only=True)
class Stability(Part):
    """Per arm and stability endpoint (answers.stability_verdicts); before any arm has a finished run,
    only the three row lists (empty), everything else left out."""

    divergence: list[StabilityRow]
    logit_growth: list[StabilityRow]
    min_entropy: list[StabilityRow]
    endpoints: dict[str, "Endpoint"] | None = None  # {name: what it is}
    rope: dict[str, "EndpointRope"] | None = None  # {endpoint: its ROPE, declared once}
    verdicts: list[StabilityVerdict] | None = None  # per arm and endpoint
    reference: dict[str, "EndpointReference"] | None = None  # {endpoint: the reference's mean}
    sentence: str | None = None  # it also ends the answer's sentence
    to_decide: list[StabilityDecide] | None = None  # per endpoint with an undecided arm a design decides

    PARTS: ClassVar[dict[str, Any]] = {"divergence": [StabilityRow], "logit_growth": [StabilityRow],
                                        "min_entropy": [StabilityRow], "verdicts": [StabilityVerdict],
                                        "to_decide": [StabilityDecide]}


@dataclass(frozen=True, kw_only=True)
class StageArm(Part):
    """An arm's state in a sequential study (overall, or at one look)."""

    value: Value  # as ArmVerdict.value
    arm: Value  # the key of Sequential.stopped: a comparison's label "p=1", a replicate's p
    state: str  # a verdict, "running", or (at a look) "stopped"
    decided: str | None = None  # at a look, state "stopped": the verdict an earlier look gave it
    folds: int
    rel_diff: float | None = None  # at a look, an arm still running: its difference relative to the reference's mean
    rel_low: float | None = None  # its 1 − alpha interval there
    rel_high: float | None = None


@dataclass(frozen=True, kw_only=True)
class LookArm(StageArm):
    """An arm still running at a look: its difference and interval there, written even where they are not a
    number (null)."""

    rel_diff: float | None
    rel_low: float | None
    rel_high: float | None


@dataclass(frozen=True, kw_only=True)
class Look(Part):
    look: int
    folds: int
    level: float  # the alpha it spends
    spent: float  # up to it
    information: float  # its information fraction, from the corrected variance
    boundary: float  # its nominal two-sided level
    over: bool
    arms: list[StageArm]

    PARTS: ClassVar[dict[str, Any]] = {"arms": [StageArm]}


@dataclass(frozen=True, kw_only=True)
class Sequential(Part):
    """Where --until-decided ran (answers.sequential): its looks (stages) and what they decided."""

    rounds: list[int]  # folds at each look
    looks_done: int
    max_folds: int
    over: bool
    looks: list[Look]
    arms: list[StageArm]
    stopped: dict[str, int]  # {arm: folds it stopped at}
    cells_run: int
    cells_max: int
    folds_saved: int | None  # once over

    PARTS: ClassVar[dict[str, Any]] = {"looks": [Look], "arms": [StageArm]}


@dataclass(frozen=True, kw_only=True)
class ArmDesign(Part):
    """What would decide one undecided arm (answers.decide); folds … power None where no design within
    the bounds reaches the power."""

    value: Value
    test: str  # "equivalence" | "beyond the ROPE"
    power_target: float
    folds: int | None
    repeats: int | None
    seeds: int | None
    runs_per_arm: int | None
    power: float | None


@dataclass(frozen=True, kw_only=True)
class ToDecide(Part):
    """The folds, repeats and seeds that would decide each undecided arm at 80 % power, the command and
    its time (folds … time None where no arm's design is within the bounds)."""

    power: float
    max_repeats: int
    arms: list[ArmDesign]
    folds: int | None
    repeats: int | None
    seeds: int | None
    runs: int | None
    command: str | None
    time: str | None
    seeds_measured: bool  # some undecided arm had two seeds in a cell: the plan weighs seeds by their measured share

    PARTS: ClassVar[dict[str, Any]] = {"arms": [ArmDesign]}


# --- convergence (answers.convergence) ---------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class EndpointRope(Part):
    relative: float | None  # relative to the reference's mean
    absolute: float | None
    words: str


@dataclass(frozen=True, kw_only=True)
class Endpoint(Part):
    unit: str
    what: str


@dataclass(frozen=True, kw_only=True)
class EndpointReference(Part):
    field: str
    value: Value
    p: Value | None = None  # left out where the field is not p
    mean: float | None
    n_folds: int


Stability.PARTS.update({"endpoints": {"*": Endpoint}, "rope": {"*": EndpointRope},
                        "reference": {"*": EndpointReference}})  # the parts declared below it


@dataclass(frozen=True, kw_only=True)
class ConvergenceArm(ArmVerdict):
    """An arm's verdict on one convergence endpoint: ArmVerdict's fields and these."""

    endpoint: str  # "steps_to_threshold" | "auc"
    unit: str
    # steps, where unresolved: the eval_interval that would resolve the ROPE (null where none would)
    eval_interval_to_resolve: int | None = None
    censored: int  # runs that did not reach the threshold
    censored_by: dict[str, int]  # {reason: count}

    def written_null(self) -> tuple[str, ...]:
        return (*self.VARIANCE, "eval_interval_to_resolve") if self.unresolved is not None else self.VARIANCE


@dataclass(frozen=True, kw_only=True)
class RestrictedMean(Part):
    """An arm's restricted mean steps to the threshold (every arm)."""

    field: str
    value: Value
    p: Value | None = None  # a comparison's or replicate's where the field is p (a search's groups: none)
    runs: int
    reached: int
    censored: int
    rmst: float | None
    low: float | None
    high: float | None
    rmst_tokens: float | None  # None where the tokens a step are not known
    # a comparison's or replicate's (null where its runs ran on more than one kind of device); a search's: left out
    median_seconds_reached: float | None = None

    def written_null(self) -> tuple[str, ...]:
        return ("median_seconds_reached",)


@dataclass(frozen=True, kw_only=True)
class GroupMean(RestrictedMean):
    """A search's p group's restricted mean steps (answers.search_convergence): no time to the threshold."""

    def written_null(self) -> tuple[str, ...]:
        return ()


@dataclass(frozen=True, kw_only=True)
class Reach(Part):
    """Kaplan–Meier: the share of the arm's runs that reached the threshold by each step."""

    field: str
    value: Value
    p: Value | None = None  # as RestrictedMean.p
    step: list[float]
    reached: list[float]
    low: list[float]
    high: list[float]


@dataclass(frozen=True, kw_only=True)
class Resolution(Part):
    """The steps a run's crossing of the threshold is known to."""

    eval_interval: float | None  # the steps between the two evaluations around a crossing (median)
    words: str


@dataclass(frozen=True, kw_only=True)
class Convergence(Part):
    """Steps to a loss and the area under the curve, each with a verdict per arm (None without curves)."""

    threshold: float
    threshold_rule: str
    horizon: float  # the shared step budget
    tokens_per_step: float | None
    rope: dict[str, EndpointRope]  # {endpoint: ROPE}
    method: str
    endpoints: dict[str, Endpoint]  # {name: what it is}
    arms: list[ConvergenceArm]
    restricted_mean: list[RestrictedMean]
    reach: list[Reach]
    sentence: str  # it also ends the answer's sentence
    resolution: Resolution | None = None  # what the evaluations resolve; left out where no curve was read yet
    # left out where no curve of the reference and another arm was read yet:
    reference: dict[str, EndpointReference] | None = None  # {endpoint: reference}; also where no endpoint has a ROPE
    configurations: int | None = None  # a search: the configurations its runs are of
    runs: int | None = None  # a search: the runs counted
    # {endpoint: what would decide its undecided arms}, the final loss's ToDecide (command and time); only
    # where an endpoint has an undecided arm its evaluations can resolve
    to_decide: dict[str, ToDecide] | None = None

    PARTS: ClassVar[dict[str, Any]] = {"rope": {"*": EndpointRope}, "endpoints": {"*": Endpoint},
                                        "arms": [ConvergenceArm], "restricted_mean": [RestrictedMean],
                                        "reach": [Reach], "reference": {"*": EndpointReference},
                                        "resolution": Resolution, "to_decide": {"*": ToDecide}}


@dataclass(frozen=True, kw_only=True)
class CompareTuning(Part):
    """A comparison's tuning as its verdict counts it (answers.verdicts._tuning)."""

    budget: int  # tuning trials per arm and tuning
    tunings: int  # T: independent tunings per arm (compare --tunings)
    counted: bool  # T >= 2: the interval is a t over the tunings, the tuning's luck in it
    budget_note: str | None  # why the budget cannot tune the searched fields; None where it can


@dataclass(frozen=True, kw_only=True)
class VerdictAnswer(StudyAnswer):
    """The answer of a replicate, grid or comparison study."""

    method: str  # the test, named once
    alpha: float
    k: int  # the study's fold count K
    repeats: int  # R: the CV repeated over new partitions and seeds
    seeds: int | None = None  # S: training seeds inside every (repeat, fold) cell (--seeds); left out where 1
    reference: Reference | None  # None before any arm has a finished run
    arms: list[ArmVerdict]  # sorted by value
    rope: Rope
    importance: Importance
    stability: Stability
    interim: bool  # true while any run of the design is still to come
    tuning: CompareTuning | None = None  # a comparison's: what its verdict compares
    sequential: Sequential | None = None  # where --until-decided ran
    # a cell run twice: [{value, fold, (repeat, seed), counted: the trial number that counts (the first
    # COMPLETE), left_out: the others}]; PRUNED runs per arm [{value, runs}], counted as failed; each left
    # out where there is none
    duplicates: list[dict[str, Any]] | None = None
    pruned: list[dict[str, Any]] | None = None
    sentence: str
    to_decide: ToDecide | None = None  # where an arm is undecided
    convergence: Convergence | None  # None without learning curves

    PARTS: ClassVar[dict[str, Any]] = {**StudyAnswer.PARTS, "reference": Reference, "arms": [ArmVerdict],
                                        "rope": Rope, "stability": Stability, "sequential": Sequential,
                                        "to_decide": ToDecide, "convergence": Convergence, "tuning": CompareTuning}


# --- a search (answers.search) ------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class ProfilePoint(Part):
    p: Value  # ∞ as "inf": its own point, never a number on the axis
    loss: float
    low: float
    high: float


@dataclass(frozen=True, kw_only=True)
class Difference(Part):
    p: float
    diff: float  # against the reference p's tuned loss
    low: float
    high: float


@dataclass(frozen=True, kw_only=True)
class Effect(Part):
    """p's effect from the surrogate's profile: each p against the reference."""

    reference: float
    differences: list[Difference]
    rope: float
    n_fit: int  # configurations the surrogate was fitted on
    n_runs: int
    p_scale_at_bound: bool
    assumes: str  # what the band takes for granted about p's shape (and so cannot cover)
    inf_apart: str | None = None  # why p = ∞ is not profiled over finite p's settings, where it is not
    n_configurations: int | None = None  # where fewer than the runs: the configurations they are of

    PARTS: ClassVar[dict[str, Any]] = {"differences": [Difference]}


@dataclass(frozen=True, kw_only=True)
class SearchDivergence(Part):
    """A search's share of diverged runs in one p group (answers.search.search_divergence): each configuration
    once (its share of runs that diverged), Wilson's interval over the configurations; no verdict."""

    field: str
    value: Value  # the p group's label
    configurations: int
    runs: int
    diverged: int  # runs that diverged
    rate: float  # the mean over the group's configurations of each one's share of diverged runs
    low: float | None
    high: float | None


@dataclass(frozen=True, kw_only=True)
class SearchAnswer(StudyAnswer):
    """The answer of a search: p's effect with lr and the gain held apart. search_effect (the dashboard's
    `effect`, its importance cached apart) leaves out importance, convergence and divergence."""

    p_profile: list[ProfilePoint]  # the best loss reachable at each p, tuned for it
    p_partial_dependence: list[ProfilePoint]
    entanglement: dict[str, float | None]  # {field: rank correlation with p}
    separable: bool
    suggest: str | None  # the command that would decide p's effect
    effect: Effect | None  # None where the surrogate has no profile
    n_runs: int
    n_configurations: int  # configurations the runs are of (a raced one counted once)
    n_finite_runs: int | None = None  # runs at finite p; left out where p does not vary
    n_finite_configurations: int | None = None  # configurations at finite p: what the surrogate fits
    sentence: str
    importance: Importance | None = None  # study_answer's
    convergence: Convergence | None = None  # per p group, no verdicts (answers.search_convergence); None without curves
    divergence: list[SearchDivergence] | None = None  # study_answer's: per p group, a configuration counted once

    def written_null(self) -> tuple[str, ...]:
        return ("convergence",) if self.importance is not None else ()  # study_answer's: null without curves

    PARTS: ClassVar[dict[str, Any]] = {**StudyAnswer.PARTS, "p_profile": [ProfilePoint],
                                        "p_partial_dependence": [ProfilePoint], "effect": Effect,
                                        "convergence": Convergence, "divergence": [SearchDivergence]}


# --- what `status` carries of a verdict answer (lpstudy.results.status) -------------------------------

@dataclass(frozen=True, kw_only=True)
class VerdictTable(Part):
    """The part of a VerdictAnswer that `status` carries (its --json's "verdicts") and prints: what the
    verdict table (lpstudy.results.tables.verdicts) and its plain words (tables.summary) read. Its fields
    are VerdictAnswer's of the same name."""

    sentence: str
    kind: str
    method: str
    alpha: float
    k: int
    repeats: int
    seeds: int | None = None
    rope: Rope
    reference: Reference | None
    arms: list[ArmVerdict]
    interim: bool
    to_decide: ToDecide | None = None

    PARTS: ClassVar[dict[str, Any]] = {"reference": Reference, "arms": [ArmVerdict], "rope": Rope, "to_decide": ToDecide}

    @classmethod
    def keys(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls) if f.name != "_keys")


Verdicts = Union[VerdictAnswer, VerdictTable]  # what the verdict table and its plain words are drawn from
