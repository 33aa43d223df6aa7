"""Stability, arm by arm against the reference, with the same care as the loss verdicts.

- divergence: per arm the share of finished runs that diverged, with Wilson's interval
  (analysis.intervals), and Fisher's exact test of the arm's 2 × 2 table against the reference's
  (scipy), Holm-adjusted across the arms;
- logit growth (the largest attention logit over training less its first value: Wortsman et al.
  2023's attention-logit growth) and the smallest head entropy over training (Zhai et al. 2023's
  entropy collapse): per fold the arm's run minus the reference's, with the fold-corrected t
  interval and Holm-adjusted p-value (fold_tests), as the loss verdicts.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lpstudy.results.analysis.intervals import wilson_interval
from lpstudy.results.answers.fold_tests import corrected_stats, difference_p, holm, interval


def divergence(runs: pd.DataFrame, reference, alpha: float) -> list[dict]:
    """runs: one row per finished run with `arm` and `diverged`. Per arm (reference first): diverged,
    runs, rate, its Wilson interval, and (others) Fisher's exact p-value against the reference,
    Holm-adjusted."""
    from scipy.stats import fisher_exact

    counts = runs.groupby("arm", sort=False)["diverged"].agg(["sum", "size"])
    if reference not in counts.index:
        return []
    ref_k, ref_n = int(counts.loc[reference, "sum"]), int(counts.loc[reference, "size"])
    rows, raw = [], []
    for arm, (k, n) in counts.iterrows():
        low, high = wilson_interval(int(k), int(n), 1 - alpha)
        row = {"value": arm, "diverged": int(k), "runs": int(n), "rate": k / n if n else math.nan,
               "low": low, "high": high, "p_value": None}
        if arm != reference:
            raw.append(fisher_exact([[int(k), int(n - k)], [ref_k, ref_n - ref_k]])[1])
        rows.append(row)
    adjusted = holm(np.asarray(raw), alpha)[1] if raw else []
    others = [r for r in rows if r["value"] != reference]
    for row, p in zip(others, adjusted):
        row["p_value"] = float(p)
    return rows


def paired_metric(table: pd.DataFrame, reference, k: int, alpha: float) -> list[dict]:
    """table: arms × folds of a per-run number. Per arm other than the reference: its mean, the mean
    difference from the reference over the folds both have, the corrected interval and the
    Holm-adjusted p-value of "no difference"."""
    if reference not in table.index or len(table.index) < 2:
        return []
    ref = table.loc[reference]
    arms = [a for a in table.index if a != reference]
    diffs = np.stack([(table.loc[a] - ref).to_numpy(dtype="float64") for a in arms])
    mean, se, df = corrected_stats(diffs, k)
    low, high = interval(mean, se, df, 1 - alpha)
    _, adjusted = holm(difference_p(mean, se, df), alpha)
    rows = [{"value": reference, "mean": float(ref.mean()), "n_folds": int(ref.notna().sum())}]
    for i, arm in enumerate(arms):
        rows.append({"value": arm, "mean": float(table.loc[arm].mean()), "n_folds": int((~np.isnan(diffs[i])).sum()),
                     "diff": float(mean[i]), "low": float(low[i]), "high": float(high[i]),
                     "p_value": None if math.isnan(adjusted[i]) else float(adjusted[i])})
    return rows


def curve_extremes(curves: pd.DataFrame) -> pd.DataFrame:
    """Per trial (trial_id): logit_growth (largest max_logit over training less the first) and
    min_entropy (smallest min_head_entropy over training); empty where the curves hold neither."""
    needed = {"trial_id", "step", "max_logit", "min_head_entropy"}
    if curves is None or curves.empty or not needed <= set(curves.columns):
        return pd.DataFrame(columns=["logit_growth", "min_entropy"])
    ordered = curves.sort_values(["trial_id", "step"])
    grouped = ordered.groupby("trial_id")
    first = grouped["max_logit"].apply(lambda s: s.dropna().iloc[0] if s.notna().any() else math.nan)
    return pd.DataFrame({"logit_growth": grouped["max_logit"].max() - first,
                         "min_entropy": grouped["min_head_entropy"].min()})


def stability_answer(runs: pd.DataFrame, curves: pd.DataFrame, reference, k: int, alpha: float) -> dict:
    """The answer's `stability` entry: runs is one row per finished run with arm, fold, diverged and
    trial_id; curves the study's curves (may be empty: then only the divergence rates)."""
    extremes = curve_extremes(curves)
    out = {"divergence": divergence(runs, reference, alpha), "logit_growth": [], "min_entropy": []}
    if len(extremes):
        joined = runs.join(extremes, on="trial_id")
        for name in ("logit_growth", "min_entropy"):
            table = joined.groupby(["arm", "fold"], sort=False)[name].mean().unstack("fold")
            if table.notna().to_numpy().any():
                out[name] = paired_metric(table, reference, k, alpha)
    return out
