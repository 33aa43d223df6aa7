"""The worker: takes trials from a study and trains them until told to stop.

One worker process trains on one device. It stops after --n-trials trials, after --timeout seconds
(it finishes the trial it is on), when a grid study has no cell left, when the study reaches its
n_trials target, or on SIGINT/SIGTERM: then the trial it is on stops after the current step and
ends FAIL (marked interrupted) and is enqueued again with the same parameters, never left RUNNING.
A second signal aborts at once (the trial still ends FAIL).

While a trial runs, a thread records its heartbeat through the storage's liveness (SQL storages:
Optuna's heartbeats; journal and gRPC: a lease of lpstudy's own; lpstudy.db.liveness). Before taking
a trial, a worker fails the RUNNING trials whose heartbeat is older than the grace period (their worker died) and enqueues each again
with the same parameters (lpstudy.db.retries, Optuna's RetryHeartbeatStaleTrialCallback's
bookkeeping), at most max_retry times. Workers of a grid study that find no waiting cell wait while other trials run
(they may die and come back as waiting cells) and stop when none is left.

There is one loop, whatever the study: before each trial the worker checks a signal, --n-trials
and --timeout, then asks its decider what to do, a typed decision (lpstudy.study.decisions:
RunTrial, Wait, Done): a search's trials and a grid's cells (lpstudy.study.sources), a study run
--until-decided stage by stage (lpstudy.study.stages.Stages), a comparison arm by arm
(lpstudy.study.compare_worker.Comparison). `lpstudy worker` picks the decider
(lpstudy.study.deciders.decider_for); the loop counts, retries and reports the same for each.

lpstudy.study.launch runs one worker process per device (`--devices cuda:0,cuda:1`, `cpu,cpu`).

What a trial runs is the worker's objective (lpstudy.study.trial_context): by default training
(lpstudy.study.objective.run_trial, which brings torch, the corpus and the device); another one,
such as the load test's stand-in (benchmarks/bench_load.py), goes through the same claims,
heartbeats, retries and tells without them.
"""

from __future__ import annotations

import os
import random
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from types import FrameType
from typing import TYPE_CHECKING, Any, TypeAlias

import optuna
from optuna.trial import TrialState

from lpstudy.db import optuna_private
from lpstudy.db.liveness import Liveness
from lpstudy.db.optuna_storage import StorageUnavailable, StudyStorage
from lpstudy.study.claims import requeue
from lpstudy.study import telemetry
from lpstudy.study.decisions import Decider, Done, Wait
from lpstudy.study.sources import GridCells, OneStudy, SearchTrials, StudySource
from lpstudy.design.spec import StudySpec
from lpstudy.study.studies import load_study
from lpstudy.study.trial_context import Objective, TrialContext, TrialLost, TrialOutcome
from lpstudy.training.progress import say_stderr

if TYPE_CHECKING:  # names of typeshed's (sys.UnraisableHookArgs is no attribute at run time)
    # what signal.signal takes and gives back: a function, SIG_DFL or SIG_IGN (ints), or None (not set from Python)
    SignalHandler: TypeAlias = Callable[[int, FrameType | None], Any] | int | None
    UnraisableHook: TypeAlias = Callable[[sys.UnraisableHookArgs], Any]

# A worker with nothing to take polls after GRID_POLL_S while other workers' trials run, then less
# and less often, up to IDLE_POLL_MAX_S apart (jittered): 200 idle workers polling every second kept
# two cores busy with their polls and starved the creator that was enqueuing their cells.
GRID_POLL_S = 1.0
IDLE_POLL_MAX_S = 4.0
# This many failures in a row (errors, not interruptions) stop a worker: something is broken.
MAX_CONSECUTIVE_FAILURES = 3


@dataclass
class WorkerOptions:
    study: str
    storage: str | None = None
    device: str = "auto"
    n_trials: int | None = None
    timeout: float | None = None
    data: str | None = None
    show_progress: bool = True
    heartbeat_interval: int | None = None  # override the study's (e.g. for a test)
    grace_period: int | None = None
    max_retry: int | None = None
    threads: int | None = None  # torch threads of a CPU worker (None: each run's default, training.threads)
    artifacts: str | None = None  # where trials keep checkpoints (lpstudy.study.checkpoints)
    config: str | None = None  # the study file workers check the study's spec against (lpstudy.study.spec_wait)
    metrics_port: int = 0  # Prometheus metrics on this port (lpstudy.study.telemetry); 0: none
    # Say what it works on as it starts, and why it stopped (its stop line).
    announce: bool = True
    # The run the reserve is a share of, where a command started several workers for one (`search --workers W
    # --n-trials N`): (the study's trials taken when it started, N). Each worker counts every worker's trials,
    # the running ones too, as the replay benchmark does; None: this worker's own --n-trials.
    run_budget: tuple[int, int] | None = None


@dataclass
class WorkerReport:
    trials: dict[str, int] = field(default_factory=dict)  # state name -> count, of this worker's trials
    reason: str = ""  # why it stopped
    interrupted: bool = False
    exit_code: int = 0


class StopFlag:
    """Set by SIGINT/SIGTERM; polled by the trainer after every step."""

    def __init__(self) -> None:
        self.signal: int | None = None
        self.aborting = False  # a second signal came: the worker is aborting
        self.abort_caught = False  # the worker caught the abort (or is done): later signals change nothing
        self.redeliveries: list[threading.Timer] = []  # see _deliver_again_unless_caught
        self._event = threading.Event()

    def end_redeliveries(self) -> None:
        """No abort is sent again from now on, and one already sent has reached this process's
        handler (which ignores it) before the caller restores the handlers it replaced: a signal
        sent again in between would otherwise reach Python's own handler, whose KeyboardInterrupt
        made an aborted worker exit by SIGINT (-2) instead of 130."""
        self.abort_caught = True
        for timer in self.redeliveries:
            timer.cancel()
            timer.join()
        time.sleep(0.01)  # the main thread runs a pending signal's handler here, ours

    def __call__(self) -> bool:
        return self._event.is_set()

    def set(self, signum: int | None = None) -> None:
        self.signal = signum
        self._event.set()

    def wait(self, seconds: float) -> bool:
        return self._event.wait(seconds)


def install_signal_handlers(stop: StopFlag, say: Callable[[str], None]) -> dict[signal.Signals, SignalHandler]:
    """First SIGINT/SIGTERM: stop after the current step. Second: KeyboardInterrupt. Returns the
    previous handlers (to restore); does nothing outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum: int, frame: FrameType | None) -> None:
        if stop():
            if stop.abort_caught:  # a third signal: the abort is already ending the trial
                return
            stop.aborting = True
            _deliver_again_unless_caught(stop, signum)
            raise KeyboardInterrupt
        stop.set(signum)
        say(f"{signal.Signals(signum).name}: stopping after the current step (again to abort)")

    previous: dict[signal.Signals, SignalHandler] = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handler)
    return previous


def quiet_dropped_aborts(stop: StopFlag) -> tuple[UnraisableHook, UnraisableHook]:
    """A sys.unraisablehook that says nothing of an abort's KeyboardInterrupt Python dropped in a
    weakref callback or a __del__ (it is delivered again), and hands anything else to `previous`."""
    previous = sys.unraisablehook

    def hook(unraisable: sys.UnraisableHookArgs) -> None:
        if stop.aborting and issubclass(unraisable.exc_type, KeyboardInterrupt):
            return
        previous(unraisable)

    return hook, previous


ABORT_REDELIVERY_S = 1.0


def _deliver_again_unless_caught(stop: StopFlag, signum: int) -> None:
    """The KeyboardInterrupt a signal handler raises lands wherever the main thread is, and Python
    drops it (printing 'Exception ignored') when that is a weakref callback or a __del__, which
    tensors freed in a training step run often: the worker then carried on as if the second signal
    had not come, and ignored every later one. So the signal is sent again, a second later, until
    the worker has caught the abort."""

    def again() -> None:
        if not stop.abort_caught:
            os.kill(os.getpid(), signum)

    timer = threading.Timer(ABORT_REDELIVERY_S, again)
    timer.daemon = True
    stop.redeliveries.append(timer)
    timer.start()


class Heartbeat:
    """Beats for a running trial every liveness.interval_s seconds in a background thread (Optuna's
    heartbeat or lpstudy's lease: lpstudy.db.liveness). Errors (a database restart) are ignored:
    the next beat tries again, within the grace period."""

    def __init__(self, liveness: Liveness, trial_id: int) -> None:
        self.liveness, self.trial_id = liveness, trial_id
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _beat(self) -> None:
        try:
            self.liveness.beat(self.trial_id)
            telemetry.heartbeat_recorded()
        except Exception:
            pass

    def __enter__(self) -> "Heartbeat":
        self._beat()
        self._thread = threading.Thread(target=self._run, name="lpstudy-heartbeat", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.liveness.interval_s):
            self._beat()

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        telemetry.trial_ended()


class Worker:
    """One worker's loop (see the module): before each trial it checks a signal, --n-trials and
    --timeout (written once, here), then asks its decider what to do (lpstudy.study.decisions: run a
    trial, wait, or stop), runs the trial and accounts for it (its retry, failures in a row, the
    races a completed search trial earns). It is the deciders' `Sources`: it opens a study for them."""

    def __init__(self, options: WorkerOptions, say: Callable[[str], None] | None = None,
                 objective: Objective | None = None, *,
                 storage: StudyStorage) -> None:
        """objective: what each trial runs (see the module); None: train it. storage: the study's
        storage (options.storage), opened by the caller, who closes it."""
        self.options = options
        self.stop = StopFlag()
        self.objective = objective
        self._trains = objective is None  # the objective is training (lpstudy.study.objective.run_trial)
        self._say = say
        self._idle_s = GRID_POLL_S  # the next wait of a worker with nothing to take (_wait)
        self._storage = storage
        self._sources: dict[str, StudySource] = {}
        self._corpus: object | None = None  # the training objective's corpus, loaded once (_training_context)

    def say(self, message: str) -> None:
        if self._say is not None:
            self._say(message)
            return
        say_stderr(f"[dim]lpstudy worker:[/] {message}")

    def run(self, decider: Decider | None = None) -> WorkerReport:
        """Take trials as the decider says (None: the options' study, a search or a grid without
        stages: lpstudy.study.sources.OneStudy) until it says Done or the worker must stop."""
        decider = decider if decider is not None else OneStudy(self.options.study)
        line = decider.start(self)
        if self.options.announce:
            self.say(line)
        previous = install_signal_handlers(self.stop, self.say)
        sys.unraisablehook, unraisable_hook = quiet_dropped_aborts(self.stop)
        try:
            return self._loop(decider)
        except KeyboardInterrupt:
            self.stop.abort_caught = True
            self.say("stopped: aborted by a second signal (the trial it ran is failed and enqueued again)")
            raise
        finally:
            self.stop.end_redeliveries()  # nothing is sent again once the handlers are gone
            sys.unraisablehook = unraisable_hook
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def open(self, name: str, arm: bool = False) -> StudySource:
        """The study NAME, opened once for this worker (its liveness, the objective's context): a
        search's trials or a grid's cells (lpstudy.study.sources). arm: a comparison's arm, whose
        lines name it and which keeps no race reserve (its worker picks the arm)."""
        if name in self._sources:
            return self._sources[name]
        opts, storage = self.options, self._storage
        study, spec = load_study(storage, name)
        if spec.is_grid:
            study = storage.for_grid_worker(study)  # SQL: straight on Optuna's RDBStorage (StudyStorage.for_grid_worker)
        max_retry = spec.max_retry if opts.max_retry is None else opts.max_retry
        # SQL: Optuna's heartbeats; journal and gRPC: lpstudy's lease (lpstudy.db.liveness)
        liveness = storage.liveness(opts.heartbeat_interval or spec.heartbeat_interval,
                                    opts.grace_period or spec.grace_period, max_retry)
        storage.prepare_curves()  # SQL: the metrics table
        if self._trains:
            from lpstudy.study.objective import run_trial  # torch

            self.objective = run_trial
            ctx = self._training_context(storage, study, spec)
        else:
            ctx = TrialContext(storage=storage, study=study, spec=spec, corpus=None, device=opts.device,
                               should_stop=self.stop, show_progress=opts.show_progress)
        say = (lambda message: self.say(f"{name}: {message}")) if arm else self.say
        kind = GridCells if spec.is_grid else SearchTrials
        source = self._sources[name] = kind(name=name, study=study, spec=spec, storage=storage, liveness=liveness,
                                            max_retry=max_retry, ctx=ctx, say=say, options=opts, race_reserve=not arm)
        return source

    def _training_context(self, storage: StudyStorage, study: optuna.Study, spec: StudySpec) -> TrialContext:
        """The training objective's context: the device (checked), torch's threads, the corpus
        (loaded once per worker) and the checkpoint store. Imports torch."""
        from lpstudy.study.checkpoints import artifact_location, artifact_store
        from lpstudy.training.data import load_corpus
        from lpstudy.training.trainer import pick_device

        opts = self.options
        device = opts.device if opts.device not in ("auto", None) else str(pick_device("auto"))
        if device != "cpu":
            pick_device(device)  # refuses cuda on a machine without it
        if self._corpus is None:
            self._corpus = load_corpus(opts.data)
        location = artifact_location(storage, opts.artifacts) if spec.checkpoint_interval else None
        return TrialContext(storage=storage, study=study, spec=spec, corpus=self._corpus, device=device,
                            should_stop=self.stop, show_progress=opts.show_progress,
                            artifact_store=artifact_store(location) if location else None,
                            threads=opts.threads if device == "cpu" else None)  # each trial records its count

    def _stopping(self, done: int, deadline: float | None) -> str | None:
        """Why the worker stops before its next trial, whatever its study: a signal, --n-trials,
        --timeout (no trial starts after it); None: it goes on."""
        opts = self.options
        if self.stop():
            return "stopped by a signal"
        if opts.n_trials is not None and done >= opts.n_trials:
            return f"ran {done} trial(s) (--n-trials)"
        if deadline is not None and time.monotonic() >= deadline:
            return f"--timeout of {opts.timeout:g} s reached"
        return None

    def _loop(self, decider: Decider) -> WorkerReport:
        opts = self.options
        report = WorkerReport()
        deadline = time.monotonic() + opts.timeout if opts.timeout else None
        done = 0
        failures_in_a_row = 0
        while True:
            stopping = self._stopping(done, deadline)
            if stopping is not None:
                report.reason, report.interrupted = stopping, self.stop()
                break
            decision = decider.next(done)
            if isinstance(decision, Done):
                report.reason = decision.reason
                break
            if isinstance(decision, Wait):
                self._wait(decision.seconds)
                continue
            self._idle_s = GRID_POLL_S
            source, trial = decision.source, decision.trial
            outcome, ours = self._run_one(source, trial)
            telemetry.trial_finished(outcome.state.name)
            done += 1
            report.trials[outcome.state.name] = report.trials.get(outcome.state.name, 0) + 1
            spec = source.spec
            if outcome.state == TrialState.FAIL:
                interrupted = outcome.reason == "interrupted"
                # Only the worker whose FAIL stuck retries it: a trial another worker failed as stale
                # was retried by that worker already.
                if ours and (spec.is_grid or interrupted or outcome.retry) and requeue(
                        source.study, optuna_private.trial_id(trial), source.max_retry, interrupted=interrupted,
                        spec=spec, storage=source.storage):
                    source.say(f"trial {trial.number} enqueued again with the same parameters")
                if not interrupted and ours:
                    failures_in_a_row += 1
                    if failures_in_a_row >= MAX_CONSECUTIVE_FAILURES:
                        report.reason = f"{failures_in_a_row} trials failed in a row; last: {outcome.reason}"
                        report.exit_code = 1
                        break
            else:
                failures_in_a_row = 0
                if ours:  # what this worker runs yet (a comparison's arms share it: their races are its next trials)
                    source.told(outcome, None if opts.n_trials is None else opts.n_trials - done)
        if opts.announce:
            self.say(stop_line(report))
        return report

    def _wait(self, seconds: float | None) -> None:
        """Wait before looking again: `seconds`, or (None) longer each time nothing was there (see
        IDLE_POLL_MAX_S). A signal ends the wait."""
        if seconds is not None:
            self.stop.wait(seconds)
            return
        self.stop.wait(random.uniform(0.5, 1.0) * self._idle_s)
        self._idle_s = min(IDLE_POLL_MAX_S, 2 * self._idle_s)

    def _run_one(self, source: StudySource, trial: optuna.Trial) -> tuple[TrialOutcome, bool]:
        """Run the trial of the source's study and tell Optuna; (the outcome, whether the trial ended
        in that state by this worker's tell rather than already failed by another worker)."""
        objective, ctx, say = self.objective, source.ctx, source.say
        assert objective is not None, "open() sets the training objective"
        telemetry.trial_started()
        with Heartbeat(source.liveness, optuna_private.trial_id(trial)):
            try:
                outcome = objective(ctx, trial)
            except StorageUnavailable:
                raise  # nothing can be told; the trial's heartbeat stops and another worker retries it
            except optuna.exceptions.UpdateFinishedTrialError:
                # Another worker failed the trial as stale (its heartbeat came later than the grace
                # period) and enqueued its retry: this worker's run of it is void, not a failure.
                say(f"trial {trial.number} was already FAIL (failed by another worker after a missed "
                         "heartbeat: raise grace_period); its retry counts instead")
                return TrialOutcome(TrialState.FAIL, None, reason="failed by another worker"), False
            except KeyboardInterrupt:  # a second signal: end the trial, enqueue it again, then abort
                self.stop.abort_caught = True
                outcome = TrialOutcome(TrialState.FAIL, None, reason="interrupted")
                _safe(lambda: trial.set_user_attr("interrupted", True))
                _safe(lambda: trial.set_user_attr("stopped", True))  # stopped by a signal: not a failure (results.analysis.interrupted)
                if self._tell(source, trial, outcome):
                    _safe(lambda: requeue(source.study, optuna_private.trial_id(trial), source.max_retry, interrupted=True, spec=ctx.spec,
                                          storage=ctx.storage))
                raise
            except TrialLost as exc:  # e.g. its checkpoint cannot be read: fails, and is enqueued again
                outcome = TrialOutcome(TrialState.FAIL, None, reason=str(exc), retry=True)
                say(f"[red]trial {trial.number} failed[/]: {outcome.reason}")
                _safe(lambda: trial.set_user_attr("error", outcome.reason[:1000]))
            except Exception as exc:  # a bug, a device error, an invalid run: the trial fails
                outcome = TrialOutcome(TrialState.FAIL, None, reason=f"{type(exc).__name__}: {exc}")
                say(f"[red]trial {trial.number} failed[/]: {outcome.reason}")
                _safe(lambda: trial.set_user_attr("error", outcome.reason[:1000]))
            # Told while the heartbeat still beats: a tell that waits (a busy database, a starved
            # process) must not make the trial look dead. With the tell after the heartbeat's end,
            # 200 workers on two cores had one live trial failed as stale between its last write and
            # its tell, with a 60 s grace period (docs/scale-workers.md).
            return outcome, self._tell(source, trial, outcome)

    def _tell(self, source: StudySource, trial: optuna.Trial, outcome: TrialOutcome) -> bool:
        study = source.study
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if outcome.state == TrialState.COMPLETE:
                    study.tell(trial, outcome.value, skip_if_finished=True)
                else:
                    study.tell(trial, state=outcome.state, skip_if_finished=True)
        except optuna.exceptions.UpdateFinishedTrialError:
            pass  # another worker declared it dead (stale heartbeat) and failed it; its retry runs it
        state = self._state_of(study, trial)
        if state != outcome.state:
            source.say(f"trial {trial.number} was already {state.name} (failed by another worker "
                     "after a missed heartbeat); its retry counts instead")
            return False
        value = f" {outcome.value:.4f}" if outcome.value is not None else ""
        diverged = " (diverged)" if outcome.summary is not None and outcome.summary.diverged else ""
        why = f" ({outcome.reason})" if outcome.reason else ""
        source.say(f"trial {trial.number} {outcome.state.name}{value}{diverged}{why}")
        return True

    def _state_of(self, study: optuna.Study, trial: optuna.Trial) -> TrialState:
        """The trial's state now: the storage's read (StudyStorage.trial_state: one query on SQL)."""
        storage = self._storage
        if storage is not None:
            return storage.trial_state(study, optuna_private.trial_id(trial))
        return optuna_private.study_storage(study).get_trial(optuna_private.trial_id(trial)).state


def stop_line(report: WorkerReport) -> str:
    """'stopped: no grid cell left · this worker's trials: 3 complete, 1 pruned'."""
    return (f"stopped: {report.reason} · this worker's trials: "
            + (", ".join(f"{n} {s.lower()}" for s, n in sorted(report.trials.items())) or "none"))


def _safe(fn: Callable[[], object]) -> None:
    try:
        fn()
    except Exception:
        pass


def run_worker(options: WorkerOptions, say: Callable[[str], None] | None = None, objective: Objective | None = None, *,
               storage: StudyStorage, decider: Decider | None = None) -> WorkerReport:
    """Run one worker in this process (see the module's docstring) on storage, the study's storage
    opened by the caller (open_storage(options.storage, wait=True): started beside hundreds of
    others, opening may time out and is retried), who closes it. decider: what it asks before each
    trial (lpstudy.study.deciders.decider_for picks one for any study; None: the options' study
    without stages, lpstudy.study.sources.OneStudy)."""
    return Worker(options, say=say, objective=objective, storage=storage).run(decider)
