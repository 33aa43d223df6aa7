"""A surrogate of a search's final loss, and p's profile and partial dependence read from it.

A search samples p together with the learning rate and the gain, so the raw losses per p mix p's
effect with theirs. A Gaussian process (scikit-learn's GaussianProcessRegressor; Rasmussen &
Williams, "Gaussian Processes for Machine Learning", 2006) is fitted to the final loss of the
completed runs that did not diverge, over every searched field that varies: p on its axis, lr and
gain_init on a log scale, other numbers on theirs, choices one-hot; each scaled to [0, 1] over the
runs. Its kernel: a constant times an anisotropic Matérn 5/2 over every field, plus a constant times
a Matérn 5/2 over p alone (p's main effect with an amplitude and scale of its own, so that a small
curved effect of p is not forced into the scale lr's bowl needs: Duvenaud, Nickisch & Rasmussen,
"Additive Gaussian processes", 2011), plus white noise; its hyperparameters by maximum marginal
likelihood. p = ∞ is no point of p's axis: its runs get a process of their own over the other
fields (where there are at least MIN_INF_RUNS of them), never a number standing for ∞. Its profile is
minimised over the same settings of the other fields as finite p's (a minimum over its own handful
of settings would be a minimum over fewer, a different quantity from the finite profile's); where
its runs cover less than INF_SUPPORT of those settings (each within the ∞ runs' range of every
field), it is said apart (`inf_apart`) rather than read from a process that would extrapolate.

From the fitted process, on a grid of p over the runs' finite range (p = 2 always on it):
  profile             at each p, the lowest latent loss over the settings of the other fields the
                      search ran (the surrogate minimised over them: what p reaches when lr and
                      gain are tuned for it);
  partial dependence  at each p, the latent loss averaged over those settings (Friedman 2001).

Each with a 95 % band that holds the whole curve at once, calibrated by a parametric bootstrap
that carries the kernel's hyperparameters' uncertainty (drawing at the fitted hyperparameters alone
collapses the band where p's length scale runs long, and the minimum over settings is biased low):
  1. COMPONENTS draws of the log hyperparameters from their posterior (flat within the bounds),
     HYPER_DRAWS proposals from the Laplace approximation at the fit, importance-weighted, then
     resampled systematically (sampling importance resampling: Rubin 1988; Kitagawa 1996), DRAWS
     worlds shared evenly among the draws. With 16 proposals the weights' effective sample size was
     1 to 5, so the band's width was a lottery of which proposal carried the weight: re-measuring 6
     of 120 configurations moved it by a factor up to 3 either way;
  2. in each world, the truth is a joint posterior draw of the latent function at the runs and the
     grid (at that world's hyperparameters), the losses are the truth at the runs plus the fitted
     noise, and the estimate is the process's mean smoothed from them (linear in the losses);
  3. the world's error is its estimate's profile (or dependence) less its truth's; each draw of the
     band is the fitted profile less one world's error (the basic bootstrap; Davison & Hinkley,
     "Bootstrap Methods and their Application", 1997, 5.2), and the band is mean ± c · sd, c the
     95th percentile of a draw's largest standardised deviation over the grid.
Differences to a reference p get a simultaneous band from the same draws, so that "some p differs"
is one test, not one per grid point. The coverage of a planted true profile, and how often a
search with no effect of p claims one, are measured on planted searches by
benchmarks/bench_search_answer.py (benchmarks/results/search_answer.md).

Above MAX_FIT_RUNS runs the process is fitted on an even random sample of them (a Gaussian process
costs n³): a 10,000-trial study answers within the page's time.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from lpstudy.results.analysis.searched import Searched
from lpstudy.results.answers.answer_types import ProfilePoint
from lpstudy.values import json_safe

MIN_RUNS = 16  # fewer finite-p runs than this: no surrogate (its band would be the prior's)
MIN_INF_RUNS = 6  # p = ∞: a process of its own from this many runs on
INF_SUPPORT = 0.8  # ∞ is profiled over finite p's settings where its runs' ranges hold this share of them
SUPPORT_SLACK = 0.05  # a setting this far (on the [0, 1] scale) outside ∞'s range still counts as held
MAX_FIT_RUNS = 250
GRID = 13  # p values on the profile's grid (p = 2 added)
SETTINGS = 48  # settings of the other fields the profile minimises over (a sample of the runs')
DRAWS = 400
SEED = 0
CONFIDENCE = 0.95
LENGTH_SCALES = (0.05, 50.0)  # on the [0, 1]-scaled columns
AT_BOUND = 1e-2  # a log length scale this close to a bound sits at it
HYPER_DRAWS = 128  # proposals of the hyperparameters, importance-weighted (each one likelihood: cheap)
COMPONENTS = 20  # hyperparameter draws the bands mix, resampled from the weighted proposals (each a bootstrap)
PROPOSAL_SCALE = 1.5  # the Laplace proposal widened: its tails must hold the posterior's


@dataclass
class Profile:
    """p's profile and partial dependence on `p` (the grid, ∞ last where it was estimated), with
    their bands (each holds the whole curve: see the module); `draws` the profile's bootstrap draws
    (draws × grid) the bands and the differences are read from; n_fit the runs the process was
    fitted on (of n_runs); p_scale_at_bound whether a length scale along p sits at a bound of its
    range in the fit (the runs did not tell p's scale)."""

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
    best_setting: dict[str, float | str]  # p, the lr and gain (floats), a choice field's level (str)
    p_scale_at_bound: bool = False
    inf_apart: str | None = None  # why p = ∞ is not profiled with finite p (None where it is, or has no runs)

    def rows(self, which: str = "profile") -> list[ProfilePoint]:
        """The answer's p_profile ("profile") or p_partial_dependence ("dependence"): a point per p, ∞ as "inf"."""
        values, low, high = ((self.profile, self.low, self.high) if which == "profile"
                             else (self.dependence, self.dep_low, self.dep_high))
        return [ProfilePoint(p=json_safe(float(p)), loss=json_safe(float(v)), low=json_safe(float(a)),
                             high=json_safe(float(b))) for p, v, a, b in zip(self.p, values, low, high)]

    def differences(self, reference: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """profile(p) − profile(reference) per grid point: the estimate (from the draws' mean) and
        its simultaneous 95 % band (see the module)."""
        at = int(np.argmin(np.where(np.isinf(self.p), np.inf, np.abs(self.p - reference))))
        return simultaneous(self.draws - self.draws[:, [at]])


def simultaneous(draws: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The draws' mean per column and a band that holds every column of a draw at once in CONFIDENCE
    of the draws: mean ± c · sd, c the CONFIDENCE quantile of a draw's largest standardised
    deviation over the columns."""
    mean, sd = draws.mean(axis=0), draws.std(axis=0)
    scaled = np.abs(draws - mean) / np.where(sd > 0, sd, 1)
    c = float(np.quantile(scaled.max(axis=1), CONFIDENCE))
    return mean, mean - c * sd, mean + c * sd


def _columns(searched: Searched, rows: pd.Index) -> tuple[list[np.ndarray], list[str], dict[str, tuple[Any, ...]]]:
    """The other fields' design columns (scaled to [0, 1]) for `rows`, their names, and how to read a
    column back (name -> (kind, low, high) or the choice's value)."""
    columns: list[np.ndarray] = []
    names: list[str] = []
    back: dict[str, tuple[Any, ...]] = {}
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


@dataclass
class Posterior:
    """A fitted process: `fitted` at the hyperparameters of largest marginal likelihood (its mean is
    the estimate), `mixture` the processes at the hyperparameter draws the bands are drawn from, each
    with its number of function draws (DRAWS in all), and whether the length scale of the first
    column (p's, in the finite-p fit) sits at a bound of its range (where the likelihood is flat:
    the data do not tell p's scale, the fit alone would read p as doing nothing)."""

    fitted: Any  # a fitted regressor with .predict (sklearn's GaussianProcessRegressor)
    mixture: list[tuple[object, int]]
    first_at_bound: bool


def _kernel(d: int) -> Any:  # a scikit-learn kernel (untyped)
    """A constant times an anisotropic Matérn 5/2 over every column, plus (with more than one
    column) a constant times a Matérn 5/2 over the first column alone (p's main effect, with a
    scale and amplitude of its own: Duvenaud et al., "Additive Gaussian processes", 2011), plus noise."""
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern, WhiteKernel

    kernel = ConstantKernel(1.0, (1e-3, 1e2)) * Matern(length_scale=np.full(d, 0.5), length_scale_bounds=LENGTH_SCALES,
                                                       nu=2.5)
    if d > 1:
        kernel = kernel + ConstantKernel(0.1, (1e-4, 1e2)) * _first_column()(
            Matern(length_scale=0.5, length_scale_bounds=LENGTH_SCALES, nu=2.5))
    return kernel + WhiteKernel(0.1, (1e-6, 1.0))


@functools.cache
def _first_column() -> type[Any]:
    """scikit-learn's kernels see every column; this one hands its kernel the first column alone
    (its hyperparameters are its kernel's, as scikit-learn's Exponentiation passes them on)."""
    from sklearn.gaussian_process.kernels import Exponentiation

    class FirstColumn(Exponentiation):  # type: ignore[misc]  # scikit-learn's kernels are untyped
        def __init__(self, kernel: Any, exponent: float = 1.0) -> None:
            super().__init__(kernel, exponent)

        def __call__(self, X: np.ndarray, Y: np.ndarray | None = None,
                     eval_gradient: bool = False) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
            # K, and with eval_gradient its gradient too
            k: np.ndarray | tuple[np.ndarray, np.ndarray] = self.kernel(X[:, :1], None if Y is None else Y[:, :1],
                                                                       eval_gradient=eval_gradient)
            return k

        def diag(self, X: np.ndarray) -> np.ndarray:
            d: np.ndarray = self.kernel.diag(X[:, :1])
            return d

        def __repr__(self) -> str:
            return f"FirstColumn({self.kernel})"

    return FirstColumn


def _latent(gp: Any, y: np.ndarray) -> Any:  # scikit-learn's GaussianProcessRegressor (untyped)
    """The process without its noise term, which it keeps as noise_variance_ (in the losses' units)."""
    gp.noise_variance_ = float(gp.kernel_.k2.noise_level) * float(np.std(y) or 1.0) ** 2  # normalize_y's scale
    gp.kernel_ = gp.kernel_.k1  # predict the latent loss: the noise is not part of what p does
    return gp


def _fit(x: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> Posterior:
    from sklearn.gaussian_process import GaussianProcessRegressor

    gp = GaussianProcessRegressor(_kernel(x.shape[1]), normalize_y=True, n_restarts_optimizer=0, random_state=SEED)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a bound reached (p's length scale, where p does nothing) is an answer
        gp.fit(x, y)
    theta, bounds = gp.kernel_.theta, gp.kernel_.bounds
    at_bound = any(min(theta[i] - bounds[i, 0], bounds[i, 1] - theta[i]) < AT_BOUND for i in _first_scales(gp.kernel_))
    thetas, weights = _hyperparameter_draws(gp, theta, bounds, rng)
    counts = resampled(weights, rng)
    mixture = []
    for t, count in zip(thetas, counts):
        if count:
            at = GaussianProcessRegressor(gp.kernel_.clone_with_theta(t), normalize_y=True, optimizer=None)
            mixture.append((_latent(at.fit(x, y), y), int(count)))
    return Posterior(_latent(gp, y), mixture, at_bound)


def _first_scales(kernel: Any) -> list[int]:
    """Where the first column's length scales sit in the kernel's log hyperparameters (theta)."""
    at, out = 0, []
    for hyper in kernel.hyperparameters:
        if hyper.fixed:
            continue
        if hyper.name.endswith("length_scale"):
            out.append(at)
        at += hyper.n_elements
    return out


def resampled(weights: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Worlds per proposal (DRAWS in all): COMPONENTS picks by systematic resampling from the weights
    (one uniform offset, evenly spaced: the resampling with least variance of its own; Kitagawa 1996),
    DRAWS shared evenly among the picks; a proposal picked twice gets twice the worlds."""
    positions = (rng.uniform() + np.arange(COMPONENTS)) / COMPONENTS
    picks = np.minimum(np.searchsorted(np.cumsum(weights), positions), len(weights) - 1)
    per_pick = np.full(COMPONENTS, DRAWS // COMPONENTS)
    per_pick[: DRAWS % COMPONENTS] += 1
    return np.bincount(picks, per_pick, len(weights)).astype(int)


def _hyperparameter_draws(gp: Any, theta: np.ndarray, bounds: np.ndarray,
                          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """HYPER_DRAWS draws of the kernel's log hyperparameters from their posterior (flat on the log
    scale within the bounds), by importance sampling from the Laplace approximation at the fit
    (MacKay 1992; Rasmussen & Williams 2006, 5.2): the log marginal likelihood's Hessian by central
    differences of its gradient, a direction it does not curve (a length scale at its bound) spread
    over the bounds' width, draws outside the bounds refused; each weighted by likelihood over
    proposal. Returns the draws and their normalised weights."""
    def gradient(t: np.ndarray) -> np.ndarray:
        g: np.ndarray = gp.log_marginal_likelihood(t, eval_gradient=True)[1]
        return g

    k = len(theta)
    step = 1e-3
    hessian = np.empty((k, k))
    for i in range(k):
        e = np.zeros(k)
        e[i] = step
        hessian[i] = -(gradient(theta + e) - gradient(theta - e)) / (2 * step)
    hessian = (hessian + hessian.T) / 2
    values, vectors = np.linalg.eigh(hessian)
    width = float(np.max(bounds[:, 1] - bounds[:, 0]))
    values = np.maximum(values, (2 / width) ** 2)  # flat or bent the wrong way: the bounds' width
    root = vectors / np.sqrt(values) * PROPOSAL_SCALE  # proposal covariance root: V diag(1/sqrt(λ)) · scale
    draws: list[tuple[np.ndarray, np.ndarray]] = []  # (hyperparameters, the standard normal that drew them)
    for _ in range(50):
        z = rng.standard_normal((4 * HYPER_DRAWS, k))
        t = theta + z @ root.T
        keep = np.all((t >= bounds[:, 0]) & (t <= bounds[:, 1]), axis=1)
        draws.extend(zip(t[keep], z[keep]))
        if len(draws) >= HYPER_DRAWS:
            break
    else:  # the proposal hardly lands within the bounds: the fit itself fills up
        draws.extend([(theta, np.zeros(k))] * (HYPER_DRAWS - len(draws)))
    thetas = np.array([t for t, _ in draws[:HYPER_DRAWS]])
    log_q = -0.5 * np.array([float(z @ z) for _, z in draws[:HYPER_DRAWS]])
    log_p = np.array([gp.log_marginal_likelihood(t) for t in thetas])
    log_w = log_p - log_q
    weights = np.exp(log_w - log_w.max())
    return thetas, weights / weights.sum()


def _bootstrap(gp: Any, points: np.ndarray, count: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """A parametric bootstrap of the process's mean at fixed hyperparameters: `count` worlds, each a
    joint draw of the latent function from the posterior at the runs and at `points` (the world's
    truth), data drawn from it at the runs plus the fitted noise, smoothed as the fit smooths (the
    mean is linear in the losses: ȳ + W (y − ȳ), W = K*ᵀ (K + σ²I)⁻¹). Returns each world's truth
    and its estimate at `points` (count × points each)."""
    from scipy.linalg import cho_solve

    runs = gp.X_train_
    n = len(runs)
    truths = _joint(gp, np.vstack([runs, points]), count, rng)
    y = truths[:, :n] + math.sqrt(gp.noise_variance_) * rng.standard_normal((count, n))
    centre = y.mean(axis=1, keepdims=True)
    weights = gp.kernel_(points, runs) @ cho_solve((gp.L_, True), np.eye(n))
    return truths[:, n:], centre + (y - centre) @ weights.T


def _joint(gp: Any, points: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """`count` joint draws of the latent function at `points` from the process's posterior."""
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
    draws: np.ndarray = mean[None, :] + rng.standard_normal((count, len(mean))) @ chol.T
    return draws


def _sample(rows: pd.Index, limit: int, rng: np.random.Generator) -> pd.Index:
    return rows if len(rows) <= limit else rows[np.sort(rng.choice(len(rows), limit, replace=False))]


def _profile_of(posterior: Posterior, grid_points: list[np.ndarray], settings: np.ndarray,
                rng: np.random.Generator) -> tuple[np.ndarray, ...]:
    """Profile (min over settings) and partial dependence (mean over settings) of the fitted mean
    for each point of the grid (each a design row without the other fields), and the draws of each
    that make their bands: the estimate less each bootstrap world's error (its estimate's profile
    less its truth's), the worlds spread over the hyperparameter draws (the basic bootstrap interval;
    Davison & Hinkley 1997, 5.2)."""
    points = np.vstack([np.hstack([np.tile(g, (len(settings), 1)), settings]) for g in grid_points])
    k, size = len(settings), len(grid_points)
    mean = posterior.fitted.predict(points).reshape(size, k)
    profile, dependence = mean.min(axis=1), mean.mean(axis=1)
    profile_draws, dependence_draws = [], []
    for gp, count in posterior.mixture:
        truth, estimates = _bootstrap(gp, points, count, rng)
        truth, estimates = truth.reshape(count, size, k), estimates.reshape(count, size, k)
        profile_draws.append(profile - (estimates.min(axis=2) - truth.min(axis=2)))
        dependence_draws.append(dependence - (estimates.mean(axis=2) - truth.mean(axis=2)))
    return profile, np.vstack(profile_draws), dependence, np.vstack(dependence_draws), mean


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
    posterior = _fit(x, losses.loc[fit_rows].to_numpy(dtype="float64"), rng)
    settings = x[_sample(pd.RangeIndex(len(x)), SETTINGS, rng).to_numpy(), 1:]
    grid = np.linspace(p_low, p_high, GRID)
    if p_low < reference < p_high and not np.isclose(grid, reference).any():
        grid = np.sort(np.append(grid, reference))
    prof, prof_draws, dep, dep_draws, means = _profile_of(posterior, [np.array([(g - p_low) / scale]) for g in grid],
                                                          settings if settings.shape[1] else np.zeros((1, 0)), rng)
    best = np.unravel_index(int(np.argmin(means)), means.shape)
    best_setting = {"p": float(grid[best[0]]), **_read_back(settings[best[1]] if settings.shape[1] else [], names, back)}
    inf_apart = None
    if len(infinite) and (len(infinite) < MIN_INF_RUNS or not columns):
        inf_apart = (f"p = ∞ has {len(infinite)} configuration{'s' if len(infinite) != 1 else ''}: too few for a profile "
                     f"of its own (it needs {MIN_INF_RUNS})" if columns else None)
    elif len(infinite):
        inf_rows = _sample(infinite, MAX_FIT_RUNS, rng)
        x_inf = np.column_stack(_scaled_like(searched, inf_rows, back, names))
        held = supported(settings, x_inf)
        if held >= INF_SUPPORT:
            gp_inf = _fit(x_inf, losses.loc[inf_rows].to_numpy(dtype="float64"), rng)
            inf_prof, inf_pd, inf_dep, inf_dep_draws, _ = _profile_of(gp_inf, [np.zeros(0)], settings, rng)
            grid = np.append(grid, math.inf)
            prof, dep = np.append(prof, inf_prof), np.append(dep, inf_dep)
            prof_draws = np.hstack([prof_draws, inf_pd])
            dep_draws = np.hstack([dep_draws, inf_dep_draws])
        else:
            inf_apart = (f"p = ∞'s {len(infinite)} configurations hold {100 * held:.0f} % of the settings finite p is "
                         f"tuned over (it needs {100 * INF_SUPPORT:.0f} %): its best loss is not comparable")
    _, low, high = simultaneous(prof_draws)
    _, dep_low, dep_high = simultaneous(dep_draws)
    return Profile(p=grid, profile=prof, low=low, high=high, dependence=dep, dep_low=dep_low, dep_high=dep_high,
                   draws=prof_draws, n_fit=len(fit_rows), n_runs=len(losses), best_setting=best_setting,
                   p_scale_at_bound=posterior.first_at_bound, inf_apart=inf_apart)


def supported(settings: np.ndarray, runs: np.ndarray) -> float:
    """The share of `settings` (rows, the other fields on the [0, 1] scale) that lie within the range
    of `runs` in every field (SUPPORT_SLACK beyond it allowed): how much of the settings a process
    fitted on `runs` reads from data rather than extrapolates."""
    if not len(settings) or not settings.shape[1]:
        return 1.0
    low, high = runs.min(axis=0) - SUPPORT_SLACK, runs.max(axis=0) + SUPPORT_SLACK
    return float(np.mean(np.all((settings >= low) & (settings <= high), axis=1)))


def _scaled_like(searched: Searched, rows: pd.Index, back: dict[str, tuple[Any, ...]], names: list[str]) -> list[np.ndarray]:
    """The other fields' columns for `rows`, scaled as the finite-p fit scaled them."""
    out = []
    for name in names:
        how = back[name]
        if how[0] == "choice":
            out.append((searched.values(how[1]).loc[rows].astype(str) == how[2]).to_numpy(dtype="float64"))
            continue
        kind, low, high = how
        numbers = searched.values(name).loc[rows].astype("float64").to_numpy()
        numbers = np.log(numbers) if kind == "log" else numbers
        out.append((numbers - low) / (high - low) if high > low else np.zeros_like(numbers))
    return out


def _read_back(row: np.ndarray | list[float], names: list[str], back: dict[str, tuple[Any, ...]]) -> dict[str, float | str]:
    """A design row of the other fields as field values (a log field back from its log)."""
    out: dict[str, float | str] = {}
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
