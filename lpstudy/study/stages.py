"""The stages of a study run --until-decided, `replicate --until-decided` and `compare
--until-decided` alike: the folds run in stages (3, 5, 8, 10), and after each stage the verdicts
(lpstudy.results.answers, the same as `lpstudy verdict`) decide which arms get the next stage's
folds: the reference and the arms still undecided. One place decides when an arm has been seen on
enough folds, as SMAC3's intensifier does for its search and its comparison alike.

A worker takes a stage's waiting cells like any grid worker; when none is left (StageOver,
lpstudy.study.decisions) its decider, Stages, calls next_stage,
which enqueues the next stage's cells under the storage's lock (lpstudy.study.studies.enqueue_round:
each cell once however many workers finish a stage at the same moment). Every worker anywhere does
this, so no process has to stay up to lead the study. It stops when every arm is decided or the last
stage ran.

The stage engine reads the study's rows itself (lpstudy.results.rows.arms.verdict_rows, below it) and
hands them to the verdicts (lpstudy.results.answers, below it too): it imports nothing of the read
side (the layers in pyproject.toml's [tool.importlinter], tests/test_layers.py)."""

from __future__ import annotations

import enum
from typing import TYPE_CHECKING, Callable

from lpstudy.study.decisions import Decision, Done, Sources, Staged, StageOver, Wait

if TYPE_CHECKING:
    from lpstudy.db.kinds.base import StudyStorage

POLL_S = 3.0  # a worker waiting for the stage's running cells looks again this often


class Stage(enum.Enum):
    """next_stage's answer: what comes after the cells that ran."""

    WAIT = "wait"  # cells of the stage still run (here or elsewhere): look again later
    ENQUEUED = "enqueued"  # the next stage's cells are waiting
    OVER = "over"  # every arm decided, or the last stage ran


WAIT, ENQUEUED, OVER = Stage.WAIT, Stage.ENQUEUED, Stage.OVER


def next_stage(storage: StudyStorage, name: str, say: Callable[[str], None] | None = None) -> Stage:
    """What comes after the cells that ran, for the replicate or comparison NAME run --until-decided:
    WAIT (cells of the stage still run), ENQUEUED (the next stage's cells are waiting: for a
    comparison, in its arms' replicate grids) or OVER (every arm decided, or the last stage ran).
    storage: the worker's own, which reads the verdicts' data too."""
    from lpstudy.results.answers import VerdictAnswer, study_answer
    from lpstudy.results.answers.options import stage_options
    from lpstudy.results.rows.arms import verdict_rows
    from lpstudy.study.compare import enqueue_stage, load_plan
    from lpstudy.study.studies import enqueue_round, load_spec
    from lpstudy.values import format_p

    comparison = load_plan(storage, name)
    plan = comparison.until_decided if comparison is not None else load_spec(storage, name).until_decided
    data = verdict_rows(storage, name, comparison)  # the tables it read, handed to the verdicts
    if data.trials["state"].isin(["WAITING", "RUNNING"]).any():
        return WAIT
    answer = study_answer(data, stage_options(plan))
    if plan is None:  # a study run without --until-decided has no stages
        return OVER
    if not isinstance(answer, VerdictAnswer):  # a search's answer: it has no stages
        return OVER
    seq, reference = answer.sequential, answer.reference
    if seq is None and comparison is None:  # a replicate whose verdicts have no stage to look at
        return OVER
    if seq and seq.over:
        return OVER
    done = seq.looks_done if seq else 0
    rounds = seq.rounds if seq else list(plan.rounds)
    stopped = seq.stopped if seq else {}
    folds = rounds[done]
    if comparison is None:
        if seq is None or reference is None:  # a replicate without stages returned OVER above
            return OVER
        undecided = [arm.value for arm in seq.arms if arm.state in ("running", "undecided")]
        n_undecided = len(undecided)
        enqueued, open_ = enqueue_round(storage, name, [reference.value, *undecided], folds)
        decided = [f"p = {format_p(float(arm))} after {n} folds" for arm, n in stopped.items()]
    else:
        labels = [comparison.label(v) for v in comparison.values if comparison.label(v) not in stopped]
        n_undecided = len(labels) - 1  # the reference is never stopped: it is one of the labels
        enqueued, open_ = enqueue_stage(storage, name, comparison, labels, folds)
        decided = [f"{arm} after {n} folds" for arm, n in stopped.items()]
    if enqueued and say:
        say(f"stage {done + 1} of {len(rounds)}: {enqueued} cell(s) on folds up to {folds - 1} for "
            f"{n_undecided} undecided arm(s) and the reference (decided: {', '.join(decided) or 'none yet'})")
    # enqueued by another worker a moment ago: work to do; nothing enqueued and nothing open: the
    # stage's cells failed for good, and the verdicts stand as they are
    return ENQUEUED if enqueued or open_ else OVER


class Stages:
    """The decider of a study run --until-decided (a replicate's cells, a comparison's arms: the
    decider inside, `staged`): its trials as that gives them; where a stage has no cell waiting
    (StageOver), next_stage decides: the next stage's cells (looked at again at once), a wait while
    the stage's cells run elsewhere, or Done once every arm is decided or the last stage ran.
    `over`: the words of that stop line ("stage" for a comparison, "round" for a replicate)."""

    def __init__(self, staged: Staged, storage: StudyStorage, name: str, over: str = "stage") -> None:
        self.staged, self.storage, self.name = staged, storage, name
        self.over = f"every arm is decided or the last {over} ran (lpstudy verdict shows them)"
        self.say: Callable[[str], None] | None = None

    def start(self, sources: Sources) -> str:
        self.say = sources.say
        return self.staged.start(sources)

    def next(self, done: int) -> Decision:
        claim = self.staged.claim(done)
        if not isinstance(claim, StageOver):
            return claim
        step = next_stage(self.storage, self.name, self.say)
        if step is Stage.OVER:
            return Done(self.over)
        return Wait(POLL_S if step is Stage.WAIT else 0)  # ENQUEUED: its cells are there to take now
