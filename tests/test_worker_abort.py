"""A second Ctrl-C ends a worker at once, with its final lines (what it did with the trial, and
`lpstudy: interrupted`), exit status 130, and the trial failed and enqueued again: never RUNNING."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from optuna.trial import TrialState

from tests.study_helpers import cli, lp_env, trials_of, wait_for


def test_a_second_ctrl_c_ends_the_worker_with_its_final_line(sqlite_url, tmp_path, capsys):
    # A first evaluation that never ends within the test (10⁶ batches, the bound's largest): the first
    # signal waits for it, the second cuts it short. With a shorter one (3000 batches), a loaded machine
    # could finish it between the two signals: the trial then stopped gracefully, the worker gave SIGINT
    # back to Python's default handler on its way out, and the second signal, landing during the exit,
    # ended the process as killed by SIGINT (exit -2, as a shell's 130) without lpstudy's last line.
    code, _, err = cli(capsys, "create", "--study", "abort", "--storage", sqlite_url, "--preset", "smoke",
                       "--sampler", "random", "--set", "eval_iters=1000000", "--set", "max_steps=30")
    assert code == 0, err
    log = tmp_path / "worker.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "lpstudy", "worker", "--study", "abort", "--storage",
                                 sqlite_url, "--devices", "cpu", "--no-progress"],
                                stdout=out, stderr=subprocess.STDOUT, env=lp_env())
        try:
            wait_for(lambda: any(t.state == TrialState.RUNNING for t in trials_of(sqlite_url, "abort")),
                     timeout=60, what="a running trial")
            time.sleep(1.0)
            proc.send_signal(signal.SIGINT)
            wait_for(lambda: "again to abort" in log.read_text(), timeout=30, what="the first signal's line")
            proc.send_signal(signal.SIGINT)
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    assert code == 130, lines
    assert "Traceback" not in log.read_text()
    assert "stopped: aborted by a second signal" in lines[-2]
    assert lines[-1] == "lpstudy: interrupted"
    states = sorted(t.state.name for t in trials_of(sqlite_url, "abort"))
    assert states == ["FAIL", "WAITING"]  # failed, and enqueued again with the same parameters
