"""A search study's races: its trials read as evaluations of configurations on folds, the leaders'
next folds enqueued as trials, and the configuration the search returns.

The decision is the study's Intensifier's (lpstudy.study.intensify, the same object the replay
benchmark asks); this module only reads a study's trials for it and writes its requests back. A
configuration is its Optuna parameters (a race's trial is enqueued with exactly those of the trial
that first ran it); a trial's fold is the fold its race enqueued it on (the user attribute
RACE_FOLD_ATTR), else the study's tuning fold (the space's fold). A worker enqueues the requests
after each trial it completes, under the storage's lock (as a replicate's rounds are enqueued), so
two workers finishing at once enqueue each race once; within a study's n_trials target, never past
it (a waiting trial past the target would wait for ever).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.trial import FrozenTrial, TrialState

from lpstudy.study.intensify import Evaluation, Returned
from lpstudy.study.spec import StudySpec
from lpstudy.values import FIXED_PARAMS_ATTR, RACE_FOLD_ATTR


def key_of(params: dict[str, Any]) -> Hashable:
    """A configuration's key: its Optuna parameters (external values), in name order."""
    return tuple(sorted((name, repr(value)) for name, value in params.items()))


def config_key(trial: FrozenTrial) -> Hashable:
    """The configuration a trial runs: its Optuna parameters (a waiting trial's too)."""
    return key_of({**trial.system_attrs.get(FIXED_PARAMS_ATTR, {}), **trial.params})


def fold_of(trial: FrozenTrial, spec: StudySpec) -> int:
    raced = trial.user_attrs.get(RACE_FOLD_ATTR)
    return int(raced) if raced is not None else int(spec.base_config().fold)


def run_overrides(spec: StudySpec, trial) -> dict[str, Any]:
    """What a trial runs: the space's values for it (spec.space.suggest), on its race's fold where a
    race enqueued it. The worker's objective (lpstudy.study.objective) reads its run here."""
    overrides = spec.space.suggest(trial)
    raced = trial.user_attrs.get(RACE_FOLD_ATTR)
    if raced is not None:
        overrides["fold"] = int(raced)
    return overrides


def evaluations(trials: Sequence[FrozenTrial], spec: StudySpec) -> list[Evaluation]:
    """The study's COMPLETE trials with a finite value, in trial order, as evaluations."""
    out = []
    for t in sorted(trials, key=lambda t: t.number):
        if t.state == TrialState.COMPLETE and t.values:
            out.append(Evaluation(config_key(t), fold_of(t, spec), float(t.value),
                                  bool((t.user_attrs or {}).get("diverged"))))
    return out


def pending(trials: Sequence[FrozenTrial], spec: StudySpec) -> set[tuple[Hashable, int]]:
    """The races enqueued and not finished: (configuration, fold) of WAITING and RUNNING race trials."""
    return {(config_key(t), fold_of(t, spec)) for t in trials
            if t.state in (TrialState.WAITING, TrialState.RUNNING) and t.user_attrs.get(RACE_FOLD_ATTR) is not None}


@dataclass(frozen=True)
class SearchBest:
    """The configuration a search returns (lpstudy.study.intensify.Returned) and its trials: `trial`
    the one on the tuning fold (or the first it ran: what a run file retrains), `trials` every
    COMPLETE trial of it, by fold."""

    returned: Returned
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
class StoredRun:
    """A COMPLETE trial as a table read gives it (lpstudy.db.trial_reader.StudyTables: no Optuna storage)."""

    trial_id: int
    number: int
    key: Hashable
    fold: int
    value: float
    diverged: bool


def stored_runs(tables, spec: StudySpec) -> list[StoredRun]:
    """The study's COMPLETE trials with a finite value, read from its tables (each parameter's
    internal value turned external through its distribution, as Optuna's FrozenTrial has it), in
    trial order."""
    import math

    from optuna.distributions import json_to_distribution

    rows = tables.trial_rows(["diverged", RACE_FOLD_ATTR], state="COMPLETE")
    params: dict[int, dict[str, Any]] = {}
    distributions: dict[str, Any] = {}  # a study has a few distinct ones: each parsed once
    for tid, name, value, text in tables.param_rows(state="COMPLETE").itertuples(index=False):
        if text not in distributions:
            distributions[text] = json_to_distribution(text)
        params.setdefault(int(tid), {})[name] = distributions[text].to_external_repr(value)
    tuning = int(spec.base_config().fold)
    out = []
    for row in rows.sort_values("number").to_dict("records"):
        value = row["value"]
        if value is None or not math.isfinite(float(value)):
            continue
        raced, diverged = _json(row.get(RACE_FOLD_ATTR)), _json(row.get("diverged"))
        out.append(StoredRun(int(row["trial_id"]), int(row["number"]), key_of(params.get(int(row["trial_id"]), {})),
                             tuning if raced is None else int(raced), float(value), bool(diverged)))
    return out


def _json(text: Any) -> Any:
    import json

    if text is None or (isinstance(text, float) and text != text):  # NULL: absent
        return None
    return json.loads(text) if isinstance(text, str) else text


def stored_best(tables, spec: StudySpec) -> tuple[Returned, list[StoredRun], list[StoredRun]] | None:
    """The configuration a search returns, from its tables: (its Returned, its runs by trial
    number, every run); None before any COMPLETE trial that did not diverge."""
    runs = stored_runs(tables, spec)
    chosen = spec.intensifier().returned(Evaluation(r.key, r.fold, r.value, r.diverged) for r in runs)
    if chosen is None:
        return None
    return chosen, [r for r in runs if r.key == chosen.key], runs


def enqueue_races(storage, study: optuna.Study, spec: StudySpec) -> int:
    """Enqueue the Intensifier's requests as WAITING trials (each with its configuration's
    parameters and the fold in RACE_FOLD_ATTR), under the storage's lock, within the study's
    n_trials target; how many. Nothing for a grid or a study that does not race."""
    if spec.is_grid or spec.race <= 0 or not spec.space.searched:
        return 0  # a space with nothing searched has one configuration: more folds of it are a replicate
    with storage.lock():
        trials = study.get_trials(deepcopy=False)
        requests = spec.intensifier().requests(evaluations(trials, spec), pending(trials, spec))
        if spec.n_trials is not None:
            taken = sum(1 for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING,
                                                         TrialState.WAITING))
            requests = requests[:max(0, spec.n_trials - taken)]
        params_of: dict[Hashable, dict[str, Any]] = {}
        for t in sorted(trials, key=lambda t: t.number):
            if t.state == TrialState.COMPLETE:
                params_of.setdefault(config_key(t), dict(t.params))
        for key, fold in requests:
            study.enqueue_trial(params_of[key], user_attrs={RACE_FOLD_ATTR: int(fold)})
        return len(requests)
