"""Helpers for the study tests: run `python -m lpstudy ...` as a user would, start worker processes,
and read a study's trials and metrics back."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# A run that takes about a second on one core: the smoke model, 30 steps, 3 evaluations after step 0.
TINY = ["--set", "max_steps=30", "--set", "eval_interval=10", "--set", "eval_iters=2"]
TINY_EVALS = 4  # steps 0, 10, 20, 30
SEEDED_AT = datetime(2026, 1, 1, 12, 0, 0)  # when the dashboard tests' seeded study ran (conftest.seeded)


def lp_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = "1"  # two cores, several workers; also keeps runs bit-for-bit repeatable
    env.setdefault("PYTHONPATH", str(ROOT))
    env.update(extra)
    return env


def lpstudy(*args: str, env: dict | None = None, timeout: float = 180, cwd: str | Path | None = None
            ) -> subprocess.CompletedProcess:
    """Run the command line in a fresh process and wait for it."""
    return subprocess.run([sys.executable, "-m", "lpstudy", *args], capture_output=True, text=True,
                          env=env or lp_env(), timeout=timeout, cwd=cwd)


def cli(capsys, *args: str) -> tuple[int, str, str]:
    """Run the command line in this process (quicker: no new interpreter); (exit status, stdout, stderr)."""
    from lpstudy.cli import main

    capsys.readouterr()
    try:
        main(list(args))
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    out, err = capsys.readouterr()
    return code, out, err


def start_worker(study: str, storage: str, *extra: str, env: dict | None = None, log: Path | None = None,
                 devices: str = "cpu") -> subprocess.Popen:
    """A worker process (one per device in `devices`); its output goes to `log` (or is dropped)."""
    out = open(log, "w") if log else subprocess.DEVNULL
    return subprocess.Popen([sys.executable, "-m", "lpstudy", "worker", "--study", study, "--storage", storage,
                             "--devices", devices, "--no-progress", *extra],
                            stdout=out, stderr=subprocess.STDOUT, env=env or lp_env())


def wait_all(procs: list[subprocess.Popen], timeout: float = 240) -> list[int]:
    deadline = time.monotonic() + timeout
    codes = []
    for proc in procs:
        try:
            codes.append(proc.wait(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            for p in procs:
                p.kill()
            raise
    return codes


def open_study(storage: str, name: str):
    """(optuna.Study, StudySpec) of a study."""
    import warnings

    import optuna

    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.study.studies import load_study

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    return load_study(open_storage(storage), name)


def trials_of(storage: str, name: str):
    study, _ = open_study(storage, name)
    return study.get_trials(deepcopy=False)


def metrics_steps(storage: str, name: str) -> dict[int, list[int]]:
    """trial_id -> the steps stored in the metrics table."""
    from lpstudy.db.kinds import storage_at
    from lpstudy.db.metrics_table import read_metrics

    frame = read_metrics(storage_at(storage).make_engine(), name)
    return {int(tid): sorted(int(s) for s in group["step"]) for tid, group in frame.groupby("trial_id")}


def wait_for(predicate, timeout: float = 60, every: float = 0.2, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}")


def wait_until_answers(url: str, proc, timeout: float = 90) -> None:
    """Wait until an HTTP server started as proc answers at url; fail if it ends or never answers."""
    import urllib.request

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"the server ended early: {proc.stdout.read() if proc.stdout else ''}"
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise AssertionError(f"nothing answers at {url}")


def best_by_hand(trials):
    """The best trial as a user means it, written out here rather than taken from lpstudy: among the
    configurations (same parameters) that never diverged, those measured on the most folds, the one
    with the lowest mean over its folds (the earlier on a tie); its first trial (FrozenTrials). Where
    no configuration was raced on a second fold: the COMPLETE trial with the lowest value."""
    done = sorted((t for t in trials if t.state.name == "COMPLETE"), key=lambda t: t.number)
    groups: dict = {}
    for t in done:
        groups.setdefault(tuple(sorted(t.params.items())), []).append(t)
    alive = [g for g in groups.values() if not any(t.user_attrs.get("diverged") for t in g)]
    most = max(len({t.user_attrs.get("fold") for t in g}) for g in alive)
    deepest = [g for g in alive if len({t.user_attrs.get("fold") for t in g}) == most]
    best = min(deepest, key=lambda g: (sum(t.value for t in g) / len(g), g[0].number))
    return best[0]
