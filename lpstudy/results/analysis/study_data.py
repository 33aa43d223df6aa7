"""A study as the read side and the statistics hold it: its description (StudyInfo) and its trials
and curves frames (StudyData). Plain data, built by lpstudy.results.rows.build; the statistics
(lpstudy.results.analysis, lpstudy.results.answers) take it as they are handed it, and so import
nothing of the read side."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd


@dataclass
class StudyInfo:
    """One study of a database, as the study chooser shows it."""

    name: str
    kind: str = "search"  # "search" or "replicate"
    preset: str | None = None
    direction: str = "minimize"
    spec: dict = field(default_factory=dict)
    n_trials: int | None = None  # where the database answers it cheaply (SQL): its trials
    best_value: float | None = None  # and the best trial's value (lpstudy.design.best), None if none yet
    synthetic: bool = False  # made by lpstudy.study.synthetic: no training run behind its losses


@dataclass
class StudyData:
    """What the dashboard shows of one study, loaded in one go (picklable, so it can be cached)."""

    name: str
    info: StudyInfo
    trials: pd.DataFrame
    curves: pd.DataFrame
    duplicates: list[int] = field(default_factory=list)  # grid trials left out: their cell ran before
    curve_note: str | None = None  # set when `curves` holds a sample of the trials (lpstudy.results.analysis.curve_sample)
    # a search's chosen configuration, read with the trials (lpstudy.results.reading.measured.search_chosen)
    chosen: Any = None
    # what a reader computed from this data, once (the dashboard's charts: app/common.once); not the data itself
    derived: dict = field(default_factory=dict, compare=False, repr=False)
