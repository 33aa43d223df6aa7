"""CPU training beside other work: the trainer at the default thread count (what `lpstudy train` and
a worker choose now), at one and at two threads, and as before the default was chosen (torch's own:
every core, OpenMP's waiting threads spinning), each alone and beside another process: torch at its
default threads (a small matmul loop), a second training at the same setting, a plain Python busy
loop; and one `lpstudy worker` trial beside the matmul loop.

The runs are made as the command line makes them, in two long-lived processes (so that the
interpreter's start, 10-30 s on a loaded machine, is paid once): one started as `lpstudy` starts
(OMP_WAIT_POLICY=PASSIVE set before torch loads, the thread count from
lpstudy.training.config.with_cpu_threads), one that loads torch first, as before. The second
training beside is such a process too, training in a loop at the measured setting. A cell is the
training time the trainer reports (a worker's trial: its `wall_time_s`, the worker a real
`lpstudy worker` process); the settings of one row run back to back, so that the machine's load
drifts little within a row, and each row runs --rounds times (the median shown). A run still going after --cap seconds is stopped and shown with the time
its steps would have taken at its pace ("≈ 240 (15 steps in 60 s)"); a worker, as "> cap".
The table (with the command, the machine, the date and the load average) goes to
benchmarks/results/threads.md:

    python benchmarks/bench_threads.py                        # a few minutes on a 2-core machine
    python benchmarks/bench_threads.py --smoke-steps 150 --cpu-steps 40
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lpstudy.training.threads import prefer_passive_wait, usable_cores  # noqa: E402  (torch-free)

MATMUL_LOOP = "import torch\na = torch.randn(256, 256)\nprint('ready', flush=True)\nwhile True:\n    a @ a\n"
BUSY_LOOP = "print('ready', flush=True)\nwhile True:\n    pass\n"
# Torch's own default, as lpstudy ran before it chose one: torch (so OpenMP) loaded before the
# command line can set a wait policy, and every core.
BEFORE = "import sys, torch\nfrom lpstudy.cli import main\nsys.argv[0] = 'lpstudy'\nmain()\n"
NEIGHBOURS = ("alone", "torch (matmul loop)", "a second training", "Python busy loop")


def clean_env() -> dict[str, str]:
    """The environment of a user's shell: no OpenMP settings; this checkout importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_", "MKL_"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


def settings(cores: int) -> dict[str, tuple[str, int]]:
    """name -> (which process runs it: passive as lpstudy now, spin as before; threads, 0: the default)."""
    return {"default": ("passive", 0), "1 thread": ("passive", 1), "2 threads": ("passive", 2),
            f"before ({cores} threads, spinning)": ("spin", cores)}


# -- the long-lived training processes ---------------------------------------------------------------

def serve(kind: str) -> None:
    """Train on request (stdin: `run PRESET STEPS THREADS` -> `done SECONDS`; `loop PRESET THREADS`
    trains until `stop`), started the way `kind` says."""
    if kind == "passive":
        prefer_passive_wait()  # what lpstudy's command line does before anything imports torch
    import torch  # noqa: F401  (OpenMP loads here, with or without the wait policy)

    from lpstudy.training.config import resolve_config, with_cpu_threads
    from lpstudy.training.data import load_corpus
    from lpstudy.training.trainer import train

    corpus = load_corpus(None)
    stopping = threading.Event()
    looping: list[threading.Thread] = []

    def config(preset: str, steps: int, threads: int):
        cfg = resolve_config(preset, {"max_steps": steps, "eval_interval": steps, "eval_iters": 1, "warmup_steps": 1,
                                      "threads": threads})
        return with_cpu_threads(cfg, "cpu") if threads == 0 else cfg

    def loop(preset: str, threads: int) -> None:
        while not stopping.is_set():
            train(config(preset, 100_000, threads), corpus, should_stop=stopping.is_set)

    for preset in ("smoke", "cpu"):  # warm up: the first run of a process pays for lazy imports and allocations
        train(config(preset, 2, 1), corpus)
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[0] == "run":  # run PRESET STEPS THREADS CAP: stopped after CAP seconds
            cfg = config(words[1], int(words[2]), int(words[3]))
            deadline = time.monotonic() + float(words[4])
            summary = train(cfg, corpus, should_stop=lambda: time.monotonic() > deadline).summary
            print(f"done {summary.wall_time_s:.3f} {cfg.threads} {summary.steps}", flush=True)
        elif words[0] == "loop":  # in a thread of its own (train() sets that thread's OpenMP thread count)
            stopping.clear()
            looping[:] = [threading.Thread(target=loop, args=(words[1], int(words[2])), daemon=True)]
            looping[0].start()
            time.sleep(0.5)
            print("looping", flush=True)
        elif words[0] == "stop":
            stopping.set()
            for t in looping:
                t.join()
            print("stopped", flush=True)


class Trainer:
    """A serve() process, driven over its stdin."""

    def __init__(self, kind: str, env: dict):
        self.proc = subprocess.Popen([sys.executable, __file__, "--serve", kind], env=env, text=True, bufsize=1,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self.proc.stdin is not None and self.proc.stdout is not None  # both PIPE
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        self._expect("ready")

    def _expect(self, word: str) -> list[str]:
        line = self.stdout.readline()
        if not line.startswith(word):
            raise SystemExit(f"the training process said {line!r}, not {word!r}")
        return line.split()

    def ask(self, line: str, answer: str) -> list[str]:
        self.stdin.write(line + "\n")
        self.stdin.flush()
        return self._expect(answer)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


def start_loop(kind: str) -> subprocess.Popen:
    cmd = [sys.executable, "-c", MATMUL_LOOP if kind.startswith("torch") else BUSY_LOOP]
    proc = subprocess.Popen(cmd, env=clean_env(), stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None  # stdout=PIPE
    proc.stdout.readline()  # imports done
    time.sleep(1.0)
    return proc


def stop(proc: subprocess.Popen | None) -> None:
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


def timed_worker_trial(url: str, setting_name: str, cores: int, env: dict, cap: float) -> float | None:
    import optuna

    threads = {"default": [], "1 thread": ["--threads", "1"], "2 threads": ["--threads", "2"]}.get(
        setting_name, ["--threads", str(cores)])
    prefix = ["-c", BEFORE] if setting_name.startswith("before") else ["-m", "lpstudy"]
    env = {**env, "LPSTUDY_STORAGE": url}
    try:
        done = subprocess.run([sys.executable, *prefix, "worker", "--study", "w", "--n-trials", "1", "--devices", "cpu",
                               "--no-progress", *threads], env=env, capture_output=True, text=True, timeout=cap + 120)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        raise SystemExit(f"worker failed: {done.stderr[-2000:]}")
    last = max(optuna.load_study(study_name="w", storage=url).trials, key=lambda t: t.number)
    return float(last.user_attrs["wall_time_s"])


def median(values: list) -> float | None:
    """The median of a cell's rounds (a run stopped at --cap kept as the estimate it is)."""
    if any(v is None for v in values) or not values:
        return None
    ordered = sorted(values)
    return ordered[len(ordered) // 2] if len(ordered) % 2 else (ordered[len(ordered) // 2 - 1] + ordered[len(ordered) // 2]) / 2


class Stopped(float):
    """A run stopped at --cap seconds: the time its steps would have taken at the pace it had."""

    steps_done: int

    def __new__(cls, estimate: float, steps_done: int):
        value = super().__new__(cls, estimate)
        value.steps_done = steps_done
        return value


def cell(seconds: float | None, cap: float) -> str:
    if seconds is None:
        return f"> {cap:.0f}"
    if isinstance(seconds, Stopped):
        return f"≈ {seconds:.0f} ({seconds.steps_done} steps in {cap:.0f} s)"
    return f"{seconds:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke-steps", type=int, default=40)
    parser.add_argument("--cpu-steps", type=int, default=10)
    parser.add_argument("--worker-steps", type=int, default=40, help="steps of the worker's smoke trial")
    parser.add_argument("--cap", type=float, default=20.0, help="seconds after which a run is stopped")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each row (the median is shown)")
    parser.add_argument("--worker-rounds", type=int, default=2)
    from benchmarks.results_file import add_result_argument

    add_result_argument(parser, "threads")
    parser.add_argument("--serve", choices=("passive", "spin"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve)
    if not os.environ.get("LPSTUDY_DATA"):
        raise SystemExit("set LPSTUDY_DATA to Tiny Shakespeare's input.txt (the benchmark never downloads)")
    cores = usable_cores()
    env = clean_env()
    names = settings(cores)
    load_before = os.getloadavg()
    started = time.monotonic()
    measured = {kind: Trainer(kind, env) for kind in ("passive", "spin")}
    beside = {kind: Trainer(kind, env) for kind in ("passive", "spin")}  # the second training
    rows, chosen = [], {}
    try:
        for preset, steps in (("smoke", args.smoke_steps), ("cpu", args.cpu_steps)):
            for kind in NEIGHBOURS:
                loop = start_loop(kind) if kind in ("torch (matmul loop)", "Python busy loop") else None
                runs: dict[str, list[float | None]] = {name: [] for name in names}  # None: a trial that failed
                try:
                    for round_ in range(args.rounds):
                        for name, (process, threads) in names.items():
                            if process == "spin" and round_ > 0:
                                continue  # once: it is stopped at --cap, and it is many times slower
                            if kind == "a second training":
                                beside[process].ask(f"loop {preset} {threads}", "looping")
                            try:
                                words = measured[process].ask(f"run {preset} {steps} {threads} {args.cap}", "done")
                            finally:
                                if kind == "a second training":
                                    beside[process].ask("stop", "stopped")
                            seconds, done = float(words[1]), int(words[3])
                            runs[name].append(seconds if done >= steps else Stopped(seconds * steps / max(done, 1), done))
                            if name == "default":
                                chosen[preset] = int(words[2])
                            print(f"{preset} {steps} steps, {kind}, {name}, round {round_ + 1}: "
                                  f"{cell(runs[name][-1], args.cap)} s", flush=True)
                finally:
                    stop(loop)
                times = {name: median(values) for name, values in runs.items()}
                rows.append((f"`{preset}`, {steps} steps", kind, times))
    finally:
        for trainer in (*measured.values(), *beside.values()):
            trainer.close()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/w.db"
        made = subprocess.run([sys.executable, "-m", "lpstudy", "create", "--study", "w", "--storage", url,
                               "--preset", "smoke", "--sampler", "random", "--pruner", "none", "--spread-trials", "0",
                               "--set", f"max_steps={args.worker_steps}", "--set", f"eval_interval={args.worker_steps}",
                               "--set", "eval_iters=1"], env=env, capture_output=True, text=True)
        if made.returncode != 0:
            raise SystemExit(made.stderr)
        kind = "torch (matmul loop)"
        loop = start_loop(kind)
        times = {}
        runs = {name: [] for name in names}
        try:
            for round_ in range(args.worker_rounds):
                for name in names:
                    if name.startswith("before") and round_ > 0:
                        continue
                    runs[name].append(timed_worker_trial(url, name, cores, env, args.cap))
                    print(f"worker trial, {kind}, {name}, round {round_ + 1}: {cell(runs[name][-1], args.cap)} s",
                          flush=True)
        finally:
            stop(loop)
        times = {name: median(values) for name, values in runs.items()}
        rows.append((f"`lpstudy worker`, one `smoke` trial of {args.worker_steps} steps", kind, times))
    load_after = os.getloadavg()
    write_table(args, rows, names, chosen, load_before, load_after, time.monotonic() - started)


def machine() -> str:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor() or "unknown CPU")
    return f"{model}, {os.cpu_count()} cores ({usable_cores()} usable by this process), {platform.system()} {platform.release()}"


def write_table(args, rows, names, chosen, load_before, load_after, seconds) -> None:
    import torch  # its version, for the record

    from benchmarks.results_file import write_result

    columns = list(names)
    table = [["run", "beside", *columns, "default ÷ best"]]
    for run, kind, times in rows:
        measured = [t for t in times.values() if t is not None]
        best = min(measured) if measured else None
        ratio = (f"{times['default'] / best:.2f}" if best and times.get("default") is not None else "–")
        table.append([run, kind, *[cell(times[c], args.cap) for c in columns], ratio])
    notes = (f"Seconds of training as the trainer reports them, the median of the rounds (lower is better; `before` "
             f"ran once, stopped at --cap). `default` is what lpstudy chooses now (threads: smoke {chosen.get('smoke')}, "
             f"cpu {chosen.get('cpu')}; OpenMP's waiting threads sleep); `before` is torch's own default as lpstudy ran "
             f"before (every core, waiting threads spinning). `default ÷ best`: the default against the best setting "
             f"of the same row. torch {torch.__version__}; load average (1, 5, 15 min) before: "
             f"{', '.join(f'{x:.2f}' for x in load_before)}, after: {', '.join(f'{x:.2f}' for x in load_after)}; "
             f"the whole run {seconds / 60:.1f} min.")
    command = (f"python benchmarks/bench_threads.py --smoke-steps {args.smoke_steps} --cpu-steps {args.cpu_steps} "
               f"--worker-steps {args.worker_steps} --cap {args.cap:g} --rounds {args.rounds} "
               f"--worker-rounds {args.worker_rounds}")
    write_result(args.result, command, table, notes, title="CPU training beside other work: thread counts side by side",
                 machine_line=machine())


if __name__ == "__main__":
    main()
