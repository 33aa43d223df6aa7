"""What the study database costs a worker, as ratios measured in one run.

1. Storage share of a trial: one real trial at the `cpu` preset through the real worker (ask, the
   trial's attributes, a metrics batch and an intermediate value per evaluation, the pruner's
   reads, tell), on SQLite and on PostgreSQL. Time inside storage calls (every Optuna storage
   call and every metrics write of the worker's thread; the heartbeat thread does not block
   training and is not counted) over the trial's wall time. A few hundred steps are enough to
   measure the ratio (--steps, default 300 of the preset's 2000, evaluations every 100 steps as in
   the preset); the per-trial fixed cost is spread over fewer steps than in a full run, so the
   measured share overstates a full run's. The extrapolation to the full 2000 steps is printed too.
2. Throughput: completed trials per minute with 1, 4 and 8 concurrent worker processes on
   PostgreSQL, with a trivial objective: the worker and all its storage traffic (attributes,
   21 metrics batches and intermediate values as a `cpu`-preset trial writes, pruner reads, tell,
   heartbeats), no training. Random sampler, so that the sampler's own cost does not hide the
   storage's. Counted over a fixed window after all processes have started.

Without --postgres a throwaway server is started (tests/pgserver.py: initdb as the `postgres` user
when run as root).

    python benchmarks/bench_storage.py
    python benchmarks/bench_storage.py --postgres postgresql+psycopg://USER:PW@HOST/DB --json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402

if TYPE_CHECKING:  # torch is imported by the runs that train, not for --help
    from lpstudy.training.checkpoint import Checkpoint
    from lpstudy.training.config import TrainConfig
    from lpstudy.training.data import Corpus
    from lpstudy.training.trainer import EvalCallback, StepCallback, StopCheck, TrainedRun

CPU_PRESET_STEPS = 2000


def _quiet() -> None:
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore")


class StorageClock:
    """Time spent inside the worker thread's storage calls (RetryPolicy.call wraps every outermost
    Optuna storage call and every metrics write), split into calls made while the trainer runs (a
    metrics batch, an intermediate value and the pruner's read per evaluation) and the rest (ask,
    the trial's attributes, tell); metrics writes also on their own."""

    def __init__(self) -> None:
        self.outside_s = 0.0
        self.during_train_s = 0.0
        self.metrics_s = 0.0
        self.calls = 0
        self.training = False
        self._main = threading.get_ident()

    @property
    def storage_s(self) -> float:
        return self.outside_s + self.during_train_s

    def reset(self) -> None:
        self.outside_s = self.during_train_s = self.metrics_s = 0.0
        self.calls = 0

    def install(self) -> None:
        import lpstudy.study.objective as objective
        from lpstudy.db.optuna_storage import RetryPolicy

        clock = self
        original_call = RetryPolicy.call

        def timed_call(policy, fn, *args, **kwargs):
            if threading.get_ident() != clock._main:
                return original_call(policy, fn, *args, **kwargs)
            t0 = time.perf_counter()
            try:
                return original_call(policy, fn, *args, **kwargs)
            finally:
                spent = time.perf_counter() - t0
                if clock.training:
                    clock.during_train_s += spent
                else:
                    clock.outside_s += spent
                clock.calls += 1

        setattr(RetryPolicy, "call", timed_call)  # every storage call timed: the method wrapped in place
        original_record = objective.record_evaluation

        def timed_record(ctx, trial, record):
            t0 = time.perf_counter()
            try:
                return original_record(ctx, trial, record)
            finally:
                clock.metrics_s += time.perf_counter() - t0

        objective.record_evaluation = timed_record
        original_train = objective.train

        def flagged_train(*args, **kwargs):
            clock.training = True
            try:
                return original_train(*args, **kwargs)
            finally:
                clock.training = False

        objective.train = flagged_train


def create_study(url: str, name: str, preset: str, fixed: dict, sampler: str = "random") -> None:
    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.design.spec import build_spec
    from lpstudy.study.studies import create_study as create

    spec = build_spec({"preset": preset, "sampler": sampler, "pruner": "median", "sampler_seed": 0,
                       "space": fixed})
    create(open_storage(url, create_tables=True), name, spec)


def trial_share(url: str, steps: int, data: str | None) -> dict:
    """One cpu-preset trial of `steps` steps through the worker; the storage share of its time."""
    import torch

    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.study.worker import Worker, WorkerOptions

    torch.set_num_threads(max(1, (os.cpu_count() or 1)))
    name = f"share-{int(time.time() * 1000)}"
    create_study(url, name, "cpu", {"max_steps": steps, "p": 2.0, "lr": 1e-3, "gain_init": 10.0})
    clock = StorageClock()
    clock.install()
    storage = open_storage(url)
    worker = Worker(WorkerOptions(study=name, storage=url, device="cpu", n_trials=1, data=data,
                                  show_progress=False), say=lambda message: None, storage=storage)
    original_loop = worker._loop
    timing = {}

    def timed_loop(*args, **kwargs):
        clock.reset()
        t0 = time.perf_counter()
        try:
            return original_loop(*args, **kwargs)
        finally:
            timing["trial_s"] = time.perf_counter() - t0

    worker._loop = timed_loop  # type: ignore[method-assign]
    try:
        worker.run()
    finally:
        storage.close()
    evals = steps // 100 + 1
    full_evals = CPU_PRESET_STEPS // 100 + 1
    train_s = timing["trial_s"] - clock.storage_s
    full_storage = clock.outside_s + clock.during_train_s / evals * full_evals
    full_trial = train_s * CPU_PRESET_STEPS / steps + full_storage
    return {"steps": steps, "evaluations": evals, "trial_s": timing["trial_s"], "storage_s": clock.storage_s,
            "per_trial_storage_s": clock.outside_s, "per_evaluation_storage_s": clock.during_train_s / evals,
            "metrics_s": clock.metrics_s, "storage_calls": clock.calls,
            "share": clock.storage_s / timing["trial_s"], "share_full_run_estimate": full_storage / full_trial}


# --- throughput with a trivial objective ---------------------------------------------------------

def trivial_train(cfg: TrainConfig, corpus: Corpus, on_eval: EvalCallback | None = None,
                  on_step: StepCallback | None = None, loss_threshold: float | None = None,
                  should_stop: StopCheck | None = None, resume: Checkpoint | None = None,
                  on_checkpoint: Callable[[Checkpoint], None] | None = None, checkpoint_every: int = 0) -> TrainedRun:
    """A stand-in for lpstudy.training.trainer.train, with its signature: the evaluations of a run (same
    schedule and records), no training (no checkpoints either)."""
    from lpstudy.training.metrics import MetricRecord, RunSummary
    from lpstudy.training.trainer import TrainedRun

    start = time.perf_counter()
    summary = RunSummary(device="cpu", n_params=0, loss_threshold=loss_threshold)
    for step in range(0, cfg.max_steps + 1, cfg.eval_interval):
        loss = 4.2 * math.exp(-step / 800) + 1.5 + 0.1 * math.sin(cfg.lr * 1e4)
        record = MetricRecord(step=step, train_loss=loss, val_loss=loss + 0.05, lr=cfg.lr, grad_norm=1.0,
                              grad_norm_max=1.2, gain_mean=10.0, gain_min=9.0, gain_max=11.0, attn_entropy=2.0,
                              tokens_per_s=1e5, elapsed_s=time.perf_counter() - start)
        summary.history.append(record)
        summary.final_val_loss = record.val_loss
        summary.best_val_loss = min(record.val_loss, summary.best_val_loss) if summary.history[:-1] else record.val_loss
        summary.steps = step
        if on_eval and on_eval(record):
            summary.stopped = True
            break
    summary.wall_time_s = time.perf_counter() - start
    return TrainedRun(summary=summary, model=None, config=cfg)  # type: ignore[arg-type]  # a worker reads no model


def child(url: str, study: str, seconds: float, start_at: float, data: str | None) -> None:
    """One worker process of the throughput benchmark (started by throughput())."""
    _quiet()
    import lpstudy.study.objective as objective
    from lpstudy.study.worker import WorkerOptions, run_worker

    objective.train = trivial_train
    delay = start_at - time.time()
    if delay > 0:
        time.sleep(delay)
    from lpstudy.db.optuna_storage import open_storage

    with open_storage(url, wait=True) as storage:
        run_worker(WorkerOptions(study=study, storage=url, device="cpu", timeout=seconds, data=data,
                                 show_progress=False),
                   say=lambda message: None, storage=storage)


def throughput(url: str, workers: int, seconds: float, data: str | None) -> dict:
    import optuna

    name = f"tput-{workers}-{int(time.time() * 1000)}"
    create_study(url, name, "cpu", {})
    start_at = time.time() + 8 + 1.5 * workers  # every process has imported and opened the study by then
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    procs = [subprocess.Popen([sys.executable, __file__, "--child", url, name, str(seconds), str(start_at), data or ""],
                              env=env, stderr=subprocess.PIPE, text=True) for _ in range(workers)]
    errors = []
    for proc in procs:
        _, err = proc.communicate(timeout=seconds + 300)
        if proc.returncode:
            errors.append(err.strip().splitlines()[-1] if err.strip() else f"exit {proc.returncode}")
    study = optuna.load_study(study_name=name, storage=url)
    start = start_at
    end = start_at + seconds
    done = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
            if t.datetime_complete is not None and start <= t.datetime_complete.timestamp() <= end]
    return {"workers": workers, "completed": len(done), "seconds": seconds,
            "trials_per_min": len(done) / seconds * 60, "per_worker_per_min": len(done) / seconds * 60 / workers,
            "errors": errors}


def write_storage_result(args: argparse.Namespace, results: dict, load_at_start: str) -> None:
    tables = []
    if results["share"]:
        tables.append((f"The storage's share of one `cpu`-preset trial ({args.steps} of {CPU_PRESET_STEPS} steps, an "
                       "evaluation every 100 steps):",
                       [["storage", "trial s", "storage s", "per trial s", "per evaluation ms", "metrics s", "calls",
                         "share", "full run (estimate)"],
                        *([kind, f"{r['trial_s']:.2f}", f"{r['storage_s']:.3f}", f"{r['per_trial_storage_s']:.3f}",
                           f"{r['per_evaluation_storage_s'] * 1000:.1f}", f"{r['metrics_s']:.3f}", r["storage_calls"],
                           f"{r['share']:.2%}", f"{r['share_full_run_estimate']:.2%}"]
                          for kind, r in results["share"].items())]))
    if results["throughput"]:
        base = results["throughput"][0]["trials_per_min"] or math.nan
        tables.append((f"Completed trials per minute on PostgreSQL, trivial objective (21 evaluations a trial, random "
                       f"sampler, {args.seconds:g} s window):",
                       [["workers", "completed", "trials/min", "per worker", "vs 1 worker"],
                        *([r["workers"], r["completed"], f"{r['trials_per_min']:.0f}", f"{r['per_worker_per_min']:.0f}",
                           f"{r['trials_per_min'] / base:.2f}×"] for r in results["throughput"])]))
    if tables:
        (caption, rows), *more = tables
        write_result(args.result, None, rows, caption, more_tables=more, load_at_start=load_at_start,
                     title="The database's share of a trial, and trials per minute")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--child":
        child(argv[1], argv[2], float(argv[3]), float(argv[4]), argv[5] or None)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", help="A PostgreSQL URL (default: a throwaway server).")
    parser.add_argument("--steps", type=int, default=300, help="Steps of the cpu-preset trial (default 300).")
    parser.add_argument("--seconds", type=float, default=20.0, help="Throughput window per level (default 20).")
    parser.add_argument("--workers", default="1,4,8", help="Concurrency levels (default 1,4,8).")
    parser.add_argument("--data", help="Corpus (default $LPSTUDY_DATA, the cache, or a download).")
    parser.add_argument("--skip-share", action="store_true")
    parser.add_argument("--skip-throughput", action="store_true")
    parser.add_argument("--json", action="store_true", help="Print the results as one JSON object.")
    add_result_argument(parser, "storage")
    args = parser.parse_args(argv)
    load_at_start = load_average()
    _quiet()
    from lpstudy.db.urls import redact

    server = None
    pg_url = args.postgres
    if pg_url is None:
        from tests.pgserver import ThrowawayPostgres

        server = ThrowawayPostgres().start()
        pg_url = server.create_database("bench")
    results: dict = {"postgres": redact(pg_url), "share": {}, "throughput": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            if not args.skip_share:
                for kind, url in (("sqlite", f"sqlite:///{tmp}/bench.db"), ("postgresql", pg_url)):
                    results["share"][kind] = trial_share(url, args.steps, args.data)
                    if not args.json:
                        print(f"measured {kind}", file=sys.stderr, flush=True)
            if not args.skip_throughput:
                for n in [int(x) for x in args.workers.split(",") if x.strip()]:
                    results["throughput"].append(throughput(pg_url, n, args.seconds, args.data))
                    if not args.json:
                        print(f"measured {n} worker(s)", file=sys.stderr, flush=True)
    finally:
        if server is not None:
            server.cleanup()
    write_storage_result(args, results, load_at_start)
    if args.json:
        print(json.dumps(results))
        return 0
    if results["share"]:
        print(f"\nStorage share of one `cpu`-preset trial ({args.steps} of {CPU_PRESET_STEPS} steps, "
              "an evaluation every 100 steps)")
        print(f"{'storage':<12}{'trial s':>9}{'storage s':>11}{'per trial s':>13}{'per eval ms':>13}"
              f"{'metrics s':>11}{'calls':>7}{'share':>8}{'full run (est.)':>17}")
        for kind, r in results["share"].items():
            print(f"{kind:<12}{r['trial_s']:>9.2f}{r['storage_s']:>11.3f}{r['per_trial_storage_s']:>13.3f}"
                  f"{r['per_evaluation_storage_s'] * 1000:>13.1f}{r['metrics_s']:>11.3f}{r['storage_calls']:>7}"
                  f"{r['share']:>8.2%}{r['share_full_run_estimate']:>17.2%}")
    if results["throughput"]:
        print(f"\nCompleted trials per minute on PostgreSQL, trivial objective (21 evaluations a trial, "
              f"random sampler, {args.seconds:g} s window)")
        print(f"{'workers':>8}{'completed':>11}{'trials/min':>12}{'per worker':>12}{'vs 1 worker':>13}")
        base = results["throughput"][0]["trials_per_min"] or math.nan
        for r in results["throughput"]:
            print(f"{r['workers']:>8}{r['completed']:>11}{r['trials_per_min']:>12.0f}"
                  f"{r['per_worker_per_min']:>12.0f}{r['trials_per_min'] / base:>12.2f}x"
                  + (f"  errors: {r['errors']}" if r["errors"] else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
