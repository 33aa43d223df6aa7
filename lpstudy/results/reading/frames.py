"""The read side of a study database: studies, trials and learning curves as pandas frames.

Everything here only reads. SQL databases are opened read-only where the database allows it
(SQLite through `mode=ro`, PostgreSQL through read-only transactions and, in a deployment, a
read-only role); Optuna's RDBStorage is opened without creating tables or checking the schema
version (both may write). The dashboard, `lpstudy report` and `lpstudy status` read through here.
Each function takes the database's reader (lpstudy.db.trial_reader), opened once from the URL by the
caller (`open_reader(url)`, `StorageChoice.reader()` on the command line) and passed on. The frames
are built one way, from the study's rows in Optuna's tables: the database's own, or a copy of a
study read through Optuna's API (journal, gRPC); they hold the same values either way (the tests
compare the two).

The frames themselves (their columns, a contract: TRIAL_COLUMNS and CURVE_COLUMNS) are built in
lpstudy.results.rows.build, one way, for the read side and the stage engine alike.
"""

from __future__ import annotations

import pandas as pd

from lpstudy.db.study_queries import StudyTables
from lpstudy.db.trial_reader import TrialReader
from lpstudy.results.analysis.study_data import StudyData, StudyInfo  # noqa: F401 - read here by the readers
# the frames are built below the read side, where the stage engine builds them too (lpstudy.results.rows)
from lpstudy.results.rows.build import (CURVE_COLUMNS, EVERY_CURVE, RUN_FIELDS, TRIAL_COLUMNS,  # noqa: F401
                                        curves_of, merge_curves, study_info, study_rows, trials_of)

# --- studies --------------------------------------------------------------------------------

def study_infos(reader: TrialReader) -> list[StudyInfo]:
    """Every study in the database with its kind, preset and spec, sorted by name."""
    records = reader.studies()
    counts = {record.name: record.n_trials for record in records}
    infos = []
    for record in records:
        info = study_info(record.name, record.attrs, record.direction)
        info.n_trials, info.best_value = record.n_trials, record.best_value
        if info.kind == "compare" and info.n_trials is not None:
            info.n_trials = _comparison_trials(info.name, counts)
        infos.append(info)
    return infos


def _comparison_trials(name: str, counts: dict[str, int | None]) -> int:
    """A comparison's trials: its arms' tuning and replicate studies' (NAME:ARM:tune, NAME:ARM:folds,
    as lpstudy.study.compare names them); the comparison's own study holds none."""
    from lpstudy.names import arm_study_names

    return sum(counts[child] or 0 for child in arm_study_names(name, counts))


# --- trials ---------------------------------------------------------------------------------

def load_trials(reader: TrialReader, study_name: str) -> pd.DataFrame:
    """Every trial of a study as a frame, one row per trial (see TRIAL_COLUMNS), sorted by number.
    StudyUnavailable (a UserError) when the database cannot be read or has no such study."""
    return load_study(reader, study_name, curves=False).trials


# --- learning curves ------------------------------------------------------------------------

def trial_curves(reader: TrialReader, study_name: str, numbers: list[int]) -> pd.DataFrame:
    """The curves of the trials with these numbers only (see CURVE_COLUMNS): only their rows are read."""
    def read(tables: StudyTables) -> pd.DataFrame:
        ids = tables.trial_ids_of(numbers)
        return curves_of(tables, ids, list(ids))

    return reader.read(study_name, read)


# --- one study in one read -------------------------------------------------------------------

def study_data(tables: StudyTables, study_name: str, frame: pd.DataFrame, with_curves: bool | str) -> StudyData:
    """The StudyData of a study whose trials frame (every trial, trials_of) is at hand: its info and
    trials as the builder gives them (lpstudy.results.rows.build.study_rows: a grid's repeated cells
    left out), a search's chosen configuration, and the curves of every trial or, in a big study, of a
    sample (lpstudy.results.analysis.curve_sample)."""
    from lpstudy.results.analysis.curve_sample import CurveSample, curve_sample
    from lpstudy.results.reading.measured import search_chosen, shown_best

    data = study_rows(tables, study_name, frame)
    info, frame = data.info, data.trials
    data.chosen = search_chosen(tables, info.kind, info.spec)  # a search's best over folds: a few queries
    sample = CurveSample(None)
    if with_curves == EVERY_CURVE:  # the verdicts pair every run's curve: no sample
        data.curves = curves_of(tables, dict(zip(frame["trial_id"], frame["number"])), None)
    elif with_curves:
        best, _ = shown_best(frame, data.chosen)
        sample = curve_sample(frame, int(best["number"]) if best is not None else None, info.spec)
        data.curves = curves_of(tables, dict(zip(frame["trial_id"], frame["number"])), sample.trial_ids)
    data.curve_note = sample.note
    return data


def load_study(reader: TrialReader, study_name: str, curves: bool | str = True, via_optuna: bool = False) -> StudyData:
    """A study's info, trials and (unless curves=False) curves in one read, whatever storage holds
    it (lpstudy.db.trial_reader). via_optuna: read through Optuna's storage API even where the
    database answers SQL itself (the tests compare the two). StudyUnavailable when the database
    cannot be read or has no such study."""
    source = reader.through_optuna() if via_optuna else reader
    return source.read(study_name, lambda tables: study_data(tables, study_name, trials_of(tables), curves))


def study_fingerprint(reader: TrialReader, study_name: str) -> tuple | None:
    """Something that changes whenever the study's data changes (SQL databases: a few counts),
    so that a reader can keep what it loaded until then; None where it cannot be had cheaply
    (journal, gRPC, an unknown schema): reread on a timer instead. StudyUnavailable when the
    database cannot be read or has no such study."""
    return reader.fingerprint(study_name)
