"""What a study has spent on training, from what its trials store: steps and device time of every
trial (pruned, failed and running ones included), what pruning saved against running every trial
to its end, and the best value so far against cumulative compute. `lpstudy status` and the
dashboard show it; the replay benchmark (results.replay) counts compute the same way, in steps.

Per trial, from the trials frame (results.reading.frames):
  steps    the `steps` the run's summary recorded, else its last evaluated step (a trial killed
           before it wrote a summary, a running one), else 0
  time     the run's `wall_time_s` (training time), else its duration (start to end), else (a
           running trial) its steps at the study's median pace (time / steps of the others)
  device   "gpu" for any device but "cpu" (cuda:N, mps), else "cpu"
  saved    a pruned trial's max_steps − steps, and the time those steps would have taken at the
           trial's own pace (its time / its steps; a trial pruned at step 0 at the study's median pace)

Plain pandas: no Optuna, no torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from lpstudy.design.best import is_candidate
from lpstudy.values import SPENT_STATES, format_duration

FINISHED_STATES = ("COMPLETE", "PRUNED", "FAIL")


def per_trial(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per trial that has spent compute: number, state, steps, time_s, device_kind,
    saved_steps, saved_s."""
    columns = ["number", "state", "steps", "time_s", "device_kind", "saved_steps", "saved_s"]
    if trials.empty:
        return pd.DataFrame(columns=columns)
    t = trials[trials["state"].isin(SPENT_STATES)]
    steps = _column(t, "steps").where(lambda s: s > 0).fillna(_column(t, "last_step")).fillna(0.0)
    time_s = _column(t, "wall_time_s").where(lambda s: s > 0).fillna(_column(t, "duration_s"))
    device = t["device"] if "device" in t else pd.Series("", index=t.index)
    kind = np.where(device.fillna("").astype(str).str.lower().isin(["", "cpu"]), "cpu", "gpu")
    pruned = (t["state"] == "PRUNED").to_numpy()
    max_steps = _column(t, "max_steps").fillna(steps)
    saved_steps = np.where(pruned, np.maximum(0.0, max_steps - steps), 0.0)
    paced = (steps > 0) & time_s.notna()
    pace = float((time_s[paced] / steps[paced]).median()) if paced.any() else 0.0
    time_s = time_s.fillna(steps * pace)  # a running trial: its steps at the study's pace
    own_pace = np.where(paced, time_s / steps.where(paced, 1.0), pace)
    out = pd.DataFrame({"number": t["number"].to_numpy(), "state": t["state"].to_numpy(),
                        "steps": steps.to_numpy(dtype="float64"), "time_s": time_s.to_numpy(dtype="float64"),
                        "device_kind": kind, "saved_steps": saved_steps, "saved_s": saved_steps * own_pace})
    return out[columns].reset_index(drop=True)


def _column(frame: pd.DataFrame, name: str) -> pd.Series:
    if name not in frame:
        return pd.Series(np.nan, index=frame.index, dtype="float64")
    return pd.to_numeric(frame[name], errors="coerce").astype("float64")


def compute_summary(trials: pd.DataFrame) -> dict[str, Any]:
    """Steps and device time spent, by state and by device kind, and what pruning saved:
    `saved_share` is the saved steps over the steps of running every trial to its end
    (spent + saved)."""
    rows = per_trial(trials)
    steps = float(rows["steps"].sum())
    saved = float(rows["saved_steps"].sum())
    by_state = {state: int(rows.loc[rows["state"] == state, "steps"].sum()) for state in SPENT_STATES}
    return {
        "trials": int(len(rows)),
        "steps": int(steps),
        "steps_by_state": by_state,
        "cpu_s": float(rows.loc[rows["device_kind"] == "cpu", "time_s"].sum()),
        "gpu_s": float(rows.loc[rows["device_kind"] == "gpu", "time_s"].sum()),
        "pruned": int((rows["state"] == "PRUNED").sum()),
        "saved_steps": int(saved),
        "saved_s": float(rows["saved_s"].sum()),
        "saved_share": saved / (steps + saved) if steps + saved > 0 else 0.0,
    }


def compute_summary_of_sums(groups: list[dict[str, Any]], pace: float) -> dict[str, Any]:
    """compute_summary from per_trial's columns summed by state and device kind in SQL
    (lpstudy.db.study_queries.compute_sums), the trials without a time of their own at the median
    `pace`: the same numbers without a row per trial."""
    def total(column: str, **where: Any) -> float:
        return sum(g[column] for g in groups if all(g[k] == v for k, v in where.items()))

    def time_s(**where: Any) -> float:
        return total("time_s", **where) + total("unpaced_steps", **where) * pace

    steps, saved = total("steps"), total("saved_steps")
    return {
        "trials": int(total("trials")),
        "steps": int(steps),
        "steps_by_state": {state: int(total("steps", state=state)) for state in SPENT_STATES},
        "cpu_s": time_s(cpu=True),
        "gpu_s": time_s(cpu=False),
        "pruned": int(total("trials", state="PRUNED")),
        "saved_steps": int(saved),
        "saved_s": total("saved_s") + total("unpaced_saved_steps") * pace,
        "saved_share": saved / (steps + saved) if steps + saved > 0 else 0.0,
    }


def compute_line(compute: dict[str, Any]) -> str:
    """What the trials spent and what pruning saved, in one line (results.reading.compute.compute_summary)."""
    spent = (f"{compute['steps']:,} steps by {compute['trials']} trial(s) · CPU {format_duration(compute['cpu_s'])}"
             f" · GPU {format_duration(compute['gpu_s'])}")
    if not compute["pruned"]:
        return spent + " · nothing pruned"
    return (spent + f" · pruning saved {compute['saved_steps']:,} steps ({compute['saved_share']:.0%} of running "
            f"every trial to its end, about {format_duration(compute['saved_s'])}) in {compute['pruned']} pruned trial(s)")


def best_against_compute(trials: pd.DataFrame) -> pd.DataFrame:
    """Finished trials in the order they finished, with the compute spent by then (steps and
    seconds of every finished trial, pruned and failed ones included), whether it can be the best
    (completed, not diverged) and the best value so far (NaN before there is one)."""
    columns = ["number", "state", "value", "candidate", "steps", "time_s", "cumulative_steps", "cumulative_s",
               "best_value"]
    if trials.empty:
        return pd.DataFrame(columns=columns)
    done = trials[trials["state"].isin(FINISHED_STATES)]
    order = done.assign(_end=pd.to_datetime(done.get("datetime_complete"), errors="coerce")) \
        .sort_values(["_end", "number"], na_position="last")
    rows = per_trial(order).set_index("number")
    values = pd.to_numeric(order["value"], errors="coerce").to_numpy(dtype="float64")
    diverged = order["diverged"] if "diverged" in order else pd.Series(False, index=order.index)
    candidate = [is_candidate(s, v, d) for s, v, d in zip(order["state"], values, diverged)]
    best = np.fmin.accumulate(np.where(candidate, values, np.nan)) if len(values) else values
    numbers = order["number"].to_numpy()
    frame = pd.DataFrame({"number": numbers, "state": order["state"].to_numpy(), "value": values, "candidate": candidate,
                          "steps": rows.loc[numbers, "steps"].to_numpy(), "time_s": rows.loc[numbers, "time_s"].to_numpy()})
    frame["cumulative_steps"] = frame["steps"].cumsum()
    frame["cumulative_s"] = frame["time_s"].cumsum()
    frame["best_value"] = best
    return frame[columns]


def pruned_stops(curves: pd.DataFrame, trials: pd.DataFrame, column: str = "val_loss") -> pd.DataFrame:
    """Where each pruned trial stopped: its last evaluation (trial_number, step, `column`)."""
    numbers = set(trials.loc[trials["state"] == "PRUNED", "number"]) if not trials.empty else set()
    if not numbers or curves.empty:
        return pd.DataFrame(columns=["trial_number", "step", column])
    rows = curves[curves["trial_number"].isin(numbers)].dropna(subset=[column])
    last = rows.sort_values(["trial_number", "step"]).groupby("trial_number", as_index=False).last()
    return last[["trial_number", "step", column]].reset_index(drop=True)
