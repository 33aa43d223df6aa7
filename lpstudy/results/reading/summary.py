"""Where a study stands without reading every trial: counts by state, diverged runs, the best
trials, the running ones and the mean duration of a completed trial, each one query on the study's
tables (lpstudy.db.trial_reader.StudyTables). `lpstudy status`, `lpstudy export` and the study chooser read a
100,000-trial study in about the time of a handful of indexed queries; the numbers are those of the
full read (lpstudy.results.reading.frames.load_study), exactly: the tests compare the two.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from lpstudy.db.study_queries import StudyTables, in_chunks
from lpstudy.results.reading import frames
from lpstudy.results.reading.compute import compute_summary_of_sums
from lpstudy.values import RACE_FOLD_ATTR, STATES


@dataclass
class StudySummary:
    """What `status` shows of a search study, from SQL."""

    info: frames.StudyInfo
    counts: dict[str, int]
    diverged: int
    best: pd.DataFrame  # the best trial's row of the trials frame (empty when none can be best)
    running: pd.DataFrame  # the RUNNING trials' rows of the trials frame
    mean_complete_s: float | None
    compute: dict  # results.reading.compute.compute_summary of every trial, summed in SQL
    measured: dict | None = None  # how well the best is known: lpstudy.results.reading.measured.measured_fields
    waiting_races: int = 0  # WAITING trials a race enqueued (lpstudy.study.races): a leader on another fold


def needs_every_trial(info: frames.StudyInfo) -> bool:
    """A grid (replicate, or a spec with n_cells) counts cells and per-p tables: it reads every trial."""
    return info.kind != "search" or info.is_grid or bool(info.spec is not None and info.spec.n_cells)


def _search_best(tables: StudyTables, info: frames.StudyInfo) -> tuple[list[int], dict | None]:
    """The trial id of the configuration the search returns (lpstudy.results.reading.measured.search_chosen:
    its leaders raced on more folds), on its tuning fold, and how well it is known; a study without a
    spec: the lowest value (lpstudy.design.best, by a query)."""
    from lpstudy.results.reading.measured import search_chosen

    if info.spec is None:
        return [tid for tid, _, _ in tables.ranked_trial_ids(1)], None
    found = search_chosen(tables, "search", info.spec)
    return ([], None) if found is None else ([found.trial_id], found.measured)


def study_summary(reader: frames.TrialReader, study_name: str) -> StudySummary | None:
    """The summary of a search study from a few queries; None for a grid (see needs_every_trial: the
    caller reads every trial). StudyUnavailable when there is no such study."""

    def read(tables: StudyTables) -> StudySummary | None:
        directions, attrs = tables.header()
        info = frames.study_info(study_name, attrs, (directions or ["minimize"])[0])
        if needs_every_trial(info):
            return None
        counts = {state: 0 for state in STATES}
        counts.update(tables.state_counts())
        if counts["FAIL"]:  # an interrupted trial was enqueued again: its retry counts, not it (A.interrupted)
            from lpstudy.results.analysis import interrupted

            counts["FAIL"] -= int(interrupted(frames.trials_of(tables, state="FAIL")).sum())
        best_ids, measured = _search_best(tables, info)
        running_ids = tables.trial_ids_in_state("RUNNING")
        ids = sorted(set(best_ids + running_ids))  # one read of both (rows cost little, reads do), a few thousand ids a query
        shown = pd.concat([frames.trials_of(tables, ids=chunk) for chunk in in_chunks(ids)]
                          or [frames.trials_of(tables, ids=[])], ignore_index=True)
        return StudySummary(info=info, counts=counts, diverged=tables.diverged_count(),
                            best=shown[shown["trial_id"].isin(best_ids)], running=shown[shown["trial_id"].isin(running_ids)],
                            measured=measured,
                            waiting_races=len(tables.trial_ids_with_user_attr(RACE_FOLD_ATTR, state="WAITING")),
                            mean_complete_s=tables.mean_complete_seconds(),
                            compute=compute_summary_of_sums(*tables.compute_sums()))

    return reader.read(study_name, read)
