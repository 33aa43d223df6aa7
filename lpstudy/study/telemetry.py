"""A worker's Prometheus metrics: what an operator of hundreds of workers watches in Prometheus and
Grafana rather than in a study's dashboard.

`lpstudy worker --metrics-port PORT` (or LPSTUDY_METRICS_PORT; 0 or unset: none) serves them on
http://0.0.0.0:PORT/metrics (prometheus_client's own server, a thread of the worker process); 9108
is the conventional port. `--devices cpu,cpu` runs one worker process per device: process i serves on
PORT + i (each process its own registry and port: no shared folder, nothing to clean up, and a
worker that dies takes only its own series with it; prometheus_client's multiprocess mode would
merge them behind one port at the cost of a folder of files every process writes).

Every series carries the label worker="HOST/PID/DEVICE", as the trials' user attribute `worker` names
the worker that ran them (lpstudy.study.objective.worker_identity):

    lpstudy_trials_started_total                    trials this worker took and started
    lpstudy_trials_finished_total{state}            ... and ended: COMPLETE, PRUNED or FAIL
    lpstudy_claim_seconds                           histogram: how long taking a trial took (the
                                                    claim of a waiting cell, or Optuna's ask)
    lpstudy_storage_retries_total                   storage calls retried while the database was
                                                    unreachable (lpstudy.db.outages)
    lpstudy_storage_outage_seconds_total            seconds the database was unreachable, added when
                                                    each outage ends (answered again, or given up)
    lpstudy_running_trial_heartbeat_age_seconds     seconds since the running trial's last recorded
                                                    heartbeat; NaN while no trial runs
    lpstudy_steps_per_second                        training steps per second of the running trial,
                                                    over its last evaluation interval; 0 while none runs

The hooks below (trial_started, ...) do nothing unless `serve` was called in this process.

The last scrape: a worker that exits when its study is done would take its last counter increments
with it (Prometheus scrapes every 30 s or so; the trial that ended just before the exit would never
be counted). So a serving worker lingers at exit until a scrape has read every change, for at most
LPSTUDY_METRICS_LINGER_S seconds (LINGER_S by default: above a 30 s or 60 s scrape interval), and
only where something has scraped it before: a worker nobody scrapes exits at once. The scrape is
known by a collector registered before every metric (ScrapeWatch), so a scrape it sees began
reading the metrics after the change. prometheus_client's `_created` series (one per counter and
histogram: the time each was created) are turned off: Prometheus needs none of them, and they
doubled the series count.
"""

from __future__ import annotations

import math
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from lpstudy.errors import UserError

if TYPE_CHECKING:  # prometheus_client loads only where metrics are served
    from prometheus_client import Counter
    from prometheus_client.metrics_core import Metric

METRICS_PORT_ENV = "LPSTUDY_METRICS_PORT"
CONVENTIONAL_PORT = 9108
LINGER_ENV = "LPSTUDY_METRICS_LINGER_S"
# At most this long (s) a worker waits at exit for a scrape of its last counters: above the 30 s of
# components/monitoring's PodMonitor and docker compose's Prometheus, and a 60 s interval.
LINGER_S = 65.0
# After the scrape that read the last change: time for its answer to leave the process.
ANSWER_S = 1.0
# Claims take milliseconds on an idle database and seconds behind 200 workers (docs/scale-workers.md).
CLAIM_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
TRIAL_END_STATES = ("COMPLETE", "PRUNED", "FAIL")


def worker_label(device: str) -> str:
    return f"{socket.gethostname()}/{os.getpid()}/{device}"


class ScrapeWatch:
    """A collector with no metrics of its own, registered first: each scrape calls it before it reads
    any metric, so it knows when scrapes happen (see the module, "The last scrape")."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self.last_scrape: float | None = None  # time.monotonic() of the latest scrape's start
        self.changed = time.monotonic()  # of the latest change of a metric

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> list[Metric]:
        with self._cond:
            self.last_scrape = time.monotonic()
            self._cond.notify_all()
        return []

    def note_change(self) -> None:
        with self._cond:
            self.changed = time.monotonic()

    def wait_for_scrape(self, timeout: float) -> bool | None:
        """Wait until a scrape began after the latest change, for at most timeout seconds: True when
        one did, False when none came in time, None when nothing ever scraped (no one will)."""
        with self._cond:
            if self.last_scrape is None:
                return None
            deadline = time.monotonic() + timeout
            while self.last_scrape <= self.changed:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        time.sleep(ANSWER_S)
        return True


class WorkerMetrics:
    """The metrics of one worker process, in a registry of their own."""

    def __init__(self, worker: str) -> None:
        from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

        self.worker = worker
        self.registry = registry = CollectorRegistry()
        self.scrapes = ScrapeWatch()
        registry.register(self.scrapes)  # first: a scrape calls it before it reads any metric
        self._lock = threading.Lock()
        self._running = False
        self._last_beat: float | None = None
        by_worker = ["worker"]
        self.started = Counter("lpstudy_trials_started", "Trials this worker took and started.",
                               by_worker, registry=registry).labels(worker)
        self._finished = Counter("lpstudy_trials_finished", "Trials this worker ended, by their state.",
                                 ["worker", "state"], registry=registry)
        for state in TRIAL_END_STATES:  # each state a series from the start: rate() sees the first one
            self._finished.labels(worker, state)
        self.claim_seconds = Histogram("lpstudy_claim_seconds", "Seconds taking a trial took (claim or ask).",
                                       by_worker, buckets=CLAIM_BUCKETS, registry=registry).labels(worker)
        self.storage_retries = Counter("lpstudy_storage_retries", "Storage calls retried while the database "
                                       "was unreachable.", by_worker, registry=registry).labels(worker)
        self.outage_seconds = Counter("lpstudy_storage_outage_seconds", "Seconds the study database was "
                                      "unreachable, added as each outage ends.", by_worker,
                                      registry=registry).labels(worker)
        Gauge("lpstudy_running_trial_heartbeat_age_seconds", "Seconds since the running trial's last "
              "recorded heartbeat (NaN: no trial runs).", by_worker,
              registry=registry).labels(worker).set_function(self._heartbeat_age)
        self.steps_per_second = Gauge("lpstudy_steps_per_second", "Training steps per second of the running "
                                      "trial (0: none runs).", by_worker, registry=registry).labels(worker)

    def finished(self, state: str) -> Counter:
        self.scrapes.note_change()
        return self._finished.labels(self.worker, state)

    def set_running(self, running: bool) -> None:
        """A trial starts (its heartbeat not yet recorded) or ends."""
        with self._lock:
            self._running, self._last_beat = running, None
        self.steps_per_second.set(0)
        self.scrapes.note_change()

    def note_heartbeat(self) -> None:
        with self._lock:
            self._last_beat = time.monotonic()

    def _heartbeat_age(self) -> float:
        with self._lock:
            if not self._running or self._last_beat is None:
                return math.nan
            return time.monotonic() - self._last_beat

    def on_storage_event(self, event: str, seconds: float | None) -> None:
        """lpstudy.db.outages' listener: a retry, or an outage's length once it ended."""
        if event == "retry":
            self.storage_retries.inc()
        elif event == "outage" and seconds is not None and seconds > 0:
            self.outage_seconds.inc(seconds)
        self.scrapes.note_change()


_metrics: WorkerMetrics | None = None


def metrics_port(port: int | None) -> int:
    """--metrics-port, else LPSTUDY_METRICS_PORT, else 0 (none); UserError for a value that is no port."""
    if port is None:
        text = os.environ.get(METRICS_PORT_ENV, "").strip() or "0"
        try:
            port = int(text)
        except ValueError:
            raise UserError(f"{METRICS_PORT_ENV} must be a port number (0: no metrics; {CONVENTIONAL_PORT} is "
                            f"the conventional one), got {text!r}") from None
    if not 0 <= port <= 65535:
        raise UserError(f"--metrics-port {port} is not in 0..65535 (0: no metrics)")
    return port


def linger_s() -> float:
    """LPSTUDY_METRICS_LINGER_S, else LINGER_S; UserError for a value that is no number of seconds >= 0."""
    from lpstudy.values import seconds_from_environment

    return seconds_from_environment(LINGER_ENV, LINGER_S, "how long a worker waits at exit for Prometheus to "
                                    "read its last counters; 0: not at all")


def linger(metrics: WorkerMetrics, seconds: float, say: Callable[[str], None] | None = None) -> bool | None:
    """At exit: wait for a scrape of the last counters (see the module), at most `seconds`."""
    scrapes = metrics.scrapes
    if seconds <= 0 or scrapes.last_scrape is None:
        return None  # not asked to, or nothing scrapes this worker
    if scrapes.last_scrape > scrapes.changed:
        return True  # read already
    (say or (lambda m: print(m, file=sys.stderr, flush=True)))(
        f"lpstudy: waiting up to {seconds:g} s for Prometheus to read the last counters ({LINGER_ENV})")
    return scrapes.wait_for_scrape(seconds)


def serve(port: int, device: str) -> WorkerMetrics:
    """Serve this process's metrics on 0.0.0.0:port (see the module), turn the hooks on, and linger at
    exit until the last counters are scraped."""
    global _metrics
    import atexit

    from prometheus_client import disable_created_metrics, start_http_server

    from lpstudy.db import outages

    seconds = linger_s()
    disable_created_metrics()  # type: ignore[no-untyped-call]  # prometheus_client leaves it unannotated
    metrics = WorkerMetrics(worker_label(device))
    try:
        start_http_server(port, addr="0.0.0.0", registry=metrics.registry)
    except OSError as exc:
        raise UserError(f"cannot serve metrics on 0.0.0.0:{port} ({exc.strerror or exc}); pick another "
                        "--metrics-port (0: none)") from None
    outages.listeners.append(metrics.on_storage_event)
    atexit.register(linger, metrics, seconds)
    _metrics = metrics
    return metrics


# -- hooks: the worker loop, its heartbeat, the trainer's evaluations -----------------------------

def trial_claimed(seconds: float) -> None:
    if _metrics is not None:
        _metrics.claim_seconds.observe(seconds)
        _metrics.scrapes.note_change()


def trial_started() -> None:
    if _metrics is not None:
        _metrics.started.inc()
        _metrics.set_running(True)


def heartbeat_recorded() -> None:
    if _metrics is not None:
        _metrics.note_heartbeat()


def steps_measured(steps_per_second: float) -> None:
    if _metrics is not None and math.isfinite(steps_per_second):
        _metrics.steps_per_second.set(steps_per_second)


def trial_ended() -> None:
    """The running trial's heartbeat stopped (it ended, however)."""
    if _metrics is not None:
        _metrics.set_running(False)


def trial_finished(state: str) -> None:
    if _metrics is not None:
        _metrics.finished(state).inc()
