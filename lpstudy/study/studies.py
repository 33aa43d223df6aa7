"""A study in Optuna: its sampler and pruner, creating and loading it with its spec, and the cells
of a grid (replicate) study, each enqueued once as a WAITING trial."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
import warnings
from collections.abc import Sequence
from typing import Any, Callable

import optuna
from optuna.trial import TrialState

from lpstudy.db import optuna_private
from lpstudy.db.optuna_storage import StudyStorage
from lpstudy.errors import UserError
from lpstudy.names import check_study_name, no_such_study, shell_quoted
from lpstudy.study.seeded_sampler import PerTrialSeededSampler
from lpstudy.design.space import CellKey
from lpstudy.design.spec import StudySpec
from lpstudy.study.spread import (SpreadHyperbandPruner, SpreadMedianPruner, SpreadSuccessiveHalvingPruner,
                                  enqueue_spread)
from lpstudy.values import FIXED_PARAMS_ATTR, SPEC_ATTR, SPEC_SHA256_ATTR

# A study found without its spec is waited for this long: its creator may be setting it right now.
SPEC_WAIT_S = 10.0

# -- samplers and pruners ---------------------------------------------------------------------------

def make_sampler(spec: StudySpec) -> optuna.samplers.BaseSampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ExperimentalWarning for multivariate/constant_liar/group
        if spec.sampler == "cmaes":
            # Fields it cannot model (choices) are drawn by Optuna's independent
            # sampler (random); n_startup_trials is TPE's and does not apply.
            return optuna.samplers.CmaEsSampler(seed=spec.sampler_seed, warn_independent_sampling=False)
        if spec.sampler == "tpe":
            return optuna.samplers.TPESampler(
                multivariate=True, constant_liar=True,
                n_startup_trials=spec.n_startup_trials, seed=spec.sampler_seed,
                warn_independent_sampling=False)
        # "grid": workers only pop enqueued cells, so this sampler never draws a value.
        return optuna.samplers.RandomSampler(seed=spec.sampler_seed)


def study_sampler(spec: StudySpec) -> optuna.samplers.BaseSampler:
    """The sampler of a study opened by a worker or a creator: with a seed, trial n's draws come from
    a stream of its own (lpstudy.study.seeded_sampler), whichever process opens the study for it."""
    if spec.sampler_seed is None:
        return make_sampler(spec)
    return PerTrialSeededSampler(lambda seed: make_sampler(dataclasses.replace(spec, sampler_seed=seed)),
                                 spec.sampler_seed)


def make_pruner(spec: StudySpec) -> optuna.pruners.BasePruner:
    if spec.pruner == "none" or spec.is_grid:
        return optuna.pruners.NopPruner()
    cfg = spec.base_config()
    # Each pruner lets the spread phase's trials run to the end (lpstudy.study.spread).
    if spec.pruner == "median":
        # Never at step 0 nor during warm-up: every run starts near ln V.
        return SpreadMedianPruner(n_startup_trials=5, n_warmup_steps=max(1, cfg.warmup_steps))
    if spec.pruner == "sha":
        # Rungs at one evaluation interval × 3^k steps; a trial goes on if in the best third there.
        return SpreadSuccessiveHalvingPruner(min_resource=max(1, cfg.eval_interval), reduction_factor=3)
    return SpreadHyperbandPruner(min_resource=max(1, cfg.eval_interval), max_resource=cfg.max_steps,
                                 reduction_factor=3)


# -- creating and loading ---------------------------------------------------------------------------

def _canonical(plain: dict[str, Any]) -> str:
    if plain.get("sampler") == "grid":  # a grid never prunes (make_pruner): its pruner does not tell two apart
        plain = {k: v for k, v in plain.items() if k != "pruner"}
    return json.dumps(plain, sort_keys=True, default=str)


def same_spec(a: StudySpec, b: StudySpec) -> bool:
    """Whether `create` takes two specs for the same study."""
    return _canonical(a.to_plain()) == _canonical(b.to_plain())


def spec_sha256(plain: dict[str, Any]) -> str:
    """The SHA-256 (hex) of a spec's canonical form: equal for two specs exactly when `create` takes
    them for the same study."""
    return hashlib.sha256(_canonical(plain).encode()).hexdigest()


def study_names(storage: StudyStorage) -> list[str]:
    return sorted(s.study_name for s in storage.optuna.get_all_studies())


def create_study(storage: StudyStorage, name: str, spec: StudySpec) -> tuple[optuna.Study, bool]:
    """Create the study (and, for a grid, enqueue its cells). If a study of that name exists with
    the same spec (a grid's pruner aside: a grid made before the default pruner changed is still
    the same grid), load it instead (returns created=False); with another spec, refuse."""
    _check_study_name(name)
    plain = spec.to_plain()
    try:
        study = optuna.create_study(storage=storage.optuna, study_name=name, direction="minimize",
                                    sampler=study_sampler(spec), pruner=make_pruner(spec))
    except optuna.exceptions.DuplicatedStudyError:
        _wait_for_spec(storage, name)  # a creator racing us (gRPC, without a lock) may not have set it yet
        study, existing = load_study(storage, name)
        if existing.kind != spec.kind:  # the point first: the name is taken by a study of another kind
            raise UserError(kind_taken(name, existing.kind, spec.kind)) from None
        if _canonical(existing.to_plain()) != _canonical(plain):
            raise UserError(f"study {name!r} already exists in {storage.display_url} with another spec: "
                            f"{spec_differences(existing.to_plain(), plain)}; pick another --study name, "
                            f"or run `lpstudy worker --study {shell_quoted(name)}` to continue it") from None
        return study, False
    if not spec.is_grid:  # before the spec: workers wait for the spec, so none samples before these wait
        enqueue_spread(study, spec.space, spec.spread_trials, spec.sampler_seed)
    study.set_user_attr(SPEC_ATTR, plain)
    study.set_user_attr("kind", spec.kind)
    study.set_user_attr("preset", spec.preset)
    return study, True


def _flatten(plain: Any, prefix: str = "") -> dict[str, str]:
    if isinstance(plain, dict):
        out: dict[str, str] = {}
        for key, value in plain.items():
            out.update(_flatten(value, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: json.dumps(plain, default=str)}


def spec_differences(stored: dict[str, Any], new: dict[str, Any]) -> str:
    """The fields where two specs differ, as `field stored X, new Y` (nested fields dotted:
    space.p.high), so a refusal says what differs rather than repeating the spec."""
    a, b = _flatten(stored), _flatten(new)
    missing = "(unset)"
    parts = [f"{key} stored {a.get(key, missing)}, new {b.get(key, missing)}"
             for key in sorted(set(a) | set(b)) if a.get(key) != b.get(key)]
    return "; ".join(parts) or "the same fields in another form"


def open_and_create(storage: StudyStorage, name: str, spec: StudySpec | Callable[[StudySpec | None], StudySpec]
                    ) -> tuple[optuna.Study, bool, int]:
    """Open storage (creating the tables), create the study and enqueue its grid cells, all under the
    storage's creation lock (lpstudy.db.locking), so that concurrent `create`/`replicate` commands of
    one study enqueue each cell once and the later one finds the study. Returns (study, created,
    cells enqueued now). storage: the command's one storage, which the caller closes.

    Last, it writes the spec's SHA-256 on the study (SPEC_SHA256_ATTR, a system attribute): the mark
    that its creator succeeded, which workers given the study file wait for (lpstudy.study.spec_wait).
    A database that cannot be reached is waited for (the storage's retry budget: creating_storage's
    is CREATE_RETRY_S by default, for a database that starts late), then DatabaseUnreachable (exit
    status 75).

    `spec` may be a function of the study's stored spec (None: no such study), called under the
    lock: a command that continues a study from its name alone (StudyOptions.spec_for)."""
    from lpstudy.db.outages import quiet_optuna
    from lpstudy.study.undo import undo_on_failure

    quiet_optuna()

    def attempt() -> tuple[optuna.Study, bool, int]:
        try:
            return made_under_lock()
        except BaseException:
            storage.close()  # tried again, it is opened afresh (the failure may have removed its file)
            raise

    def made_under_lock() -> tuple[optuna.Study, bool, int]:
        with undo_on_failure(storage) as undo, storage.lock():  # a failure leaves nothing it made behind
            storage.open(create_tables=True)
            study, created = create_study(storage, name, _resolved(storage, name, spec))
            if created:
                undo.study(storage, name)
            made = load_spec(storage, name)
            # a sequential replicate (--until-decided): its first stage only; the workers enqueue the next ones
            first = made.first_round_cells()
            enqueued = (0 if not made.is_grid else enqueue_missing_cells(study, made, storage) if first is None
                        else enqueue_missing_cells(study, made, storage, first))
            storage.optuna.set_study_system_attr(optuna_private.study_id(study), SPEC_SHA256_ATTR, spec_sha256(made.to_plain()))
        return study, created, enqueued

    return storage.call(attempt)  # an unreachable database: tried again


def creating_storage(url: str | None) -> StudyStorage:
    """The storage at url as a command that creates a study holds it, nothing opened: its calls wait
    for a database that starts late (CREATE_RETRY_S, unless LPSTUDY_STORAGE_RETRY_S says otherwise)."""
    from lpstudy.db.kinds import storage_at
    from lpstudy.db.outages import CREATE_RETRY_S, retry_budget

    return storage_at(url, retry_s=retry_budget(CREATE_RETRY_S))


def _resolved(storage: StudyStorage, name: str, spec: StudySpec | Callable[[StudySpec | None], StudySpec]
              ) -> StudySpec:
    if not callable(spec):
        return spec
    try:
        storage.optuna.get_study_id_from_name(name)
    except KeyError:
        return spec(None)
    _wait_for_spec(storage, name)  # a creator racing us may not have set it yet
    return spec(load_spec(storage, name))


def _wait_for_spec(storage: StudyStorage, name: str, timeout_s: float = SPEC_WAIT_S) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            study_id = storage.optuna.get_study_id_from_name(name)
            if SPEC_ATTR in storage.optuna.get_study_user_attrs(study_id):
                return
        except KeyError:
            pass
        time.sleep(0.2)


def _check_study_name(name: str) -> None:
    check_study_name(name)


def load_spec(storage: StudyStorage, name: str) -> StudySpec:
    try:
        study_id = storage.optuna.get_study_id_from_name(name)
    except KeyError:
        raise UserError(no_such_study(name, storage.display_url, study_names(storage))) from None
    return spec_of(name, storage.optuna.get_study_user_attrs(study_id))


KIND_NOUNS = {"search": "search", "replicate": "replicate", "compare": "comparison"}  # a study's kind, in words


def kind_taken(name: str, stored: str, wanted: str) -> str:
    """One line for a study asked to continue as another kind than it is, its point first."""
    shown, have, want = shell_quoted(name), KIND_NOUNS.get(stored, stored), KIND_NOUNS.get(wanted, wanted)
    return (f"that name is a {have}: study {name!r} exists as a {have}, not a {want}; give the {want} a new --study "
            f"name, or continue the {have} with `lpstudy worker --study {shown}`")


def spec_of(name: str, attrs: dict[str, Any], wanted: str | None = None) -> StudySpec:
    """The spec in the study's user attributes; UserError for a study lpstudy did not create, and for
    a comparison (its arms' studies hold the specs), said as such."""
    if attrs.get("kind") == "compare" and SPEC_ATTR not in attrs:
        raise UserError(kind_taken(name, "compare", wanted or "search"))
    if SPEC_ATTR not in attrs:
        raise UserError(f"study {name!r} was not created by lpstudy (it has no '{SPEC_ATTR}' spec); "
                        "create one with `lpstudy create`")
    return StudySpec.from_plain(attrs[SPEC_ATTR])


def load_study(storage: StudyStorage, name: str) -> tuple[optuna.Study, StudySpec]:
    spec = load_spec(storage, name)
    study = optuna.load_study(study_name=name, storage=storage.optuna, sampler=study_sampler(spec),
                              pruner=make_pruner(spec))
    return study, spec


def trial_params(trial: optuna.trial.FrozenTrial) -> dict[str, Any]:
    """A trial's Optuna parameters, also those of a WAITING (enqueued) trial that has not run yet."""
    return {**trial.system_attrs.get(FIXED_PARAMS_ATTR, {}), **trial.params}


def grid_state(study: optuna.Study, spec: StudySpec) -> dict[CellKey, list[TrialState]]:
    """For each cell of a grid study, the states of its trials (an empty list: never enqueued)."""
    cells: dict[CellKey, list[TrialState]] = {spec.space.cell_of(spec.space.optuna_params(c)): []
                                              for c in spec.space.grid_cells()}
    for trial in study.get_trials(deepcopy=False):
        params = trial_params(trial)
        try:
            key = spec.space.cell_of(params)
        except (UserError, KeyError):
            continue
        if key in cells:
            cells[key].append(trial.state)
    return cells


def enqueue_missing_cells(study: optuna.Study, spec: StudySpec, storage: StudyStorage,
                          cells: list[dict[str, Any]] | None = None) -> int:
    """Enqueue every grid cell (or every one of `cells`) that has no COMPLETE, WAITING or RUNNING
    trial; return how many.
    Running it twice enqueues nothing the second time (a replicate resumes, it never duplicates).
    The study's storage enqueues them (StudyStorage.enqueue_cells: on SQL one transaction, retried
    through an outage, 5,000 cells in about a second instead of minutes; elsewhere one enqueue_trial
    each)."""
    live = (TrialState.COMPLETE, TrialState.WAITING, TrialState.RUNNING)

    def missing_cells() -> list[dict[str, Any]]:
        state = grid_state(study, spec)
        return [params for params in map(spec.space.optuna_params, spec.space.grid_cells() if cells is None else cells)
                if not any(s in live for s in state[spec.space.cell_of(params)])]

    return storage.enqueue_cells(study, missing_cells)


def enqueue_round(storage: StudyStorage, name: str, p_values: Sequence[float | str], folds: int) -> tuple[int, int]:
    """A sequential replicate's next round: the cells of these p values on folds 0 .. folds − 1 that
    have no live trial, enqueued under the storage's creation lock (lpstudy.db.locking), so that two
    workers that finish a round at once enqueue each cell once. Returns (cells enqueued now, cells
    of the round waiting or running): a worker that comes second enqueues none and finds them open."""
    from lpstudy.values import P

    wanted = {P(p) for p in p_values}
    with storage.lock():
        study, spec = load_study(storage, name)
        cells = [cell for cell in spec.space.grid_cells() if P(cell["p"]) in wanted and int(cell["fold"]) < folds]
        enqueued = enqueue_missing_cells(study, spec, storage, cells)
        state = grid_state(study, spec)
        open_ = sum(1 for cell in cells if any(s in (TrialState.WAITING, TrialState.RUNNING)
                                               for s in state[spec.space.cell_of(spec.space.optuna_params(cell))]))
        return enqueued, open_
