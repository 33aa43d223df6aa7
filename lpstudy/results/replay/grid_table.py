"""A grid study as a table of learning curves: every configuration × fold with its curve, the
steps it ran, its wall time and whether it diverged. What the replay benchmark (traces.py) runs
samplers and pruners against instead of training.

Read from a grid study of any database (`from_study`: a study made with `--sampler grid` or
`lpstudy replicate`, every cell COMPLETE), or from the compact file it is shipped as
(`read_table`/`write_table`: gzipped JSON, format FORMAT). The grid's searched fields except
`fold` are the configuration; `fold` is the replication across which a configuration is judged.

Plain Python over pandas and NumPy: no torch, no Optuna.
"""

from __future__ import annotations

import gzip
import itertools
import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lpstudy.errors import UserError
from lpstudy.files import atomic_write
from lpstudy.values import is_inf, json_safe, read_p

if TYPE_CHECKING:
    from lpstudy.db.trial_reader import TrialReader

FORMAT = "lpstudy-grid/1"
FOLD = "fold"  # the replication axis; every other searched field of the grid is a configuration's
LOG_SCALE = ("lr", "gain_init")  # searched on a log scale (lpstudy.design.space.LOG_SCALE_FIELDS)


@dataclass(frozen=True)
class GridShape:
    """A grid's size: its configurations, folds, evaluations a curve, and training steps in all (every
    configuration on every fold, to its end): the grid a replay's compute is a fraction of."""

    configs: int
    folds: int
    evals: int
    steps_total: int


@dataclass(frozen=True)
class Run:
    """One configuration on one fold: its validation curve and what it cost."""

    steps: tuple[int, ...]  # evaluation steps, 0 first
    val_loss: tuple[float, ...]
    steps_run: int  # optimisation steps the run took (the compute it cost)
    value: float  # the trial's value: the final validation loss, ln V for a diverged run
    diverged: bool = False
    wall_time_s: float = math.nan


@dataclass
class GridTable:
    """Configurations × folds of real runs. `values[name]` lists the grid's values of each
    configuration field (Optuna's form: p = ∞ is "inf"); `configs[i]` is one combination."""

    params: tuple[str, ...]
    values: dict[str, list[Any]]
    configs: list[tuple]
    folds: list[int]
    runs: dict[tuple[int, int], Run]  # (config index, fold) -> run
    preset: str = "cpu"
    fixed: dict[str, Any] = field(default_factory=dict)  # the fields every run shares (folds K included)
    source: dict[str, Any] = field(default_factory=dict)  # where it came from, and how to make it again

    def __post_init__(self) -> None:
        self._index = {config: i for i, config in enumerate(self.configs)}

    # -- shape -----------------------------------------------------------------------------
    @property
    def n_evals(self) -> int:
        """Evaluations of a full curve (step 0 included)."""
        return max(len(run.steps) for run in self.runs.values())

    @property
    def steps_total(self) -> int:
        """The full grid's compute: every configuration on every fold, run to its end."""
        return int(sum(run.steps_run for run in self.runs.values()))

    def shape(self) -> GridShape:
        return GridShape(configs=len(self.configs), folds=len(self.folds), evals=self.n_evals,
                         steps_total=self.steps_total)

    def run(self, config: int, fold: int) -> Run:
        return self.runs[(config, fold)]

    # -- the truth a method is judged by -----------------------------------------------------
    def config_losses(self) -> np.ndarray:
        """Each configuration's mean value over the folds (what a returned configuration is judged by)."""
        return np.array([np.mean([self.runs[(c, f)].value for f in self.folds]) for c in range(len(self.configs))])

    def best_config(self) -> int:
        return int(np.argmin(self.config_losses()))

    def fold_spread(self) -> float:
        """One fold's noise in a configuration's loss, pooled across configurations: the standard
        deviation of the configuration × fold interaction (two-way residuals, fold effects removed,
        (C − 1)(K − 1) degrees of freedom) over the configurations that never diverged and whose
        mean loss is at or below the median of those (the region a search ends in; the unstable
        rest has heavier tails). 0 with one fold or fewer than two such configurations."""
        losses = np.array([[self.runs[(c, f)].value for f in self.folds] for c in range(len(self.configs))])
        stable = ~np.array([[self.runs[(c, f)].diverged for f in self.folds] for c in range(len(self.configs))]).any(1)
        means = losses.mean(axis=1)
        if stable.sum() < 2 or len(self.folds) < 2:
            return 0.0
        kept = losses[stable & (means <= np.median(means[stable]))]
        if len(kept) < 2:
            return 0.0
        residual = kept - kept.mean(axis=1, keepdims=True) - kept.mean(axis=0, keepdims=True) + kept.mean()
        dof = (kept.shape[0] - 1) * (kept.shape[1] - 1)
        return float(math.sqrt((residual ** 2).sum() / dof))

    def epsilon(self) -> float:
        """Within ε of a best counts as found: the larger of the pooled fold spread (fold_spread:
        with K = 2 folds and a hundred configurations, about a hundred degrees of freedom where the
        best configuration's own two folds give one) and 0.5 % of the best configuration's loss."""
        return max(self.fold_spread(), 0.005 * float(self.config_losses().min()))

    def rank_correlations(self) -> dict[int, float]:
        """Whether early evaluations carry information: for each evaluation step, Spearman's rank
        correlation across every run (configuration × fold) between the validation loss there and
        the run's final value (a run that stopped earlier keeps its last loss)."""
        from scipy.stats import spearmanr

        keys = sorted(self.runs)
        finals = [self.runs[k].value for k in keys]
        steps = sorted({s for run in self.runs.values() for s in run.steps if s > 0})
        out: dict[int, float] = {}
        for step in steps:
            at = []
            for k in keys:
                run = self.runs[k]
                before = [v for s, v in zip(run.steps, run.val_loss) if s <= step]
                at.append(before[-1] if before else math.nan)
            rho = spearmanr(at, finals, nan_policy="omit").statistic
            out[step] = float(rho)
        return out

    # -- mapping a sampled point onto the grid ----------------------------------------------
    def nearest(self, params: dict[str, Any]) -> int:
        """The configuration nearest to a sampled point, field by field (on a log scale for lr and
        gain_init, linear otherwise; a categorical value must match; p = ∞ maps to ∞ if the grid has it)."""
        config = tuple(_nearest_value(name, self.values[name], params[name]) for name in self.params)
        return self._index[config]

    def ranges(self) -> dict[str, Any]:
        """The search space the grid spans, as study-space entries (lpstudy.design.space): a range
        low:high per numeric field (log for lr and gain_init), a choice for anything else."""
        space: dict[str, Any] = {}
        for name in self.params:
            values = self.values[name]
            finite = [float(v) for v in values if is_numeric_value(v) and math.isfinite(float(v))]
            with_inf = any(is_inf(v) for v in values)
            if len(finite) == len(values) - (1 if with_inf else 0) and len(finite) >= 2:
                entry: dict[str, Any] = {"low": min(finite), "high": max(finite), "log": name in LOG_SCALE}
                if with_inf:
                    entry["inf"] = True
                space[name] = entry
            else:
                space[name] = {"choices": list(values)}
        return space


def is_numeric_value(value: Any) -> bool:
    """Whether a grid's value is a number: an int, a float, or p = ∞ as its parameter holds it ("inf")."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    return is_inf(value)


def _nearest_value(name: str, grid: list[Any], value: Any) -> Any:
    if not all(is_numeric_value(v) for v in grid) or not is_numeric_value(value):
        if value in grid:
            return value
        raise KeyError(f"{name}={value!r} is not a value of the grid ({grid})")
    x = read_p(value) if is_inf(value) else float(value)
    if math.isinf(x):
        at_inf = [v for v in grid if is_inf(v)]
        if at_inf:
            return at_inf[0]
        x = max(float(v) for v in grid if not is_inf(v))
    finite = [v for v in grid if not is_inf(v)]
    if name in LOG_SCALE and all(float(v) > 0 for v in finite) and x > 0:
        return min(finite, key=lambda v: abs(math.log(float(v)) - math.log(x)))
    return min(finite, key=lambda v: abs(float(v) - x))


# -- from a grid study ------------------------------------------------------------------------

def from_study(reader: TrialReader, study_name: str) -> GridTable:
    """The table of a grid study in a database. UserError if it is not a grid over folds or a
    cell has no COMPLETE trial yet (it says how many, and how to finish them)."""
    from lpstudy.db.urls import redact
    from lpstudy.names import shell_quoted
    from lpstudy.results.reading.frames import load_study
    from lpstudy.design.space import Choice

    data = load_study(reader, study_name, curves=True)
    spec = data.info.spec
    if spec is None:
        raise UserError(f"study {study_name!r} was not made by lpstudy (it has no spec); replay needs a grid study")
    if not spec.is_grid:
        raise UserError(f"study {study_name!r} is a {spec.sampler} search, not a grid: replay needs every "
                        "configuration run, e.g. `lpstudy create --sampler grid --p 1,2,3 --lr 1e-3,1e-2 "
                        "--fold 0,1 ...` or `lpstudy replicate`")
    choices = [p for p in spec.space.params if isinstance(p, Choice)]
    fold_param = next((p for p in choices if p.name == FOLD), None)
    if fold_param is None or len(fold_param.choices) < 2:
        raise UserError(f"grid study {study_name!r} has no list of folds: replay judges a configuration across "
                        "folds, so the grid needs at least two (--fold 0,1)")
    params = tuple(p.name for p in choices if p.name != FOLD)
    if not params:
        raise UserError(f"grid study {study_name!r} searches only folds: give it a configuration to search "
                        "(--p, --lr, --gain-init or --search)")
    values = {p.name: [spec.space.optuna_params({p.name: v})[p.name] for v in p.choices] for p in choices}
    configs = list(itertools.product(*(values[n] for n in params)))
    index = {c: i for i, c in enumerate(configs)}
    folds = [int(f) for f in values[FOLD]]

    trials = data.trials.sort_values("number")
    curves = data.curves
    by_cell: dict[tuple[int, int], list] = {}
    for row in trials.to_dict("records"):
        optuna_params = {k[len("param_"):]: v for k, v in row.items() if k.startswith("param_")
                         and v is not None and not (isinstance(v, float) and math.isnan(v))}
        try:
            key = dict(spec.space.cell_of(optuna_params))
        except Exception:  # a trial outside the grid (added by hand): not a cell
            continue
        if any(key.get(n) is None for n in (*params, FOLD)):
            continue
        cell = (index[tuple(key[n] for n in params)], int(key[FOLD]))
        by_cell.setdefault(cell, []).append(row)

    runs: dict[tuple[int, int], Run] = {}
    missing = 0
    for c in range(len(configs)):
        for f in folds:
            rows = by_cell.get((c, f), [])
            done = [r for r in rows if r["state"] == "COMPLETE"]
            if not done:
                missing += 1
                continue
            runs[(c, f)] = _run_of(done[0], rows, curves)
    if missing:
        raise UserError(f"grid study {study_name!r} in {redact(reader.url)} has {missing} of "
                        f"{len(configs) * len(folds)} cells without a completed run; finish them first: "
                        f"lpstudy worker --study {shell_quoted(study_name)}")
    fixed = {k: v for k, v in spec.space.to_plain().items() if v.get("type") == "fixed"}
    fixed = {k: v["value"] for k, v in fixed.items()}
    fixed.setdefault("folds", spec.folds)
    source = {"study": study_name, "storage": redact(reader.url),
              "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    return GridTable(params=params, values={n: values[n] for n in params}, configs=configs, folds=folds,
                     runs=runs, preset=spec.preset, fixed=fixed, source=source)


def _run_of(done: dict, rows: list[dict], curves) -> Run:
    """The completed trial of a cell, its curve completed by the earlier trials of the cell (a
    trial resumed from a checkpoint stores only the evaluations after it)."""
    own = curves[curves["trial_id"] == done["trial_id"]].sort_values("step")
    steps = [int(s) for s in own["step"]]
    vals = [float(v) for v in own["val_loss"]]
    first = steps[0] if steps else math.inf
    for other in sorted(rows, key=lambda r: -r["number"]):  # the latest earlier attempt first
        if other["trial_id"] == done["trial_id"] or first == 0:
            continue
        part = curves[(curves["trial_id"] == other["trial_id"]) & (curves["step"] < first)].sort_values("step")
        if len(part):
            steps = [int(s) for s in part["step"]] + steps
            vals = [float(v) for v in part["val_loss"]] + vals
            first = steps[0]
    steps_run = done.get("steps")
    steps_run = int(steps_run) if steps_run is not None and not math.isnan(steps_run) else (steps[-1] if steps else 0)
    return Run(steps=tuple(steps), val_loss=tuple(vals), steps_run=steps_run, value=float(done["value"]),
               diverged=bool(done.get("diverged")), wall_time_s=float(done.get("wall_time_s") or math.nan))


# -- the compact file -------------------------------------------------------------------------

def to_plain(table: GridTable) -> dict[str, Any]:
    runs = []
    for (c, f), run in sorted(table.runs.items()):
        runs.append({"config": list(table.configs[c]), "fold": f, "steps": list(run.steps),
                     "val_loss": [round(v, 5) for v in run.val_loss], "steps_run": run.steps_run,
                     "value": round(run.value, 6), "diverged": run.diverged,
                     "wall_time_s": None if math.isnan(run.wall_time_s) else round(run.wall_time_s, 2)})
    return {"format": FORMAT, "preset": table.preset, "fixed": json_safe(table.fixed), "params": list(table.params),
            "values": table.values, "folds": table.folds, "source": table.source, "runs": runs}


def from_plain(plain: dict[str, Any], where: str = "grid file") -> GridTable:
    if not isinstance(plain, dict) or plain.get("format") != FORMAT:
        raise UserError(f"{where} is not an lpstudy grid table (format {FORMAT}); make one with "
                        "`lpstudy export-grid --study NAME -o FILE`")
    params = tuple(plain["params"])
    values = {n: list(plain["values"][n]) for n in params}
    configs = list(itertools.product(*(values[n] for n in params)))
    index = {c: i for i, c in enumerate(configs)}
    runs = {}
    for r in plain["runs"]:
        wall = r.get("wall_time_s")
        runs[(index[tuple(r["config"])], int(r["fold"]))] = Run(
            steps=tuple(int(s) for s in r["steps"]), val_loss=tuple(float(v) for v in r["val_loss"]),
            steps_run=int(r["steps_run"]), value=float(r["value"]), diverged=bool(r["diverged"]),
            wall_time_s=math.nan if wall is None else float(wall))
    folds = [int(f) for f in plain["folds"]]
    if len(runs) != len(configs) * len(folds):
        raise UserError(f"{where} holds {len(runs)} runs, not every one of {len(configs)} configurations × "
                        f"{len(folds)} folds")
    return GridTable(params=params, values=values, configs=configs, folds=folds, runs=runs,
                     preset=str(plain.get("preset", "cpu")), fixed=dict(plain.get("fixed") or {}),
                     source=dict(plain.get("source") or {}))


def write_table(table: GridTable, path: str | Path) -> Path:
    """Write the table atomically as gzipped JSON (mtime 0: the same table gives the same bytes)."""
    text = json.dumps(to_plain(table), separators=(",", ":"), sort_keys=True).encode()

    def write(out) -> None:
        with gzip.GzipFile(fileobj=out, mode="wb", mtime=0) as gz:
            gz.write(text)

    return atomic_write(path, write)


def read_table(path: str | Path) -> GridTable:
    from lpstudy.paths import check_input_file

    path = check_input_file(path, "--grid")
    try:
        with gzip.open(path, "rt", encoding="utf-8") if str(path).endswith(".gz") else open(path, encoding="utf-8") as f:
            plain = json.load(f)
    except (OSError, ValueError) as exc:
        raise UserError(f"--grid {path}: cannot read it as (gzipped) JSON: {exc}") from None
    return from_plain(plain, f"--grid {path}")
