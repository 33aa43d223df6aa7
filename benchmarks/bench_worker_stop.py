"""How long a worker takes to stop on SIGTERM, against the grace period Kubernetes gives it.

A node drain, a preemption or `kubectl delete pod` sends the worker's container SIGTERM, waits
`terminationGracePeriodSeconds`, then sends SIGKILL. Within that time the worker must finish its
current step, end the trial as interrupted (FAIL, user attribute `interrupted`), enqueue it again
and exit; killed before that, the trial stays RUNNING until another worker finds its heartbeat
stale (the study's grace_period) and it costs a retry.

Each round starts a real worker the way the Job's pod does (deploy/k8s/base/scripts/
not-done-on-signal.py around `lpstudy worker --no-progress`, the storage and the artifact store
from the environment, OMP_NUM_THREADS as the pod sets it), on a throwaway PostgreSQL with an
artifact folder (checkpoints on), waits until a trial is well under way, sends SIGTERM at a random
moment and times it until the process has exited, and until the worker said that the trial ended
and was enqueued again; it checks the exit status (143: the Job starts the index again) and notes
the machine's load average, which a shared machine's figures depend on. Two studies, side by side, alternating:

  random  an evaluation every 20 steps (so that a trial is soon under way; the `cpu` preset has
          one every 100), SIGTERM at a random moment between two of them: what a drain usually
          meets, the rest of one step;
  worst   an evaluation after every step and a checkpoint after every evaluation: SIGTERM always
          lands before a step, an evaluation and a checkpoint upload, the longest a stop can take.

It prints each stop, the median and the largest per study, and the grace period of the workers'
Job (deploy/k8s/base/workers.yaml) as a multiple of the largest stop.

    python benchmarks/bench_worker_stop.py                     # cpu preset, 4 rounds, 2 threads
    python benchmarks/bench_worker_stop.py --preset smoke --rounds 2 --json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402

WRAPPER = ROOT / "deploy" / "k8s" / "base" / "scripts" / "not-done-on-signal.py"
WORKERS_JOB = ROOT / "deploy" / "k8s" / "base" / "workers.yaml"
FAR_AWAY = "100000"  # max_steps: no trial finishes while it is measured


def grace_period_s() -> int:
    for doc in yaml.safe_load_all(WORKERS_JOB.read_text()):
        if doc and doc.get("kind") == "Job":
            return int(doc["spec"]["template"]["spec"]["terminationGracePeriodSeconds"])
    raise SystemExit(f"no Job in {WORKERS_JOB}")


def lpstudy(*args: str, env: dict) -> None:
    out = subprocess.run([sys.executable, "-m", "lpstudy", *args], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(out.stderr)


def running_trial(storage, study: str):
    import optuna
    from optuna.trial import TrialState

    for trial in optuna.load_study(study_name=study, storage=storage).get_trials(deepcopy=False):
        if trial.state == TrialState.RUNNING:
            return trial
    return None


PHASES = {"trial ended": " FAIL (interrupted)", "trial enqueued again": "enqueued again"}


def one_stop(storage, study: str, env: dict, log: Path, rng: random.Random) -> dict:
    """Start a worker, SIGTERM it in the middle of a trial: seconds from the signal to each phase
    (its trial ended, enqueued again, the process gone), the exit status and the load average."""
    worker = subprocess.Popen([sys.executable, str(WRAPPER), sys.executable, "-m", "lpstudy", "worker",
                               "--study", study, "--no-progress"], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, env=env)
    lines: list[tuple[float, str]] = []  # (when, line) of the worker's output
    output = worker.stdout
    assert output is not None  # stdout=PIPE
    reader = threading.Thread(target=lambda: lines.extend((time.monotonic(), line) for line in output),
                              daemon=True)
    reader.start()
    seen: list[float] = []  # when each new evaluation of the running trial was first seen
    deadline = time.monotonic() + 900
    while len(seen) < 2:
        if worker.poll() is not None or time.monotonic() > deadline:
            worker.kill()
            raise SystemExit("the worker did not get under way:\n" + "".join(line for _, line in lines))
        trial = running_trial(storage, study)
        evaluations = len(trial.intermediate_values) if trial else 0
        if evaluations > len(seen):
            seen += [time.monotonic()] * (evaluations - len(seen))
        time.sleep(0.2)
    time.sleep(rng.uniform(0, seen[-1] - seen[-2]))  # somewhere between two evaluations
    load = os.getloadavg()[0]
    sent = time.monotonic()
    worker.send_signal(signal.SIGTERM)
    status = worker.wait(timeout=900)
    gone = time.monotonic() - sent
    reader.join(timeout=10)
    log.write_text("".join(line for _, line in lines))
    result: dict[str, float | None] = {"exit_s": gone, "status": status, "load": load}
    for phase, text in PHASES.items():
        result[phase] = next((when - sent for when, line in lines if when >= sent and text in line), None)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="cpu")
    parser.add_argument("--rounds", type=int, default=4, help="stops per study")
    parser.add_argument("--threads", default="2", help="OMP_NUM_THREADS, as the pod's CPU request sets it")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="Print the results as one JSON object.")
    add_result_argument(parser, "worker-stop")
    args = parser.parse_args(argv)
    load_at_start = load_average()
    rng = random.Random(args.seed)

    from tests.pgserver import ThrowawayPostgres

    server = ThrowawayPostgres().start()
    try:
        url = server.create_database("stops")
        with tempfile.TemporaryDirectory(prefix="bench-stop-") as tmp:
            env = dict(os.environ, LPSTUDY_STORAGE=url, LPSTUDY_ARTIFACTS=str(Path(tmp) / "artifacts"),
                       OMP_NUM_THREADS=args.threads, PYTHONPATH=str(ROOT))
            studies = {
                "random": ["--set", f"max_steps={FAR_AWAY}", "--set", "eval_interval=20"],
                "worst": ["--set", f"max_steps={FAR_AWAY}", "--set", "eval_interval=1",
                          "--checkpoint-interval", "1"],
            }
            for name, extra in studies.items():
                lpstudy("create", "--study", name, "--preset", args.preset, "--sampler", "random",
                        "--pruner", "none", *extra, env=env)
            import optuna

            optuna.logging.set_verbosity(optuna.logging.WARNING)
            storage = optuna.storages.RDBStorage(url)  # one connection pool for the polling
            stops: dict[str, list[dict]] = {name: [] for name in studies}
            for r in range(args.rounds):
                order = list(studies) if r % 2 == 0 else list(reversed(studies))
                for name in order:
                    log = Path(tmp) / f"{name}-{r}.log"
                    stop = one_stop(storage, name, env, log, rng)
                    if stop["status"] != 128 + signal.SIGTERM:
                        raise SystemExit(f"exit status {stop['status']}, not 143:\n{log.read_text()}")
                    stops[name].append(stop)
                    if not args.json:
                        phases = ", ".join(f"{phase} {stop[phase]:.2f} s" for phase in PHASES if stop[phase] is not None)
                        print(f"round {r} {name}: exit 143 {stop['exit_s']:.2f} s after SIGTERM ({phases}; "
                              f"load average {stop['load']:.1f})", flush=True)
    finally:
        server.cleanup()

    grace = grace_period_s()
    exits = {name: [stop["exit_s"] for stop in runs] for name, runs in stops.items()}
    longest = max(max(v) for v in exits.values())
    summary = {"preset": args.preset, "threads": args.threads, "rounds": args.rounds, "stops": stops,
               "median_s": {k: statistics.median(v) for k, v in exits.items()},
               "max_s": {k: max(v) for k, v in exits.items()},
               "grace_period_s": grace, "grace_over_longest": grace / longest}
    write_result(args.result, None,
                 [["study", "median stop (s)", "longest stop (s)", "stops"],
                  *([name, f"{summary['median_s'][name]:.2f}", f"{summary['max_s'][name]:.2f}", len(exits[name])]
                    for name in studies)],
                 title="How long a worker takes to stop on SIGTERM", load_at_start=load_at_start,
                 notes=f"{args.preset} preset, OMP_NUM_THREADS={args.threads}, PostgreSQL. The Kubernetes "
                       f"terminationGracePeriodSeconds, {grace} s, is {grace / longest:.0f}× the longest stop.")
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for name in studies:
            print(f"{name}: median {summary['median_s'][name]:.2f} s, longest {summary['max_s'][name]:.2f} s "
                  f"over {args.rounds} stops")
        print(f"terminationGracePeriodSeconds {grace} s = {grace / longest:.0f}x the longest stop "
              f"({longest:.2f} s, {args.preset} preset, OMP_NUM_THREADS={args.threads})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
