"""The test suite's two tiers, timed as the README runs them, and what the fast tier reaches.

Runs, from the repository root and one after the other, the README's two test commands as its
section "Run the tests" writes them: the fast tier (`python -m pytest -m "not slow" -n 2`, two tests
at a time with pytest-xdist), then the slow rest (`python -m pytest -m slow -n 3`, three at a time), and reports each
one's wall time, test count and outcome. With --coverage it then runs the fast tier once more
under coverage.py, the processes its tests start included (coverage's `patch = subprocess`), and
lists the modules of lpstudy/ and app/ by the share of their lines the fast tier runs: a module at
0 % is one the fast tier does not cover. Run it on an idle machine: the tiers' times are what a
user waits for.

    python benchmarks/bench_test_tiers.py [--tiers fast,slow] [--one-at-a-time] [--coverage]

--one-at-a-time times the fast tier a second time without its `-n`, right after it: whether running
two tests at a time pays on this machine, side by side in one run.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402

CORPUS = "../shared/data/tinyshakespeare/input.txt"  # the README's LPSTUDY_DATA
README = ROOT / "README.md"
COVERAGE_RC = """[run]
source = lpstudy,app
parallel = true
patch = subprocess
data_file = {data}
"""


TIER_NAMES = ("fast", "slow")


@functools.cache
def readme_tiers() -> dict[str, str]:
    """{"fast": ..., "slow": ...}: pytest's arguments in the two test commands of the README's section
    "Run the tests" (the lines .ci/run runs, tests/test_first_run.py checks), in order."""
    section = README.read_text().split("## Run the tests", 1)[-1].split("\n## ", 1)[0]
    commands = [line.split("python -m pytest", 1)[1].strip() for line in section.splitlines()
                if line.startswith("    ") and "python -m pytest" in line]
    if len(commands) != len(TIER_NAMES):
        sys.exit(f"bench_test_tiers: the README's section \"Run the tests\" gives {len(commands)} test commands, "
                 f"not {len(TIER_NAMES)} (the fast tier, then the slow rest)")
    return dict(zip(TIER_NAMES, commands))


def pytest_args(tier: str, one_at_a_time: bool = False) -> list[str]:
    """pytest's arguments for the tier as the README runs it; one_at_a_time: without its `-n N`."""
    return ["-m", "pytest", *tier_args(tier, one_at_a_time), "-q", "-p", "no:cacheprovider"]


def tier_args(tier: str, one_at_a_time: bool = False) -> list[str]:
    args = shlex.split(readme_tiers()[tier])
    if one_at_a_time and "-n" in args:
        at = args.index("-n")
        del args[at:at + 2]
    return args


def summary_of(output: str) -> str:
    """pytest's last line without its time, e.g. '687 passed, 6 skipped, 809 deselected'."""
    lines = [line for line in output.splitlines() if re.search(r"\d+ (passed|failed|error)", line)]
    if not lines:
        return "no summary (see the output above)"
    return re.sub(r"\s+in [\d.]+s.*$", "", lines[-1].strip("= "))


def run_tier(name: str, env: dict[str, str], runner: tuple[str, ...] = (),
             one_at_a_time: bool = False) -> tuple[float, int, str]:
    """(wall seconds, exit status, pytest's summary) of one tier, the end of its output passed on;
    runner: what runs pytest's module instead of plain Python (coverage run); one_at_a_time: without
    pytest-xdist."""
    command = [sys.executable, *runner, *pytest_args(name, one_at_a_time)]
    print(f"tier {name}: {' '.join(command[1:])}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    sys.stderr.write(done.stdout[-2000:])
    return wall, done.returncode, summary_of(done.stdout)


def fast_tier_coverage(env: dict[str, str]) -> list[tuple[str, int, float]]:
    """(module path, statements, % of its lines the fast tier runs) for every module of lpstudy/ and app/."""
    with tempfile.TemporaryDirectory() as tmp:
        rc = Path(tmp) / "coveragerc"
        rc.write_text(COVERAGE_RC.format(data=Path(tmp) / ".coverage"))
        run_env = {**env, "COVERAGE_RCFILE": str(rc)}
        run_tier("fast", run_env, runner=("-m", "coverage", "run", f"--rcfile={rc}"))
        subprocess.run([sys.executable, "-m", "coverage", "combine", f"--rcfile={rc}", "-q"], cwd=ROOT, env=run_env,
                       check=True)
        report = Path(tmp) / "coverage.json"
        subprocess.run([sys.executable, "-m", "coverage", "json", f"--rcfile={rc}", "-q", "-o", str(report)],
                       cwd=ROOT, env=run_env, check=True)
        files = json.loads(report.read_text())["files"]
    rows = []
    for path, data in files.items():
        relative = Path(path).resolve().relative_to(ROOT) if Path(path).resolve().is_relative_to(ROOT) else Path(path)
        summary = data["summary"]
        if summary["num_statements"]:
            rows.append((str(relative), summary["num_statements"], summary["percent_covered"]))
    return sorted(rows, key=lambda row: (row[2], row[0]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tiers", default="fast,slow", help="the tiers to time, in order (default fast,slow)")
    parser.add_argument("--coverage", action="store_true",
                        help="also run the fast tier under coverage.py and list what it reaches")
    parser.add_argument("--one-at-a-time", action="store_true",
                        help="also time the fast tier without its -n (one test at a time), right after it")
    parser.add_argument("--below", type=float, default=50.0,
                        help="with --coverage, list the modules the fast tier covers less than this %% of")
    add_result_argument(parser, "test-tiers")
    args = parser.parse_args()
    tiers = [t.strip() for t in args.tiers.split(",") if t.strip()]
    unknown = [t for t in tiers if t not in TIER_NAMES]
    if unknown or not tiers:
        parser.error(f"--tiers takes fast, slow or both (comma-separated), got {args.tiers!r}")
    env = {**os.environ, "LPSTUDY_DATA": os.environ.get("LPSTUDY_DATA", CORPUS)}
    load_at_start = load_average()

    rows: list[list[object]] = [["tier", "command", "tests", "exit status", "wall time"]]
    total = 0.0
    for tier in tiers:
        wall, code, summary = run_tier(tier, env)
        total += wall
        rows.append([tier, f"`python -m pytest {readme_tiers()[tier]}`", summary, code,
                     f"{wall / 60:.1f} min ({wall:.0f} s)"])
        if tier == "fast" and args.one_at_a_time:
            alone, code, summary = run_tier(tier, env, one_at_a_time=True)
            rows.append(["fast, one test at a time", f"`python -m pytest {shlex.join(tier_args(tier, True))}`", summary,
                         code, f"{alone / 60:.1f} min ({alone:.0f} s); the README's line takes {wall / alone:.2f}× this"])
    if len(tiers) > 1:
        rows.append(["together", "", "", "", f"{total / 60:.1f} min ({total:.0f} s)"])
    notes = ("Each tier as the README runs it, from the repository root with "
             f"`LPSTUDY_DATA={env['LPSTUDY_DATA']}`, one after the other; the wall time includes pytest's "
             "start and collection.")
    more: list[tuple[str, list[list[object]]]] = []
    if args.coverage:
        covered = fast_tier_coverage(env)
        missed = [path for path, _, percent in covered if percent == 0]
        shown = [[path, n, f"{percent:.0f} %"] for path, n, percent in covered if percent < args.below]
        more.append((f"The {len(shown)} of {len(covered)} modules of lpstudy/ and app/ whose lines the fast tier "
                     f"runs less than {args.below:g} % of (coverage.py over the fast tier and the processes it "
                     "starts); modules at 0 %, which the fast tier does not reach: "
                     f"{', '.join(missed) if missed else 'none'}.",
                     [["module", "statements", "run by the fast tier"], *shown]))
    write_result(args.result, None, rows, notes, title="The test tiers", more_tables=more, load_at_start=load_at_start)
    for row in rows[1:]:
        print(" · ".join(str(cell) for cell in row if cell != ""))


if __name__ == "__main__":
    main()
