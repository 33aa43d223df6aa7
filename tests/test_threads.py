"""The CPU thread default (lpstudy.training.threads): the cores this process may use (affinity, cgroup
quota), one for models whose ops are too small to share among many (smoke, cpu), an
explicit count always winning; OpenMP told to sleep while it waits, before torch loads it, where
lpstudy starts the process. How much this matters beside other work is measured by
benchmarks/bench_threads.py (docs/exactly-once.md), not asserted here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from lpstudy.study.launch import worker_environment
from lpstudy.study.worker import WorkerOptions
from lpstudy.training.config import PRESETS, resolve_config, with_cpu_threads
from lpstudy.training.threads import cgroup_cpu_quota, default_threads, usable_cores
from tests.study_helpers import ROOT, TINY, lp_env, lpstudy


def _default(preset: str, cores: int) -> int:
    cfg = PRESETS[preset]
    return default_threads(cfg.batch_size, cfg.block_size, cfg.n_embd, cores=cores)


def test_small_models_train_on_one_thread_and_the_paper_model_on_every_usable_core():
    assert [_default(p, cores=8) for p in ("smoke", "cpu", "paper")] == [1, 1, 8]
    assert [_default(p, cores=1) for p in ("smoke", "cpu", "paper")] == [1, 1, 1]  # never more than the cores


def test_an_explicit_count_wins_over_the_default(monkeypatch):
    import torch

    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    smoke = resolve_config("smoke", {})
    assert with_cpu_threads(smoke, "cpu").threads == 1
    assert with_cpu_threads(resolve_config("smoke", {"threads": 3}), "cpu").threads == 3  # the config's
    assert with_cpu_threads(smoke, "cpu", threads=2).threads == 2  # a worker's --threads
    monkeypatch.setenv("OMP_NUM_THREADS", "5")
    pinned = torch.get_num_threads()  # conftest pins one, the small models' default too
    torch.set_num_threads(5)  # what torch takes from OMP_NUM_THREADS=5 when it loads
    try:
        assert with_cpu_threads(smoke, "cpu").threads == 5  # torch's count, not the default of 1
    finally:
        torch.set_num_threads(pinned)
    assert with_cpu_threads(smoke, "cuda").threads == 0  # the count matters on a CPU only


def _cgroup(tmp_path, files: dict[str, str]):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return str(tmp_path)


def test_the_cgroup_quota_is_read_from_cgroup_v2_and_v1(tmp_path):
    assert cgroup_cpu_quota(_cgroup(tmp_path / "a", {"cpu.max": "150000 100000\n"})) == 1.5  # docker --cpus 1.5
    assert cgroup_cpu_quota(_cgroup(tmp_path / "b", {"cpu.max": "max 100000\n"})) is None
    assert cgroup_cpu_quota(_cgroup(tmp_path / "c", {"cpu/cpu.cfs_quota_us": "200000\n",
                                                     "cpu/cpu.cfs_period_us": "100000\n"})) == 2.0
    assert cgroup_cpu_quota(_cgroup(tmp_path / "d", {"cpu/cpu.cfs_quota_us": "-1\n",
                                                     "cpu/cpu.cfs_period_us": "100000\n"})) is None
    assert cgroup_cpu_quota(str(tmp_path / "none")) is None


def test_usable_cores_are_the_affinity_capped_by_the_quota(monkeypatch):
    import lpstudy.training.threads as T

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    monkeypatch.setattr(T, "cgroup_cpu_quota", lambda: None)
    assert usable_cores() == 4
    monkeypatch.setattr(T, "cgroup_cpu_quota", lambda: 1.5)
    assert usable_cores() == 2  # 1.5 cores of quota: two threads can use them
    monkeypatch.setattr(T, "cgroup_cpu_quota", lambda: 16.0)
    assert usable_cores() == 4


_PROBE = ("import os, sys\nfrom lpstudy.cli import main\ntry:\n    main(['--version'])\nexcept SystemExit:\n    pass\n"
          "print(os.environ.get('OMP_WAIT_POLICY'), 'torch' in sys.modules)")


@pytest.mark.parametrize("given, expected", [(None, "PASSIVE"), ("ACTIVE", "ACTIVE")])
def test_the_command_line_sets_a_passive_wait_before_torch_loads_unless_the_user_chose(given, expected):
    env = lp_env()
    env.pop("OMP_WAIT_POLICY", None)
    if given:
        env["OMP_WAIT_POLICY"] = given
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, env=env, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1].split() == [expected, "False"], done.stdout  # set; torch not loaded yet


def test_worker_processes_get_a_passive_wait_and_several_cpu_workers_split_the_cores(monkeypatch):
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    options = WorkerOptions(study="s", storage="sqlite:///x.db")
    one = worker_environment(options, ["cpu"])
    assert one["OMP_WAIT_POLICY"] == "PASSIVE" and "OMP_NUM_THREADS" not in one  # each run's default
    monkeypatch.setattr("lpstudy.study.launch.usable_cores", lambda: 6)
    two = worker_environment(options, ["cpu", "cpu"])
    assert two["OMP_NUM_THREADS"] == "3"  # 6 usable cores, 2 CPU workers
    assert worker_environment(options, ["cpu"] * 4)["OMP_NUM_THREADS"] == "1"  # 6 // 4
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    assert worker_environment(options, ["cpu"])["OMP_WAIT_POLICY"] == "ACTIVE"


@pytest.mark.slow
def test_train_says_and_records_the_default_count_when_nobody_chose(tmp_path):
    env = lp_env()
    env.pop("OMP_NUM_THREADS")  # as a user's shell has it
    done = lpstudy("train", "--preset", "smoke", *TINY, "--out", str(tmp_path / "run"), env=env, timeout=600)
    assert done.returncode == 0, done.stderr
    expected = 1  # the smoke model: one thread (lpstudy.training.threads.SMALL_MODEL_THREADS)
    assert f" threads={expected} " in done.stderr.splitlines()[0], done.stderr
    import yaml

    assert yaml.safe_load((tmp_path / "run" / "config.yaml").read_text())["threads"] == expected  # the run file
