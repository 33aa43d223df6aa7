"""The stability lens: final loss against the learning rate, LR sensitivity and the initial
attention entropy per gain rule."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd

from lpstudy.results.analysis.effect import with_lr_bins
from lpstudy.results.analysis.groups import p_bins
from lpstudy.results.analysis.intervals import t_interval
from lpstudy.results.analysis.selection import finished
from lpstudy.values import format_p


EXACT_LR_LIMIT = 8  # at most this many distinct learning rates (a sweep) are kept as they are
LR_BINS = 6  # more (a search) are grouped into this many bins, equal in log10(lr)


def lr_groups(lr: pd.Series) -> pd.Series:
    """The learning rate each run counts under: its own for a sweep (a few distinct values), else
    the geometric centre of its bin, LR_BINS equal bins of log10(lr) (a search samples lr
    continuously, so no two runs share one and a curve over raw values would zigzag)."""
    if lr.nunique() <= EXACT_LR_LIMIT:
        return lr.astype("float64")
    return with_lr_bins(pd.DataFrame({"lr": lr}), LR_BINS)["lr_center"].astype("float64")


LR_CURVE_COLUMNS = ("p_bin", "p", "p_order", "lr", "n", "n_diverged", "mean", "ci_low", "ci_high")
SENSITIVITY_COLUMNS = ("p_bin", "p", "p_order", "n_folds", "n_lrs", "lr_low", "lr_high", "best_lr",
                       "mean", "ci_low", "ci_high")


def capped_losses(trials: pd.DataFrame, initial_loss: float | None = None) -> pd.DataFrame:
    """COMPLETE trials with p and lr, each with `capped`: its final validation loss capped at the
    initial loss L0, a diverged run counting as L0 (Wortsman et al., arXiv:2309.14322, §2: "we
    use min(ℓ, ℓ0)" so that a diverged run weighs as much as one that learned nothing). L0 is
    `initial_loss`, else the value the objective gives a diverged run (ln V, the loss of a uniform
    guess, which is a fresh model's loss to within a few hundredths of a nat), else no cap."""
    done = finished(trials)
    done = done[done["p"].notna() & done["lr"].notna()].copy()
    diverged = done["diverged"].astype(bool)
    if initial_loss is None:
        values = done.loc[diverged, "value"].dropna()
        initial_loss = float(values.max()) if len(values) else math.inf
    raw = done["loss"].where(~diverged, initial_loss)
    done["capped"] = np.minimum(raw.astype("float64"), initial_loss)
    return done[done["capped"].notna()]


def swept(done: pd.DataFrame) -> pd.DataFrame:
    """The runs of a learning-rate sweep: those whose exact p and gain_init were run at two learning
    rates or more (a search's runs, each at its own p, gain and lr, are none of them)."""
    if done.empty:
        return done
    keys = [done["p"].astype("float64"), done["gain_init"].astype("float64").fillna(-1.0)
            if "gain_init" in done else pd.Series(0.0, index=done.index)]
    rates = done.groupby(keys, dropna=False)["lr"].transform("nunique")
    return done[rates >= 2]


def lr_curve(trials: pd.DataFrame, initial_loss: float | None = None, confidence: float = 0.95,
             bins: int | Sequence[float] | None = None) -> pd.DataFrame:
    """Final validation loss against the learning rate, per p (one curve each): per (p, lr) the
    runs, the diverged ones, and the mean of the capped losses (capped_losses) with its t interval
    across folds or seeds. p is grouped as p_bins does (exact values, or `bins` for a search)."""
    done = capped_losses(trials, initial_loss)
    if done.empty:
        return pd.DataFrame({c: pd.Series(dtype="object" if c == "p_bin" else "float64") for c in LR_CURVE_COLUMNS})
    done = done.join(p_bins(done["p"], bins)).assign(lr=lambda d: lr_groups(d["lr"]))
    rows = []
    for (order, label, lr), group in done.groupby(["p_order", "p_bin", "lr"], sort=True):
        mean, low, high = t_interval(group["capped"], confidence)
        rows.append({"p_bin": label, "p": float(group["p_center"].iloc[0]), "p_order": order, "lr": float(lr),
                     "n": len(group), "n_diverged": int(group["diverged"].astype(bool).sum()),
                     "mean": mean, "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows, columns=list(LR_CURVE_COLUMNS))


def lr_sensitivity(trials: pd.DataFrame, initial_loss: float | None = None, pair_on: str = "fold",
                   confidence: float = 0.95, bins: int | Sequence[float] | None = None) -> pd.DataFrame:
    """Learning-rate sensitivity per p (Wortsman et al., "Small-scale proxies for large-scale
    Transformer training instabilities", arXiv:2309.14322, §2): over a sweep of learning rates
    (a search's continuous learning rates are grouped first, see lr_groups),

        LR sensitivity = E_lr[ min(ℓ(lr), ℓ0) − min_lr ℓ(lr) ]

    the expected excess of the final loss over the best one across the LR range, a diverged run
    (or one above the initial loss ℓ0) counting as ℓ0. It is computed per fold (pair_on: the
    replicates), over the learning rates that fold ran (several runs of one cell are averaged),
    and given per p as the mean across folds with its t interval. Only folds that ran every
    learning rate of their p count; a p with fewer than 2 learning rates has none. Only a sweep
    counts (swept): learning rates varied at one p and one gain, never a search's runs that differ
    in p and the gain as well as lr. `best_lr` is the learning rate with the lowest mean capped
    loss across folds."""
    done = swept(capped_losses(trials, initial_loss))
    empty = pd.DataFrame({c: pd.Series(dtype="object" if c == "p_bin" else "float64") for c in SENSITIVITY_COLUMNS})
    done = done[done[pair_on].notna()] if pair_on in done else done.iloc[0:0]
    if done.empty:
        return empty
    done = done.join(p_bins(done["p"], bins)).assign(lr=lambda d: lr_groups(d["lr"]))
    rows = []
    for (order, label), group in done.groupby(["p_order", "p_bin"], sort=True):
        cells = group.groupby([pair_on, "lr"])["capped"].mean().unstack("lr")
        lrs = cells.columns.to_numpy(dtype="float64")
        if len(lrs) < 2:
            continue
        full = cells.dropna()  # the folds that ran every learning rate
        per_fold = full.mean(axis=1) - full.min(axis=1)
        mean, low, high = t_interval(per_fold, confidence)
        by_lr = cells.mean(axis=0)
        rows.append({"p_bin": label, "p": float(group["p_center"].iloc[0]), "p_order": order,
                     "n_folds": len(full), "n_lrs": len(lrs), "lr_low": float(lrs.min()),
                     "lr_high": float(lrs.max()), "best_lr": float(by_lr.idxmin()),
                     "mean": mean, "ci_low": low, "ci_high": high})
    if not rows:
        return empty
    return pd.DataFrame(rows, columns=list(SENSITIVITY_COLUMNS))


def initial_entropy(curves: pd.DataFrame, trials: pd.DataFrame) -> pd.DataFrame:
    """The mean attention entropy at step 0 (before any update) per p and gain rule ('default':
    QKNorm's g₀, 'matched', 'fixed': a number, 'sampled' where those numbers differ (a search);
    trials before the rule was stored count as 'fixed'): p, p_bin, gain_rule, n, entropy (mean over runs), gain_init (mean)."""
    columns = ["p_bin", "p", "gain_rule", "n", "entropy", "gain_init"]
    if curves.empty or "attn_entropy" not in curves:
        return pd.DataFrame(columns=columns)
    rule = trials["gain_rule"] if "gain_rule" in trials else pd.Series(None, index=trials.index, dtype="object")
    rule = rule.fillna("fixed")
    fixed = rule == "fixed"
    if "gain_init" in trials and trials.loc[fixed, "gain_init"].nunique() > 1:  # a search sampled it
        rule = rule.mask(fixed, "sampled")
    info = trials.assign(gain_rule=rule)[["number", "p", "gain_rule", "gain_init"]]
    start = curves[curves["step"] == 0].dropna(subset=["attn_entropy"])
    joined = start.merge(info.rename(columns={"number": "trial_number"}), on="trial_number", how="inner")
    joined = joined[joined["p"].notna()]
    if joined.empty:
        return pd.DataFrame(columns=columns)
    out = (joined.groupby(["gain_rule", "p"], sort=True)
           .agg(n=("attn_entropy", "size"), entropy=("attn_entropy", "mean"), gain_init=("gain_init", "mean"))
           .reset_index())
    out["p_bin"] = out["p"].map(format_p)
    return out[columns]
