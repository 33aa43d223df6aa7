"""`lpstudy report`, `lpstudy dashboard` and `lpstudy optuna-dashboard` as a user runs them: the
report is one offline HTML file with every chart, the servers never show a password, refuse bad
input in one line, and Optuna's dashboard cannot change the study."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest

from lpstudy.study.synthetic import write_synthetic_study
from tests.pgserver import free_port
from tests.study_helpers import cli, wait_until_answers

ROOT = Path(__file__).resolve().parents[1]


def lpstudy(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lpstudy", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)




def test_report_is_one_html_file_with_every_chart_that_needs_no_network(seeded, tmp_path, capsys):
    url, path = seeded
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    out = tmp_path / "out" / "report.html"
    code, stdout, err = cli(capsys, "report", "--study", "search", "--storage", url, "-o", str(out))
    assert code == 0, err
    assert str(out) in stdout
    html = out.read_text()
    for title in ("Final validation loss against p", "Mean final validation loss per p (95 % interval)",
                  "Validation loss curves, coloured by p", "Divergence rate per p (95 % Wilson interval)",
                  "Parameter importance (type II sums of squares)", "Steps to reach validation loss 2"):
        assert json.dumps(title)[1:-1] in html, title
    assert "<script src" not in html and "cdn.plot.ly" not in html.split("</script>", 1)[1]
    assert html.count("Plotly.newPlot") >= 14
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def test_report_of_a_missing_study_is_one_line(seeded, tmp_path, capsys):
    url, _ = seeded
    code, _, err = cli(capsys, "report", "--study", "nope", "--storage", url, "-o", str(tmp_path / "r.html"))
    assert code == 2
    assert err.strip().startswith("lpstudy: error: no study named 'nope'")
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()


@pytest.mark.slow
def test_dashboard_refuses_a_bad_url_and_a_busy_port_in_one_line():
    done = lpstudy("dashboard", "--storage", "ftp://example/db", "--headless")
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "is not one of sqlite" in done.stderr
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = lpstudy("dashboard", "--storage", "sqlite:///x.db", "--port", str(port), "--headless")
    assert done.returncode == 2 and "pick another --port" in done.stderr
    done = lpstudy("dashboard", "--storage", "sqlite:///no/such/study.db", "--port", str(free_port()))
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
    assert "no study database at no/such/study.db" in done.stderr


@pytest.mark.slow
def test_dashboard_keeps_the_password_out_of_its_command_line_and_output(tmp_path, postgres):
    port = free_port()
    url = postgres.url("postgres", "postgres", "pa55word")  # reachable: the dashboard checks before it starts
    proc = subprocess.Popen([sys.executable, "-m", "lpstudy", "dashboard", "--storage", url, "--port", str(port),
                             "--headless"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        wait_until_answers(f"http://127.0.0.1:{port}/_stcore/health", proc)
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().decode()
        assert "streamlit" in cmdline and "pa55word" not in cmdline  # the server got it through the environment
    finally:
        proc.terminate()
        output = proc.communicate(timeout=20)[0]
    assert f"postgres:***@127.0.0.1:{postgres.port}/postgres" in output and "pa55word" not in output


@pytest.mark.slow
def test_dashboard_reads_the_study_it_opens_before_the_first_visitor(tmp_path):
    """The server starts reading the study it opens first as it starts (app/read_ahead.py), before any
    browser asks, and says what it read: the first page then waits for no whole read."""
    url = f"sqlite:///{tmp_path / 'two.db'}"
    write_synthetic_study(url, "a-first", n_trials=12, n_evals=3, seed=4, now=datetime(2026, 1, 1))
    write_synthetic_study(url, "b-second", n_trials=20, n_evals=3, seed=5, now=datetime(2026, 1, 1))
    for study, name, trials in ((None, "a-first", 12), ("b-second", "b-second", 20)):
        args = ["--study", study] if study else []
        log = tmp_path / f"{name}.log"
        with log.open("w") as out:
            proc = subprocess.Popen([sys.executable, "-m", "lpstudy", "dashboard", "--storage", url, "--port",
                                     str(free_port()), "--headless", *args], stdout=out, stderr=subprocess.STDOUT,
                                    text=True, cwd=ROOT)
        try:  # no browser asks for a page
            deadline = time.monotonic() + 60
            while "ahead of the first visitor" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        lines = [line for line in log.read_text().splitlines() if "ahead of the first visitor" in line]
        assert lines, log.read_text()
        assert lines[0].startswith(f"lpstudy dashboard: read study {name!r} ahead of the first visitor: {trials} trials in")
        # the read-ahead fills Streamlit's caches from a thread with no page: no warning of it at start
        assert "ScriptRunContext" not in log.read_text(), log.read_text()


def test_dashboard_with_a_mistyped_study_says_the_closest_names_in_one_line(seeded, capsys, monkeypatch):
    url, _ = seeded

    def never(*args, **kwargs):
        raise AssertionError("a mistyped study reached the point of starting the server")

    monkeypatch.setattr(os, "execvpe", never)
    code, out, err = cli(capsys, "dashboard", "--storage", url, "--study", "serach", "--headless",
                         "--port", str(free_port()))
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("lpstudy: error: no study named 'serach'") and "did you mean 'search'?" in err


@pytest.mark.slow
def test_optuna_dashboard_serves_the_study_and_cannot_change_it(seeded):
    url, path = seeded
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "lpstudy", "optuna-dashboard", "--storage", url, "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        wait_until_answers(f"http://127.0.0.1:{port}/api/meta", proc)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies", timeout=30) as response:
            studies = json.load(response)["study_summaries"]
        assert sorted(s["study_name"] for s in studies) == ["grid", "search"]
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/studies", method="POST",
                                         data=json.dumps({"study_name": "new", "directions": ["minimize"]}).encode(),
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError):
            urllib.request.urlopen(request, timeout=30)
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


@pytest.mark.slow
def test_optuna_dashboard_serves_a_trials_checkpoint_from_the_workers_artifact_store(tmp_path):
    """A running trial's checkpoint, uploaded as a worker does (beside the SQLite file by default),
    is listed with its trial and downloads byte for byte from `lpstudy optuna-dashboard`."""
    import optuna

    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.study.checkpoints import TrialCheckpoints, artifact_location, artifact_store
    from lpstudy.training.checkpoint import Checkpoint

    url = f"sqlite:///{tmp_path / 'ckpt.db'}"
    write_synthetic_study(url, "search", n_trials=4, n_evals=4, seed=2)
    storage = open_storage(url)
    study = optuna.load_study(study_name="search", storage=storage.optuna)
    trial = study.ask()
    store = artifact_store(artifact_location(storage))
    checkpoint = Checkpoint.__new__(Checkpoint)  # the bytes matter here, not a real run's state
    payload = b"lpstudy checkpoint bytes \x00\x01"
    checkpoint.step, checkpoint.to_bytes = 40, lambda: payload
    TrialCheckpoints(store, study, trial).save(checkpoint)
    artifact_id = storage.optuna.get_trial(trial._trial_id).system_attrs["lpstudy_checkpoint"]["artifact_id"]

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "lpstudy", "optuna-dashboard", "--storage", url, "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    try:
        wait_until_answers(f"http://127.0.0.1:{port}/api/meta", proc)
        study_id = storage.optuna.get_study_id_from_name("search")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies/{study_id}?after=0", timeout=30) as response:
            trials = json.load(response)["trials"]
        listed = next(t for t in trials if t["trial_id"] == trial._trial_id)["artifacts"]
        assert [a["artifact_id"] for a in listed] == [artifact_id]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/artifacts/{study_id}/{trial._trial_id}/{artifact_id}",
                                    timeout=30) as response:
            assert response.read() == payload
    finally:
        proc.terminate()
        output = proc.communicate(timeout=20)[0]
    assert "checkpoints from" in output
