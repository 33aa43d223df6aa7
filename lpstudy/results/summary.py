"""Where a study stands without reading every trial: counts by state, diverged runs, the best
trials, the running ones and the mean duration of a completed trial, each one SQL query
(lpstudy.db.study_queries). `lpstudy status`, `lpstudy export` and the study chooser read a
100,000-trial study in about the time of a handful of indexed queries; the numbers are those of the
full read (lpstudy.results.frames.load_study), exactly: the tests compare the two.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import pandas as pd

from lpstudy.db import study_queries as Q
from lpstudy.results import frames
from lpstudy.results.compute import SPENT_STATES, compute_summary
from lpstudy.values import STATES, to_float


@dataclass
class StudySummary:
    """What `status` shows of a search study, from SQL."""

    info: frames.StudyInfo
    counts: dict[str, int]
    diverged: int
    best: pd.DataFrame  # the best trial's row of the trials frame (empty when none can be best)
    running: pd.DataFrame  # the RUNNING trials' rows of the trials frame
    mean_complete_s: float | None
    compute: dict  # results.compute.compute_summary of every trial, read from four attributes only


def _trials_of(conn, sid: int, ids=None, state=None) -> pd.DataFrame:
    from lpstudy.results.trial_table import sql_trials_frame

    raw, last = sql_trials_frame(conn, sid, frames.RUN_FIELDS, frames.WHO, frames.BOOL_FIELDS, ids=ids, state=state)
    return frames.finish_trials_frame(raw, last)


def _compute_frame(conn, sid: int) -> pd.DataFrame:
    """Every trial's columns that results.compute reads (state, steps, wall_time_s, max_steps,
    device, last_step, duration_s), pivoted from four attributes instead of the whole trials frame."""
    from lpstudy.results.trial_table import numbers_of

    rows = Q.trial_rows(conn, sid, ["steps", "wall_time_s", "max_steps", "device"])
    frame = pd.DataFrame({"number": rows["number"].astype("int64"), "state": rows["state"].astype(str)})
    for name in ("steps", "wall_time_s", "max_steps"):
        frame[name] = numbers_of(rows[name], to_float)
    # compute.per_trial reads last_step only where `steps` is not a positive number (a running trial,
    # one killed before its summary): the last evaluations of those trials only, by index lookups
    unknown = rows.loc[~(frame["steps"] > 0) & frame["state"].isin(SPENT_STATES), "trial_id"].astype(int).tolist()
    last = pd.concat([Q.last_evaluations(conn, sid, ids=chunk, counts=False) for chunk in Q.in_chunks(unknown)]
                     or [pd.DataFrame(columns=["trial_id", "last_step"])])
    last = last[["trial_id", "last_step"]].set_index("trial_id")
    devices = {text: str(json.loads(text)) for text in rows["device"].dropna().unique()}  # each text decoded once
    frame["device"] = rows["device"].map(devices).astype(object).where(rows["device"].notna(), None)
    frame["last_step"] = rows["trial_id"].map(last["last_step"]).astype("float64")
    start, end = (frames.to_datetimes(rows[c]) for c in ("datetime_start", "datetime_complete"))
    frame["duration_s"] = (end - start).dt.total_seconds()
    return frame


def needs_every_trial(info: frames.StudyInfo) -> bool:
    """A grid (replicate, or a spec with n_cells) counts cells and per-p tables: it reads every trial."""
    return info.kind != "search" or bool(info.spec.get("n_cells")) or info.spec.get("sampler") == "grid"


def study_summary(storage_url: str, study_name: str) -> StudySummary | None:
    """The summary of a search study on a SQL database; None where it cannot be had from SQL (not
    a SQL storage, an unknown schema, a grid: see needs_every_trial). StudyUnavailable when there
    is no such study."""

    def read(conn, engine, sid):
        directions, attrs = Q.study_header(conn, sid)
        info = frames.study_info(study_name, attrs, (directions or ["minimize"])[0])
        if needs_every_trial(info):
            return None
        counts = {state: 0 for state in STATES}
        counts.update(Q.state_counts(conn, sid))
        best_ids = [tid for tid, _, _ in Q.ranked_trial_ids(conn, sid, 1)]
        return StudySummary(info=info, counts=counts, diverged=Q.diverged_count(conn, sid),
                            best=_trials_of(conn, sid, ids=best_ids), running=_trials_of(conn, sid, state="RUNNING"),
                            mean_complete_s=Q.mean_complete_seconds(conn, sid),
                            compute=compute_summary(_compute_frame(conn, sid)))

    return frames.answer_from_sql(storage_url, study_name, read)


def ranked_trial_ids(storage_url: str, study_name: str, k: int) -> list[int] | None:
    """Optuna trial ids of the k best trials (lpstudy.study.best's rule), best first; None where SQL
    cannot answer (then read the trials through Optuna)."""
    return frames.answer_from_sql(storage_url, study_name,
                                  lambda conn, engine, sid: [tid for tid, _, _ in Q.ranked_trial_ids(conn, sid, k)])
