"""The columns of the results' tables as a person reads them: for each column name of the frames
lpstudy.results.analysis makes, a label and a number format, declared once for the dashboard's
tables (Streamlit's column_config, which keeps numbers numeric so that they sort as numbers) and
the report's. A fraction that the command line prints as a per-cent (`lpstudy status`: "+3.76 %")
is a per-cent here too."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from lpstudy.results.analysis.tuned import TUNED_TOP
from lpstudy.values import format_p


@dataclass(frozen=True)
class Column:
    """label: the header a person reads; spec: a Python format spec for the numbers ("" for text);
    percent: the value is a fraction shown as a per-cent (0.0376 → "+3.76 %")."""

    label: str
    spec: str = ""
    percent: bool = False


MISSING = "–"  # a missing value, in every table
LOSS = ".4f"
DIFF = "+.4f"

COLUMNS: dict[str, Column] = {
    # p and its groups
    "p": Column("p"),
    "p_bin": Column("p range"),
    # counts
    "n": Column("runs", "d"),
    "n_ok": Column("runs without divergence", "d"),
    "n_diverged": Column("diverged", "d"),
    "n_pairs": Column("pairs", "d"),
    "n_excluded": Column("pairs left out", "d"),
    "n_folds": Column("folds", "d"),
    "n_lrs": Column("learning rates", "d"),
    "spent": Column("trials spent", "d"),
    "complete": Column("completed", "d"),
    "pruned": Column("pruned", "d"),
    "diverged": Column("diverged", "d"),
    # losses and their statistics
    "loss": Column("final validation loss", LOSS),
    "mean": Column("mean loss", LOSS),
    "std": Column("standard deviation", LOSS),
    "sem": Column("standard error", LOSS),
    "median": Column("median loss", LOSS),
    "best": Column("best loss", LOSS),
    "best_trial": Column("best trial", "d"),
    "n_top": Column("runs in the top mean", "d"),
    "m": Column("m (runs compared)", "d"),
    "expected_best": Column("expected best of m", LOSS),
    "expected_low": Column("expected best: 95 % low", LOSS),
    "expected_high": Column("expected best: 95 % high", LOSS),
    "top_mean": Column(f"mean of the {TUNED_TOP} lowest", LOSS),
    "range": Column("range (max − min)", LOSS),
    "cv": Column("coefficient of variation", ".3g"),
    "ci_low": Column("95 % CI low", LOSS),
    "ci_high": Column("95 % CI high", LOSS),
    "lr_sensitivity": Column("LR sensitivity (nats)", LOSS),
    "divergence_rate": Column("divergence rate", ".1%", percent=True),
    # paired differences
    "mean_loss": Column("mean loss", LOSS),
    "ref_mean_loss": Column("reference mean loss", LOSS),
    "mean_diff": Column("mean difference", DIFF),
    "std_diff": Column("sd of the differences", LOSS),
    "relative_diff": Column("relative difference", "+.2%", percent=True),
    "t_stat": Column("t", "+.3g"),
    "p_value": Column("p-value", ".3g"),
    # the stages of a study run --until-decided
    "look": Column("look", "d"),
    "folds_run": Column("folds run", "d"),
    "alpha_look": Column("alpha this look", ".2g"),
    "alpha_spent": Column("alpha so far", ".2g"),
    # run fields
    "number": Column("trial", "d"),
    "lr": Column("learning rate", ".3g"),
    "lr_low": Column("lowest learning rate", ".3g"),
    "lr_high": Column("highest learning rate", ".3g"),
    "best_lr": Column("best lr", ".3g"),
    "gain_init": Column("gain₀", ".3g"),
    "best_gain_init": Column("best gain₀", ".3g"),
    "best_loss": Column("best loss", LOSS),
    "best_folds": Column("best on folds", "d"),  # 1: leading, not yet a best (lpstudy.results.reading.measured)
    "fold": Column("fold", "d"),
    "seed": Column("seed", "d"),
    "arm": Column("arm"),
    # who runs what
    "worker": Column("worker"),
    "device": Column("device"),
    "host": Column("host"),
    "since": Column("since"),
    "running_for": Column("running for"),
    "last_step": Column("last step", "d"),
    "last_val_loss": Column("last validation loss", LOSS),
}

# Columns whose values are differences from a reference, where a sign says which side is better.
SIGNED = ("mean_diff", "ci_low", "ci_high")


def column(name: str, overrides: dict[str, Column] | None = None) -> Column:
    """The column `name` as a table shows it (overrides first); an unknown name is its own label."""
    return (overrides or {}).get(name) or COLUMNS.get(name) or Column(name.replace("_", " "))


def p_group_label(frame: pd.DataFrame) -> str:
    """"p range" where the p groups are bins ("1–1.38"), "p" where they are exact values."""
    groups = frame["p_bin"].dropna().astype(str) if "p_bin" in frame else pd.Series(dtype=str)
    return "p range" if groups.str.contains("–").any() else "p"


def table_overrides(frame: pd.DataFrame, overrides: dict[str, Column] | None = None) -> dict[str, Column]:
    """A table's own labels: p's groups as "p" or "p range" (p_group_label), then the given ones."""
    return {"p_bin": Column(p_group_label(frame)), **(overrides or {})}


def signed(names=SIGNED) -> dict[str, Column]:
    """Overrides for a table of differences: its interval's ends carry their sign (+0.0123)."""
    return {name: Column(COLUMNS[name].label, DIFF) for name in names}


def shown_values(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame's values as a table holds them, numbers still numbers: only p is written as 3.5
    or ∞ (text: it holds ∞)."""
    out = frame.copy()
    if "p" in out:
        out["p"] = [format_p(v) if not isinstance(v, str) and pd.notna(v) else v for v in out["p"]]
    return out


def formatted(value, spec: Column) -> str:
    """One value as text (the report's tables): the column's format, a per-cent as "+3.76 %",
    missing as "–"."""
    if value is None or (not isinstance(value, str) and pd.api.types.is_scalar(value) and pd.isna(value)):
        return MISSING
    if not spec.spec or isinstance(value, str):
        return str(value)
    if spec.percent:
        return format(float(value), spec.spec).replace("%", " %")
    if spec.spec == "d":
        return f"{float(value):.0f}"
    return format(float(value), spec.spec)


def labelled(frame: pd.DataFrame, overrides: dict[str, Column] | None = None) -> pd.DataFrame:
    """The frame as text under human headers, for a static table (the report)."""
    overrides = table_overrides(frame, overrides)
    values = shown_values(frame)
    return pd.DataFrame({column(name, overrides).label: [formatted(v, column(name, overrides)) for v in values[name]]
                         for name in values.columns}, index=frame.index)
