"""An equal-budget comparison of the values of one training field (the arms: p = 1, 2, 3, 4 by
default, or any field): each arm gets the same tuning budget, then its best configuration is
replicated across K folds, and the arms are compared fold by fold against a reference arm.

Why several Optuna studies rather than one with an arm parameter: a sampler models one study's
history, so one TPE over (arm, lr, gain) would spend its trials where it expects the best loss and
give the arms unequal budgets and unequal search quality. Here each arm is a study of its own,
sharing the comparison's name as a prefix:

    NAME                 the comparison: no trials, its plan in the user attribute "lpstudy_compare"
    NAME:p=3:tune        arm p = 3: a search (search's sampler, pruner and race) on one fold, `budget`
                         trials, its leading configurations raced on more folds within that budget
    NAME:p=3:folds       arm p = 3: the configuration its tuning returns (lpstudy.study.races, as
                         a search returns it) on each of the K folds (a grid
                         study, every cell enqueued once when the arm's tuning is done)

`lpstudy worker --study NAME` (anywhere, as many as you like) takes, for each trial, an arm's waiting
tuning trial (its race on another fold, a retry: within its budget), else the arm whose tuning has
used the least of its budget; once an arm's budget is spent its replicate grid is
created and its cells run (with --until-decided, in the stages of `replicate --until-decided`:
the verdicts after each stage decide which arms get the next folds; lpstudy.study.stages). Its
worker is lpstudy.study.compare_worker. Everything
is in the database, so rerunning `lpstudy compare` or a worker resumes where the study stands.
Two workers that pick an arm at the same moment can give it one trial more than the budget;
`status` shows each arm's count.
"""

from __future__ import annotations

import dataclasses
import json
import math
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.trial import TrialState

from lpstudy.db.optuna_storage import StudyStorage
from lpstudy.errors import UserError
from lpstudy.study.decisions import Done, StageOver, Wait
from lpstudy.study.races import search_best
from lpstudy.design.space import DEFAULT_SPACE
from lpstudy.design.spec import StudySpec, build_spec, replicate_spec
from lpstudy.study.studies import create_study, enqueue_missing_cells, load_study
from lpstudy.design.until_decided import UntilDecided, refuse_beside_stages
from lpstudy.training.config import coerce_field, get_preset, seeds_inside
from lpstudy.values import REFERENCE_P, P, format_p, json_safe

COMPARE_ATTR = "lpstudy_compare"
COMPARE_KIND = "compare"
WAIT_S = 3.0  # a worker waiting for a stage's running cells (or the last tuning trials) looks again this often
BUDGET_STATES = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING, TrialState.WAITING)


def arm_labels(factor: str, values: list[Any]) -> list[str]:
    """The arms' names inside their studies' names, one per value: 'p=3', 'p=∞', 'n_layer=4'. p
    is shown as people read it (three significant digits, format_p), with more digits where two
    arms would otherwise share a name and so a study (1 and 1.001: 'p=1', 'p=1.001')."""
    if factor != "p":
        return [f"{factor}={value}" for value in values]
    for digits in range(3, 18):  # 17 significant digits tell any two floats apart
        names = [f"p={format_p(v) if digits == 3 or math.isinf(v) else f'{v:.{digits}g}'}" for v in values]
        if len(set(names)) == len(names):
            break
    return names


@dataclass
class ComparePlan:
    """What a comparison compares and how; stored as plain JSON on its parent study."""

    factor: str
    values: list[Any]  # the arms: values of the field `factor` (P for p)
    reference: Any
    tune: dict[str, Any]  # field -> space entry (a range or choices), searched in every arm
    budget: int
    folds: int
    preset: str = "cpu"
    fixed: dict[str, Any] = field(default_factory=dict)
    tune_fold: int = 0
    sampler_seed: int | None = None
    # --until-decided: the folds of the arms' best configurations run in stages and an arm decided
    # against the reference gets no more (lpstudy.study.stages); None: all at once
    until_decided: UntilDecided | None = None
    repeats: int = 1  # --repeats: the K folds of every arm's replicate, repeated over new partitions and seeds
    seeds: int = 1  # --seeds: every (fold[, repeat]) cell of an arm's fold stage trained with S seeds
    # --tunings: T independent tunings per arm (tuning t: its own sampler seed and tuning fold, fold_of_tuning),
    # each one's chosen configuration measured on the fold stage; the verdict spans the tunings
    tunings: int = 1
    # the fold stage trains with seeds its tuning never ran (fold_seed); False only in a plan stored before
    # (from_plain), whose fold stage reran the tuning's seed on the tuning's folds
    fresh_seeds: bool = True

    def to_plain(self) -> dict[str, Any]:
        plain = dataclasses.asdict(self)
        if self.until_decided is None:  # written only when set: a plan made before it is the same plan
            del plain["until_decided"]
        else:
            plain["until_decided"] = self.until_decided.to_plain()
        for name in ("repeats", "seeds", "tunings"):  # likewise
            if plain[name] == 1:
                del plain[name]
        plain["values"] = json_safe(self.values)
        plain["reference"] = json_safe(self.reference)
        return plain

    @classmethod
    def from_plain(cls, plain: dict[str, Any]) -> "ComparePlan":
        known = {f.name for f in dataclasses.fields(cls)}
        plan = cls(**{k: v for k, v in plain.items() if k in known})
        plan.fresh_seeds = bool(plain.get("fresh_seeds", False))  # a plan stored before reran the tuning's seed
        plan.values = [coerce_field(plan.factor, v) for v in plan.values]
        plan.reference = coerce_field(plan.factor, plan.reference)
        plan.until_decided = UntilDecided.from_plain(plan.until_decided)
        return plan

    def label(self, value: Any) -> str:
        """The arm of `value` as its studies' names show it (arm_labels)."""
        labels: dict[Any, str] = dict(zip(self.values, arm_labels(self.factor, self.values)))
        return labels[value]

    def tune_study(self, name: str, value: Any, tuning: int = 0) -> str:
        """The arm's tuning study: NAME:p=3:tune, and NAME:p=3:tune2 ... for the further tunings."""
        return f"{name}:{self.label(value)}:tune{tuning + 1 if tuning else ''}"

    def folds_study(self, name: str, value: Any, tuning: int = 0) -> str:
        """The fold stage of the arm's tuning: NAME:p=3:folds, NAME:p=3:folds2 ..."""
        return f"{name}:{self.label(value)}:folds{tuning + 1 if tuning else ''}"

    def arm_tunings(self) -> list[tuple[Any, int]]:
        """Every (arm value, tuning) of the comparison, the arms' first tunings first."""
        return [(value, t) for t in range(self.tunings) for value in self.values]

    def fold_of_tuning(self, tuning: int) -> int:
        """The fold tuning t samples on: --tune-fold, then the next fold for each further tuning."""
        return (self.tune_fold + tuning) % self.folds

    def sampler_seed_of(self, tuning: int) -> int | None:
        """Tuning t's sampler seed: --sampler-seed + t (None: each tuning's sampler seeds itself)."""
        return None if self.sampler_seed is None else self.sampler_seed + tuning

    def training_seed(self) -> int:
        """The training seed every tuning trial runs with: --set seed, else the preset's."""
        return int(self.fixed.get("seed", get_preset(self.preset).seed))

    def fold_seed(self, tuning: int) -> int:
        """The first training seed of tuning t's fold stage (its --seeds S follow, seeds_inside): a seed
        no tuning trial ran, so that the chosen configuration is measured where its choice did not look
        (the tuning's own folds with fresh seeds) and no (configuration, fold, seed) cell runs twice;
        one per tuning, so two tunings that chose one configuration do not run one cell twice either."""
        if not self.fresh_seeds:
            return self.training_seed()
        return seeds_inside(self.training_seed(), tuning + 2)[tuning + 1]

    def searched_fields(self) -> int:
        return len(self.tune)

    def budget_note(self) -> str | None:
        """Why the budget cannot tune the searched fields, in one sentence; None where it can. A search
        needs more trials than fields to tell a direction from luck (searched fields + 1, the fewest
        points that span them), and TPE models the space only after its random startup trials: below
        that the budget is a random search of that many draws."""
        n, startup = self.searched_fields(), self.tune_spec(self.reference).n_startup_trials
        fields = f"{n} searched field{'s' if n != 1 else ''} ({', '.join(self.tune)})"
        if self.budget < n + 1:
            return (f"a budget of {self.budget} trial{'s' if self.budget != 1 else ''} cannot tune {fields}: it needs "
                    f"at least {n + 1}; each arm's verdict is that of {self.budget} random draw"
                    f"{'s' if self.budget != 1 else ''}, not of a tuned arm")
        if self.budget <= startup:
            return (f"a budget of {self.budget} trials is spent by the sampler's {startup} random startup trials: "
                    f"each arm is tuned by random search over {fields}, not by TPE")
        return None

    def untuned(self) -> dict[str, Any]:
        """The fields a search would sample by default (DEFAULT_SPACE) that this comparison neither
        tunes, nor compares, nor fixes with --set: fixed at the preset's value in every arm, so that
        an arm's tuning searches exactly --tune and its replicates run what the tuning ran."""
        preset = get_preset(self.preset).to_dict()
        return {name: preset[name] for name in DEFAULT_SPACE
                if name not in self.tune and name not in self.fixed and name != self.factor}

    def tune_spec(self, value: Any, tuning: int = 0) -> StudySpec:
        entries = {**self.untuned(), **self.fixed, **self.tune, self.factor: json_safe(value),
                   "fold": self.fold_of_tuning(tuning), "folds": self.folds}
        # search's sampler and pruner; no spread phase: an arm's worker asks for its tuning trials one
        # by one up to its budget, and trials enqueued ahead would be counted as the arm's and left waiting
        return build_spec(None, entries, {"preset": self.preset, "spread_trials": 0,
                                          "n_trials": self.budget, "sampler_seed": self.sampler_seed_of(tuning)})

    def folds_spec(self, value: Any, best_values: dict[str, Any], tuning: int = 0) -> StudySpec:
        fixed = {**self.fixed, **best_values}
        if self.fresh_seeds:
            fixed["seed"] = self.fold_seed(tuning)
        if self.factor == "p":
            p_values = [value]
        else:
            fixed[self.factor] = value
            p_values = [fixed.pop("p", get_preset(self.preset).p)]
        return replicate_spec(self.preset, p_values, self.folds, fixed, {"repeats": self.repeats, "seeds": self.seeds})


def make_plan(factor: str, values: list[str], tune: list[str], budget: int, folds: int, preset: str = "cpu",
              reference: str | None = None, search: dict[str, Any] | None = None,
              fixed: dict[str, Any] | None = None, sampler_seed: int | None = None,
              until_decided: UntilDecided | dict[str, Any] | None = None, repeats: int = 1, seeds: int = 1,
              tunings: int = 1) -> ComparePlan:
    """A plan from what a user typed; UserError (one line) for anything that cannot run."""
    get_preset(preset)
    arms = []
    for text in values:
        value = P(text) if factor == "p" else coerce_field(factor, text)
        if value not in arms:
            arms.append(value)
    if len(arms) < 2:
        raise UserError(f"a comparison needs at least two values of {factor}, got {values!r}")
    if reference is None:
        ref = REFERENCE_P if factor == "p" and REFERENCE_P in arms else arms[0]
    else:
        ref = P(reference) if factor == "p" else coerce_field(factor, reference)
    if ref not in arms:
        raise UserError(f"the reference {factor} = {ref} is not one of the arms ({', '.join(map(str, arms))})")
    for flag, count in (("--seeds", seeds), ("--tunings", tunings)):
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= 100:
            raise UserError(f"{flag} must be a number from 1 to 100, got {count!r}")
    refuse_beside_stages(until_decided, repeats=repeats, seeds=seeds, tunings=tunings)
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise UserError(f"--budget must be a positive number of trials, got {budget!r}")
    search = dict(search or {})
    tune_entries: dict[str, Any] = {}
    for name in [t.strip() for t in tune if t.strip()] + [n for n in search if n not in tune]:
        if name == factor:
            raise UserError(f"{factor} is the compared factor; it cannot also be tuned")
        if name in ("fold", "folds", "repeat"):
            raise UserError("the folds are set by --folds (and --repeats); tuning runs on one fold")
        if name in search:
            tune_entries[name] = search[name]
        elif name in DEFAULT_SPACE:
            tune_entries[name] = DEFAULT_SPACE[name]
        else:
            raise UserError(f"no default range for {name!r}: give one with --search {name}=LOW:HIGH")
    if not tune_entries:
        raise UserError("give the fields to tune in every arm: --tune lr,gain_init")
    plan = ComparePlan(factor=factor, values=arms, reference=ref, tune=tune_entries, budget=budget,
                       folds=folds, preset=preset, fixed=dict(fixed or {}), sampler_seed=sampler_seed,
                       until_decided=UntilDecided.from_plain(until_decided), repeats=repeats, seeds=seeds,
                       tunings=tunings)
    for value, tuning in plan.arm_tunings():
        plan.tune_spec(value, tuning)  # refuse now what an arm could not run
    plan.folds_spec(ref, {})
    return plan


def _parent(storage: StudyStorage, name: str) -> optuna.Study | None:
    try:
        return optuna.load_study(study_name=name, storage=storage.optuna)
    except KeyError:
        return None


def load_plan(storage: StudyStorage, name: str) -> ComparePlan | None:
    """The plan of the comparison NAME; None when NAME is not a comparison (or does not exist)."""
    try:
        study_id = storage.optuna.get_study_id_from_name(name)
    except KeyError:
        return None
    plain = storage.optuna.get_study_user_attrs(study_id).get(COMPARE_ATTR)
    return ComparePlan.from_plain(plain) if plain else None


def create_compare(storage: StudyStorage, name: str, plan: ComparePlan) -> bool:
    """Create the comparison and every arm's tuning study; with the same plan again, change
    nothing (returns False); with another plan, refuse."""
    existing = load_plan(storage, name)
    created = False
    if existing is None:
        taken = _parent(storage, name)
        if taken is not None:
            from lpstudy.study.studies import kind_taken

            stored = taken.user_attrs.get("kind") or "search"
            raise UserError(kind_taken(name, stored, COMPARE_KIND))
        parent = optuna.create_study(storage=storage.optuna, study_name=name, direction="minimize")
        parent.set_user_attr(COMPARE_ATTR, plan.to_plain())
        parent.set_user_attr("kind", COMPARE_KIND)
        parent.set_user_attr("preset", plan.preset)
        created = True
    elif _differs(existing, dataclasses.replace(plan, fresh_seeds=existing.fresh_seeds)):
        # a comparison stored before its fold stage took fresh seeds resumes as it began
        raise UserError(f"comparison {name!r} already exists in {storage.display_url} with another plan; "
                        f"pick another --study name, or run `lpstudy worker --study {name}` to continue it")
    for value, tuning in plan.arm_tunings():
        create_study(storage, plan.tune_study(name, value, tuning), plan.tune_spec(value, tuning))
    return created


def _differs(a: ComparePlan, b: ComparePlan) -> bool:
    return json.dumps(a.to_plain(), sort_keys=True, default=str) != json.dumps(b.to_plain(), sort_keys=True, default=str)


def budget_used(study: optuna.Study) -> int:
    return sum(1 for t in study.get_trials(deepcopy=False) if t.state in BUDGET_STATES)


def tuning_done(study: optuna.Study, budget: int) -> bool:
    states = [t.state for t in study.get_trials(deepcopy=False)]
    finished = sum(1 for s in states if s in (TrialState.COMPLETE, TrialState.PRUNED))
    return finished >= budget and not any(s in (TrialState.RUNNING, TrialState.WAITING) for s in states)


def best_values(study: optuna.Study, spec: StudySpec) -> dict[str, Any] | None:
    """Every field the arm's tuning searched (its stored spec: --tune, and in a comparison made
    before untuned fields were fixed, whatever it sampled besides), at the arm's best trial
    as a search returns it (lpstudy.study.races.search_best: the arm's leaders raced on more folds,
    the lowest mean over the most folds), as the worker ran them; None before any trial counts."""
    chosen = search_best(study.get_trials(deepcopy=False), spec)
    if chosen is None:
        return None
    best = chosen.trial
    return {param.name: best.user_attrs.get(param.name, best.params.get(param.name))
            for param in spec.space.searched}


def ensure_folds_study(storage: StudyStorage, name: str, plan: ComparePlan, value: Any,
                       tuning: int = 0) -> optuna.Study | None:
    """The replicate grid of the arm's tuning, created (cells enqueued once) when that tuning is done;
    None before. With --until-decided it is created empty: its cells come stage by stage (enqueue_stage)."""
    tune, spec = load_study(storage, plan.tune_study(name, value, tuning))
    if not tuning_done(tune, plan.budget):
        return None
    best = best_values(tune, spec)
    if best is None:  # every tuning trial diverged or was pruned: nothing to replicate
        return None
    folds = plan.folds_study(name, value, tuning)
    study, _ = create_study(storage, folds, plan.folds_spec(value, best, tuning))
    if plan.until_decided:
        return study
    enqueue_missing_cells(study, load_study(storage, folds)[1], storage)
    return study


def enqueue_stage(storage: StudyStorage, name: str, plan: ComparePlan, labels: list[str], folds: int) -> tuple[int, int]:
    """A stage of a comparison run --until-decided: the folds 0 .. folds − 1 of the replicate grids
    of these arms (labels), each cell once however many workers come at once (lpstudy.study.studies.
    enqueue_round, the replicate's). Returns (cells enqueued now, cells of the stage waiting or running)."""
    from lpstudy.study.studies import enqueue_round, study_names

    enqueued = open_ = 0
    names = set(study_names(storage))
    for value in plan.values:
        study = plan.folds_study(name, value)
        if plan.label(value) not in labels or study not in names:
            continue
        _, spec = load_study(storage, study)
        now, waiting = enqueue_round(storage, study, list(spec.p_values or []), folds)
        enqueued, open_ = enqueued + now, open_ + waiting
    return enqueued, open_


def next_study(storage: StudyStorage, name: str, plan: ComparePlan) -> str | Wait | StageOver | Done:
    """Where a worker's next trial comes from, the name of its study: an arm whose tuning has a
    WAITING trial (a race or a retry, counted in its budget), else the arm whose tuning has used
    least of its budget, else an arm's replicate grid with a waiting cell; Done when nothing is left
    to run. With --until-decided: Wait while cells or tuning trials run elsewhere, StageOver once a
    stage's cells are over (the verdicts decide what comes next: lpstudy.study.stages.Stages)."""
    used = {}
    for value, tuning in plan.arm_tunings():
        tune, _ = load_study(storage, plan.tune_study(name, value, tuning))
        if any(t.state == TrialState.WAITING for t in tune.get_trials(deepcopy=False)):
            # within its budget already (a race on another fold, a retry): taken first, or no one would
            return plan.tune_study(name, value, tuning)
        used[plan.tune_study(name, value, tuning)] = budget_used(tune)
    open_arms = [study for study, n in sorted(used.items(), key=lambda item: item[1]) if n < plan.budget]
    if open_arms:
        return open_arms[0]
    running = False
    for value, tuning in plan.arm_tunings():
        study = ensure_folds_study(storage, name, plan, value, tuning)
        if study is None:
            tune, _ = load_study(storage, plan.tune_study(name, value, tuning))
            running = running or not tuning_done(tune, plan.budget)
            continue
        states = {t.state for t in study.get_trials(deepcopy=False)}
        if TrialState.WAITING in states:
            return plan.folds_study(name, value, tuning)
        running = running or TrialState.RUNNING in states
    if not plan.until_decided:
        return Done("nothing left to run in the comparison")
    return Wait(WAIT_S) if running else StageOver()
