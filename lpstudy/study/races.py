"""A search study's races: its trials read as evaluations of configurations on folds, the leaders'
next folds enqueued as trials, and the configuration the search returns.

The decision is the study's Intensifier's (lpstudy.design.intensify, the same object the replay
benchmark asks); this module only reads a study's trials for it and writes its requests back. A
configuration is its Optuna parameters (a race's trial is enqueued with exactly those of the trial
that first ran it); a trial's fold is the fold its race enqueued it on (the user attribute
RACE_FOLD_ATTR), else the study's tuning fold (the space's fold). A worker enqueues the requests
after each trial it completes, under the storage's lock (as a replicate's rounds are enqueued), so
two workers finishing at once enqueue each race once; within a study's n_trials target, never past
it (a waiting trial past the target would wait for ever), and within what the worker that enqueues
them has left of its own --n-trials (`lpstudy search --n-trials 8` runs 8 trials and leaves no race
waiting that it will not run: a request not enqueued is asked again after the next trial, from the
evaluations, so nothing is lost, while a race left waiting would run first in a later run, for a
leader that may no longer lead).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from lpstudy.design.intensify import Evaluation, Returned
from lpstudy.design.spec import StudySpec
from lpstudy.values import FIXED_PARAMS_ATTR, RACE_FOLD_ATTR, RACE_OF_ATTR

if TYPE_CHECKING:  # types only: the tables' reader loads pandas
    from lpstudy.db.kinds.base import StudyStorage
    from lpstudy.db.study_queries import StudyTables


def key_of(params: dict[str, Any]) -> Hashable:
    """A configuration's key: its Optuna parameters (external values), in name order."""
    return tuple(sorted((name, repr(value)) for name, value in params.items()))


def config_key(trial: FrozenTrial) -> Hashable:
    """The configuration a trial runs: its Optuna parameters (a waiting trial's too)."""
    return key_of({**trial.system_attrs.get(FIXED_PARAMS_ATTR, {}), **trial.params})


def fold_of(trial: FrozenTrial, spec: StudySpec) -> int:
    raced = trial.user_attrs.get(RACE_FOLD_ATTR)
    return int(raced) if raced is not None else int(spec.base_config().fold)


def run_overrides(spec: StudySpec, trial: optuna.Trial) -> dict[str, Any]:
    """What a trial runs: the space's values for it (spec.space.suggest), on its race's fold where a
    race enqueued it. The worker's objective (lpstudy.study.objective) reads its run here."""
    overrides = spec.space.suggest(trial)
    raced = trial.user_attrs.get(RACE_FOLD_ATTR)
    if raced is not None:
        overrides["fold"] = int(raced)
    return overrides


def evaluations(trials: Sequence[FrozenTrial], spec: StudySpec) -> list[Evaluation[Hashable]]:
    """The study's COMPLETE trials with a finite value, in trial order, as evaluations."""
    out: list[Evaluation[Hashable]] = []
    for t in sorted(trials, key=lambda t: t.number):
        if t.state == TrialState.COMPLETE and t.values:
            out.append(Evaluation(config_key(t), fold_of(t, spec), float(t.values[0]),
                                  bool((t.user_attrs or {}).get("diverged"))))
    return out


def pending(trials: Sequence[FrozenTrial], spec: StudySpec) -> set[tuple[Hashable, int]]:
    """The races enqueued and not finished: (configuration, fold) of WAITING and RUNNING race trials."""
    return {(config_key(t), fold_of(t, spec)) for t in trials
            if t.state in (TrialState.WAITING, TrialState.RUNNING) and t.user_attrs.get(RACE_FOLD_ATTR) is not None}


@dataclass(frozen=True)
class SearchBest:
    """The configuration a search returns (lpstudy.design.intensify.Returned) and its trials: `trial`
    the one on the tuning fold (or the first it ran: what a run file retrains), `trials` every
    COMPLETE trial of it, by fold."""

    returned: Returned[Hashable]
    trial: FrozenTrial
    trials: tuple[FrozenTrial, ...]

    @property
    def n_folds(self) -> int:
        return self.returned.n_folds


def search_best(trials: Sequence[FrozenTrial], spec: StudySpec) -> SearchBest | None:
    """The configuration the search returns (spec.intensifier().returned over its trials), None
    before any COMPLETE trial that did not diverge."""
    chosen = spec.intensifier().returned(evaluations(trials, spec))
    if chosen is None:
        return None
    runs = sorted((t for t in trials if t.state == TrialState.COMPLETE and t.values and config_key(t) == chosen.key),
                  key=lambda t: t.number)
    tuning = int(spec.base_config().fold)
    first = next((t for t in runs if fold_of(t, spec) == tuning), runs[0])
    return SearchBest(chosen, first, tuple(runs))


@dataclass(frozen=True)
class StoredBest:
    """The configuration a search returns, as its tables say (stored_best): its Returned (keyed by
    the number of the trial that first ran it), that trial's id and number (its run on the tuning
    fold: what a run file retrains), the numbers of every run of it, and the ids of the trials
    races ran (not configurations of their own)."""

    returned: Returned[int]  # keyed by the number of the trial that first ran it
    trial_id: int
    number: int
    numbers: tuple[int, ...]
    race_ids: frozenset[int]


def _json(text: Any) -> Any:
    import json

    if text is None or (isinstance(text, float) and text != text):  # NULL: absent
        return None
    return json.loads(text) if isinstance(text, str) else text


def stored_best(tables: StudyTables, spec: StudySpec) -> StoredBest | None:
    """The configuration a search returns, from its tables (lpstudy.db.study_queries.StudyTables)
    with a few queries however many trials it has: only a raced configuration can have more than
    one fold, so the Intensifier reads the COMPLETE race trials (RACE_FOLD_ATTR, RACE_OF_ATTR) and
    the trials that first ran their configurations; where none of them holds (no race yet, or every
    raced configuration diverged on a fold), the tuning fold's lowest value (lpstudy.design.best, by a
    query) among the trials no race ran. None before any COMPLETE trial that did not diverge."""
    import math

    tuning = int(spec.base_config().fold)
    race_ids = tables.trial_ids_with_user_attr(RACE_FOLD_ATTR, state="COMPLETE")
    left_out = set(race_ids)
    if race_ids:
        races = tables.trial_rows([RACE_FOLD_ATTR, RACE_OF_ATTR, "diverged"], ids=race_ids).to_dict("records")
        origins = {int(_json(r[RACE_OF_ATTR])) for r in races if _json(r.get(RACE_OF_ATTR)) is not None}
        ids = tables.trial_ids_of(sorted(origins))
        first = tables.trial_rows(["diverged"], ids=list(ids), state="COMPLETE").to_dict("records")
        evaluations = [Evaluation(int(r["number"]), tuning, float(r["value"]), bool(_json(r.get("diverged"))))
                       for r in first if r["value"] is not None and math.isfinite(float(r["value"]))]
        evaluations += [Evaluation(int(_json(r[RACE_OF_ATTR])), int(_json(r[RACE_FOLD_ATTR])), float(r["value"]),
                                   bool(_json(r.get("diverged")))) for r in races
                        if _json(r.get(RACE_OF_ATTR)) is not None and r["value"] is not None
                        and math.isfinite(float(r["value"]))]
        chosen = spec.intensifier().returned(evaluations)
        if chosen is not None and chosen.n_folds >= 2:
            number = int(chosen.key)
            runs = sorted({number, *[int(_json(r["number"])) for r in races if _json(r.get(RACE_OF_ATTR)) == number]})
            trial_id = next(tid for tid, n in ids.items() if n == number)
            return StoredBest(chosen, trial_id, number, tuple(runs), frozenset(race_ids))
        diverged = {e.key for e in evaluations if e.diverged}  # a configuration that diverged on a fold
        left_out |= {tid for tid, n in ids.items() if n in diverged}
    ranked = tables.ranked_trial_ids(len(left_out) + 1)
    found = next(((tid, n, v) for tid, n, v in ranked if tid not in left_out), None)
    if found is None:
        return None
    tid, number, value = found
    return StoredBest(Returned(number, (tuning,), (float(value),), float(value), (-math.inf, math.inf)), tid, number,
                      (number,), frozenset(race_ids))


def enqueue_races(storage: StudyStorage, study: optuna.Study, spec: StudySpec, room: int | None = None) -> int:
    """Enqueue the Intensifier's requests as WAITING trials (each with its configuration's
    parameters and the fold in RACE_FOLD_ATTR), under the storage's lock, within the study's
    n_trials target and, given `room` (the trials the enqueuing worker has left of its --n-trials),
    so that the study's WAITING trials, these included, are no more than `room`: every worker takes a
    waiting trial first, so the runs that set --n-trials end with none of them left; how many.
    Nothing for a grid or a study that does not race."""
    if spec.is_grid or spec.race <= 0 or not spec.space.searched:
        return 0  # a space with nothing searched has one configuration: more folds of it are a replicate
    with storage.lock():
        trials = study.get_trials(deepcopy=False)
        requests = spec.intensifier().requests(evaluations(trials, spec), pending(trials, spec))
        if spec.n_trials is not None:
            taken = sum(1 for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING,
                                                         TrialState.WAITING))
            requests = requests[:max(0, spec.n_trials - taken)]
        if room is not None:
            waiting = sum(1 for t in trials if t.state == TrialState.WAITING)
            requests = requests[:max(0, room - waiting)]
        first: dict[Hashable, FrozenTrial] = {}  # the trial that first ran each configuration
        for t in sorted(trials, key=lambda t: t.number):
            if t.state == TrialState.COMPLETE:
                first.setdefault(config_key(t), t)
        for key, fold in requests:
            study.enqueue_trial(dict(first[key].params),
                                user_attrs={RACE_FOLD_ATTR: int(fold), RACE_OF_ATTR: first[key].number})
        return len(requests)
