"""A benchmark's result file: benchmarks/results/NAME.md, one markdown table with the command that
measured it, the machine it ran on and the date, written by the benchmark script at the end of its run.

Each run replaces its file (`git diff benchmarks/results/` shows what moved); `--result NAME` writes
another file, `--result none` none. The docs cite these files for their figures.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
# The three lines every result file holds (tests/test_docs.py checks them).
COMMAND, MACHINE, DATE = "Command:", "Machine:", "Date:"
# A table: its header row, then its rows; a cell is anything str() writes (a count, a float, text)
Rows = Sequence[Sequence[object]]


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "unknown CPU"


def load_average() -> str:
    try:
        return " / ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())


def machine(load_at_start: str | None = None) -> str:
    """The CPU model, its cores and the load average (1, 5, 15 min): at the start of the run where
    given, and now, at its end."""
    load = f"load average {load_at_start} at the start, {load_average()} at the end" if load_at_start \
        else f"load average {load_average()} at the end"
    return f"{cpu_model()}, {os.cpu_count()} cores, {load} (1, 5, 15 min)"


def command_line(argv: list[str] | None = None) -> str:
    """This process's command line as a user would type it from the repository root."""
    argv = list(sys.argv if argv is None else argv)
    script = Path(argv[0])
    if script.is_absolute() and script.is_relative_to(ROOT):
        argv[0] = str(script.relative_to(ROOT))
    return " ".join(["python", *(shlex.quote(a) for a in argv)])


def add_result_argument(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument("--result", default=default,
                        help=f"the file under benchmarks/results/ this run writes, without .md "
                             f"(default {default}; 'none': none)")


def markdown_table(rows: Rows) -> str:
    """rows[0] is the header; a column whose cells are all numbers is right-aligned."""
    header, *body = [[str(cell) for cell in row] for row in rows]

    def numeric(i: int) -> bool:
        cells = [row[i] for row in body if i < len(row) and row[i] not in ("", "–", "-")]
        return bool(cells) and all(c.replace(".", "", 1).replace(",", "").replace("−", "").lstrip("-").isdigit()
                                   for c in cells)

    align = ["---:" if numeric(i) else "---" for i in range(len(header))]
    lines = [header, align, *body]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines) + "\n"


def write_result(name: str, command: str | None, table_rows: Rows, notes: str = "", *,
                 title: str | None = None, more_tables: Sequence[tuple[str, Rows]] = (), load_at_start: str | None = None, date: str | None = None,
                 machine_line: str | None = None, folder: Path = RESULTS) -> Path | None:
    """Write benchmarks/results/NAME.md: a title, the command (this process's by default), the
    machine, the date (now, UTC), the table, then notes, then any more tables the same run measured
    (each followed by its caption). NAME 'none' writes nothing."""
    if name == "none":
        return None
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.md"
    text = (f"# {title or name}\n\n"
            f"{COMMAND} `{command or command_line()}`\n\n"
            f"{MACHINE} {machine_line or machine(load_at_start)}\n\n"
            f"{DATE} {date or time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}\n\n"
            f"{markdown_table(table_rows)}")
    if notes:
        text += f"\n{notes.strip()}\n"
    for caption, rows in more_tables:
        text += f"\n{markdown_table(rows)}\n{caption.strip()}\n"
    path.write_text(text)
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}", file=sys.stderr)
    return path
