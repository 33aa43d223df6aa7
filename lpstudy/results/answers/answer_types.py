"""The answer a study gives about p, as typed objects: what `study_answer` returns and what every
page, table, the CLI, `status` and the report read, by attribute. `answer.to_json()` gives the JSON
`lpstudy verdict --json` and the report embed (numbers, ∞ as "inf" through lpstudy.values.json_safe,
the keys and their order as the engine wrote them).

Each part is a frozen dataclass whose field names are the JSON's keys, commented once here: this is
the answer's schema. A field the engine leaves out in a case (an arm's `p` where the compared field
is not p, `sequential` where the study did not run --until-decided, `to_decide` where no arm is
undecided) reads as None and is left out of the JSON again. The engine (lpstudy.results.answers)
builds plain dicts; `Part.of` checks each key against these fields (a key the types do not declare
is an error, so the schema cannot drift from the code) and keeps their order for `to_json`.

Statistics libraries answer the same way (statsmodels' results, scipy.stats' result objects): named
fields and a summary, not a dict of strings.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from dataclasses import field as _field  # a part has a field named `field`
from typing import Any, ClassVar, Union

Number = Union[float, int]
Value = Union[float, int, str]  # an arm's value: a p (∞ as "inf"), or a compared field's value


@dataclass(frozen=True, kw_only=True)
class Part:
    """A part of the answer: built from the engine's dict (`of`), given back as JSON (`to_json`)."""

    _keys: tuple[str, ...] = _field(default=(), repr=False, compare=False)  # the JSON's keys, in order
    # the fields that hold parts: a class, [class] for a list of them, {"*": class} for a mapping by name
    PARTS: ClassVar[dict[str, Any]] = {}

    @classmethod
    def of(cls, data: dict):
        declared = {f.name for f in fields(cls)} - {"_keys"}
        unknown = [key for key in data if key not in declared]
        if unknown:
            raise TypeError(f"{cls.__name__} has no field for the answer's key(s) {unknown}: declare them in "
                            "lpstudy/results/answers/answer_types.py")
        values = {key: _built(cls.PARTS.get(key), value) for key, value in data.items()}
        return cls(_keys=tuple(data), **values)

    def to_json(self) -> dict:
        keys = self._keys or tuple(f.name for f in fields(self) if f.name != "_keys" and getattr(self, f.name) is not None)
        return {key: _plain(getattr(self, key)) for key in keys}


def _built(kind, value):
    if kind is None or value is None:
        return value
    if isinstance(kind, list):
        return [_built(kind[0], v) for v in value]
    if isinstance(kind, dict):
        return {name: _built(kind["*"], v) for name, v in value.items()}
    return kind.of(value)


def _plain(value):
    if isinstance(value, Part):
        return value.to_json()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


# --- every study ------------------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class Importance(Part):
    """How much of the loss's variation each field explains (shares empty and reason set where
    nothing can be estimated). A replicate's or grid's (answers.fold_importance): the within-fold
    ANOVA, shares are partial ω², median-unbiased (inside low–high); a search's (analysis.importance): its own type II shares."""

    shares: dict[str, float] = _field(default_factory=dict)  # {field: share}
    low: dict[str, float] = _field(default_factory=dict)  # {field: the share's interval, low end} (noncentral F)
    high: dict[str, float] = _field(default_factory=dict)  # {field: its high end}
    null: float | None = None  # what noise alone gives
    reason: str | None = None  # why there are no shares, or what the bar means
    p_value: float | None = None  # the within-fold ANOVA's F test corrected for the folds' correlation
    f_corrected: float | None = None  # its F
    eta_squared: float | None = None
    omega_squared: float | None = None  # a replicate's: the moment estimate of ω², unclipped (shares: median-unbiased)
    eta_squared_null: float | None = None  # what noise alone gives
    n_folds: int | None = None
    n_arms: int | None = None
    k: int | None = None
    confidence: float | None = None  # of low/high
    method: str | None = None
    left_out: dict[str, str] | None = None  # a search's: {field: why it is not ranked}
    n_trials: int | None = None  # a search's: the runs it ranked on


@dataclass(frozen=True, kw_only=True)
class StudyAnswer(Part):
    """What every study's answer has."""

    study: str = ""
    kind: str = ""  # "search", "replicate", "grid" or "compare"
    metric: str = ""  # what the numbers are of
    sentence: str = ""  # the plain words a page shows above its charts: what the data let the user conclude
    importance: Importance = _field(default_factory=Importance)

    PARTS: ClassVar[dict[str, Any]] = {"importance": Importance}


# --- a replicate, grid or comparison: verdicts per arm (answers.verdicts, answers.endpoint_verdicts) ---

@dataclass(frozen=True, kw_only=True)
class Rope(Part):
    """The region of practical equivalence the verdicts were read with."""

    relative: float | None = None  # the ROPE over the reference's mean loss
    absolute: float | None = None  # the ROPE in nats
    set: str = ""  # "nats" | "relative": how it was given
    given: str = ""  # as typed: "0.01", "0.5%"
    words: str = ""  # how outputs state it


@dataclass(frozen=True, kw_only=True)
class Reference(Part):
    """The arm every other is compared with."""

    field: str = ""  # the compared field ("p", or a comparison's factor)
    value: Value = ""
    mean: float = 0.0  # its mean final loss over its finished folds
    n_folds: int = 0
    failed_runs: int = 0  # runs that diverged or ended without a finite loss
    p: Value | None = None  # its p, where the field is p
    runs_in: int | None = None  # runs of the design that are over (usable or failed)


@dataclass(frozen=True, kw_only=True)
class ArmVerdict(Part):
    """One arm against the reference on the folds both ran (the one engine: answers.endpoint_verdicts)."""

    field: str = ""
    value: Value = ""
    p: Value | None = None  # where the field is p
    interim: bool = False  # runs of the design are still to come: the verdict is then "undecided"
    failed_runs: int = 0
    reference_failed_runs: int = 0
    runs: int = 0  # run positions of the design: R × K
    barred_by_failures: bool = False  # a verdict the failed runs took away
    all_failed: bool | None = None  # true where every run failed: "worse" by the failure rule (left out otherwise)
    n_folds: int = 0  # folds paired with the reference
    mean: float = 0.0
    diff: float = 0.0  # mean difference from the reference (nats; below 0: lower loss)
    rel_diff: float | None = None  # relative to the reference's mean
    low: float = 0.0  # the 1 − alpha interval of diff, corrected for the K-fold CV
    high: float = 0.0
    rel_low: float | None = None
    rel_high: float | None = None
    equivalence_low: float | None = None  # the 1 − 2·alpha interval TOST uses
    equivalence_high: float | None = None
    confidence: float | None = None  # the level of low/high: the one the verdict was decided at (Holm's step)
    p_value_difference: float | None = None  # Holm-adjusted across arms (a sequential study: its last look's)
    p_value_equivalence: float | None = None  # Holm-adjusted
    p_value_beyond_rope: float | None = None  # Holm-adjusted; it decides better/worse
    verdict: str = "undecided"  # "better" | "equivalent" | "worse" | "undecided"
    region: str = ""  # "beyond the ROPE" | "within the ROPE" | "different, size undecided" | "undecided" | "interim"
    # | "below the resolution" (convergence's steps: the evaluations cannot decide it)
    holds_up_to_rho: float | None = None  # the largest fold correlation at which the verdict stands
    measured_rho: float | None = None  # what the repeats' spread implies; None with one repeat
    folds_to_decide: int | None = None  # runs per arm that would decide it (answers.decide), or None
    decided_by: str | None = None  # "equivalence" | "beyond the ROPE": the verdict's test folds_to_decide expects to decide
    # the sources of variance of one run's difference (answers.fold_tests.variance_components): the partition's
    # share as the folds show it (with one seed a cell, the seeds' noise too), the training seed's (None without two
    # seeds in a cell), the (repeat, fold) cells paired and the mean number of seeds a cell
    sigma_fold: float | None = None
    sigma_seed: float | None = None
    cells: int = 0
    seeds: float = 1.0
    runs_in: int | None = None  # runs of the design that are over (usable or failed)
    tunings: int | None = None  # compare --tunings T (T >= 2): the tunings the interval spans, one observation each


@dataclass(frozen=True, kw_only=True)
class StabilityRow(Part):
    """One arm on a stability endpoint (answers.stability_verdicts)."""

    value: Value = ""
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
        return "diff" in self._keys or self.diff is not None


@dataclass(frozen=True, kw_only=True)
class StabilityVerdict(ArmVerdict):
    """An arm's verdict on one stability endpoint (answers.stability_verdicts): ArmVerdict's fields
    (divergence: diff a difference of rates, low/high Newcombe's interval, n_folds and runs the arm's
    runs, p_value_difference Fisher's, Holm-adjusted) and these."""

    endpoint: str = ""  # "max_logit" | "min_entropy" | "loss_spikes" | "lr_sensitivity" | "divergence"
    unit: str = ""
    diverged: int | None = None  # divergence: the arm's runs that diverged
    reference_diverged: int | None = None
    reference_runs: int | None = None
    unresolved: str | None = None  # why the runs cannot decide it (undecided), where they cannot


@dataclass(frozen=True, kw_only=True)
class StabilityDecide(Part):
    """What would decide a stability endpoint's undecided arms at 80 % power (answers.decide.stability_to_decide)."""

    endpoint: str = ""
    arms: list[Value] = _field(default_factory=list)  # the arms it decides (the reference runs too)
    test: list[str] = _field(default_factory=list)  # the verdict's tests that would decide them
    folds: int = 0
    repeats: int = 1
    seeds: int = 1
    runs_per_arm: int = 0  # the most any of its arms needs (divergence: by Fisher's exact test and Newcombe's interval)
    runs: int = 0  # the design's runs, the reference's included
    command: str | None = None  # the replicate that runs it (None for a comparison or a grid)
    time: str = ""


@dataclass(frozen=True, kw_only=True)
class Stability(Part):
    divergence: list[StabilityRow] = _field(default_factory=list)
    logit_growth: list[StabilityRow] = _field(default_factory=list)
    min_entropy: list[StabilityRow] = _field(default_factory=list)
    endpoints: dict[str, "Endpoint"] = _field(default_factory=dict)  # {name: what it is}
    rope: dict[str, "EndpointRope"] = _field(default_factory=dict)  # {endpoint: its ROPE, declared once}
    verdicts: list[StabilityVerdict] = _field(default_factory=list)  # per arm and endpoint
    reference: dict[str, "EndpointReference"] = _field(default_factory=dict)  # {endpoint: the reference's mean}
    sentence: str = ""  # it also ends the answer's sentence
    to_decide: list[StabilityDecide] = _field(default_factory=list)  # per endpoint with an undecided arm a design decides

    PARTS: ClassVar[dict[str, Any]] = {"divergence": [StabilityRow], "logit_growth": [StabilityRow],
                                        "min_entropy": [StabilityRow], "verdicts": [StabilityVerdict],
                                        "to_decide": [StabilityDecide]}


@dataclass(frozen=True, kw_only=True)
class StageArm(Part):
    """An arm's state in a sequential study (overall, or at one look)."""

    value: Value = ""  # as ArmVerdict.value
    arm: Value = ""  # the key of Sequential.stopped: a comparison's label "p=1", a replicate's p
    state: str = ""  # a verdict, "running", or (at a look) "stopped"
    folds: int = 0
    decided: str | None = None  # state "stopped": the verdict an earlier look gave it
    rel_diff: float | None = None  # at a look: its difference relative to the reference's mean
    rel_low: float | None = None  # its 1 − alpha interval there
    rel_high: float | None = None


@dataclass(frozen=True, kw_only=True)
class Look(Part):
    look: int = 0
    folds: int = 0
    level: float = 0.0  # the alpha it spends
    spent: float = 0.0  # up to it
    information: float = 0.0  # its information fraction, from the corrected variance
    boundary: float = 0.0  # its nominal two-sided level
    over: bool = False
    arms: list[StageArm] = _field(default_factory=list)

    PARTS: ClassVar[dict[str, Any]] = {"arms": [StageArm]}


@dataclass(frozen=True, kw_only=True)
class Sequential(Part):
    """Where --until-decided ran (answers.sequential): its looks (stages) and what they decided."""

    rounds: list[int] = _field(default_factory=list)  # folds at each look
    looks_done: int = 0
    max_folds: int = 0
    over: bool = False
    looks: list[Look] = _field(default_factory=list)
    arms: list[StageArm] = _field(default_factory=list)
    stopped: dict[str, int] = _field(default_factory=dict)  # {arm: folds it stopped at}
    cells_run: int = 0
    cells_max: int = 0
    folds_saved: int | None = None  # once over

    PARTS: ClassVar[dict[str, Any]] = {"looks": [Look], "arms": [StageArm]}


@dataclass(frozen=True, kw_only=True)
class ArmDesign(Part):
    """What would decide one undecided arm (answers.decide)."""

    value: Value = ""
    test: str = ""  # "equivalence" | "beyond the ROPE"
    power_target: float = 0.0
    folds: int | None = None
    repeats: int | None = None
    seeds: int | None = None
    runs_per_arm: int | None = None
    power: float | None = None


@dataclass(frozen=True, kw_only=True)
class ToDecide(Part):
    """The folds, repeats and seeds that would decide each undecided arm at 80 % power, the command and its time."""

    power: float = 0.0
    max_repeats: int = 0
    arms: list[ArmDesign] = _field(default_factory=list)
    folds: int | None = None
    repeats: int | None = None
    seeds: int | None = None
    runs: int | None = None
    command: str | None = None
    time: str | None = None
    seeds_measured: bool = False  # some undecided arm had two seeds in a cell: the plan weighs seeds by their measured share

    PARTS: ClassVar[dict[str, Any]] = {"arms": [ArmDesign]}


# --- convergence (answers.convergence) ---------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class EndpointRope(Part):
    relative: float | None = None  # relative to the reference's mean
    absolute: float | None = None
    words: str = ""


@dataclass(frozen=True, kw_only=True)
class Endpoint(Part):
    unit: str = ""
    what: str = ""


@dataclass(frozen=True, kw_only=True)
class EndpointReference(Part):
    field: str = ""
    value: Value = ""
    p: Value | None = None
    mean: float | None = None
    n_folds: int = 0


Stability.PARTS.update({"endpoints": {"*": Endpoint}, "rope": {"*": EndpointRope},
                        "reference": {"*": EndpointReference}})  # the parts declared below it


@dataclass(frozen=True, kw_only=True)
class ConvergenceArm(ArmVerdict):
    """An arm's verdict on one convergence endpoint: ArmVerdict's fields and these."""

    endpoint: str = ""  # "steps_to_threshold" | "auc"
    unit: str = ""
    censored: int = 0  # runs that did not reach the threshold
    censored_by: dict[str, int] = _field(default_factory=dict)  # {reason: count}
    unresolved: str | None = None  # steps: why the evaluations cannot decide it (undecided), where they cannot
    eval_interval_to_resolve: int | None = None  # steps: the eval_interval that would resolve the ROPE


@dataclass(frozen=True, kw_only=True)
class RestrictedMean(Part):
    """An arm's restricted mean steps to the threshold (every arm)."""

    field: str = ""
    value: Value = ""
    p: Value | None = None
    runs: int = 0
    reached: int = 0
    censored: int = 0
    rmst: float | None = None
    low: float | None = None
    high: float | None = None
    rmst_tokens: float | None = None
    median_seconds_reached: float | None = None  # one kind of device only, else None


@dataclass(frozen=True, kw_only=True)
class Reach(Part):
    """Kaplan–Meier: the share of the arm's runs that reached the threshold by each step."""

    field: str = ""
    value: Value = ""
    p: Value | None = None
    step: list[float] = _field(default_factory=list)
    reached: list[float] = _field(default_factory=list)
    low: list[float] = _field(default_factory=list)
    high: list[float] = _field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class Resolution(Part):
    """The steps a run's crossing of the threshold is known to."""

    eval_interval: float | None = None  # the steps between the two evaluations around a crossing (median)
    words: str = ""


@dataclass(frozen=True, kw_only=True)
class Convergence(Part):
    """Steps to a loss and the area under the curve, each with a verdict per arm (None without curves)."""

    threshold: float = 0.0
    threshold_rule: str = ""
    horizon: float = 0.0  # the shared step budget
    tokens_per_step: float | None = None
    rope: dict[str, EndpointRope] = _field(default_factory=dict)  # {endpoint: ROPE}
    method: str = ""
    endpoints: dict[str, Endpoint] = _field(default_factory=dict)  # {name: what it is}
    arms: list[ConvergenceArm] = _field(default_factory=list)
    restricted_mean: list[RestrictedMean] = _field(default_factory=list)
    reach: list[Reach] = _field(default_factory=list)
    sentence: str = ""  # it also ends the answer's sentence
    reference: dict[str, EndpointReference] = _field(default_factory=dict)  # {endpoint: reference}
    resolution: Resolution | None = None  # what the evaluations resolve
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

    budget: int = 0  # tuning trials per arm and tuning
    tunings: int = 1  # T: independent tunings per arm (compare --tunings)
    counted: bool = False  # T >= 2: the interval is a t over the tunings, the tuning's luck in it
    budget_note: str | None = None  # why the budget cannot tune the searched fields; None where it can


@dataclass(frozen=True, kw_only=True)
class VerdictAnswer(StudyAnswer):
    """The answer of a replicate, grid or comparison study."""

    method: str = ""  # the test, named once
    alpha: float = 0.05
    k: int = 0  # the study's fold count K
    repeats: int = 1  # R: the CV repeated over new partitions and seeds
    seeds: int | None = None  # S: training seeds inside every (repeat, fold) cell (--seeds); left out where 1
    reference: Reference | None = None  # None before any arm has a finished run
    arms: list[ArmVerdict] = _field(default_factory=list)  # sorted by value
    rope: Rope = _field(default_factory=Rope)
    stability: Stability = _field(default_factory=Stability)
    interim: bool = False  # true while any run of the design is still to come
    # a cell run twice: [{value, fold, (repeat, seed), counted: the trial number that counts (the first
    # COMPLETE), left_out: the others}]; PRUNED runs per arm [{value, runs}], counted as failed
    duplicates: list[dict] | None = None
    pruned: list[dict] | None = None
    sequential: Sequential | None = None  # where --until-decided ran
    to_decide: ToDecide | None = None  # where an arm is undecided
    convergence: Convergence | None = None  # None without learning curves
    tuning: CompareTuning | None = None  # a comparison's: what its verdict compares

    PARTS: ClassVar[dict[str, Any]] = {**StudyAnswer.PARTS, "reference": Reference, "arms": [ArmVerdict],
                                        "rope": Rope, "stability": Stability, "sequential": Sequential,
                                        "to_decide": ToDecide, "convergence": Convergence, "tuning": CompareTuning}


# --- a search (answers.search) ------------------------------------------------------------------------

@dataclass(frozen=True, kw_only=True)
class ProfilePoint(Part):
    p: Value = 0.0  # ∞ as "inf": its own point, never a number on the axis
    loss: float = 0.0
    low: float = 0.0
    high: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Difference(Part):
    p: float = 0.0
    diff: float = 0.0  # against the reference p's tuned loss
    low: float = 0.0
    high: float = 0.0


@dataclass(frozen=True, kw_only=True)
class Effect(Part):
    """p's effect from the surrogate's profile: each p against the reference."""

    reference: float = 0.0
    differences: list[Difference] = _field(default_factory=list)
    rope: float = 0.0
    n_fit: int = 0  # configurations the surrogate was fitted on
    n_runs: int = 0
    p_scale_at_bound: bool = False
    n_configurations: int | None = None  # where fewer than the runs: the configurations they are of
    assumes: str | None = None  # what the band takes for granted about p's shape (and so cannot cover)
    inf_apart: str | None = None  # why p = ∞ is not profiled over finite p's settings, where it is not

    PARTS: ClassVar[dict[str, Any]] = {"differences": [Difference]}


@dataclass(frozen=True, kw_only=True)
class SearchDivergence(Part):
    """A search's share of diverged runs in one p group (answers.search.search_divergence): each configuration
    once (its share of runs that diverged), Wilson's interval over the configurations; no verdict."""

    field: str = "p"
    value: Value = ""  # the p group's label
    configurations: int = 0
    runs: int = 0
    diverged: int = 0  # runs that diverged
    rate: float = 0.0  # the mean over the group's configurations of each one's share of diverged runs
    low: float | None = None
    high: float | None = None


@dataclass(frozen=True, kw_only=True)
class SearchAnswer(StudyAnswer):
    """The answer of a search: p's effect with lr and the gain held apart."""

    p_profile: list[ProfilePoint] = _field(default_factory=list)  # the best loss reachable at each p, tuned for it
    p_partial_dependence: list[ProfilePoint] = _field(default_factory=list)
    entanglement: dict[str, float | None] = _field(default_factory=dict)  # {field: rank correlation with p}
    separable: bool = False
    suggest: str | None = None  # the command that would decide p's effect
    effect: Effect | None = None
    n_runs: int = 0
    n_finite_runs: int | None = None  # runs at finite p
    n_configurations: int | None = None  # configurations the runs are of (a raced one counted once)
    n_finite_configurations: int | None = None  # configurations at finite p: what the surrogate fits
    convergence: Convergence | None = None  # per p group, no verdicts (answers.search_convergence); None without curves
    divergence: list[SearchDivergence] = _field(default_factory=list)  # per p group, a configuration counted once

    PARTS: ClassVar[dict[str, Any]] = {**StudyAnswer.PARTS, "p_profile": [ProfilePoint],
                                        "p_partial_dependence": [ProfilePoint], "effect": Effect,
                                        "convergence": Convergence, "divergence": [SearchDivergence]}



