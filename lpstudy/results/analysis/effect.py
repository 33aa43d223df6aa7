"""The effect of p on the final loss: per-p summaries and the p × learning-rate map (parameter
importance: analysis.importance; p against the reference: the verdicts, lpstudy.results.answers)."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from lpstudy.results.analysis.best_of_m import MIN_INTERVAL_RUNS
from lpstudy.results.analysis.groups import DEFAULT_P_BINS, equal_width_bins, p_bins, p_positions
from lpstudy.results.analysis.cells import cell_frame
from lpstudy.results.analysis.intervals import t_interval
from lpstudy.results.analysis.selection import finished


SUMMARY_COLUMNS = ("p_bin", "p", "p_low", "p_high", "n", "n_ok", "n_diverged", "divergence_rate",
                   "mean", "std", "sem", "ci_low", "ci_high", "median", "best")


def _within(trials: pd.DataFrame, within: Sequence[str], table, empty: pd.DataFrame) -> pd.DataFrame:
    """table(group) for each setting of the fields `within` (a grid's other gridded fields, each
    trial's cell value: lpstudy.results.analysis.cells), those fields as columns after p's, rows sorted by
    p then by the setting."""
    values = cell_frame(trials, tuple(within))
    parts = []
    for setting, group in trials.groupby([values[name] for name in within], sort=False, dropna=False):
        part = table(group)
        if part.empty:
            continue
        setting = setting if isinstance(setting, tuple) else (setting,)
        at = list(part.columns).index("p") + 1
        for offset, (name, value) in enumerate(zip(within, setting)):
            part.insert(at + offset, name, [value] * len(part))
        parts.append(part)
    if not parts:
        out = empty.copy()
        for offset, name in enumerate(within):
            out.insert(list(out.columns).index("p") + 1 + offset, name, pd.Series(dtype="object"))
        return out
    out = pd.concat(parts, ignore_index=True)
    order = p_positions(out["p"].astype("float64"))
    keys = [out[name].map(lambda v: (isinstance(v, str), v if not isinstance(v, str) else 0, str(v)))
            for name in within]
    return (out.assign(_order=order, **{f"_k{i}": k for i, k in enumerate(keys)})
            .sort_values(["_order", *[f"_k{i}" for i in range(len(keys))]], kind="stable")
            .drop(columns=["_order", *[f"_k{i}" for i in range(len(keys))]]).reset_index(drop=True))


def per_p_summary(trials: pd.DataFrame, bins: int | Sequence[float] | None = None,
                  confidence: float = 0.95, within: Sequence[str] = ()) -> pd.DataFrame:
    """Final validation loss per p (exact values by default, or bins; see p_bins): one row per p
    group, sorted by p with ∞ last. n counts COMPLETE trials, n_ok those that did not diverge; mean,
    std (ddof 1), sem, the t interval (ci_low, ci_high: from MIN_INTERVAL_RUNS losses up, else NaN),
    median and best are over the n_ok losses.
    With `within` (a grid's other gridded fields, lpstudy.results.analysis.cells.setting_fields: a sweep's
    lr), one row per p and setting, the setting's fields as columns after p."""
    if within:
        return _within(trials, within, lambda group: per_p_summary(group, bins, confidence),
                       per_p_summary(trials.iloc[0:0], bins, confidence))
    done = finished(trials)
    done = done[done["p"].notna()]
    if done.empty:
        return pd.DataFrame({c: pd.Series(dtype="object" if c == "p_bin" else "float64") for c in SUMMARY_COLUMNS})
    groups = done.join(p_bins(done["p"], bins))
    rows = []
    for label, group in groups.groupby("p_bin", sort=False):
        losses = group["loss"].dropna()
        mean, low, high = t_interval(losses, confidence)
        if len(losses) < MIN_INTERVAL_RUNS:  # the pages' rule: no interval under 3 runs (2 runs gave −2.09 to 8.73)
            low = high = math.nan
        std = float(losses.std(ddof=1)) if len(losses) > 1 else math.nan
        rows.append({
            "p_bin": label, "p": group["p_center"].iloc[0], "p_low": group["p_low"].min(),
            "p_high": group["p_high"].max(), "p_order": group["p_order"].iloc[0],
            "n": len(group), "n_ok": len(losses), "n_diverged": int(group["diverged"].sum()),
            "divergence_rate": float(group["diverged"].mean()),
            "mean": mean, "std": std, "sem": std / math.sqrt(len(losses)) if len(losses) > 1 else math.nan,
            "ci_low": low, "ci_high": high,
            "median": float(losses.median()) if len(losses) else math.nan,
            "best": float(losses.min()) if len(losses) else math.nan,
        })
    out = pd.DataFrame(rows).sort_values("p_order", ignore_index=True)
    return out[list(SUMMARY_COLUMNS)]


def with_lr_bins(trials: pd.DataFrame, n_bins: int = 6) -> pd.DataFrame:
    """The trials with lr_bin (label), lr_center and lr_order: equal-width bins of log10(lr)."""
    out = trials.copy()
    lr = out["lr"].astype("float64")
    valid = lr.notna() & (lr > 0)
    logs = np.log10(lr[valid])
    out["lr_bin"], out["lr_center"], out["lr_order"] = None, math.nan, math.nan
    if logs.empty:
        return out
    index, low_logs, high_logs = equal_width_bins(logs.to_numpy(), n_bins)
    lows, highs = 10 ** low_logs, 10 ** high_logs
    out.loc[valid, "lr_order"] = index.astype("float64")
    out.loc[valid, "lr_center"] = np.sqrt(lows * highs)
    out.loc[valid, "lr_bin"] = [f"{a:.2g}–{b:.2g}" for a, b in zip(lows, highs)]
    return out


MAP_COLUMNS = ("p_bin", "p_order", "y_bin", "y_order", "n", "n_diverged", "divergence_rate", "mean_loss")


def map_axis(trials: pd.DataFrame) -> str | None:
    """What a p × … map is best drawn against: the learning rate where it varies, else the fold
    (a replicate grid; "repeat_fold" where its K folds ran more than once, `--repeats`: a row per
    repeat and fold, never two runs of a fold merged under one label), else None."""
    done = trials[trials["state"] == "COMPLETE"]
    if done["lr"].nunique() > 1:
        return "lr"
    if done["fold"].nunique() > 1:
        return "repeat_fold" if _repeats(done) > 1 else "fold"
    return None


def _repeats(trials: pd.DataFrame) -> int:
    """The repeats of the K folds among the trials (a trial made before repeats: repeat 0)."""
    return int(trials["repeat"].fillna(0).nunique()) if "repeat" in trials else 1


def p_map(trials: pd.DataFrame, p_bin_count: int | Sequence[float] | None = DEFAULT_P_BINS,
             lr_bin_count: int = 6, by: str = "lr") -> pd.DataFrame:
    """The p × learning-rate map (by="lr"; learning rates in log-spaced bins) or the p × fold map
    (by="fold"), or p × (repeat, fold) (by="repeat_fold": "fold 2, repeat 1", repeat by repeat): one row
    per occupied cell (y_bin, y_order: the lr bin or the fold) with the mean final validation loss
    (non-diverged runs), the number of completed runs and the divergence rate."""
    done = finished(trials)
    if by == "repeat_fold":
        done = done.assign(repeat=done["repeat"].fillna(0) if "repeat" in done else 0.0)
    done = done[done["p"].notna() & done["fold" if by == "repeat_fold" else by].notna()]
    if done.empty:
        return pd.DataFrame({c: pd.Series(dtype="object" if c in ("p_bin", "y_bin") else "float64")
                             for c in MAP_COLUMNS})
    cells = done.join(p_bins(done["p"], p_bin_count))
    if by == "lr":
        cells = with_lr_bins(cells, lr_bin_count).rename(columns={"lr_bin": "y_bin", "lr_order": "y_order"})
    elif by == "repeat_fold":
        folds = float(cells["fold"].max()) + 1
        cells = cells.assign(y_bin=[f"fold {f:g}, repeat {r:g}" for f, r in zip(cells["fold"], cells["repeat"])],
                             y_order=cells["repeat"].astype("float64") * folds + cells["fold"].astype("float64"))
    else:
        cells = cells.assign(y_bin=cells[by].map(lambda v: f"{v:g}"), y_order=cells[by].astype("float64"))
    out = (cells.groupby(["p_order", "p_bin", "y_order", "y_bin"], sort=True)
           .agg(n=("state", "size"), n_diverged=("diverged", "sum"), mean_loss=("loss", "mean"))
           .reset_index())
    out["divergence_rate"] = out["n_diverged"] / out["n"]
    return out[list(MAP_COLUMNS)]
