"""A comparison's arms read as one study, and what the verdicts read of a study (verdict_rows), for
the stage engine (lpstudy.study.stages, which hands it to lpstudy.results.answers) and the read side
(lpstudy.results.reading.compare) alike. A comparison's plan (lpstudy.study.compare.ComparePlan) is
handed in by the caller and read through its methods: it is the study layer's, above this one."""

from __future__ import annotations

from typing import Any

import pandas as pd

from lpstudy.db.trial_reader import TrialReader
from lpstudy.design.space import SearchSpace
from lpstudy.design.spec import StudySpec
from lpstudy.results.analysis.study_data import CompareArms, StudyData, StudyInfo
from lpstudy.results.rows.build import merge_curves, study_rows, trials_of

BATCH_SHAPE = ("batch_size", "block_size")  # a step's tokens: batch_size × block_size
# the columns of an arm's frame where no arm's study exists yet
ARM_COLUMNS = ["arm", "number", "state", "value", "p", "lr", "gain_init", "fold", "diverged", "final_val_loss"]


def arm_trials(reader: TrialReader, study: str, arm: str, tuning: int) -> pd.DataFrame:
    """The trials of one arm's study (its tuning or its replicate runs), with `arm`, `study`, `tuning`."""
    data = reader.read(study, lambda tables: study_rows(tables, study, trials_of(tables)))
    return data.trials.assign(arm=arm, study=study, tuning=tuning)


def joined(frames: list[pd.DataFrame]) -> pd.DataFrame:
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=ARM_COLUMNS)


def arms_folds(reader: TrialReader, name: str, plan: Any, studies: set[str]) -> pd.DataFrame:
    """The replicate runs of the comparison NAME's arms (those of its arms' studies in `studies`, the
    database's), one frame with `arm`."""
    return joined([arm_trials(reader, plan.folds_study(name, value, t), plan.label(value), t)
                   for value, t in plan.arm_tunings() if plan.folds_study(name, value, t) in studies])


def arms_study_data(name: str, plan: Any, folds: pd.DataFrame, reference: str) -> StudyData:
    """The comparison's StudyData: its arms' replicate runs (`folds`), numbered 0, 1, ... across the
    arms (the arm's study and the trial's number in it kept as `study` and `arm_number`, where its
    curves are read); its plan as the verdicts read it, typed: the arms (factor, reference, the arms'
    labels and values, each arm's tuning budget: StudyInfo.compare) and, as its spec, the design of
    the arms' replicate runs (K folds, repeats, the stages it ran in)."""
    arms = CompareArms(factor=plan.factor, reference_label=reference,
                       labels={plan.label(v): v for v in plan.values},
                       # what the verdict compares: each arm tuned with `budget` trials, `tunings` times
                       # (the runs carry `tuning`)
                       budget=plan.budget, tunings=plan.tunings, budget_note=plan.budget_note())
    # the K-fold CV, repeated over new partitions and seeds where the plan repeats it (trials carry
    # `repeat`); run in stages where it ran --until-decided (the verdicts replay them: answers.sequential);
    # the arms' preset and the shape of their batches (--set), which give the tokens a step trains on
    shape = {name: plan.fixed[name] for name in BATCH_SHAPE if name in plan.fixed}
    spec = StudySpec(space=SearchSpace.from_mapping(shape), preset=plan.preset, folds=plan.folds,
                     repeats=plan.repeats, until_decided=plan.until_decided)
    info = StudyInfo(name=name, kind="compare", preset=plan.preset, spec=spec, compare=arms)
    trials = folds
    if len(trials) and "study" in trials:
        trials = trials.rename(columns={"number": "arm_number"}).reset_index(drop=True)
        trials.insert(0, "number", range(len(trials)))
    return StudyData(name=name, info=info, trials=trials, curves=merge_curves())


def verdict_rows(reader: TrialReader, name: str, plan: Any = None) -> StudyData:
    """The study NAME as its verdicts read it, without curves: a comparison's (`plan`, its plan)
    arms' replicate runs, any other study's trials (a grid's repeated cells left out)."""
    if plan is None:
        return reader.read(name, lambda tables: study_rows(tables, name, trials_of(tables)))
    studies = {record.name for record in reader.studies()}
    return arms_study_data(name, plan, arms_folds(reader, name, plan, studies), plan.label(plan.reference))
