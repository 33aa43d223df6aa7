"""A surrogate of a search's final loss, and p's profile and partial dependence read from it.

A search samples p together with the learning rate and the gain, so the raw losses per p mix p's
effect with theirs. A Gaussian process (scikit-learn's GaussianProcessRegressor: a constant times
an anisotropic Matérn 5/2 kernel plus white noise, its hyperparameters by maximum marginal
likelihood; Rasmussen & Williams, "Gaussian Processes for Machine Learning", 2006) is fitted to the
final loss of the completed runs that did not diverge, over every searched field that varies: p on
its axis, lr and gain_init on a log scale, other numbers on theirs, choices one-hot; each scaled to
[0, 1] over the runs. p = ∞ is no point of p's axis: its runs get a process of their own over the
other fields (where there are at least MIN_INF_RUNS of them), never a number standing for ∞.

From the fitted process, on a grid of p over the runs' finite range (p = 2 always on it):
  profile             at each p, the lowest latent loss over the settings of the other fields the
                      search ran (the surrogate minimised over them: what p reaches when lr and
                      gain are tuned for it);
  partial dependence  at each p, the latent loss averaged over those settings (Friedman 2001).
Each with a 95 % band from joint draws of the posterior (the latent function, noise left out):
the profile of every draw, its 2.5 and 97.5 percentiles. Differences to a reference p get a
simultaneous band (the 95th percentile of the draws' largest standardised deviation over the
grid), so that "some p differs" is one test, not one per grid point.

Above MAX_FIT_RUNS runs the process is fitted on an even random sample of them (a Gaussian process
costs n³): a 10,000-trial study answers within the page's time.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lpstudy.results.analysis.searched import Searched

MIN_RUNS = 16  # fewer finite-p runs than this: no surrogate (its band would be the prior's)
MIN_INF_RUNS = 6  # p = ∞: a process of its own from this many runs on
MAX_FIT_RUNS = 250
GRID = 13  # p values on the profile's grid (p = 2 added)
SETTINGS = 48  # settings of the other fields the profile minimises over (a sample of the runs')
DRAWS = 400
SEED = 0
CONFIDENCE = 0.95


@dataclass
class Profile:
    """p's profile and partial dependence on `p` (the grid, ∞ last where it was estimated), with
    their pointwise bands; `draws` the profile of every posterior draw (draws × grid); n_fit the
    runs the process was fitted on (of n_runs)."""

    p: np.ndarray
    profile: np.ndarray
    low: np.ndarray
    high: np.ndarray
    dependence: np.ndarray
    dep_low: np.ndarray
    dep_high: np.ndarray
    draws: np.ndarray
    n_fit: int
    n_runs: int
    best_setting: dict

    def rows(self, which: str = "profile") -> list[dict]:
        values, low, high = ((self.profile, self.low, self.high) if which == "profile"
                             else (self.dependence, self.dep_low, self.dep_high))
        return [{"p": float(p), "loss": float(v), "low": float(a), "high": float(b)}
                for p, v, a, b in zip(self.p, values, low, high)]

    def differences(self, reference: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """profile(p) − profile(reference) per grid point: the estimate (from the draws' mean) and
        its simultaneous 95 % band (see the module)."""
        at = int(np.argmin(np.where(np.isinf(self.p), np.inf, np.abs(self.p - reference))))
        diffs = self.draws - self.draws[:, [at]]
        mean, sd = diffs.mean(axis=0), diffs.std(axis=0)
        scaled = np.abs(diffs - mean) / np.where(sd > 0, sd, 1)
        c = float(np.quantile(scaled.max(axis=1), CONFIDENCE))
        return mean, mean - c * sd, mean + c * sd


def _columns(searched: Searched, rows: pd.Index) -> tuple[list[np.ndarray], list[str], dict]:
    """The other fields' design columns (scaled to [0, 1]) for `rows`, their names, and how to read a
    column back (name -> (kind, low, high) or the choice's value)."""
    columns, names, back = [], [], {}
    for f in searched.fields:
        if f.kind == "p":
            continue
        values = f.values.loc[rows]
        if f.kind == "choice":
            for level in sorted(values.astype(str).unique()):
                columns.append((values.astype(str) == level).to_numpy(dtype="float64"))
                names.append(f"{f.name}={level}")
                back[names[-1]] = ("choice", f.name, level)
            continue
        numbers = values.astype("float64").to_numpy()
        numbers = np.log(numbers) if f.kind == "log" else numbers
        low, high = float(np.nanmin(numbers)), float(np.nanmax(numbers))
        columns.append((numbers - low) / (high - low) if high > low else np.zeros_like(numbers))
        names.append(f.name)
        back[f.name] = (f.kind, low, high)
    return columns, names, back


def _fit(x: np.ndarray, y: np.ndarray):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    d = x.shape[1]
    kernel = (ConstantKernel(1.0, (1e-3, 1e2)) * Matern(length_scale=np.full(d, 0.5), length_scale_bounds=(0.05, 50.0),
                                                         nu=2.5)
              + WhiteKernel(0.1, (1e-6, 1.0)))
    gp = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=1, random_state=SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a bound reached (p's length scale, where p does nothing) is an answer
        gp.fit(x, y)
    gp.kernel_ = gp.kernel_.k1  # predict the latent loss: the noise is not part of what p does
    return gp


def _draws(gp, points: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The posterior mean at `points` and DRAWS joint draws of the latent function there."""
    mean, cov = gp.predict(points, return_cov=True)
    cov = (cov + cov.T) / 2
    jitter = 1e-10 * max(float(np.mean(np.diag(cov))), 1e-12)
    for _ in range(6):
        try:
            chol = np.linalg.cholesky(cov + jitter * np.eye(len(cov)))
            break
        except np.linalg.LinAlgError:
            jitter *= 100
    else:  # not positive definite even so: the eigen-decomposition's square root
        values, vectors = np.linalg.eigh(cov)
        chol = vectors * np.sqrt(np.clip(values, 0, None))
    return mean, mean[None, :] + rng.standard_normal((DRAWS, len(mean))) @ chol.T


def _sample(rows: pd.Index, limit: int, rng: np.random.Generator) -> pd.Index:
    return rows if len(rows) <= limit else rows[np.sort(rng.choice(len(rows), limit, replace=False))]


def _profile_of(gp, grid_points: list[np.ndarray], settings: np.ndarray, rng) -> tuple[np.ndarray, ...]:
    """Profile (min over settings) and partial dependence (mean over settings) of the posterior mean
    and of every draw, for each point of the grid (each a design row without the other fields)."""
    points = np.vstack([np.hstack([np.tile(g, (len(settings), 1)), settings]) for g in grid_points])
    mean, draws = _draws(gp, points, rng)
    k = len(settings)
    mean = mean.reshape(len(grid_points), k)
    draws = draws.reshape(DRAWS, len(grid_points), k)
    return mean.min(axis=1), draws.min(axis=2), mean.mean(axis=1), draws.mean(axis=2), mean


def p_profile(losses: pd.Series, searched: Searched, reference: float = 2.0) -> Profile | None:
    """p's surrogate profile and partial dependence over the runs whose loss is `losses` (indexed
    like the searched fields' values); None with fewer than MIN_RUNS runs at finite p. The linear
    algebra runs on one BLAS thread: its matrices are a few hundred rows, where more threads only
    wait on each other (a fit took 15 s instead of 1 on a busy two-core machine)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return _p_profile(losses, searched, reference)


def _p_profile(losses: pd.Series, searched: Searched, reference: float) -> Profile | None:
    p_field = searched.get("p")
    if p_field is None:
        return None
    p = p_field.values.loc[losses.index].astype("float64")
    finite = losses.index[np.isfinite(p)]
    infinite = losses.index[np.isinf(p)]
    if len(finite) < MIN_RUNS:
        return None
    rng = np.random.default_rng(SEED)
    fit_rows = _sample(finite, MAX_FIT_RUNS, rng)
    columns, names, back = _columns(searched, fit_rows)
    p_fit = p.loc[fit_rows].to_numpy()
    p_low, p_high = float(p_fit.min()), float(p_fit.max())
    scale = (p_high - p_low) or 1.0
    x = np.column_stack([(p_fit - p_low) / scale, *columns]) if columns else ((p_fit - p_low) / scale)[:, None]
    gp = _fit(x, losses.loc[fit_rows].to_numpy(dtype="float64"))
    settings = x[_sample(pd.RangeIndex(len(x)), SETTINGS, rng).to_numpy(), 1:]
    grid = np.linspace(p_low, p_high, GRID)
    if p_low < reference < p_high and not np.isclose(grid, reference).any():
        grid = np.sort(np.append(grid, reference))
    prof, prof_draws, dep, dep_draws, means = _profile_of(gp, [np.array([(g - p_low) / scale]) for g in grid],
                                                          settings if settings.shape[1] else np.zeros((1, 0)), rng)
    best = np.unravel_index(int(np.argmin(means)), means.shape)
    best_setting = {"p": float(grid[best[0]]), **_read_back(settings[best[1]] if settings.shape[1] else [], names, back)}
    if len(infinite) >= MIN_INF_RUNS and columns:
        inf_rows = _sample(infinite, MAX_FIT_RUNS, rng)
        inf_columns = [c for c in _scaled_like(searched, inf_rows, back, names)]
        gp_inf = _fit(np.column_stack(inf_columns), losses.loc[inf_rows].to_numpy(dtype="float64"))
        inf_settings = np.column_stack(inf_columns)[_sample(pd.RangeIndex(len(inf_rows)), SETTINGS, rng).to_numpy()]
        inf_prof, inf_pd, inf_dep, inf_dep_draws, _ = _profile_of(gp_inf, [np.zeros(0)], inf_settings, rng)
        grid = np.append(grid, math.inf)
        prof, dep = np.append(prof, inf_prof), np.append(dep, inf_dep)
        prof_draws = np.hstack([prof_draws, inf_pd])
        dep_draws = np.hstack([dep_draws, inf_dep_draws])
    tail = (1 - CONFIDENCE) / 2
    return Profile(p=grid, profile=prof, low=np.quantile(prof_draws, tail, axis=0),
                   high=np.quantile(prof_draws, 1 - tail, axis=0), dependence=dep,
                   dep_low=np.quantile(dep_draws, tail, axis=0), dep_high=np.quantile(dep_draws, 1 - tail, axis=0),
                   draws=prof_draws, n_fit=len(fit_rows), n_runs=len(losses), best_setting=best_setting)


def _scaled_like(searched: Searched, rows: pd.Index, back: dict, names: list[str]) -> list[np.ndarray]:
    """The other fields' columns for `rows`, scaled as the finite-p fit scaled them."""
    out = []
    for name in names:
        how = back[name]
        if how[0] == "choice":
            out.append((searched.get(how[1]).values.loc[rows].astype(str) == how[2]).to_numpy(dtype="float64"))
            continue
        kind, low, high = how
        numbers = searched.get(name).values.loc[rows].astype("float64").to_numpy()
        numbers = np.log(numbers) if kind == "log" else numbers
        out.append((numbers - low) / (high - low) if high > low else np.zeros_like(numbers))
    return out


def _read_back(row, names: list[str], back: dict) -> dict:
    """A design row of the other fields as field values (a log field back from its log)."""
    out: dict = {}
    for value, name in zip(row, names):
        how = back[name]
        if how[0] == "choice":
            if value > 0.5:
                out[how[1]] = how[2]
            continue
        kind, low, high = how
        number = low + float(value) * (high - low)
        out[name] = float(math.exp(number)) if kind == "log" else float(number)
    return out


__all__ = ["MAX_FIT_RUNS", "MIN_RUNS", "Profile", "p_profile"]
