"""Run a command as a Kubernetes Job's main process, so that a stop by signal does not count as done.

    python not-done-on-signal.py lpstudy worker --study lp-search --no-progress

`lpstudy worker` exits with status 0 when its study is done, and also when SIGTERM stopped it (it
ends its trial as interrupted and enqueues it again first): that is what Slurm and docker compose
expect. A Job reads the two alike: a pod whose container exits 0 is a finished index, never started
again, so the workers of a drained or preempted node would be gone for good, and a drain of every
node would complete the Job with the study unfinished.

This runs the command as its child, passes SIGTERM and SIGINT on to it, and when a signal came
and the command then exits 0, exits 128 + the signal's number instead (143 for SIGTERM). The
workers' Job ignores that exit status (podFailurePolicy), as it ignores a pod with the condition
DisruptionTarget: the index is started again, on another node, without using up its
backoffLimitPerIndex. Any other exit status passes through unchanged; a command killed by a signal
exits 128 + that signal's number, as a shell reports it.
"""

from __future__ import annotations

import signal
import subprocess
import sys

FORWARDED = (signal.SIGTERM, signal.SIGINT)


def run(argv: list[str]) -> int:
    if not argv:
        print("usage: not-done-on-signal.py COMMAND [ARGS...]", file=sys.stderr)
        return 2
    child: subprocess.Popen | None = None
    received: list[int] = []

    def forward(signum: int, _frame) -> None:
        received.append(signum)
        if child is not None:
            child.send_signal(signum)

    for sig in FORWARDED:
        signal.signal(sig, forward)
    child = subprocess.Popen(argv)
    for signum in received:  # a signal that came before the child existed
        child.send_signal(signum)
    status = child.wait()  # resumed after each handler (PEP 475)
    if status < 0:
        return 128 - status
    if status == 0 and received:
        return 128 + received[0]
    return status


if __name__ == "__main__":
    sys.exit(run(sys.argv[1:]))
