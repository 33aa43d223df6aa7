"""How many CPU threads a run trains with when nobody said, and how those threads wait.

Measured (benchmarks/bench_threads.py, docs/exactly-once.md): at torch's default (every core, and
OpenMP's waiting threads spinning at every op's barrier) a run beside any other work slows down
tens to hundreds of times; with the waiting threads asleep instead (OMP_WAIT_POLICY=PASSIVE) that
collapse is gone. On a 2-core machine (benchmarks/results/threads.md) one thread then trains the
`smoke` model fastest in every case, and the `cpu` model fastest alone, beside a second training
and beside a Python loop (a second thread only adds barriers to ops too small to share); beside a
torch process that keeps a core busy, `cpu` was quicker at two (1.15 s against 1.39 s for 10
steps): two threads win a process a larger share of a loaded CPU, which is the scheduler's
arithmetic, not the model's, and costs the other work that share. So where lpstudy starts the process (the command line, the
worker processes it starts) OpenMP's threads sleep while they wait, unless the user set a policy;
and the default count is the cores this process may use (its affinity and its cgroup's CPU quota,
which torch does not read: a container limited to 2 CPUs on a 64-core host is 2), at most
SMALL_MODEL_THREADS for a model whose widest matmul is too small to share among many threads
(smoke, cpu). An explicit count always wins: `threads` in the config, a worker's --threads, or
OMP_NUM_THREADS.

Torch-free: the command line calls prefer_passive_wait before anything imports torch (OpenMP reads
its environment once, when torch loads it).
"""

from __future__ import annotations

import math
import os
from collections.abc import MutableMapping

WAIT_POLICY_ENV = "OMP_WAIT_POLICY"
THREADS_ENV = "OMP_NUM_THREADS"
# Below this many multiply-adds in the model's widest matmul (tokens of a batch × n_embd × 4 n_embd)
# a model's ops are too small to share among many threads: the `smoke` preset's is 2.1e6, the `cpu`
# preset's 5.0e7, the `paper` preset's 9.7e9. Such a model trains on SMALL_MODEL_THREADS
# (benchmarks/results/threads.md, a quiet 2-core machine: smoke at one thread 0.39 s alone and
# 0.48 s beside a torch process, at two 0.74 s and 0.69-1.25 s).
SHARED_OP_MACS = 2e8
SMALL_MODEL_THREADS = 1


def prefer_passive_wait(env: MutableMapping[str, str] | None = None) -> None:
    """OMP_WAIT_POLICY=PASSIVE in `env` (the process's own environment by default) unless it is set:
    waiting OpenMP threads sleep rather than spin against other processes' threads. Call it before
    torch is imported, or for the environment of a process about to start."""
    env = os.environ if env is None else env
    env.setdefault(WAIT_POLICY_ENV, "PASSIVE")


def usable_cores() -> int:
    """The cores this process may use: its CPU affinity (a container's cpuset, Slurm's share,
    taskset), capped by its cgroup's CPU quota (docker --cpus, a Kubernetes limit), at least 1."""
    try:
        cores = len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # pragma: no cover - not Linux
        cores = os.cpu_count() or 1
    quota = cgroup_cpu_quota()
    return max(1, min(cores, math.ceil(quota))) if quota else cores


def cgroup_cpu_quota(root: str = "/sys/fs/cgroup") -> float | None:
    """The CPU quota of this process's cgroup in cores (cgroup v2's cpu.max, v1's cfs quota over its
    period); None where there is none or it cannot be read."""
    try:
        with open(os.path.join(root, "cpu.max"), encoding="ascii") as fh:
            quota, period = fh.read().split()[:2]
        return None if quota == "max" else int(quota) / int(period)
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(root, "cpu", "cpu.cfs_quota_us"), encoding="ascii") as fh:
            quota_us = int(fh.read())
        with open(os.path.join(root, "cpu", "cpu.cfs_period_us"), encoding="ascii") as fh:
            period_us = int(fh.read())
    except (OSError, ValueError):
        return None
    return quota_us / period_us if quota_us > 0 and period_us > 0 else None


def widest_matmul_macs(batch_size: int, block_size: int, n_embd: int) -> int:
    """Multiply-adds of the model's widest matmul in one step: the MLP's n_embd -> 4 n_embd over
    every token of a batch."""
    return batch_size * block_size * n_embd * 4 * n_embd


def default_threads(batch_size: int, block_size: int, n_embd: int, cores: int | None = None) -> int:
    """The thread count of a CPU run that names none: every usable core, at most SMALL_MODEL_THREADS
    for a model whose ops are too small to share among many (smoke, cpu)."""
    cores = cores if cores is not None else usable_cores()
    if widest_matmul_macs(batch_size, block_size, n_embd) < SHARED_OP_MACS:
        return min(cores, SMALL_MODEL_THREADS)
    return cores
