"""A study that a long-lived reader (the dashboard) keeps, and reads again incrementally when it
changed: only the trials that were not finished at the last read and the trials added since.

Reading the trials frame of a 100,000-trial study costs seconds of SQL (lpstudy.results.reading.frames:
every attribute row pivoted, every trial's last evaluation); a live study changes every few
seconds, but only in its unfinished trials (a RUNNING trial's attributes, evaluations and state;
a WAITING cell being claimed) and by new trials. A finished trial (COMPLETE, PRUNED, FAIL) does not
change: Optuna refuses to write to it (UpdateFinishedTrialError). So each read after the first
asks the database for

  - the trials whose id is above the largest id read so far (new trials: ids only grow), and
  - the trials that were RUNNING or WAITING at the last read (whatever state they are in now),

reads the trials frame of those only (lpstudy.results.reading.frames.trials_of, by trial id, a few
thousand a query), and puts their rows in place of the old ones. The result equals a full read
(the tests compare the two after trials changed state and new ones arrived). A full read is done
again when the study is another one (a new study id: the study was deleted and made again), or
when the number of trials the database holds is not the number this copy expects (a trial removed
by hand). The learning curves are read again at every read: they are those of a sample of at most
about a thousand trials (lpstudy.results.analysis.curve_sample), or of every trial of a small study.

On a storage read through Optuna's API (journal, gRPC) each read is a new copy of the study
(lpstudy.db.optuna_copy) that keeps the trials' ids: the same rule reads only what changed.
"""

from __future__ import annotations

import threading

import pandas as pd

from lpstudy.db.study_queries import StudyTables, in_chunks
from lpstudy.results.reading import frames

UNFINISHED = ("RUNNING", "WAITING")


class LiveStudy:
    """One study of one database, read fully once, then incrementally (see the module's docstring)."""

    def __init__(self, reader: frames.TrialReader, study_name: str) -> None:
        """reader: the database's reader (lpstudy.db.trial_reader), kept for every read."""
        self.reader = reader
        self.study_name = study_name
        self._lock = threading.Lock()
        self._sid: int | None = None
        self._frame: pd.DataFrame | None = None  # every trial, sorted by number (frames.trials_of)
        self._open: set[int] = set()  # trial ids RUNNING or WAITING at the last read
        self._top = -1  # the largest trial id read
        self.last_read: tuple[str, int] = ("none", 0)  # ("full" or "incremental", trials read)

    def read(self, curves: bool = True) -> frames.StudyData:
        """The study as it is now (frames.StudyData); a comparison, whose own study holds no trials,
        read through its arms (lpstudy.results.reading.compare.compare_study_data), as every page reads it."""
        with self._lock:
            data = self.reader.read(self.study_name, lambda tables: self._read(tables, curves))
        if data.info.kind == "compare":
            from lpstudy.results.reading.compare import compare_study_data

            return compare_study_data(self.reader, self.study_name, curves=curves)
        return data

    def _read(self, tables: StudyTables, curves: bool) -> frames.StudyData:
        sid = tables.study_id
        frame = self._incremental(tables, self._frame) if sid == self._sid and self._frame is not None else None
        if frame is None:
            frame = frames.trials_of(tables)
            self.last_read = ("full", len(frame))
        self._sid, self._frame = sid, frame
        self._open = set(frame.loc[frame["state"].isin(UNFINISHED), "trial_id"].astype(int))
        self._top = int(frame["trial_id"].max()) if len(frame) else -1
        return frames.study_data(tables, self.study_name, frame, curves)

    def _incremental(self, tables: StudyTables, held: pd.DataFrame) -> pd.DataFrame | None:
        """The frame held with the unfinished and new trials read again; None when a full read is needed."""
        total, new = tables.count_and_new(self._top)
        if total != len(held) + new:  # a trial went away, or ids did not only grow
            return None
        ids = sorted(self._open)
        if new:
            ids += tables.trial_ids_above(self._top)
        self.last_read = ("incremental", len(ids))
        if not ids:
            return held
        parts = [frames.trials_of(tables, ids=chunk) for chunk in in_chunks(ids)]
        kept = held[~held["trial_id"].isin(ids)]
        merged = pd.concat([kept, *parts], ignore_index=True)
        extra = sorted(c for c in merged.columns if c not in frames.TRIAL_COLUMNS)  # param_<name>, as a full read
        return merged[[*frames.TRIAL_COLUMNS, *extra]].sort_values("number", ignore_index=True)
