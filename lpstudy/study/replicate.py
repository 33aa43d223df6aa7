"""The paper's protocol as a grid study: every p value × K folds, every other field fixed.

`replicate` creates the study with every cell enqueued as a WAITING trial (or, run again, resumes
it: it enqueues only the cells that have no completed, waiting or running trial, e.g. those whose
retries ran out) and returns, so that workers anywhere can pull the cells. With workers > 0 it also
runs that many local worker processes and waits for them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from optuna.trial import TrialState

from lpstudy.db.kinds.base import StudyStorage
from lpstudy.design.spec import replicate_spec
from lpstudy.study.studies import grid_state, open_and_create
from lpstudy.design.until_decided import UntilDecided


@dataclass
class ReplicateResult:
    study: str
    created: bool
    enqueued: int
    n_cells: int
    done: int
    waiting: int
    running: int


def replicate(storage: StudyStorage, study_name: str, preset: str, p_values: Sequence[float | str], folds: int,
              fixed: dict[str, Any] | None = None, options: dict[str, Any] | None = None,
              until_decided: UntilDecided | dict[str, Any] | None = None) -> ReplicateResult:
    """Create or resume the grid study (with until_decided: its first round of folds, the workers
    enqueue the rest stage by stage, lpstudy.study.stages) on storage, the caller's, which it opens
    and the caller closes (lpstudy.study.studies.creating_storage: one that waits for a database that
    starts late); return where it stands."""
    spec = replicate_spec(preset, p_values, folds, fixed, options, until_decided)
    study, created, enqueued = open_and_create(storage, study_name, spec)
    cells = grid_state(study, spec)
    return ReplicateResult(
        study=study_name, created=created, enqueued=enqueued, n_cells=len(cells),
        done=sum(1 for states in cells.values() if TrialState.COMPLETE in states),
        waiting=sum(1 for states in cells.values()
                    if TrialState.WAITING in states and TrialState.COMPLETE not in states),
        running=sum(1 for states in cells.values()
                    if TrialState.RUNNING in states and TrialState.COMPLETE not in states),
    )
