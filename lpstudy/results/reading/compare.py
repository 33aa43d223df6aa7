"""A comparison (lpstudy compare) read back: its plan, every arm's tuning trials and replicate
runs as trials frames with an `arm` column; its arms against the reference are the answer's verdicts
(lpstudy.results.answers, stages_answer). Read-only; the dashboard's Compare page, `lpstudy
compare`, `lpstudy status` (lpstudy.results.status.render_compare prints it) and `lpstudy verdict`
show the same numbers."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import pandas as pd

from lpstudy.db.trial_reader import TrialReader
from lpstudy.db.urls import redact
from lpstudy.errors import UserError
from lpstudy.results import analysis as A
from lpstudy.results.analysis.study_data import StudyData
from lpstudy.results.answers.answer_types import VerdictAnswer
from lpstudy.results.rows.arms import arm_trials, arms_folds, arms_study_data, joined
from lpstudy.study.compare import COMPARE_ATTR, ComparePlan


@dataclass
class CompareData:
    name: str
    plan: ComparePlan
    tuning: pd.DataFrame  # the arms' tuning trials, with `arm`
    folds: pd.DataFrame  # the arms' replicate runs, with `arm`
    reference: str  # the reference arm's label

    @property
    def budgets(self) -> pd.DataFrame:
        return A.tuning_summary(self.tuning)


@dataclass(frozen=True)
class ArmProgress:
    """One arm of a comparison: its tuning trials finished of its budget, its fold runs done, what is left."""

    arm: str  # its label, "p=1"
    tuning_done: int
    budget: int  # tuning trials: the budget times the tunings
    folds_done: int  # (tuning, repeat, fold, seed) cells with a COMPLETE run
    folds: int  # the cells of its fold stage
    tuning_left: int
    folds_left: int
    nothing_to_replicate: bool  # tuned, and every tuning trial diverged or was pruned: no configuration to run

    @property
    def left(self) -> int:
        return self.tuning_left + self.folds_left


@dataclass(frozen=True)
class CompareProgress:
    """Where a comparison stands (compare_progress): per arm, and summed over them."""

    arms: list[ArmProgress]
    budget: int  # tuning trials per arm (and tuning)
    folds: int  # K

    @property
    def n_arms(self) -> int:
        return len(self.arms)

    @property
    def tuning_spent(self) -> int:
        return sum(a.tuning_done for a in self.arms)

    @property
    def tuning_total(self) -> int:
        return sum(a.budget for a in self.arms)

    @property
    def cells_done(self) -> int:
        return sum(a.folds_done for a in self.arms)

    @property
    def cells_total(self) -> int:
        return sum(a.folds for a in self.arms)

    @property
    def tuning_left(self) -> int:
        return sum(a.tuning_left for a in self.arms)

    @property
    def cells_left(self) -> int:
        return sum(a.folds_left for a in self.arms)

    @property
    def left(self) -> int:
        return self.tuning_left + self.cells_left

    @property
    def done(self) -> bool:
        return self.left == 0

    def to_json(self) -> dict[str, Any]:
        """What `status --json` gives as "comparison" (its keys and their order)."""
        return {"arms": [dict(vars(a)) for a in self.arms], "n_arms": self.n_arms, "budget": self.budget,
                "folds": self.folds, "tuning_spent": self.tuning_spent, "tuning_total": self.tuning_total,
                "cells_done": self.cells_done, "cells_total": self.cells_total, "tuning_left": self.tuning_left,
                "cells_left": self.cells_left, "left": self.left, "done": self.done}


def compare_progress(data: CompareData) -> CompareProgress:
    """Where a comparison stands, as `status`, `compare`, the worker and the dashboard's Home say it:
    per arm, the tuning trials finished of its budget and the folds its best configuration has run;
    and what is left (tuning trials and fold cells; the folds of an arm whose tuning is still open
    count in full). An arm whose every tuning trial diverged or was pruned has nothing to replicate."""
    plan = data.plan
    rows: list[ArmProgress] = []
    for value in plan.values:
        arm = plan.label(value)
        tuning = data.tuning[data.tuning["arm"] == arm] if len(data.tuning) else data.tuning
        folds = data.folds[data.folds["arm"] == arm] if len(data.folds) else data.folds
        finished = int(tuning["state"].isin(["COMPLETE", "PRUNED"]).sum()) if len(tuning) else 0
        open_now = int(tuning["state"].isin(["RUNNING", "WAITING"]).sum()) if len(tuning) else 0
        budget = plan.budget * plan.tunings  # every tuning of the arm spends the budget
        tuned = finished >= budget and not open_now
        # a fold run is one (tuning, repeat, fold, seed) cell: --repeats R runs the K folds R times,
        # --seeds S each S times, --tunings T the whole fold stage T times
        cell = [c for c in ("tuning", "repeat", "fold", "seed") if c in folds]
        done_folds = len(folds.loc[folds["state"] == "COMPLETE", cell].drop_duplicates()) if len(folds) else 0
        nothing_to_replicate = tuned and not len(folds) and A.best_trial(tuning) is None
        cells = plan.folds * plan.repeats * plan.seeds * plan.tunings
        rows.append(ArmProgress(arm=arm, tuning_done=min(finished, budget), budget=budget, folds_done=done_folds,
                                folds=cells, tuning_left=max(0, budget - finished),
                                folds_left=0 if nothing_to_replicate else cells - done_folds,
                                nothing_to_replicate=nothing_to_replicate))
    if plan.until_decided and not sum(r.tuning_left for r in rows):  # decided arms get no more folds; none after the last stage
        seq = stages_answer(data).sequential
        if seq:
            rows = [replace(r, folds_left=0) if seq.over or r.arm in seq.stopped else r for r in rows]
    return CompareProgress(arms=rows, budget=plan.budget, folds=plan.folds)


def stages_answer(data: CompareData) -> VerdictAnswer:
    """The verdicts of a comparison (lpstudy.results.answers) with the ROPE and alpha it ran
    --until-decided with (the defaults otherwise), its stages under "sequential": what `lpstudy
    verdict`, `lpstudy compare` and the Compare page show."""
    from lpstudy.results.answers import study_answer
    from lpstudy.results.answers.options import stage_options

    answer = study_answer(_study_data(data), stage_options(data.plan.until_decided))
    if not isinstance(answer, VerdictAnswer):  # a comparison's data is a grid's, never a search's
        raise TypeError(f"comparison {data.name!r} read as a search")
    return answer


def progress_line(progress: CompareProgress) -> str:
    """'2 arms · tuning 4/4 trials · folds 3/4 runs · left: 1 fold run' (or 'nothing left')."""
    parts = []
    if progress.tuning_left:
        parts.append(f"{progress.tuning_left} tuning trial(s)")
    if progress.cells_left:
        parts.append(f"{progress.cells_left} fold run(s)")
    return (f"{progress.n_arms} arms · tuning {progress.tuning_spent}/{progress.tuning_total} trials "
            f"· folds {progress.cells_done}/{progress.cells_total} runs · "
            + (f"left: {' and '.join(parts)}" if progress.left else "nothing left: every arm is tuned and replicated"))


def next_command(study: str, storage_flags: str = "") -> str:
    """The command that runs what is left of the comparison study; `storage_flags` name its storage
    as the user should write them (' --storage URL', ' --storage-file FILE'), '' for the default one."""
    from lpstudy.names import shell_quoted

    return f"lpstudy worker --study {shell_quoted(study)}{storage_flags}"


def load_compare(reader: TrialReader, name: str) -> CompareData:
    """The comparison NAME (its plan is in its study's user attributes, lpstudy.study.compare);
    UserError when there is none of that name."""
    records = {record.name: record for record in reader.studies()}
    plain = records[name].attrs.get(COMPARE_ATTR) if name in records else None
    if not plain:
        raise UserError(f"no comparison named {name!r} in {redact(reader.url)}; create it with `lpstudy compare`")
    plan = ComparePlan.from_plain(plain)
    tuning: list[pd.DataFrame] = []
    for value, t in plan.arm_tunings():
        study = plan.tune_study(name, value, t)
        if study in records:  # the configuration the arm's search returns: the one it replicates
            tuning.append(_mark_returned(reader, study, records[study].attrs, arm_trials(reader, study, plan.label(value), t)))
    folds = arms_folds(reader, name, plan, set(records))
    return CompareData(name, plan, joined(tuning), folds, plan.label(plan.reference))


def _mark_returned(reader: TrialReader, study: str, attrs: dict, frame: pd.DataFrame) -> pd.DataFrame:
    """The tuning trials with `returned` (the trial of the configuration the arm's search returns,
    lpstudy.results.reading.measured.search_chosen, which lpstudy.study.compare replicates) and
    `returned_folds` (on how many folds it was measured) with `returned_mean` (its mean loss over them)."""
    from lpstudy.results.reading.frames import study_info
    from lpstudy.results.reading.measured import search_chosen

    info = study_info(study, attrs)
    chosen = reader.read(study, lambda tables: search_chosen(tables, "search", info.spec))
    returned = frame["number"] == (chosen.number if chosen else -1)
    return frame.assign(returned=returned,
                        returned_folds=chosen.measured["folds_measured"] if chosen else math.nan,
                        returned_mean=chosen.measured["mean_over_folds"] if chosen else math.nan)


def compare_study_data(reader: TrialReader, name: str, curves: bool = False):
    """The comparison NAME as a StudyData, read through its arms as every page and lpstudy.results.answers
    read it: its arms' replicate runs as the trials (with `arm`; see _study_data), with their curves
    where asked, and its plan (factor, reference, the arms' labels and values) as the spec's "compare" entry."""
    data = load_compare(reader, name)
    study = _study_data(data)
    if curves and len(study.trials):
        from lpstudy.results.reading.frames import merge_curves, trial_curves

        parts = []
        for arm_study, rows in study.trials.groupby("study", sort=False):
            read = trial_curves(reader, arm_study, [int(n) for n in rows["arm_number"]])
            by_id = dict(zip(rows["trial_id"].astype(int), rows["number"].astype(int)))
            parts.append(read[read["trial_id"].isin(by_id)].assign(trial_number=lambda f: f["trial_id"].map(by_id)))
        study.curves = merge_curves(*parts) if parts else study.curves
    return study


def _study_data(data: CompareData) -> StudyData:
    """The comparison's StudyData: its arms' replicate runs (lpstudy.results.rows.arms.arms_study_data)."""
    return arms_study_data(data.name, data.plan, data.folds, data.reference)


def exported_arm(reader: TrialReader, name: str) -> tuple[str, str]:
    """Which study `lpstudy export` and the Export page read for the comparison NAME, and a sentence
    saying why: the replicate study of the arm with the lowest mean final loss over its folds (its
    best configuration, run on every fold), else, before any fold ran, the tuning study of the arm
    with the best tuning trial. UserError where no arm has a finished run yet."""
    data = load_compare(reader, name)
    for frame, kind, what in ((data.folds, "folds", "the lowest mean final validation loss over its folds"),
                              (data.tuning, "tune", "the best tuning trial (no fold has run yet)")):
        runs = A.successful(frame) if len(frame) else frame
        if len(runs):
            best = A.best_trial(frame)
            arm = runs.groupby("arm")["loss"].mean().idxmin() if kind == "folds" or best is None else best["arm"]
            study = runs.loc[runs["arm"] == arm, "study"].iloc[0]
            return study, f"comparison {name!r}: its arm {arm} has {what}; this is that arm's best run ({study})"
    raise UserError(f"comparison {name!r} has no finished run yet; run `{next_command(name)}` and export when "
                    f"`lpstudy status --study {name}` shows a best loss")


def verdict_data(reader: TrialReader, name: str, curves: bool = True) -> StudyData:
    """The study NAME read for its verdicts: a comparison's arms' replicate runs (compare_study_data),
    any other study as it is (frames.load_study)."""
    from lpstudy.results.reading.frames import EVERY_CURVE, load_study

    # every run's curve: the convergence verdicts pair them all (a page's sample would leave runs "to come")
    data = load_study(reader, name, curves=EVERY_CURVE if curves else False)
    if data.info.kind == "compare":
        return compare_study_data(reader, name, curves=curves)
    return data
