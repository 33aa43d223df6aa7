"""Launching workers: the devices to train on, and one worker process per device.

`--devices auto` is every visible GPU, else one CPU worker; `cuda:0,cuda:1` or `cpu,cpu` name them.
Each process is `python -m lpstudy worker` on one device; the storage URL travels in the
environment, so that a password never shows in the process list. Local CPU worker processes split
the cores between them (--threads sets the count; see cpu_threads). With --metrics-port PORT, process
i serves its metrics on PORT + i (lpstudy.study.telemetry).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from types import FrameType
from typing import TYPE_CHECKING

from lpstudy.db.urls import STORAGE_ENV, storage_url
from lpstudy.errors import UserError
from lpstudy.study.worker import WorkerOptions
from lpstudy.training.threads import prefer_passive_wait, usable_cores

if TYPE_CHECKING:
    from lpstudy.study.worker import SignalHandler


def resolve_devices(devices: str, present: bool = True) -> list[str]:
    """'auto' -> every visible GPU, else ['cpu']; 'cpu' -> ['cpu']; 'cuda:0,cuda:1' -> both. present=False:
    the names checked only, not that this machine has those GPUs (a container's settings checked on
    another machine than the node it will run on: `lpstudy worker --check`)."""
    text = (devices or "auto").strip()
    if text == "auto":
        import torch

        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        return [f"cuda:{i}" for i in range(n)] or ["cpu"]
    names = [d.strip() for d in text.split(",") if d.strip()]
    if not names:
        raise UserError("--devices needs auto, cpu, or a list such as cuda:0,cuda:1")
    for name in names:
        if name != "cpu" and name != "cuda" and not (name.startswith("cuda:") and name[5:].isdigit()):
            raise UserError(f"unknown device {name!r} in --devices; use auto, cpu, cuda:N (comma-separated)")
    wanted = [name for name in names if name != "cpu"]
    if wanted and present:  # a GPU this machine lacks: refused here, before a command writes anything
        import torch

        n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        missing = [name for name in wanted if n == 0 or (name != "cuda" and int(name[5:]) >= n)]
        if missing:
            have = "no CUDA GPU" if n == 0 else f"{n} CUDA GPU(s): cuda:0 to cuda:{n - 1}"
            raise UserError(f"--devices asks for {', '.join(missing)}, but this machine has {have}; "
                            f"use --devices {'cpu' if n == 0 else 'auto'}")
    return names


def cpu_threads(devices: list[str], threads: int | None) -> int | None:
    """Torch threads for each local CPU worker process: --threads if given, else the usable cores
    (lpstudy.training.threads.usable_cores) split evenly between the CPU workers (`cpu,cpu` on 2
    cores: one each), so that the workers do not oversubscribe the cores (threads that wait on each
    other); None for a single CPU worker (each run's default: lpstudy.training.threads)."""
    if threads:
        return threads
    n_cpu = sum(1 for d in devices if d == "cpu")
    return max(1, usable_cores() // n_cpu) if n_cpu > 1 else None


def worker_command(options: WorkerOptions, device: str, n_trials: int | None,
                   threads: int | None = None, index: int = 0) -> list[str]:
    """The command line of one worker process (the storage URL travels in the environment, so that
    a password never shows in the process list)."""
    cmd = [sys.executable, "-m", "lpstudy", "worker", "--study", options.study, "--devices", device]
    if n_trials is not None:
        cmd += ["--n-trials", str(n_trials)]
    if options.timeout:
        cmd += ["--timeout", str(options.timeout)]
    if options.run_budget is not None:  # the run the race reserve is a share of (lpstudy.study.worker)
        cmd += ["--run-budget", "{}:{}".format(*options.run_budget)]
    if options.data:
        cmd += ["--data", str(options.data)]
    if not options.show_progress:
        cmd += ["--no-progress"]
    if options.artifacts:
        cmd += ["--artifacts", str(options.artifacts)]
    if device == "cpu" and threads:
        cmd += ["--threads", str(threads)]
    if options.config:  # the study is ready (the parent waited): each process checks its spec again
        cmd += ["--config", str(options.config)]
    # explicit, also 0: every process reading one LPSTUDY_METRICS_PORT would ask for the same port
    cmd += ["--metrics-port", str(options.metrics_port + index if options.metrics_port else 0)]
    for flag, value in (("--heartbeat-interval", options.heartbeat_interval),
                        ("--grace-period", options.grace_period), ("--max-retry", options.max_retry)):
        if value is not None:
            cmd += [flag, str(value)]
    return cmd


def worker_environment(options: WorkerOptions, devices: list[str]) -> dict[str, str]:
    """The environment of the worker processes: this one's, with the storage URL, the thread count
    of several local CPU workers (OMP_NUM_THREADS, unless set), and OpenMP's waiting threads told to
    sleep rather than spin beside the other workers' (OMP_WAIT_POLICY=PASSIVE, unless set)."""
    env = dict(os.environ)
    env[STORAGE_ENV] = storage_url(options.storage)
    threads = cpu_threads(devices, options.threads)
    if threads and "OMP_NUM_THREADS" not in env:
        env["OMP_NUM_THREADS"] = str(threads)
    prefer_passive_wait(env)
    return env


def spawn_workers(options: WorkerOptions, devices: list[str], say: Callable[[str], None] | None = None,
                  on_line: Callable[[str], None] | None = None, tick: Callable[[], None] | None = None) -> int:
    """One worker process per device; waits for all; forwards SIGINT/SIGTERM to them. Returns the
    worst exit status, or 128 + the signal where one stopped them (Ctrl-C: 130), once they have
    enqueued their trials again. --n-trials is shared out among the processes. With `on_line`, the workers'
    output comes through it line by line (so that a progress bar of the caller stays intact);
    `tick()` is called about once a second while they run."""
    env = worker_environment(options, devices)
    threads = cpu_threads(devices, options.threads)
    shares: list[int | None] = [None] * len(devices)
    if options.n_trials is not None:
        base, extra = divmod(options.n_trials, len(devices))
        shares = [base + (1 if i < extra else 0) for i in range(len(devices))]
    procs = []
    for index, (device, share) in enumerate(zip(devices, shares)):
        if share == 0:
            continue
        # A session of their own: a Ctrl-C in the terminal reaches them once, forwarded by this
        # process, rather than twice (which would abort their trials instead of stopping them).
        piped = on_line is not None  # their lines read and forwarded, else straight to the terminal
        procs.append(subprocess.Popen(worker_command(options, device, share, threads, index), env=env,
                                      start_new_session=True, stdout=subprocess.PIPE if piped else None,
                                      stderr=subprocess.STDOUT if piped else None, text=piped,
                                      bufsize=1 if piped else -1))
    readers = [threading.Thread(target=_forward_lines, args=(proc.stdout, on_line), daemon=True)
               for proc in procs if on_line is not None]
    for reader in readers:
        reader.start()
    if say:
        say(f"started {len(procs)} worker process(es) on {', '.join(devices)}")

    signalled: list[int] = []

    def forward(signum: int, frame: FrameType | None) -> None:
        signalled.append(signum)
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signum)

    previous: dict[signal.Signals, SignalHandler] = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, forward)
    try:
        while tick is not None and any(proc.poll() is None for proc in procs):
            tick()
            time.sleep(1.0)
        codes = [proc.wait() for proc in procs]
        for reader in readers:
            reader.join(timeout=5)
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    if signalled:  # stopped by the user: the workers requeued their trials; the shell's 128 + signal
        return 128 + int(signalled[0])
    return max([abs(c) for c in codes] or [0])


def _forward_lines(stream: Iterable[str], on_line: Callable[[str], None]) -> None:
    for line in stream:
        on_line(line.rstrip("\n"))
