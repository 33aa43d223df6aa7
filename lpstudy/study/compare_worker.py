"""`lpstudy worker --study NAME` for a comparison (lpstudy.study.compare): the decider that gives the
worker's loop one trial at a time from an arm's waiting tuning trial (a race, a retry), else the arm
whose tuning has used least of its budget, then the arms' replicate grids (compare.next_study); with
--until-decided, inside its stages (lpstudy.study.stages.Stages decides each next stage from the
verdicts). The worker's loop keeps --n-trials, --timeout and the stop line for every arm at once: the
races an arm's tuning enqueues are within what the worker has left to run, and are its next trials."""

from __future__ import annotations

from lpstudy.db.optuna_storage import StudyStorage
from lpstudy.study.compare import ComparePlan, next_study
from lpstudy.study.decisions import Claim, Decision, Done, RunTrial, Sources, Wait, unstaged


class Comparison:
    """The decider of a comparison's worker (see the module). Each arm's study is opened once, its
    lines named by it. An arm picked that gives no trial (another worker took its last one meanwhile)
    is looked at again once; the second time in a row the worker stops, saying why."""

    def __init__(self, storage: StudyStorage, name: str, plan: ComparePlan) -> None:
        self.storage, self.name, self.plan = storage, name, plan
        self.sources: Sources | None = None
        self._empty: str | None = None  # the arm's study that last gave no trial

    def start(self, sources: Sources) -> str:
        self.sources = sources
        plan = self.plan
        return (f"comparison {self.name!r} in {self.storage.display_url}: {len(plan.values)} arms of {plan.factor}, "
                "a trial at a time from the arm with the least of its tuning budget spent, then the folds")

    def claim(self, done: int) -> Claim:
        assert self.sources is not None, "start() comes first"
        target = next_study(self.storage, self.name, self.plan)
        if not isinstance(target, str):
            return target
        claim = self.sources.open(target, arm=True).claim(done)
        if isinstance(claim, RunTrial):
            self._empty = None
        if isinstance(claim, (RunTrial, Wait)):
            return claim
        why = claim.reason if isinstance(claim, Done) else "no cell of this round is waiting"
        if target == self._empty:
            return Done(f"{target} had no trial to give ({why})")
        self._empty = target
        return Wait(0)  # another worker took its last trial meanwhile: look again, once

    def next(self, done: int) -> Decision:
        return unstaged(self.claim(done))
