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
from typing import Literal
from dataclasses import dataclass, field

import optuna
from optuna.trial import TrialState

from lpstudy.db import optuna_private
from lpstudy.db.liveness import Liveness
from lpstudy.db.optuna_storage import StorageUnavailable, StudyStorage
from lpstudy.db.asking import Wait
from lpstudy.study.claims import WAIT, ask_within_target, pop_waiting_trial, requeue, take_race
from lpstudy.study import telemetry
from lpstudy.study.races import enqueue_races
from lpstudy.design.spec import StudySpec
from lpstudy.study.studies import load_study
from lpstudy.study.trial_context import Objective, TrialContext, TrialLost, TrialOutcome
from lpstudy.training.progress import say_stderr

# A worker with nothing to take polls after GRID_POLL_S while other workers' trials run, then less
# and less often, up to IDLE_POLL_MAX_S apart (jittered): 200 idle workers polling every second kept
# two cores busy with their polls and starved the creator that was enqueuing their cells.
GRID_POLL_S = 1.0
IDLE_POLL_MAX_S = 4.0
# This many failures in a row (errors, not interruptions) stop a worker: something is broken.
MAX_CONSECUTIVE_FAILURES = 3
# Why a worker of a sequential replicate (--until-decided) stops: nothing of the round is waiting.
# A grid worker that finds fewer trials than cells waits this long for its creator to enqueue more.
ENQUEUE_WAIT_S = 60.0


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
    # Say the study it works on and why it stopped. A comparison's worker runs one trial at a time
    # through a Worker each (lpstudy.study.compare) and says these itself, once.
    announce: bool = True
    # The trials whoever runs this Worker runs after it (0: none; None: no limit): a comparison's
    # worker runs one trial at a time through a Worker each (n_trials=1), and the races one enqueues
    # are run by the next (lpstudy.study.compare_worker), so they are enqueued within what it has left.
    trials_after: int | None = 0
    # Keep a search's race reserve (spec.race_reserve). A comparison's worker does not: it runs its arms'
    # tunings one trial at a time through a Worker each, choosing the arm itself (lpstudy.study.compare_worker).
    race_reserve: bool = True
    # The run the reserve is a share of, where a command started several workers for one (`search --workers W
    # --n-trials N`): (the study's trials taken when it started, N). Each worker counts every worker's trials,
    # the running ones too, as the replay benchmark does; None: this worker's own --n-trials.
    run_budget: tuple[int, int] | None = None


@dataclass
class WorkerReport:
    trials: dict[str, int] = field(default_factory=dict)  # state name -> count, of this worker's trials
    reason: str = ""  # why it stopped
    interrupted: bool = False
    round_done: bool = False  # a stage of a study run --until-decided has no cell waiting (lpstudy.study.stages)
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


def install_signal_handlers(stop: StopFlag, say) -> dict:
    """First SIGINT/SIGTERM: stop after the current step. Second: KeyboardInterrupt. Returns the
    previous handlers (to restore); does nothing outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def handler(signum, frame):
        if stop():
            if stop.abort_caught:  # a third signal: the abort is already ending the trial
                return
            stop.aborting = True
            _deliver_again_unless_caught(stop, signum)
            raise KeyboardInterrupt
        stop.set(signum)
        say(f"{signal.Signals(signum).name}: stopping after the current step (again to abort)")

    previous = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        previous[sig] = signal.signal(sig, handler)
    return previous


def quiet_dropped_aborts(stop: StopFlag):
    """A sys.unraisablehook that says nothing of an abort's KeyboardInterrupt Python dropped in a
    weakref callback or a __del__ (it is delivered again), and hands anything else to `previous`."""
    previous = sys.unraisablehook

    def hook(unraisable) -> None:
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

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        telemetry.trial_ended()


class Worker:
    def __init__(self, options: WorkerOptions, say=None, objective: Objective | None = None, *,
                 storage: StudyStorage) -> None:
        """objective: what each trial runs (see the module); None: train it. storage: the study's
        storage (options.storage), opened by the caller, who closes it."""
        self.options = options
        self.liveness: Liveness | None = None  # the storage's (run())
        self.stop = StopFlag()
        self.objective = objective
        self._say = say
        self._enqueue_seen: tuple[int, float] | None = None  # (trials, when first seen): _cells_not_enqueued
        self._idle_s = GRID_POLL_S  # the next wait of a worker with nothing to take (_idle)
        self._storage = storage

    def say(self, message: str) -> None:
        if self._say is not None:
            self._say(message)
            return
        say_stderr(f"[dim]lpstudy worker:[/] {message}")

    def run(self) -> WorkerReport:
        return self._run(self._storage)

    def _run(self, storage: StudyStorage) -> WorkerReport:
        opts = self.options
        study, spec = load_study(storage, opts.study)
        if spec.is_grid:
            study = storage.for_grid_worker(study)  # SQL: straight on Optuna's RDBStorage (StudyStorage.for_grid_worker)
        max_retry = spec.max_retry if opts.max_retry is None else opts.max_retry
        # SQL: Optuna's heartbeats; journal and gRPC: lpstudy's lease (lpstudy.db.liveness)
        self.liveness = liveness = storage.liveness(opts.heartbeat_interval or spec.heartbeat_interval,
                                                    opts.grace_period or spec.grace_period, max_retry)
        storage.prepare_curves()  # SQL: the metrics table

        objective: Objective
        if self.objective is None:
            from lpstudy.study.objective import run_trial  # torch

            self.objective = objective = run_trial
            ctx = self._training_context(storage, study, spec)
        else:
            objective = self.objective
            ctx = TrialContext(storage=storage, study=study, spec=spec, corpus=None, device=opts.device,
                               should_stop=self.stop, show_progress=opts.show_progress)
        if opts.announce:
            self.say(f"study {opts.study!r} ({spec.describe()}) in {storage.display_url} on {ctx.device}"
                     + liveness.note)
        previous = install_signal_handlers(self.stop, self.say)
        sys.unraisablehook, unraisable_hook = quiet_dropped_aborts(self.stop)
        try:
            return self._loop(ctx, study, spec, storage, max_retry, liveness, objective)
        except KeyboardInterrupt:
            self.stop.abort_caught = True
            self.say("stopped: aborted by a second signal (the trial it ran is failed and enqueued again)")
            raise
        finally:
            self.stop.end_redeliveries()  # nothing is sent again once the handlers are gone
            sys.unraisablehook = unraisable_hook
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _training_context(self, storage: StudyStorage, study: optuna.Study, spec: StudySpec) -> TrialContext:
        """The training objective's context: the device (checked), torch's threads, the corpus and
        the checkpoint store. Imports torch."""
        from lpstudy.study.checkpoints import artifact_location, artifact_store
        from lpstudy.training.data import load_corpus
        from lpstudy.training.trainer import pick_device

        opts = self.options
        device = opts.device if opts.device not in ("auto", None) else str(pick_device("auto"))
        if device != "cpu":
            pick_device(device)  # refuses cuda on a machine without it
        corpus = load_corpus(opts.data)
        location = artifact_location(storage, opts.artifacts) if spec.checkpoint_interval else None
        return TrialContext(storage=storage, study=study, spec=spec, corpus=corpus, device=device,
                            should_stop=self.stop, show_progress=opts.show_progress,
                            artifact_store=artifact_store(location) if location else None,
                            threads=opts.threads if device == "cpu" else None)  # each trial records its count

    def _loop(self, ctx: TrialContext, study: optuna.Study, spec: StudySpec, storage: StudyStorage,
              max_retry: int, liveness: Liveness, objective: Objective) -> WorkerReport:
        opts = self.options
        report = WorkerReport()
        deadline = time.monotonic() + opts.timeout if opts.timeout else None
        done = 0
        failures_in_a_row = 0
        while True:
            if self.stop():
                report.reason, report.interrupted = "stopped by a signal", True
                break
            if opts.n_trials is not None and done >= opts.n_trials:
                report.reason = f"ran {done} trial(s) (--n-trials)"
                break
            if deadline is not None and time.monotonic() >= deadline:
                report.reason = f"--timeout of {opts.timeout:g} s reached"
                break
            if spec.n_trials is not None and not spec.is_grid and storage.count_trials(
                    study, (TrialState.COMPLETE, TrialState.PRUNED)) >= spec.n_trials:
                report.reason = f"the study reached its target of {spec.n_trials} trials"
                break
            for line in liveness.fail_stale(study):  # dead workers' trials: failed, enqueued again
                self.say(line)
            claim_started = time.monotonic()
            trial: optuna.Trial | Literal[Wait.WAIT] | None
            if spec.is_grid:
                trial = pop_waiting_trial(study, storage)
                if trial is None and spec.until_decided:
                    # the command that runs it decides what comes next (lpstudy.study.stages)
                    report.reason, report.round_done = "no cell of this round is waiting", True
                    break
                if trial is None:
                    if storage.count_trials(study, (TrialState.RUNNING,)):
                        self._idle()  # a running cell may yet fail and come back
                        continue
                    missing = self._cells_not_enqueued(storage, study, spec)
                    if missing is None:
                        self._idle()  # its creator is still enqueuing the grid
                        continue
                    report.reason = missing or "no grid cell left"
                    break
            elif self._past_race_reserve(study, spec, storage, done):
                trial = take_race(study, storage)  # the last share of the run is the races' (spec.race_reserve)
                if trial is None:
                    report.reason = (f"the last {spec.race_reserve:.0%} of the trials are kept for races "
                                     "(race_reserve) and no race is left to run")
                    break
                if trial is WAIT:
                    self._idle()  # a running trial's end may enqueue a race
                    continue
            else:
                trial = ask_within_target(study, spec, storage)
                if trial is None:
                    report.reason = f"the study reached its target of {spec.n_trials} trials"
                    break
                if trial is WAIT:
                    self._idle()  # a running trial may yet fail and free its place
                    continue
            self._idle_s = GRID_POLL_S
            telemetry.trial_claimed(time.monotonic() - claim_started)
            outcome, ours = self._run_one(ctx, study, trial, max_retry, liveness, objective)
            telemetry.trial_finished(outcome.state.name)
            done += 1
            report.trials[outcome.state.name] = report.trials.get(outcome.state.name, 0) + 1
            if outcome.state == TrialState.FAIL:
                interrupted = outcome.reason == "interrupted"
                # Only the worker whose FAIL stuck retries it: a trial another worker failed as stale
                # was retried by that worker already.
                if ours and (spec.is_grid or interrupted or outcome.retry) and requeue(
                        study, optuna_private.trial_id(trial), max_retry, interrupted=interrupted, spec=spec, storage=storage):
                    self.say(f"trial {trial.number} enqueued again with the same parameters")
                if not interrupted and ours:
                    failures_in_a_row += 1
                    if failures_in_a_row >= MAX_CONSECUTIVE_FAILURES:
                        report.reason = f"{failures_in_a_row} trials failed in a row; last: {outcome.reason}"
                        report.exit_code = 1
                        break
            else:
                failures_in_a_row = 0
                if outcome.state == TrialState.COMPLETE and ours and not spec.is_grid and spec.race:
                    # what this worker, and whoever runs it, runs yet
                    room = (None if opts.n_trials is None or opts.trials_after is None
                            else opts.n_trials - done + opts.trials_after)
                    raced = enqueue_races(storage, study, spec, room)  # the leaders' next folds (lpstudy.study.races)
                    if raced:
                        self.say(f"{raced} leading configuration(s) enqueued on another fold")
        if opts.announce:
            self.say(stop_line(report))
        return report

    def _past_race_reserve(self, study: optuna.Study, spec: StudySpec, storage: StudyStorage, done: int) -> bool:
        """Whether this worker, free now, takes only races (lpstudy.design.intensify.RaceReserve, the
        rule the replay benchmark keeps): past (1 − race_reserve) of the run its command started
        it for (WorkerOptions.run_budget: every worker's trials since, the running ones too), else of
        its own --n-trials (the trials it ran), or of the study's n_trials target counting the
        running trials as taken. Only a
        budget larger than the spread phase keeps one: a run that is all spread phase (search's
        first `--n-trials 8`) has no room for a race (lpstudy.study.races.enqueue_races keeps the
        waiting trials within the run) and runs its spread points. Never for a comparison's worker
        (WorkerOptions.race_reserve)."""
        opts = self.options
        rule = spec.race_reserve_rule()
        if not opts.race_reserve or rule.share <= 0 or not spec.space.searched:
            return False
        taken = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
        if opts.run_budget is not None:
            start, total = opts.run_budget
            if total > spec.spread_trials and rule.only_races(storage.count_trials(study, taken) - start, total):
                return True
        elif opts.n_trials is not None and opts.n_trials > spec.spread_trials and rule.only_races(done, opts.n_trials):
            return True
        if spec.n_trials is None or spec.n_trials <= spec.spread_trials:
            return False
        return rule.only_races(storage.count_trials(study, taken), spec.n_trials)

    def _idle(self) -> None:
        """Wait before looking again, longer each time nothing was there (see IDLE_POLL_MAX_S)."""
        self.stop.wait(random.uniform(0.5, 1.0) * self._idle_s)
        self._idle_s = min(IDLE_POLL_MAX_S, 2 * self._idle_s)

    def _cells_not_enqueued(self, storage: StudyStorage, study: optuna.Study, spec: StudySpec) -> str | None:
        """Whether a grid with nothing waiting or running is done: '' when every cell has had a
        trial; None while its creator is still enqueuing cells (a grid study's trials are its cells
        and their retries, so fewer trials than cells means cells still to come: a worker started
        beside `replicate` must not stop at the first empty look); the reason to stop when none came
        for ENQUEUE_WAIT_S. One count, not a read of the trials."""
        cells = len(spec.space.grid_cells())
        n = storage.count_trials(study, tuple(TrialState))
        if n >= cells:
            return ""
        now = time.monotonic()
        if self._enqueue_seen is None or self._enqueue_seen[0] != n:
            self._enqueue_seen = (n, now)
        if now - self._enqueue_seen[1] < ENQUEUE_WAIT_S:
            return None
        return (f"{n} of the grid's {cells} cells are enqueued and none came for {ENQUEUE_WAIT_S:.0f} s "
                "(its creator stopped?); run `lpstudy replicate` again to enqueue the rest")

    def _run_one(self, ctx: TrialContext, study: optuna.Study, trial: optuna.Trial,
                 max_retry: int, liveness: Liveness, objective: Objective) -> tuple[TrialOutcome, bool]:
        """Run the trial and tell Optuna; (the outcome, whether the trial ended in that state by this
        worker's tell rather than already failed by another worker)."""
        telemetry.trial_started()
        with Heartbeat(liveness, optuna_private.trial_id(trial)):
            try:
                outcome = objective(ctx, trial)
            except StorageUnavailable:
                raise  # nothing can be told; the trial's heartbeat stops and another worker retries it
            except optuna.exceptions.UpdateFinishedTrialError:
                # Another worker failed the trial as stale (its heartbeat came later than the grace
                # period) and enqueued its retry: this worker's run of it is void, not a failure.
                self.say(f"trial {trial.number} was already FAIL (failed by another worker after a missed "
                         "heartbeat: raise grace_period); its retry counts instead")
                return TrialOutcome(TrialState.FAIL, None, reason="failed by another worker"), False
            except KeyboardInterrupt:  # a second signal: end the trial, enqueue it again, then abort
                self.stop.abort_caught = True
                outcome = TrialOutcome(TrialState.FAIL, None, reason="interrupted")
                _safe(lambda: trial.set_user_attr("interrupted", True))
                _safe(lambda: trial.set_user_attr("stopped", True))  # stopped by a signal: not a failure (results.analysis.interrupted)
                if self._tell(study, trial, outcome):
                    _safe(lambda: requeue(study, optuna_private.trial_id(trial), max_retry, interrupted=True, spec=ctx.spec,
                                          storage=ctx.storage))
                raise
            except TrialLost as exc:  # e.g. its checkpoint cannot be read: fails, and is enqueued again
                outcome = TrialOutcome(TrialState.FAIL, None, reason=str(exc), retry=True)
                self.say(f"[red]trial {trial.number} failed[/]: {outcome.reason}")
                _safe(lambda: trial.set_user_attr("error", outcome.reason[:1000]))
            except Exception as exc:  # a bug, a device error, an invalid run: the trial fails
                outcome = TrialOutcome(TrialState.FAIL, None, reason=f"{type(exc).__name__}: {exc}")
                self.say(f"[red]trial {trial.number} failed[/]: {outcome.reason}")
                _safe(lambda: trial.set_user_attr("error", outcome.reason[:1000]))
            # Told while the heartbeat still beats: a tell that waits (a busy database, a starved
            # process) must not make the trial look dead. With the tell after the heartbeat's end,
            # 200 workers on two cores had one live trial failed as stale between its last write and
            # its tell, with a 60 s grace period (docs/scale-workers.md).
            return outcome, self._tell(study, trial, outcome)

    def _tell(self, study: optuna.Study, trial: optuna.Trial, outcome: TrialOutcome) -> bool:
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
            self.say(f"trial {trial.number} was already {state.name} (failed by another worker "
                     "after a missed heartbeat); its retry counts instead")
            return False
        value = f" {outcome.value:.4f}" if outcome.value is not None else ""
        diverged = " (diverged)" if outcome.summary is not None and outcome.summary.diverged else ""
        why = f" ({outcome.reason})" if outcome.reason else ""
        self.say(f"trial {trial.number} {outcome.state.name}{value}{diverged}{why}")
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


def _safe(fn) -> None:
    try:
        fn()
    except Exception:
        pass


def run_worker(options: WorkerOptions, say=None, objective: Objective | None = None, *,
               storage: StudyStorage) -> WorkerReport:
    """Run one worker in this process (see the module's docstring) on storage, the study's storage
    opened by the caller (open_storage(options.storage, wait=True): started beside hundreds of
    others, opening may time out and is retried), who closes it."""
    return Worker(options, say=say, objective=objective, storage=storage).run()
