"""Every study a database holds, one row each: its name, kind, trials by state, best value and last
activity (`lpstudy studies`). Read through the storage's one reader, so every kind of storage
answers it; the best value is lpstudy.design.best's, and a search's the configuration it returns
(lpstudy.results.reading.measured: its mean over the folds it was raced on, or its loss "leading on 1 fold"
before a race, never called best). A comparison (`lpstudy compare`) holds no trials
of its own: its row counts its arms' studies' trials, its best is the best of theirs, its last
activity theirs (the arms' own rows follow it, as they are studies too)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

import pandas as pd

from lpstudy.db.trial_reader import TrialReader
from lpstudy.names import arm_study_names
from lpstudy.results.analysis import state_counts
from lpstudy.results.reading.frames import load_trials, study_info
from lpstudy.results.reading.measured import best_of, search_chosen


def study_rows(reader: TrialReader) -> list[dict[str, Any]]:
    """One plain row per study (what --json prints), by name."""
    rows = []
    for record in reader.studies():
        trials = load_trials(reader, record.name)  # the one trials frame, whatever the storage
        counts = {state: int(n) for state, n in state_counts(trials).items()}  # interrupted: not failed
        info = study_info(record.name, record.attrs)
        chosen = reader.read(record.name, lambda tables: search_chosen(tables, info.kind, info.spec))
        best = best_of(trials, info, chosen)  # the one best (results.reading.measured.StudyBest), as Home shows it
        times = pd.concat([trials["datetime_complete"], trials["datetime_start"]]).dropna()
        kind = record.attrs.get("kind") or "(not lpstudy's)"
        rows.append({"study": record.name, "kind": kind, "synthetic": bool(record.attrs.get("synthetic")),
                     "preset": record.attrs.get("preset"), "trials": sum(counts.values()), "counts": counts,
                     "best": None if best is None else best.mean,
                     "best_folds": None if best is None or best.chosen_as == "lowest" else best.n_folds,
                     "best_arm": None if best is None else best.arm,
                     "best_cell": "-" if best is None else best.cell(),
                     "last_activity": pd.Timestamp(times.max()).isoformat(timespec="seconds") if len(times) else None})
    by_name = {row["study"]: row for row in rows}
    for row in rows:
        if row["kind"] == "compare":
            _through_arms(row, [by_name[n] for n in arm_study_names(str(row["study"]), by_name)])
    return rows


def _through_arms(row: dict[str, Any], arms: list[dict[str, Any]]) -> None:
    """A comparison's row read through its arms' rows: their trials by state, the best of their
    bests, their last activity."""
    for state in row["counts"]:
        row["counts"][state] = sum(arm["counts"][state] for arm in arms)
    row["trials"] = sum(arm["trials"] for arm in arms)
    row["arm_studies"] = len(arms)
    bests = [arm for arm in arms if arm["best"] is not None]
    replicated = [arm for arm in bests if arm.get("best_arm")]  # its arms' runs on the folds: their means
    most = max((arm["best_folds"] for arm in replicated), default=0)  # StudyBest's rule: the most folds first
    replicated = [arm for arm in replicated if arm["best_folds"] == most]
    lowest = min(replicated or bests, key=lambda arm: arm["best"]) if bests else None
    row["best"], row["best_folds"] = (lowest["best"], lowest["best_folds"]) if lowest else (None, None)
    row["best_arm"] = lowest["study"] if lowest else None  # the arm's study: the lowest mean over its folds
    row["best_cell"] = f"{lowest['study']}: {lowest['best_cell'].split(': ')[-1]}" if lowest else "-"
    times = [arm["last_activity"] for arm in arms if arm["last_activity"]]
    row["last_activity"] = max(times) if times else None


def render_rows(rows: list[dict[str, Any]], where: str) -> str:
    """The rows as a table for a terminal."""
    if not rows:
        return f"no studies in {where}; make one with `lpstudy search --preset smoke`"
    header = ("study", "kind", "preset", "trials", "complete", "pruned", "failed", "running", "waiting", "best",
              "last activity")
    lines = [header]
    for row in rows:
        counts = row["counts"]
        kind = row["kind"] + (" (synthetic)" if row["synthetic"] else "")
        last = row["last_activity"]
        lines.append((row["study"], kind, row["preset"] or "-", str(row["trials"]), str(counts["COMPLETE"]),
                      str(counts["PRUNED"]), str(counts["FAIL"]), str(counts["RUNNING"]), str(counts["WAITING"]),
                      row.get("best_cell") or "-",
                      datetime.fromisoformat(last).strftime("%Y-%m-%d %H:%M") if last else "-"))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join("  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines)

