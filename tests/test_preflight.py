"""Offline without a corpus, the commands that train (search, replicate and compare with --workers,
worker) fail in one line before they write anything: no study database, no worker process, the
error said once, and no progress bar, hints or status block after it."""

from __future__ import annotations

import hashlib

import pytest

from tests.study_helpers import TINY, cli, lp_env, lpstudy

NO_DOWNLOAD = "http://127.0.0.1:9/input.txt"  # nothing listens on port 9: a download cannot happen


def _offline_env(tmp_path, **extra):
    env = {k: v for k, v in lp_env().items() if k not in ("LPSTUDY_STORAGE", "LPSTUDY_STORAGE_FILE")}
    env.update({"LPSTUDY_CACHE": str(tmp_path / "cache"), "LPSTUDY_DATA_URL": NO_DOWNLOAD, **extra})
    return env


def _missing_file_line(path) -> str:
    return (f"lpstudy: error: data file {path} (from LPSTUDY_DATA) does not exist; "
            "give the path of a UTF-8 text file\n")


TRAINING_COMMANDS = {
    "search": ["search", "--study", "s", "--preset", "smoke", "--workers", "2", "--devices", "cpu", *TINY],
    "replicate": ["replicate", "--study", "s", "--preset", "smoke", "--p", "1,2", "--folds", "2", "--workers", "2",
                  "--devices", "cpu", *TINY],
    "compare": ["compare", "--study", "s", "--preset", "smoke", "--p", "1,2", "--budget", "2", "--folds", "2",
                "--workers", "2", "--devices", "cpu", *TINY],
}


@pytest.mark.parametrize("name", list(TRAINING_COMMANDS))
def test_a_missing_corpus_is_one_line_before_any_study_or_worker(name, tmp_path, monkeypatch, capfd):
    """In this process (capfd: a worker process it started would write to the same descriptors)."""
    missing = tmp_path / "missing.txt"
    for variable, value in _offline_env(tmp_path, LPSTUDY_DATA=str(missing)).items():
        monkeypatch.setenv(variable, value)
    for variable in ("LPSTUDY_STORAGE", "LPSTUDY_STORAGE_FILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capfd, *TRAINING_COMMANDS[name], "--storage", f"sqlite:///{tmp_path / 'store' / 's.db'}")
    assert code == 2
    assert err == _missing_file_line(missing)  # once: not once per worker, no bar, no hints
    assert out == ""  # no status block
    assert not (tmp_path / "store").exists()  # no study database, not even its folder
    assert not (tmp_path / "cache").exists()


@pytest.mark.slow
def test_a_missing_corpus_is_one_line_before_any_study_or_worker_in_a_fresh_process(tmp_path):
    """The same as a user runs it, once (search; replicate and compare above, in this process)."""
    missing = tmp_path / "missing.txt"
    db = tmp_path / "store" / "s.db"
    done = lpstudy(*TRAINING_COMMANDS["search"], "--storage", f"sqlite:///{db}", cwd=tmp_path,
                   env=_offline_env(tmp_path, LPSTUDY_DATA=str(missing)))
    assert done.returncode == 2
    assert done.stderr == _missing_file_line(missing)  # once: not once per worker, no bar, no hints
    assert done.stdout == ""  # no status block
    assert not (tmp_path / "store").exists()  # no study database, not even its folder
    assert not (tmp_path / "cache").exists()


def test_search_without_a_corpus_and_no_download_says_how_to_provide_one(tmp_path, monkeypatch, capsys):
    for name in ("LPSTUDY_DATA", "LPSTUDY_STORAGE", "LPSTUDY_STORAGE_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LPSTUDY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LPSTUDY_DATA_URL", NO_DOWNLOAD)
    monkeypatch.chdir(tmp_path)
    code, out, err = cli(capsys, "search", "--study", "s", "--preset", "smoke", "--workers", "2", "--devices", "cpu",
                         *TINY)
    assert code == 2
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"lpstudy: error: no corpus found and the download from {NO_DOWNLOAD} failed")
    assert "pass --data PATH or set LPSTUDY_DATA=PATH" in lines[0]
    assert out == ""
    assert not (tmp_path / "storage").exists()  # the default storage/lpstudy.db was not made
    assert not (tmp_path / "cache").exists()  # nor a half-downloaded corpus


@pytest.mark.slow
def test_a_worker_without_a_corpus_starts_no_process_and_leaves_the_study_as_it_was(tmp_path):
    db = tmp_path / "s.db"
    url = f"sqlite:///{db}"
    made = lpstudy("create", "--study", "s", "--storage", url, "--preset", "smoke", *TINY, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    missing = tmp_path / "missing.txt"
    done = lpstudy("worker", "--study", "s", "--storage", url, "--devices", "cpu,cpu", "--no-progress",
                   cwd=tmp_path, env=_offline_env(tmp_path, LPSTUDY_DATA=str(missing)))
    assert done.returncode == 2
    assert done.stderr == _missing_file_line(missing)  # not "started 2 worker process(es)", not twice
    assert done.stdout == ""
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
