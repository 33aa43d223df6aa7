"""A study: its spec (what it searches and how), creating and loading it, and the objective.

The spec lives in the Optuna study's user attribute "lpstudy" (plain JSON), so that every worker,
the status, the export and the dashboard read the same space, preset, sampler and pruner; the
study's user attributes "kind" and "preset" repeat two of its keys as plain strings.

Samplers: "tpe" (multivariate, constant liar: parallel workers do not all sample the same point),
"random", and "grid": every cell of the space's choices is enqueued once as a WAITING trial, and
workers only pop waiting trials, so that each cell runs exactly once however many workers pull.
Pruners: "median", "hyperband", "none"; they read the validation loss reported at each evaluation.

The objective (run_trial) trains one run and returns its outcome; the worker tells Optuna.
Direction: minimise. Value: the final validation loss, or ln(vocabulary size) for a run that
diverged (it COMPLETES with the user attribute diverged=True, so samplers learn to avoid it).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import socket
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import optuna
from optuna.trial import TrialState

from lpstudy.errors import UserError
from lpstudy.optuna_storage import StudyStorage
from lpstudy.space import DEFAULT_SPACE, SearchSpace, describe_overrides, encode

SPEC_ATTR = "lpstudy"
SPEC_VERSION = 1
SAMPLERS = ("tpe", "random", "grid")
PRUNERS = ("median", "hyperband", "none")
KINDS = ("search", "replicate")
# Prefix of the trial system attributes that hold metrics on storages without SQL (journal, gRPC).
METRICS_ATTR_PREFIX = "lpstudy_metrics:"
# The keys of a study YAML besides `space:`; fold, folds and seed are shortcuts for space entries.
STUDY_FILE_KEYS = ("preset", "space", "sampler", "pruner", "loss_threshold", "n_trials", "n_startup_trials",
                   "sampler_seed", "heartbeat_interval", "grace_period", "max_retry", "fold", "folds", "seed")
SPACE_SHORTCUTS = ("fold", "folds", "seed")


def metrics_attr_name(step: int) -> str:
    return f"{METRICS_ATTR_PREFIX}{step:08d}"


@dataclass
class StudySpec:
    """What a study searches and how. Stored as plain data in the study's user attribute 'lpstudy'."""

    space: SearchSpace
    preset: str = "cpu"
    kind: str = "search"
    folds: int = 10
    sampler: str = "tpe"
    pruner: str = "median"
    loss_threshold: float | None = None
    n_trials: int | None = None  # a target: workers stop once this many trials COMPLETE or PRUNED
    n_startup_trials: int = 10  # TPE's random trials before it models the space
    sampler_seed: int | None = None
    heartbeat_interval: int = 10  # seconds between heartbeats of a running trial (SQL storages)
    grace_period: int = 60  # a RUNNING trial without heartbeat for this long is failed and retried
    max_retry: int = 2  # how often a failed (dead, interrupted) trial is retried with its parameters
    p_values: list[float] | None = None  # replicate: the grid's p values
    n_cells: int | None = None  # grid: the number of cells

    @property
    def is_grid(self) -> bool:
        return self.sampler == "grid"

    def to_plain(self) -> dict[str, Any]:
        out = {
            "version": SPEC_VERSION, "kind": self.kind, "preset": self.preset, "folds": self.folds,
            "space": self.space.to_plain(), "sampler": self.sampler, "pruner": self.pruner,
            "loss_threshold": self.loss_threshold, "n_trials": self.n_trials,
            "n_startup_trials": self.n_startup_trials, "sampler_seed": self.sampler_seed,
            "heartbeat_interval": self.heartbeat_interval, "grace_period": self.grace_period,
            "max_retry": self.max_retry, "n_cells": self.n_cells,
        }
        if self.p_values is not None:
            out["p_values"] = [encode("p", p) for p in self.p_values]
        return out

    @classmethod
    def from_plain(cls, plain: dict[str, Any]) -> "StudySpec":
        from lpstudy.lpnorm import check_p

        known = {f.name for f in dataclasses.fields(cls)}
        values = {k: v for k, v in plain.items() if k in known}
        values["space"] = SearchSpace.from_plain(plain.get("space") or {})
        if values.get("p_values") is not None:
            values["p_values"] = [check_p(p) for p in values["p_values"]]
        return cls(**values)

    def validate(self) -> "StudySpec":
        """Refuse what cannot run (UserError with the reason); fill in n_cells for a grid."""
        from lpstudy.presets import get_preset

        get_preset(self.preset)
        if self.kind not in KINDS:
            raise UserError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.sampler not in SAMPLERS:
            raise UserError(f"unknown sampler {self.sampler!r}; choose one of: {', '.join(SAMPLERS)}")
        if self.pruner not in PRUNERS:
            raise UserError(f"unknown pruner {self.pruner!r}; choose one of: {', '.join(PRUNERS)}")
        for name, low in (("heartbeat_interval", 1), ("grace_period", 1), ("max_retry", 0),
                          ("n_startup_trials", 0)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise UserError(f"{name} must be an integer ≥ {low}, got {value!r}")
        if self.n_trials is not None and (isinstance(self.n_trials, bool) or not isinstance(self.n_trials, int)
                                          or self.n_trials < 1):
            raise UserError(f"n_trials must be a positive integer, got {self.n_trials!r}")
        if self.grace_period <= self.heartbeat_interval:
            raise UserError(f"grace_period ({self.grace_period} s) must be longer than heartbeat_interval "
                            f"({self.heartbeat_interval} s), or live trials would be failed")
        if self.loss_threshold is not None:
            try:
                self.loss_threshold = float(self.loss_threshold)
            except (TypeError, ValueError):
                raise UserError(f"loss_threshold must be a number, got {self.loss_threshold!r}") from None
        folds = self.space.get("folds")
        if folds is not None and not isinstance(folds, _fixed_type()):
            raise UserError("folds must be one fixed number (the K of K-fold cross-validation), not searched")
        self.space.validate(self.preset)
        self.folds = int(self.base_config().folds)
        if self.is_grid:
            self.n_cells = len(self.space.grid_cells())
        return self

    def base_config(self):
        """The preset with the space's fixed values: what every trial shares."""
        from lpstudy.config import resolve_config

        return resolve_config(self.preset, self.space.fixed)

    def describe(self) -> str:
        extra = f" · {self.n_cells} cells" if self.is_grid else ""
        return (f"{self.kind} · preset {self.preset} · sampler {self.sampler} · pruner {self.pruner}{extra}")


def _fixed_type():
    from lpstudy.space import Fixed

    return Fixed


# -- building a spec from a study YAML and flags -------------------------------------------------

def read_study_file(path: str | Path) -> dict[str, Any]:
    """The mapping in a study YAML; UserError (one line) for anything malformed."""
    from lpstudy.files import read_yaml_mapping

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
    sampler = str(data.get("sampler", "tpe")).lower()
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
    from lpstudy.lpnorm import check_p

    if not p_values:
        raise UserError("give at least one p value (--p 1,1.5,2,...)")
    ps: list[float] = []
    for p in p_values:
        value = check_p(p)
        if value not in ps:
            ps.append(value)
    if isinstance(folds, bool) or not isinstance(folds, int) or folds < 2:
        raise UserError(f"--folds must be an integer ≥ 2, got {folds!r}")
    for name in ("p", "fold", "folds"):
        if name in (fixed or {}):
            raise UserError(f"{name} is set by the replicate grid (--p, --folds); do not --set it")
    space_map: dict[str, Any] = dict(fixed or {})
    space_map["folds"] = folds
    space_map["p"] = {"choices": [encode("p", p) for p in ps]}
    space_map["fold"] = {"choices": list(range(folds))}
    options = {k: v for k, v in (options or {}).items() if v is not None}
    known = {f.name for f in dataclasses.fields(StudySpec)} - {"space", "kind", "p_values", "n_cells", "folds",
                                                            "sampler", "pruner", "preset"}
    spec = StudySpec(space=SearchSpace.from_mapping(space_map), preset=preset, kind="replicate",
                     sampler="grid", pruner="none", p_values=ps,
                     **{k: v for k, v in options.items() if k in known})
    return spec.validate()


# -- samplers and pruners ---------------------------------------------------------------------------

def make_sampler(spec: StudySpec) -> optuna.samplers.BaseSampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ExperimentalWarning for multivariate/constant_liar/group
        if spec.sampler == "tpe":
            return optuna.samplers.TPESampler(
                multivariate=True, constant_liar=True, group=spec.space.is_conditional,
                n_startup_trials=spec.n_startup_trials, seed=spec.sampler_seed,
                warn_independent_sampling=False)
        # "grid": workers only pop enqueued cells, so this sampler never draws a value.
        return optuna.samplers.RandomSampler(seed=spec.sampler_seed)


def make_pruner(spec: StudySpec) -> optuna.pruners.BasePruner:
    if spec.pruner == "none" or spec.is_grid:
        return optuna.pruners.NopPruner()
    cfg = spec.base_config()
    if spec.pruner == "median":
        # Never at step 0 nor during warm-up: every run starts near ln V.
        return optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=max(1, cfg.warmup_steps))
    return optuna.pruners.HyperbandPruner(min_resource=max(1, cfg.eval_interval), max_resource=cfg.max_steps,
                                          reduction_factor=3)


# -- creating and loading ---------------------------------------------------------------------------

def _canonical(plain: dict[str, Any]) -> str:
    return json.dumps(plain, sort_keys=True, default=str)


def study_names(storage: StudyStorage) -> list[str]:
    return sorted(s.study_name for s in storage.optuna.get_all_studies())


def create_study(storage: StudyStorage, name: str, spec: StudySpec) -> tuple[optuna.Study, bool]:
    """Create the study (and, for a grid, enqueue its cells). If a study of that name exists with
    the same spec, load it instead (returns created=False); with another spec, refuse."""
    _check_study_name(name)
    plain = spec.to_plain()
    try:
        study = optuna.create_study(storage=storage.optuna, study_name=name, direction="minimize",
                                    sampler=make_sampler(spec), pruner=make_pruner(spec))
    except optuna.exceptions.DuplicatedStudyError:
        study, existing = load_study(storage, name)
        if _canonical(existing.to_plain()) != _canonical(plain):
            raise UserError(f"study {name!r} already exists in {storage.display_url} with another spec "
                            f"({existing.describe()}); pick another --study name, or run `lpstudy worker "
                            f"--study {name}` to continue it") from None
        return study, False
    study.set_user_attr(SPEC_ATTR, plain)
    study.set_user_attr("kind", spec.kind)
    study.set_user_attr("preset", spec.preset)
    return study, True


def _check_study_name(name: str) -> None:
    if not name or not name.strip() or len(name) > 512:
        raise UserError("a study name must be 1 to 512 characters")


def load_spec(storage: StudyStorage, name: str) -> StudySpec:
    try:
        study_id = storage.optuna.get_study_id_from_name(name)
    except KeyError:
        names = study_names(storage)
        have = f"; studies there: {', '.join(names)}" if names else "; it holds no studies yet"
        raise UserError(f"no study named {name!r} in {storage.display_url}{have}. Create it with "
                        f"`lpstudy create --study {name}` or `lpstudy replicate --study {name}`") from None
    attrs = storage.optuna.get_study_user_attrs(study_id)
    if SPEC_ATTR not in attrs:
        raise UserError(f"study {name!r} was not created by lpstudy (it has no '{SPEC_ATTR}' spec); "
                        "create one with `lpstudy create`")
    return StudySpec.from_plain(attrs[SPEC_ATTR])


def load_study(storage: StudyStorage, name: str) -> tuple[optuna.Study, StudySpec]:
    spec = load_spec(storage, name)
    study = optuna.load_study(study_name=name, storage=storage.optuna, sampler=make_sampler(spec),
                              pruner=make_pruner(spec))
    return study, spec


def trial_params(trial: optuna.trial.FrozenTrial) -> dict[str, Any]:
    """A trial's Optuna parameters, also those of a WAITING (enqueued) trial that has not run yet."""
    return {**trial.system_attrs.get("fixed_params", {}), **trial.params}


def grid_state(study: optuna.Study, spec: StudySpec) -> dict[tuple, list[TrialState]]:
    """For each cell of a grid study, the states of its trials (an empty list: never enqueued)."""
    cells = {spec.space.cell_of(spec.space.optuna_params(c)): [] for c in spec.space.grid_cells()}
    for trial in study.get_trials(deepcopy=False):
        params = trial_params(trial)
        try:
            key = spec.space.cell_of(params)
        except (UserError, KeyError):
            continue
        if key in cells:
            cells[key].append(trial.state)
    return cells


def enqueue_missing_cells(study: optuna.Study, spec: StudySpec) -> int:
    """Enqueue every grid cell that has no COMPLETE, WAITING or RUNNING trial; return how many.
    Running it twice enqueues nothing the second time (a replicate resumes, it never duplicates)."""
    live = (TrialState.COMPLETE, TrialState.WAITING, TrialState.RUNNING)
    state = grid_state(study, spec)
    added = 0
    for cell in spec.space.grid_cells():
        params = spec.space.optuna_params(cell)
        if not any(s in live for s in state[spec.space.cell_of(params)]):
            study.enqueue_trial(params)
            added += 1
    return added


# -- the objective ----------------------------------------------------------------------------------

@dataclass
class TrialOutcome:
    state: TrialState
    value: float | None
    summary: Any = None  # RunSummary
    reason: str = ""  # why FAIL: "interrupted", or the error
    overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrialContext:
    """What the objective needs besides the trial: where to write, what to train on, where."""

    storage: StudyStorage
    study: optuna.Study
    spec: StudySpec
    corpus: Any  # lpstudy.data.Corpus
    device: str = "cpu"
    worker_id: str = ""
    should_stop: Callable[[], bool] = lambda: False
    show_progress: bool = True


def worker_identity(device: str) -> dict[str, Any]:
    host = socket.gethostname()
    return {"host": host, "pid": os.getpid(), "device": device, "worker": f"{host}/{os.getpid()}/{device}"}


def attr_value(value: Any) -> Any:
    """A value as a trial attribute: NaN becomes None (Optuna stores attributes as JSON)."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def record_evaluation(ctx: TrialContext, trial: optuna.Trial, record) -> None:
    """Store one evaluation: a batch in the metrics table (SQL storages), else a trial system
    attribute lpstudy_metrics:{step:08d} (journal, gRPC)."""
    if ctx.storage.is_sql:
        from lpstudy.storage import write_metrics

        attempts = [0]

        def write() -> None:
            import sqlalchemy as sa

            attempts[0] += 1
            try:
                write_metrics(ctx.storage.engine, ctx.study.study_name, trial._trial_id, trial.number, [record])
            except sa.exc.IntegrityError:
                if attempts[0] == 1:
                    raise
                # A retry after a lost connection: the first attempt had committed.

        ctx.storage.call(write)
    else:
        from lpstudy.storage import _finite_or_none

        data = {k: (v if k == "step" else _finite_or_none(v)) for k, v in record.to_dict().items()}
        ctx.storage.optuna.set_trial_system_attr(trial._trial_id, metrics_attr_name(record.step), data)


def run_trial(ctx: TrialContext, trial: optuna.Trial) -> TrialOutcome:
    """Train the run that `trial` stands for; store its curve and summary on the trial. Does not
    tell Optuna the result (the worker does), so that a crash here still ends the trial."""
    from lpstudy import __version__
    from lpstudy.config import overrides_of, resolve_config, with_cpu_threads
    from lpstudy.metrics import SUMMARY_FIELDS, uniform_guess_loss
    from lpstudy.progress import TrainingProgress
    from lpstudy.train import train

    spec = ctx.spec
    overrides = spec.space.suggest(trial)
    cfg = resolve_config(spec.preset, overrides)
    cfg = dataclasses.replace(cfg, gain_init=cfg.resolved_gain_init)  # resolved: the export reproduces it
    cfg = with_cpu_threads(cfg, ctx.device)  # on CPU the thread count too
    run_overrides = {k: v for k, v in overrides_of(cfg, spec.preset).items() if k != "device"}
    cfg = dataclasses.replace(cfg, device=ctx.device)

    identity = worker_identity(ctx.device)
    start_attrs = {
        "p": cfg.p, "lr": cfg.lr, "gain_init": cfg.gain_init, "fold": cfg.fold, "folds": cfg.folds,
        "seed": cfg.seed, "preset": spec.preset, **identity, "version": __version__,
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "max_steps": cfg.max_steps, "overrides": run_overrides,
    }
    for key, value in start_attrs.items():
        trial.set_user_attr(key, attr_value(value))

    shown = describe_overrides({"p": cfg.p, "lr": cfg.lr, "gain_init": cfg.gain_init, "fold": cfg.fold,
                                **{p.name: overrides[p.name] for p in spec.space.searched}})
    if ctx.show_progress:
        from lpstudy.worker import say_stderr

        say_stderr(f"[bold]trial {trial.number}[/] {shown} on {ctx.device} ({identity['worker']})")

    written: set[int] = set()
    pruned = [False]

    def on_eval(record) -> bool:
        record_evaluation(ctx, trial, record)
        written.add(record.step)
        trial.report(record.val_loss, record.step)
        if bar is not None:
            bar.on_eval(record)
        if trial.should_prune():
            pruned[0] = True
            return True
        return False

    bar = None
    if ctx.show_progress:
        with TrainingProgress(cfg.max_steps, description=f"trial {trial.number}") as bar:
            run = train(cfg, ctx.corpus, on_eval=on_eval, on_step=bar.on_step,
                        loss_threshold=spec.loss_threshold, should_stop=ctx.should_stop)
    else:
        run = train(cfg, ctx.corpus, on_eval=on_eval, loss_threshold=spec.loss_threshold,
                    should_stop=ctx.should_stop)
    summary = run.summary
    for record in summary.history:  # the evaluation that found the divergence never reached on_eval
        if record.step not in written:
            record_evaluation(ctx, trial, record)

    interrupted = (not pruned[0] and not summary.diverged and summary.steps < cfg.max_steps
                   and ctx.should_stop())
    end_attrs = {name: getattr(summary, name) for name in SUMMARY_FIELDS}
    end_attrs.update(finished_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                     interrupted=interrupted, pruned=pruned[0], error=None)
    for key, value in end_attrs.items():
        trial.set_user_attr(key, attr_value(value))

    if pruned[0]:
        return TrialOutcome(TrialState.PRUNED, None, summary, overrides=overrides)
    if summary.diverged:
        return TrialOutcome(TrialState.COMPLETE, uniform_guess_loss(ctx.corpus.vocab_size), summary,
                            overrides=overrides)
    if interrupted:
        return TrialOutcome(TrialState.FAIL, None, summary, reason="interrupted", overrides=overrides)
    if not math.isfinite(summary.final_val_loss):
        return TrialOutcome(TrialState.FAIL, None, summary, reason="no finite validation loss",
                            overrides=overrides)
    return TrialOutcome(TrialState.COMPLETE, summary.final_val_loss, summary, overrides=overrides)
