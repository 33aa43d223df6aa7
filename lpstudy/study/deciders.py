"""Which decider a worker on a study asks (lpstudy.study.decisions): one per kind of study, picked
here for `lpstudy worker` and whoever runs a worker on any study."""

from __future__ import annotations

from lpstudy.db.optuna_storage import StudyStorage
from lpstudy.study.compare import load_plan
from lpstudy.study.compare_worker import Comparison
from lpstudy.study.decisions import Decider
from lpstudy.study.sources import OneStudy
from lpstudy.study.stages import Stages
from lpstudy.study.studies import load_spec


def decider_for(storage: StudyStorage, name: str) -> Decider:
    """A comparison: its arms (inside its stages where it runs --until-decided); a replicate run
    --until-decided: its cells inside its stages; any other study (a search, a grid): its own
    trials. UserError (one line) where NAME is no study."""
    plan = load_plan(storage, name)
    if plan is not None:  # lpstudy compare: arm by arm, each arm's study its own
        arms = Comparison(storage, name, plan)
        return Stages(arms, storage, name, over="stage") if plan.until_decided else arms
    if load_spec(storage, name).until_decided:  # replicate --until-decided: stage by stage
        return Stages(OneStudy(name), storage, name, over="round")
    return OneStudy(name)
