"""The read side of a study database: studies, trials and learning curves as pandas frames.

Everything here only reads. SQL databases are opened read-only where the database allows it
(SQLite through `mode=ro`, PostgreSQL through read-only transactions and, in a deployment, a
read-only role); Optuna's RDBStorage is opened without creating tables or checking the schema
version (both may write). The dashboard, `lpstudy report` and `lpstudy status` read through here.

Frames (column names are a contract; see TRIAL_COLUMNS and CURVE_COLUMNS):
  trials   one row per trial: number, state, value, p (∞ allowed), lr, gain_init, fold, the run
           summary (lpstudy.metrics.SUMMARY_FIELDS), who ran it, when, and its last evaluation
  curves   one row per evaluation of a trial: trial_id, trial_number, step and
           lpstudy.metrics.METRIC_FIELDS, merged from the metrics table (SQL storages), the
           `lpstudy_metrics:<step>` system attributes (journal/gRPC-fed studies) and, where neither
           has a step, Optuna's intermediate values (validation loss only)
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from lpstudy.errors import UserError
from lpstudy.metrics import METRIC_FIELDS, SUMMARY_FIELDS
from lpstudy.storage import make_engine, make_url, read_metrics, readonly_url, redact, storage_kind

METRICS_ATTR_PREFIX = "lpstudy_metrics:"
STUDY_SPEC_ATTR = "lpstudy"
STATES = ("COMPLETE", "PRUNED", "FAIL", "RUNNING", "WAITING")
SEARCHED = ("p", "lr", "gain_init")
WHO = ("host", "pid", "device", "worker", "version", "started_at", "seed", "preset", "folds")
TRIAL_COLUMNS: tuple[str, ...] = (
    "number", "trial_id", "state", "value", "p", "lr", "gain_init", "fold",
    *[name for name in SUMMARY_FIELDS if name != "device"],
    *WHO, "device", "datetime_start", "datetime_complete", "duration_s",
    "last_step", "last_val_loss", "n_evals",
)
CURVE_COLUMNS: tuple[str, ...] = ("trial_id", "trial_number", *METRIC_FIELDS)
_BOOL_FIELDS = ("diverged", "stopped")
_TEXT_FIELDS = ("state", "device", "host", "worker", "version", "started_at", "preset")


class StudyUnavailable(UserError):
    """The database cannot be opened or reached, or the study is not in it."""


@dataclass
class StudyInfo:
    """One study of a database, as the study chooser shows it."""

    name: str
    kind: str = "search"  # "search" or "replicate"
    preset: str | None = None
    direction: str = "minimize"
    spec: dict = field(default_factory=dict)


@dataclass
class StudyData:
    """What the dashboard shows of one study, loaded in one go (picklable, so it can be cached)."""

    name: str
    info: StudyInfo
    trials: pd.DataFrame
    curves: pd.DataFrame


# --- opening storages read-only -------------------------------------------------------------

def _sql_engine_kwargs(url: str) -> dict[str, Any]:
    kind = storage_kind(url)
    kwargs: dict[str, Any] = {"pool_pre_ping": True}
    if kind == "sqlite":
        kwargs["connect_args"] = {"timeout": 30}
    elif kind == "postgresql":
        kwargs["connect_args"] = {"options": "-c default_transaction_read_only=on", "connect_timeout": 5}
    return kwargs


def open_storage(storage_url: str):
    """An Optuna storage over the database that does not write: no table creation, no schema check,
    SQLite opened with mode=ro, PostgreSQL sessions read-only. StudyUnavailable if it cannot open."""
    import optuna
    import sqlalchemy as sa

    kind = storage_kind(storage_url)
    where = redact(storage_url)
    try:
        if kind in ("sqlite", "postgresql", "mysql"):
            if kind == "sqlite":
                database = make_url(storage_url).database
                if not database or database == ":memory:":
                    raise StudyUnavailable("an in-memory SQLite database holds no studies; pass a file URL")
                if not Path(database).expanduser().is_file():
                    raise StudyUnavailable(f"no study database at {database}; run `lpstudy create` "
                                           "or pass --storage with the URL the workers use")
            storage = optuna.storages.RDBStorage(
                str(readonly_url(storage_url)), engine_kwargs=_sql_engine_kwargs(storage_url),
                skip_compatibility_check=True, skip_table_creation=True)
            with storage.engine.connect() as conn:  # reach it now, so the error is one clear line
                conn.execute(sa.text("SELECT 1"))
            return storage
        if kind == "journal":
            from optuna.storages.journal import JournalFileBackend, JournalStorage

            path = journal_path(storage_url)
            if not path.is_file():
                raise StudyUnavailable(f"no journal file at {path}; pass --storage with the URL the workers use")
            return JournalStorage(JournalFileBackend(str(path)))
        if kind == "grpc":
            from optuna.storages import GrpcStorageProxy

            host, _, port = storage_url.split("://", 1)[1].rstrip("/").rpartition(":")
            return GrpcStorageProxy(host=host or "localhost", port=int(port))
    except StudyUnavailable:
        raise
    except (sa.exc.SQLAlchemyError, OSError, ValueError) as exc:
        raise StudyUnavailable(f"cannot read the study database at {where}: {_first_line(exc)}") from None
    raise StudyUnavailable(f"cannot read storage {where}")  # pragma: no cover - storage_kind refuses others


def journal_path(storage_url: str) -> Path:
    """The file of a journal URL: journal:///relative.log or journal:////absolute.log as for SQLite;
    journal:///absolute.log is accepted when only the absolute file exists."""
    rest = storage_url.split("://", 1)[1]
    relative = Path(rest[1:] if rest.startswith("/") else rest).expanduser()
    absolute = Path(rest).expanduser()
    if not relative.exists() and absolute.is_absolute() and absolute.exists():
        return absolute
    return relative


def _first_line(exc: BaseException) -> str:
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _guard(storage_url: str):
    """Turn a database error during a read into StudyUnavailable."""
    import contextlib

    import sqlalchemy as sa

    @contextlib.contextmanager
    def guard():
        try:
            yield
        except UserError:
            raise
        except (sa.exc.SQLAlchemyError, OSError) as exc:
            raise StudyUnavailable(f"cannot read the study database at {redact(storage_url)}: "
                                   f"{_first_line(exc)}") from None

    return guard()


def _dispose(storage) -> None:
    engine = getattr(storage, "engine", None)
    if engine is not None:
        engine.dispose()


# --- studies --------------------------------------------------------------------------------

def _study_info(frozen) -> StudyInfo:
    attrs = frozen.user_attrs or {}
    spec = attrs.get(STUDY_SPEC_ATTR) or {}
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except ValueError:
            spec = {}
    if not isinstance(spec, dict):
        spec = {}
    direction = frozen.directions[0].name.lower() if getattr(frozen, "directions", None) else "minimize"
    return StudyInfo(name=frozen.study_name, kind=str(attrs.get("kind") or spec.get("kind") or "search"),
                     preset=attrs.get("preset") or spec.get("preset"), direction=direction, spec=spec)


def study_infos(storage_url: str) -> list[StudyInfo]:
    """Every study in the database with its kind, preset and spec, sorted by name."""
    storage = open_storage(storage_url)
    try:
        with _guard(storage_url):
            studies = storage.get_all_studies()
    finally:
        _dispose(storage)
    return sorted((_study_info(s) for s in studies), key=lambda s: s.name)


def list_studies(storage_url: str) -> list[str]:
    """The names of every study in the database, sorted; [] for a database without studies."""
    return [info.name for info in study_infos(storage_url)]


def _find_study(storage, storage_url: str, study_name: str):
    studies = storage.get_all_studies()
    for frozen in studies:
        if frozen.study_name == study_name:
            return frozen
    names = ", ".join(sorted(s.study_name for s in studies)) or "none"
    raise StudyUnavailable(f"no study named {study_name!r} in {redact(storage_url)} (studies there: {names})")


# --- trials ---------------------------------------------------------------------------------

def parse_p(value: Any) -> float:
    """p as a float: numbers as they are, 'inf'/'∞'/'Infinity' as math.inf, anything else NaN."""
    if value is None or isinstance(value, bool):
        return math.nan
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip().lower()
    if text in ("inf", "+inf", "infinity", "+infinity", "∞"):
        return math.inf
    try:
        return float(text)
    except ValueError:
        return math.nan


def _number(value: Any) -> float:
    if value is None or isinstance(value, bool):
        return math.nan if value is None else float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


def trial_row(trial) -> dict[str, Any]:
    """One trial (an Optuna FrozenTrial) as a row of the trials frame."""
    attrs = trial.user_attrs or {}
    params = dict(trial.params or {})
    if not params and trial.state.name == "WAITING":  # an enqueued cell: its params wait in fixed_params
        params = dict((trial.system_attrs or {}).get("fixed_params") or {})
    row: dict[str, Any] = {"number": trial.number, "trial_id": trial._trial_id, "state": trial.state.name,
                           "value": _number(trial.value) if trial.values else math.nan}
    row["p"] = parse_p(attrs["p"] if attrs.get("p") is not None else params.get("p"))
    if attrs.get("p") is None and params.get("p_inf") is True:  # a space with a switch to p = ∞
        row["p"] = math.inf
    for name in ("lr", "gain_init", "fold"):
        row[name] = _number(attrs[name] if attrs.get(name) is not None else params.get(name))
    for name in SUMMARY_FIELDS:
        value = attrs.get(name)
        if name in _BOOL_FIELDS:
            row[name] = bool(value) if value is not None else False
        elif name == "device":
            row[name] = None if value is None else str(value)
        else:
            row[name] = _number(value)
    for name in WHO:
        value = attrs.get(name)
        row[name] = _number(value) if name in ("pid", "seed", "folds") else (None if value is None else str(value))
    row["datetime_start"] = trial.datetime_start
    row["datetime_complete"] = trial.datetime_complete
    intermediate = trial.intermediate_values or {}
    row["n_evals"] = len(intermediate)
    if intermediate:
        last = max(intermediate)
        row["last_step"], row["last_val_loss"] = float(last), _number(intermediate[last])
    else:
        row["last_step"], row["last_val_loss"] = math.nan, math.nan
    for name, value in params.items():  # every searched or fixed parameter, under param_<name>
        row[f"param_{name}"] = parse_p(value) if name == "p" else value
    return row


def trials_frame(trials: list) -> pd.DataFrame:
    """The trials frame of a list of Optuna FrozenTrials (see the module's docstring)."""
    rows = [trial_row(t) for t in trials]
    frame = pd.DataFrame(rows)
    for column in TRIAL_COLUMNS:
        if column not in frame.columns:
            frame[column] = pd.Series(dtype="object" if column in _TEXT_FIELDS else "float64")
    extra = sorted(c for c in frame.columns if c not in TRIAL_COLUMNS)
    frame = frame[[*TRIAL_COLUMNS, *extra]]
    for column in ("datetime_start", "datetime_complete"):
        frame[column] = pd.to_datetime(frame[column])
    frame["duration_s"] = (frame["datetime_complete"] - frame["datetime_start"]).dt.total_seconds()
    for column in _BOOL_FIELDS:
        frame[column] = frame[column].fillna(False).astype(bool)
    numeric = [c for c in TRIAL_COLUMNS if c not in (*_TEXT_FIELDS, *_BOOL_FIELDS, "datetime_start",
                                                     "datetime_complete")]
    frame[numeric] = frame[numeric].apply(pd.to_numeric, errors="coerce").astype("float64")
    frame["number"] = frame["number"].astype("int64")
    frame["trial_id"] = frame["trial_id"].astype("int64")
    return frame.sort_values("number", ignore_index=True)


def _frozen_trials(storage, storage_url: str, study_name: str) -> tuple[StudyInfo, list]:
    with _guard(storage_url):
        frozen = _find_study(storage, storage_url, study_name)
        trials = storage.get_all_trials(frozen._study_id, deepcopy=False)
    return _study_info(frozen), trials


def load_trials(storage_url: str, study_name: str) -> pd.DataFrame:
    """Every trial of a study as a frame, one row per trial (see TRIAL_COLUMNS), sorted by number.
    StudyUnavailable (a UserError) when the database cannot be read or has no such study."""
    storage = open_storage(storage_url)
    try:
        _, trials = _frozen_trials(storage, storage_url, study_name)
    finally:
        _dispose(storage)
    return trials_frame(trials)


# --- learning curves ------------------------------------------------------------------------

def _empty_curves() -> pd.DataFrame:
    frame = pd.DataFrame({c: pd.Series(dtype="float64") for c in CURVE_COLUMNS})
    return frame.astype({"trial_id": "int64", "trial_number": "int64", "step": "int64"})


def curves_from_trials(trials: list) -> pd.DataFrame:
    """Curves held by the trials themselves: `lpstudy_metrics:<step>` system attributes, then
    intermediate values (val_loss only) for steps that have no record."""
    rows: list[dict[str, Any]] = []
    for trial in trials:
        seen: set[int] = set()
        for key, record in (trial.system_attrs or {}).items():
            if not key.startswith(METRICS_ATTR_PREFIX) or not isinstance(record, dict):
                continue
            step = int(record.get("step", key[len(METRICS_ATTR_PREFIX):]))
            seen.add(step)
            row = {name: _number(record.get(name)) for name in METRIC_FIELDS}
            row.update(trial_id=trial._trial_id, trial_number=trial.number, step=step, _rank=1)
            rows.append(row)
        for step, value in (trial.intermediate_values or {}).items():
            if int(step) not in seen:
                rows.append({"trial_id": trial._trial_id, "trial_number": trial.number, "step": int(step),
                             "val_loss": _number(value), "_rank": 2})
    if not rows:
        return _empty_curves().assign(_rank=pd.Series(dtype="int64"))
    return pd.DataFrame(rows)


def merge_curves(table_rows: pd.DataFrame, trial_rows: pd.DataFrame) -> pd.DataFrame:
    """One row per (trial, step): the metrics table first, then system attributes, then
    intermediate values."""
    parts = []
    if len(table_rows):
        parts.append(table_rows.assign(_rank=0))
    if len(trial_rows):
        parts.append(trial_rows)
    if not parts:
        return _empty_curves()
    frame = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    frame = (frame.sort_values(["trial_number", "step", "_rank"], kind="stable")
             .drop_duplicates(["trial_id", "step"], keep="first")
             .drop(columns="_rank")
             .reset_index(drop=True))
    for column in CURVE_COLUMNS:
        if column not in frame.columns:
            frame[column] = math.nan
    frame = frame[list(CURVE_COLUMNS)]
    floats = [c for c in METRIC_FIELDS if c != "step"]
    frame[floats] = frame[floats].astype("float64")
    return frame.astype({"trial_id": "int64", "trial_number": "int64", "step": "int64"})


def _table_curves(storage_url: str, study_name: str) -> pd.DataFrame:
    if storage_kind(storage_url) not in ("sqlite", "postgresql", "mysql"):
        return _empty_curves()
    engine = make_engine(storage_url, readonly=True)
    try:
        with _guard(storage_url):
            return read_metrics(engine, study_name)
    finally:
        engine.dispose()


def load_curves(storage_url: str, study_name: str) -> pd.DataFrame:
    """Every evaluation of every trial of a study (see CURVE_COLUMNS), sorted by trial and step."""
    return load_study(storage_url, study_name).curves


def load_study(storage_url: str, study_name: str) -> StudyData:
    """A study's info, trials and curves in one read."""
    storage = open_storage(storage_url)
    try:
        info, trials = _frozen_trials(storage, storage_url, study_name)
    finally:
        _dispose(storage)
    curves = merge_curves(_table_curves(storage_url, study_name), curves_from_trials(trials))
    return StudyData(name=study_name, info=info, trials=trials_frame(trials), curves=curves)


def study_trials(storage_url: str, study_name: str) -> list:
    """The study's trials as Optuna FrozenTrials (for Optuna's own tools, e.g. importance)."""
    storage = open_storage(storage_url)
    try:
        return _frozen_trials(storage, storage_url, study_name)[1]
    finally:
        _dispose(storage)
