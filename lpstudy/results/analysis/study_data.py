"""A study as the read side and the statistics hold it: its description (StudyInfo) and its trials
and curves frames (StudyData). Plain data, built by lpstudy.results.rows.build; the statistics
(lpstudy.results.analysis, lpstudy.results.answers) take it as they are handed it, and so import
nothing of the read side."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from lpstudy.design.spec import StudySpec
from lpstudy.design.until_decided import UntilDecided


@dataclass(frozen=True)
class CompareArms:
    """A comparison's arms as its verdicts read them (built from its plan by lpstudy.results.rows.arms):
    the compared field, the reference arm's label, each arm's label and value, and what each arm's
    tuning had: its budget of trials (None: a plan stored before it named its budget), its independent
    tunings and why the budget cannot tune the searched fields (None where it can)."""

    factor: str
    reference_label: str
    labels: dict[str, Any]  # {arm's label: its value of the field}
    budget: int | None = None
    tunings: int = 1
    budget_note: str | None = None


@dataclass
class StudyInfo:
    """One study of a database, as the study chooser shows it. Its stored spec is read once, where the
    study is read (lpstudy.results.rows.build.study_info: StudySpec.from_plain), and every reader reads
    it by attribute; a study without one (made by plain Optuna) has None, and what that means is said
    here, once (is_grid, folds, until_decided)."""

    name: str
    kind: str = "search"  # "search", "replicate" or "compare"
    preset: str | None = None
    direction: str = "minimize"
    spec: StudySpec | None = None  # the stored spec; a comparison's: its arms' folds, repeats and stages
    compare: CompareArms | None = None  # a comparison's arms (kind "compare"), None for any other study
    n_trials: int | None = None  # where the database answers it cheaply (SQL): its trials
    best_value: float | None = None  # and the best trial's value (lpstudy.design.best), None if none yet
    synthetic: bool = False  # made by lpstudy.study.synthetic: no training run behind its losses

    @property
    def is_grid(self) -> bool:
        """A grid search (`create --sampler grid`): its spec says so; a study without a spec is none."""
        return self.spec is not None and self.spec.is_grid

    @property
    def folds(self) -> int:
        """K, as the spec states it (0 where the study has no spec)."""
        return int(self.spec.folds) if self.spec is not None else 0

    @property
    def until_decided(self) -> UntilDecided | None:
        """The stages a study run --until-decided spends its folds in (None: all at once, or no spec)."""
        return self.spec.until_decided if self.spec is not None else None


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
