"""A second Ctrl-C ends a worker at once, with its final lines (what it did with the trial, and
`lpstudy: interrupted`), exit status 130, and the trial failed and enqueued again: never RUNNING;
even when Python drops the KeyboardInterrupt the signal raised."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import pytest
from optuna.trial import TrialState

from tests.study_helpers import cli, lp_env, trials_of, wait_for

pytestmark = pytest.mark.slow  # the slow tier: `pytest -m slow`


def test_a_second_ctrl_c_ends_the_worker_with_its_final_line(sqlite_url, tmp_path, capsys):
    # A first evaluation that never ends within the test (10⁶ batches, the bound's largest): the first
    # signal waits for it, the second cuts it short. With a shorter one (3000 batches), a loaded machine
    # could finish it between the two signals: the trial then stopped gracefully, the worker gave SIGINT
    # back to Python's default handler on its way out, and the second signal, landing during the exit,
    # ended the process as killed by SIGINT (exit -2, as a shell's 130) without lpstudy's last line.
    code, _, err = cli(capsys, "create", "--study", "abort", "--storage", sqlite_url, "--preset", "smoke",
                       "--sampler", "random", "--set", "eval_iters=1000000", "--set", "max_steps=30",
                       "--spread-trials", "0")
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
    # 130, or ended by SIGINT after its last line (-2), which a shell reports as 130 too: on a loaded
    # machine an abort sent again (lpstudy.study.worker) can land after the worker said it stopped
    # (seen 1 time in 10 beside three busy loops; the cause is not pinned down)
    assert code in (130, -signal.SIGINT), lines
    assert "Traceback" not in log.read_text()
    assert "stopped: aborted by a second signal" in lines[-2]
    assert lines[-1] == "lpstudy: interrupted"
    states = sorted(t.state.name for t in trials_of(sqlite_url, "abort"))
    assert states == ["FAIL", "WAITING"]  # failed, and enqueued again with the same parameters


DROPPED_ABORT = """
import os, signal, time, weakref
from lpstudy.study.worker import StopFlag, install_signal_handlers

stop, said = StopFlag(), []
install_signal_handlers(stop, said.append)
os.kill(os.getpid(), signal.SIGINT)  # the first signal: stop after the current step
while not stop():
    time.sleep(0.01)
print(said[0], flush=True)


def while_freeing(ref):
    os.kill(os.getpid(), signal.SIGINT)  # the second signal, handled inside this callback
    for _ in range(100_000):
        pass


class Freed:
    pass


thing = Freed()
watcher = weakref.ref(thing, while_freeing)
del thing  # runs the callback: the handler's KeyboardInterrupt is raised there and dropped
print("aborting" if stop.aborting else "not aborting", flush=True)
try:
    while True:
        time.sleep(0.05)
except KeyboardInterrupt:  # it comes again, where it can be caught
    stop.abort_caught = True
    print("caught", flush=True)
"""


def test_an_abort_that_python_drops_in_a_weakref_callback_is_delivered_again(tmp_path):
    """A signal handler's KeyboardInterrupt lands wherever the main thread is; inside a weakref callback
    or a __del__ (tensors freed during a step run them often) Python prints 'Exception ignored' and
    drops it. The second signal's abort must not be lost with it: the worker ran on, and ignored every
    later signal, as if it had begun aborting. (In a process of its own: a signal sent again inside
    pytest's process could land in pytest's own code.)"""
    try:
        done = subprocess.run([sys.executable, "-c", DROPPED_ABORT], capture_output=True, text=True,
                              timeout=180, env=lp_env(), cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.fail("the dropped abort was never delivered again: the process ran on")
    assert done.stdout.splitlines() == [
        "SIGINT: stopping after the current step (again to abort)", "aborting", "caught"], done.stderr
    assert "KeyboardInterrupt" in done.stderr  # Python did drop the first one ('Exception ignored')
