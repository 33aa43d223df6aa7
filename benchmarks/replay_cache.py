"""The suite benchmark's cache of replay traces: one JSON-lines file per grid, a key line first.

A trace (lpstudy.results.replay.traces.Trace) depends on the grid, the budget, the trial cap, the simulated
workers, the code that makes it (lpstudy.results.replay.traces.code_version) and Optuna's version: the key
holds all six, and a
file whose key differs is set aside (renamed *.stale) rather than read. Each later line is one
(method, seed) and its trace, appended as it finishes, so an interrupted run resumes where it
stopped. Scoring reads the traces and never enters the key: a change to a score needs no replay.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import optuna

from lpstudy.results.replay.traces import Trace, code_version


def cache_key(grid_file: Path, budget: float, max_trials: int, workers: int = 1) -> dict[str, Any]:
    return {"grid_sha256": hashlib.sha256(grid_file.read_bytes()).hexdigest(), "budget": budget,
            "max_trials": max_trials, "workers": workers, "code": code_version(), "optuna": optuna.__version__}


class TraceCache:
    def __init__(self, path: Path, key: dict[str, Any], read_only: bool = False) -> None:
        """Read the cache at `path` (set aside if its key is not `key`; read_only: refuse it then)."""
        self.path, self.key = path, key
        self.traces: dict[tuple[str, int], Trace] = {}
        if path.exists():
            lines = path.read_text().splitlines()
            stored = json.loads(lines[0]).get("key") if lines else None
            if stored != key and read_only:
                differ = sorted(k for k in key if (stored or {}).get(k) != key[k])
                raise SystemExit(f"{path.name} holds traces of another {', '.join(differ)}: replay them again")
            if stored == key:
                for line in lines[1:]:
                    try:
                        row = json.loads(line)
                    except json.JSONDecodeError:  # a line cut short by an interruption
                        continue
                    self.traces[(row["method"], int(row["seed"]))] = Trace.from_plain(row["trace"])
            else:
                path.rename(path.with_suffix(path.suffix + ".stale"))
        if not path.exists() and not read_only:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({"key": key}) + "\n")

    def __contains__(self, item: tuple[str, int]) -> bool:
        return item in self.traces

    def add(self, method: str, seed: int, trace: Trace) -> None:
        compact = Trace.from_plain(trace.to_plain())
        self.traces[(method, seed)] = compact
        with self.path.open("a") as out:
            out.write(json.dumps({"method": method, "seed": seed, "trace": trace.to_plain()}) + "\n")
