"""One configuration, one observation: a search's runs read as configurations measured on folds.

A search races its leaders on more folds (lpstudy.design.intensify): a configuration run on folds
0–3 is not four observations of what its settings do but one, measured four times, and the spread
of its four losses is the folds', not the settings'. Counted as four runs, it would weigh four times
in the surrogate and the rank correlations, narrow a band with fold noise, and make a p group of
its own folds look precise. So every answer of a search first reads its runs as configurations
(per_configuration): a configuration is the values of the searched fields (lpstudy.results.analysis
.searched; fold and seed are blocking factors, never part of it), and its value is its runs'
mean with the fold as a factor: the configuration's term of the additive two-way model
value = configuration + fold, fitted by least squares on the unbalanced layout (fold_adjusted), the
fold effects centred so that every configuration is read on the average fold. Where no configuration
ran on two folds the fold effects are not identified and the value is the plain mean.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

def configuration_ids(runs: pd.DataFrame, names) -> pd.Series:
    """Per run, its configuration's number (0, 1, …, in order of first appearance): runs with the
    same values of every field in `names` (numbers rounded to 12 significant digits) share one."""
    present = [n for n in names if n in runs]
    if not present or runs.empty:
        return pd.Series(np.arange(len(runs)), index=runs.index, name="configuration")
    keys = pd.DataFrame({n: runs[n].map(_key) for n in present}, index=runs.index)
    return keys.groupby(present, sort=False, dropna=False).ngroup().rename("configuration")


def _key(value):
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and value != 0:
        return float(f"{value:.12g}")
    return value


def fold_adjusted(values: np.ndarray, configuration: np.ndarray, fold: np.ndarray) -> np.ndarray:
    """Per configuration (0 … max), its value on the average fold: the configuration term of the
    least-squares fit of value = configuration + fold, the fold effects centred. The fold effects
    solve the two-way layout's reduced normal equations (the configurations eliminated: a folds ×
    folds system, however many configurations; Searle, "Linear Models", 1971, 7.1), by least squares
    where the layout leaves them short of rank."""
    n_config = int(configuration.max()) + 1 if len(configuration) else 0
    folds, fold_index = np.unique(fold, return_inverse=True)
    counts = np.zeros((n_config, len(folds)))
    np.add.at(counts, (configuration, fold_index), 1.0)
    per_config = counts.sum(axis=1)
    sums = np.bincount(configuration, values, n_config)
    fold_effect = np.zeros(len(folds))
    if len(folds) > 1 and ((counts > 0).sum(axis=1) > 1).any():  # a configuration on two folds: identified
        weights = counts / np.maximum(per_config, 1)[:, None]
        system = np.diag(counts.sum(axis=0)) - counts.T @ weights
        right = np.bincount(fold_index, values, len(folds)) - weights.T @ sums
        fold_effect = np.linalg.lstsq(system, right, rcond=None)[0]
        fold_effect -= fold_effect.mean()
    return (sums - counts @ fold_effect) / np.maximum(per_config, 1)


def per_configuration(runs: pd.DataFrame, names, value: str = "loss") -> pd.DataFrame:
    """The runs read as configurations, one row each, indexed by its first run's index (so that the
    searched fields' values, indexed like the runs, read it): `value` adjusted for the fold
    (fold_adjusted; the plain mean without a fold column), runs (how many it made) and folds (on how
    many folds)."""
    if runs.empty:
        return pd.DataFrame(columns=[value, "runs", "folds"])
    ids = configuration_ids(runs, names).to_numpy()
    fold = runs["fold"].fillna(-1).to_numpy() if "fold" in runs else np.zeros(len(runs))
    adjusted = fold_adjusted(runs[value].to_numpy(dtype="float64"), ids, fold)
    first = pd.Series(runs.index).groupby(ids).first()
    grouped = pd.Series(fold).groupby(ids)
    return pd.DataFrame({value: adjusted[first.index], "runs": grouped.size().to_numpy(),
                         "folds": grouped.nunique().to_numpy()}, index=pd.Index(first.to_numpy(), name=runs.index.name))
