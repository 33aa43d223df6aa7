"""A worker's Prometheus metrics (`lpstudy worker --metrics-port`, lpstudy.study.telemetry), read over
HTTP as Prometheus scrapes them: a real worker training a real smoke trial, and the storage retries
of a real retry policy."""

from __future__ import annotations

import math
import signal
import socket
import time
import urllib.request

import pytest
import sqlalchemy as sa

from tests.pgserver import free_port
from tests.study_helpers import cli, open_study, start_worker, wait_for

# Long enough to be scraped while it trains (about 300 smoke steps: a few seconds on one thread).
RUN = ["--set", "max_steps=300", "--set", "eval_interval=20", "--set", "eval_iters=2"]


def scrape(port: int) -> dict[tuple[str, tuple], float] | None:
    """{(sample name, sorted labels): value} of http://127.0.0.1:port/metrics; None while nothing answers."""
    from prometheus_client.parser import text_string_to_metric_families

    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as response:
            text = response.read().decode()
    except OSError:
        return None
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(samples: dict, name: str, **labels: str) -> float:
    matching = [v for (n, ls), v in samples.items() if n == name and set(labels.items()) <= set(ls)]
    assert len(matching) == 1, (name, labels, sorted(k for k in samples if k[0] == name))
    return matching[0]


@pytest.mark.slow
def test_a_worker_serves_its_trials_claims_heartbeat_and_speed_while_it_trains(sqlite_url, tmp_path, capsys):
    code, _, err = cli(capsys, "create", "--study", "m", "--storage", sqlite_url, "--preset", "smoke", *RUN,
                       "--n-trials", "2", "--pruner", "none", "--heartbeat-interval", "1", "--grace-period", "600")
    assert code == 0, err
    # One trial of the two held RUNNING here: after its own trial the worker waits (finished and running
    # trials make up the target) and still answers, so the counters are read after the trial too.
    study, _ = open_study(sqlite_url, "m")
    held = study.ask()
    port = free_port()
    log = tmp_path / "worker.log"
    worker = start_worker("m", sqlite_url, "--metrics-port", str(port), log=log)
    try:
        label = f"{socket.gethostname()}/{worker.pid}/cpu"

        def training():
            assert worker.poll() is None, log.read_text()
            samples = scrape(port)
            if samples and value(samples, "lpstudy_trials_started_total") == 1 and \
                    value(samples, "lpstudy_steps_per_second") > 0:
                return samples
            return None

        during = wait_for(training, timeout=180, every=0.1, what="a scrape while the trial trains")
        assert value(during, "lpstudy_trials_started_total", worker=label) == 1  # the label names this process
        assert value(during, "lpstudy_trials_finished_total", state="COMPLETE") == 0
        assert value(during, "lpstudy_claim_seconds_count") == 1  # the claim of the trial it runs
        age = value(during, "lpstudy_running_trial_heartbeat_age_seconds")
        assert math.isfinite(age) and age >= 0  # a trial runs and has a recorded heartbeat
        assert value(during, "lpstudy_storage_retries_total") == 0
        assert value(during, "lpstudy_storage_outage_seconds_total") == 0

        def finished():
            assert worker.poll() is None, log.read_text()
            samples = scrape(port)
            return samples if samples and value(samples, "lpstudy_trials_finished_total", state="COMPLETE") == 1 else None

        after = wait_for(finished, timeout=180, every=0.2, what="the trial's end on /metrics")
        assert value(after, "lpstudy_trials_started_total") == 1
        assert {state: value(after, "lpstudy_trials_finished_total", state=state)
                for state in ("COMPLETE", "PRUNED", "FAIL")} == {"COMPLETE": 1, "PRUNED": 0, "FAIL": 0}
        assert value(after, "lpstudy_claim_seconds_count") == 1
        assert value(after, "lpstudy_claim_seconds_sum") > 0
        assert value(after, "lpstudy_steps_per_second") == 0  # no trial runs now
        assert math.isnan(value(after, "lpstudy_running_trial_heartbeat_age_seconds"))
        # what the study holds agrees: one COMPLETE trial, by this worker
        done = [t for t in open_study(sqlite_url, "m")[0].get_trials() if t.state.name == "COMPLETE"]
        assert len(done) == 1 and done[0].user_attrs["worker"] == label and done[0].number != held.number
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.wait(timeout=60)


@pytest.mark.slow
def test_the_last_finished_trial_reaches_a_scraper_before_the_worker_exits(sqlite_url, tmp_path, capsys):
    """A worker that exits when its study is done lingers until a scrape has read its last counters:
    a scraper that read /metrics while the trial ran and not again before the worker's end (as a
    Prometheus does that scrapes every 30 s) sees the last trial COMPLETE, though the worker's exit
    came within a fraction of a second of it. No `_created` series: they doubled the series count."""
    import threading

    code, _, err = cli(capsys, "create", "--study", "last", "--storage", sqlite_url, "--preset", "smoke",
                       "--set", "max_steps=40", "--set", "eval_interval=20", "--set", "eval_iters=2",
                       "--n-trials", "1", "--pruner", "none")
    assert code == 0, err
    port = free_port()
    log = tmp_path / "worker.log"
    from tests.study_helpers import lp_env

    worker = start_worker("last", sqlite_url, "--metrics-port", str(port), log=log,
                          env=lp_env(LPSTUDY_METRICS_LINGER_S="60"))
    scrapes: list[tuple[float, dict]] = []

    def scraper() -> None:  # a Prometheus that scrapes once while the trial runs, then after its end
        # often until the server answers, so that the first scrape comes while the trial runs (a worker
        # never scraped exits at once)
        while worker.poll() is None and not scrapes:
            samples = scrape(port)
            if samples:
                scrapes.append((time.monotonic(), samples))
            time.sleep(0.2)
        # then not again until the worker says it waits: a scrape that happened to fall between the
        # trial's end and the exit (a loaded machine) would leave nothing to wait for
        while worker.poll() is None and "waiting up to" not in log.read_text():
            time.sleep(0.2)
        while worker.poll() is None:  # every 5 s, as Prometheus does every 30 s
            samples = scrape(port)
            if samples:
                scrapes.append((time.monotonic(), samples))
            time.sleep(5)

    thread = threading.Thread(target=scraper, daemon=True)
    thread.start()
    assert worker.wait(timeout=300) == 0, log.read_text()
    exited = time.monotonic()
    thread.join(timeout=10)
    assert scrapes, log.read_text()
    last_at, last = scrapes[-1]
    assert value(last, "lpstudy_trials_started_total") == 1
    assert value(last, "lpstudy_trials_finished_total", state="COMPLETE") == 1, log.read_text()
    assert exited - last_at < 60  # it left after that scrape, not at the end of its 60 s wait
    assert "waiting up to 60 s for Prometheus to read the last counters" in log.read_text()
    assert not [name for name, _ in last if name.endswith("_created")]


def test_a_worker_lingers_only_until_a_scrape_reads_its_last_change_and_only_where_it_is_scraped():
    """The linger itself, on a real registry: never scraped, it does not wait; scraped before the
    last change, it waits for the next scrape (here 0.3 s later) and no longer; a scrape that never
    comes ends the wait at the bound."""
    import threading

    from prometheus_client import generate_latest

    from lpstudy.study.telemetry import WorkerMetrics, linger

    metrics = WorkerMetrics("host/1/cpu")
    metrics.finished("COMPLETE").inc()
    started = time.monotonic()
    assert linger(metrics, 30, say=lambda m: None) is None and time.monotonic() - started < 0.5
    generate_latest(metrics.registry)  # a scrape
    assert linger(metrics, 30, say=lambda m: None) is True  # it read every change
    metrics.finished("COMPLETE").inc()  # the last trial, after that scrape
    threading.Timer(0.3, generate_latest, args=(metrics.registry,)).start()
    said: list[str] = []
    started = time.monotonic()
    assert linger(metrics, 30, say=said.append) is True
    assert 0.3 <= time.monotonic() - started < 5 and "waiting up to 30 s" in said[0]
    metrics.started.inc()
    metrics.set_running(True)
    started = time.monotonic()
    assert linger(metrics, 0.5, say=said.append) is False  # no scrape came
    assert 0.5 <= time.monotonic() - started < 3


def test_storage_retries_and_outage_seconds_are_counted(monkeypatch):
    from lpstudy.db import outages
    from lpstudy.study import telemetry

    monkeypatch.setattr(outages, "listeners", [])
    monkeypatch.setattr(telemetry, "_metrics", None)
    port = free_port()
    telemetry.serve(port, "cpu")
    failures = [2]

    def flaky() -> str:
        if failures[0]:
            failures[0] -= 1
            raise sa.exc.OperationalError("SELECT 1", {}, ConnectionRefusedError("connection refused"))
        return "answered"

    started = time.monotonic()
    assert outages.RetryPolicy("sqlite:///x.db", budget_s=30, first_wait_s=0.05).call(flaky) == "answered"
    down_at_most = time.monotonic() - started
    samples = scrape(port)
    assert value(samples, "lpstudy_storage_retries_total") == 2
    outage = value(samples, "lpstudy_storage_outage_seconds_total")
    assert 0.05 + 0.1 <= outage <= down_at_most  # the two waits (0.05 s, then twice that) at least
    assert value(samples, "lpstudy_trials_started_total") == 0


def test_each_worker_process_of_one_command_gets_its_own_port():
    from lpstudy.study.launch import worker_command
    from lpstudy.study.worker import WorkerOptions

    options = WorkerOptions(study="s", metrics_port=9108, config="study.yaml")
    commands = [worker_command(options, "cpu", None, index=i) for i in range(3)]
    assert [c[c.index("--metrics-port") + 1] for c in commands] == ["9108", "9109", "9110"]
    assert all(c[c.index("--config") + 1] == "study.yaml" for c in commands)
    off = worker_command(WorkerOptions(study="s"), "cpu", None, index=1)
    assert off[off.index("--metrics-port") + 1] == "0"  # not LPSTUDY_METRICS_PORT, the same for every process


@pytest.mark.parametrize("env, flag, message", [
    ("abc", None, "LPSTUDY_METRICS_PORT must be a port number (0: no metrics; 9108 is the conventional one), got 'abc'"),
    (None, "70000", "--metrics-port 70000 is not in 0..65535"),
])
def test_a_bad_metrics_port_is_one_line(env, flag, message, sqlite_url, capsys, monkeypatch):
    if env is not None:
        monkeypatch.setenv("LPSTUDY_METRICS_PORT", env)
    code, _, err = cli(capsys, "worker", "--study", "s", "--storage", sqlite_url, "--devices", "cpu",
                       *(["--metrics-port", flag] if flag else []))
    assert code == 2 and err.count("\n") == 1 and message in err, err


def test_a_metrics_port_in_use_is_one_line(sqlite_url, tmp_path, capsys):
    code, _, err = cli(capsys, "create", "--study", "s", "--storage", sqlite_url, "--preset", "smoke")
    assert code == 0, err
    with socket.socket() as held:
        held.bind(("0.0.0.0", 0))
        held.listen()
        port = held.getsockname()[1]
        code, _, err = cli(capsys, "worker", "--study", "s", "--storage", sqlite_url, "--devices", "cpu",
                           "--metrics-port", str(port))
    assert code == 2 and f"cannot serve metrics on 0.0.0.0:{port}" in err and "--metrics-port" in err, err
    assert err.count("\n") == 1
