"""One engine for every verdict: any per-run endpoint (the final loss, a convergence endpoint, ...)
turned into a verdict per arm against a reference arm, on the runs both made.

`endpoint_verdicts(table, reference, k=, margin=, options=, failed=)` takes an arms × run-positions
table (a column per fold, or per (repeat, fold) when the study repeats its cross-validation; lower
is better; NaN where the run has not happened) and returns one verdict per arm other than the reference,
an answer_types.ArmVerdict (or the kind its caller makes: `part`, given the arm and the numbers, names it).
Every reader of a comparison
goes through it, so the fold-correlation treatment, the ROPE, the multiplicity and the words are the
same for every endpoint (fold_tests holds the tests and the decision rule).

What the engine adds to the tests:
- failed runs count (`failed`: diverged, FAIL, or a non-finite endpoint): they are left out of the
  pairs, but an arm with a failed run can be neither better nor equivalent, and one whose reference
  failed where it did not can be neither worse nor equivalent (survivorship: the runs that finished
  are not a sample of the runs that were made); failed_runs says how many. An arm every run of which
  failed, against a reference with a usable run, is "worse" by that rule (`all_failed`): a run that
  gives no model counts against the arm that made it, and there is no difference to test.
- no peeking: where any run of the design has not happened yet (NaN, not failed) and no sequential
  design chose the look (`tests` not given), every row is an interim reading: its numbers are shown,
  its verdict is "undecided" and `interim` is true. A verdict at full alpha is given only
  on the full design.
- no spread, no evidence: where an arm's paired differences do not vary at all (the same on every fold:
  loss spikes that are 0 in every run, steps read at an evaluation interval), they have no standard
  error (intervals.corrected_stats), so no test decides them: the arm is undecided, without an interval,
  and `unresolved` says why.
- one interval per arm, the one the verdict was decided on (`confidence` its level): better or worse,
  the 1 − a interval of the test beyond the ROPE at the arm's Holm step a (alpha/m for the smallest
  p-value, ...; the step that stopped Holm's procedure for every arm from there on: fold_tests.holm_levels);
  equivalent, TOST's 1 − 2a interval at its own Holm step; undecided, the wider of the two, so an
  interval printed wholly beyond the ROPE or wholly inside it always carries that verdict. A sequential
  design's rows keep the 1 − alpha interval of their last look.
- holds_up_to_rho: the largest fold correlation at which the verdict still stands (fold_tests).
- a study that repeats its CV (columns (repeat, fold)): every repeat's folds are more positions of
  Bouckaert & Frank's corrected repeated k-fold test (fold_tests), and measured_rho, the fold
  correlation the repeats' means imply, is given next to holds_up_to_rho.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Hashable, TypeVar

import numpy as np
import pandas as pd

from lpstudy.intervals import not_varying
from lpstudy.results.answers.answer_types import ArmVerdict
from lpstudy.results.answers.decide import arm_design
from lpstudy.results.answers.fold_tests import (VERDICTS, FoldTests, VarianceComponents, beyond_p, equivalence_p,
                                                fold_verdicts, holds_up_to_rho, holm_levels, interval,
                                                variance_components)
from lpstudy.results.answers.options import AnswerOptions

UNDECIDED = VERDICTS.index("undecided")
V = TypeVar("V", bound=ArmVerdict)


def unnamed(arm: Any, **numbers: Any) -> ArmVerdict:
    """An arm's verdict named by its key in the table alone (field "arm"): endpoint_verdicts' default part."""
    from lpstudy.values import json_safe

    return ArmVerdict(field="arm", value=json_safe(arm), **numbers)


def number(value: Any) -> float | None:
    """A float of the answer: None where it is not a number (NaN)."""
    return None if value is None or math.isnan(value) else float(value)


def _failed_frame(table: pd.DataFrame, failed: pd.DataFrame | None) -> pd.DataFrame:
    if failed is None:
        return pd.DataFrame(False, index=table.index, columns=table.columns)
    return failed.reindex(index=table.index, columns=table.columns).fillna(False).astype(bool)


def differences(table: pd.DataFrame, reference: Hashable,
                failed: pd.DataFrame | None = None) -> tuple[list[Hashable], np.ndarray]:
    """(the arms other than the reference, in the table's order; their differences from the
    reference, shape (arms, run positions), NaN where either run is missing or failed)."""
    usable = table.where(~_failed_frame(table, failed))
    ref = usable.loc[reference]
    others = [a for a in table.index if a != reference]
    if not others:
        return [], np.zeros((0, table.shape[1]))
    return others, np.stack([(usable.loc[a] - ref).to_numpy(dtype="float64") for a in others])


def _folds(table: pd.DataFrame) -> int:
    columns = table.columns
    return columns.get_level_values("fold").nunique() if isinstance(columns, pd.MultiIndex) else len(columns)


def seed_cells(table: pd.DataFrame) -> np.ndarray | None:
    """Where the table's columns have a `seed` level (replicate/compare --seeds): one label per column,
    the (repeat, fold) cell its run belongs to; None where every column is its own cell."""
    columns = table.columns
    if not isinstance(columns, pd.MultiIndex) or "seed" not in columns.names:
        return None
    codes: np.ndarray = pd.MultiIndex.from_frame(columns.to_frame(index=False).drop(columns="seed")).factorize()[0]
    return codes


def _level(table: pd.DataFrame, name: str) -> pd.Index | None:
    columns = table.columns
    return columns.get_level_values(name) if isinstance(columns, pd.MultiIndex) and name in columns.names else None


def tuning_groups(table: pd.DataFrame) -> list[np.ndarray] | None:
    """Where the table's columns have a `tuning` level with two tunings or more (compare --tunings T):
    the column positions of each tuning; None otherwise."""
    tunings = _level(table, "tuning")
    if tunings is None:
        return None
    values = pd.unique(np.asarray(tunings))
    return [np.flatnonzero(np.asarray(tunings) == t) for t in values] if len(values) >= 2 else None


def tuning_means(diffs: np.ndarray, groups: list[np.ndarray]) -> np.ndarray:
    """Per arm and tuning (shape (arms, tunings)): the mean of the arm's paired differences over that
    tuning's (repeat, fold, seed) positions, NaN where none is paired. Each tuning is one draw of the
    arm's whole procedure (tune with the budget, then measure the chosen configuration on the folds),
    so the tunings are a random factor and their means the independent observations of a t interval
    over T (Bouthillier et al. 2021, "Accounting for variance in machine learning benchmarks", MLSys:
    randomise the hyperparameter search along with the data and the seeds). The interval takes no
    correction for the folds' overlap: every tuning is measured on the same K folds, so the partition's
    share of the spread is common to the tunings and not in their spread (the verdict says so)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a tuning with no pair: NaN, left out by the t
        return np.stack([np.nanmean(diffs[:, g], axis=-1) for g in groups], axis=-1)


def measured_rho(diffs: np.ndarray, table: pd.DataFrame, k: int) -> np.ndarray:
    """Per arm, where the table has two repeats or more: the correlation of one CV's fold differences
    that the spread of the repeats' means implies (a measurement; holds_up_to_rho is another
    quantity: the largest correlation at which a verdict would still stand). Under the model behind
    the correction (equicorrelated differences within a CV, independent CVs), a repeat's sample
    variance W estimates (1 − ρ)σ² and the variance B of the repeats' means σ²ρ + (1 − ρ)σ²/K, so
    σ²ρ = B − W/K and σ² = B − W/K + W: ρ = (B − W/K)/(B − W/K + W) (the method of moments; the
    earlier σ² = B + W counted W/K twice and read ρ low). Runs of one cell with several seeds are
    averaged first. Clipped to [0, 1]; NaN with one repeat. Few repeats measure it coarsely."""
    repeats = _level(table, "repeat")
    if repeats is None or diffs.size == 0:
        return np.full(len(diffs), np.nan)
    cells = seed_cells(table)
    if cells is not None:  # one column per (repeat, fold): the seeds' mean
        first = pd.Series(range(len(cells))).groupby(cells).first().to_numpy()
        repeats = np.asarray(repeats)[first]
        diffs = variance_components(diffs, cells).means
    groups = [np.flatnonzero(np.asarray(repeats) == r) for r in pd.unique(np.asarray(repeats))]
    if len(groups) < 2:
        return np.full(len(diffs), np.nan)
    import warnings

    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        means = np.stack([np.nanmean(diffs[:, g], axis=-1) for g in groups], axis=-1)
        within = np.nanmean(np.stack([np.nanvar(diffs[:, g], axis=-1, ddof=1) for g in groups], axis=-1), axis=-1)
        between = np.nanvar(means, axis=-1, ddof=1)
        shared = between - within / k  # σ²ρ
        rho = shared / (shared + within)
    clipped: np.ndarray = np.clip(rho, 0.0, 1.0)
    return clipped


def endpoint_verdicts(table: pd.DataFrame, reference: Hashable, *, k: int, margin: float,
                      options: AnswerOptions = AnswerOptions(), failed: pd.DataFrame | None = None,
                      tests: FoldTests | None = None, stages_over: bool = False,
                      part: Callable[..., V] = unnamed) -> list[V]:  # type: ignore[assignment]
    """The verdicts of every arm but the reference, each made by `part(arm, **numbers)`: arm its index in
    the table, numbers ArmVerdict's fields that the engine computes (the caller names the arm: field,
    value, p, endpoint and unit, and adds its own).
    `tests`: the tests a sequential design computed on the same differences (sequential.SequentialTests;
    it chose the look, so its rows are no interim reading); by default the fixed design's
    fold_verdicts on every position the table has. stages_over: the table is of a study run
    --until-decided whose stages are over (answers.sequential): the positions still empty are runs it
    will never make, not runs to come, so its other endpoints are read over the folds it ran (no
    interim reading)."""
    others, diffs = differences(table, reference, failed)
    if not others:
        return []
    fails = _failed_frame(table, failed)
    sequential = tests is not None
    cells = seed_cells(table)
    tuned = tuning_groups(table)
    if tests is None and tuned is not None:
        tests = fold_verdicts(tuning_means(diffs, tuned), k, margin, options.alpha, rho=0.0)
    elif tests is None:
        tests = fold_verdicts(diffs, k, margin, options.alpha, cells=cells)
    holds = (holds_up_to_rho(diffs, k, margin, options.alpha, cells=cells) if not sequential and tuned is None
             else np.full(len(others), np.nan))
    parts = variance_components(diffs, cells if cells is not None else np.arange(diffs.shape[-1]))
    measured = measured_rho(diffs, table, k)
    ref_mean = float(table.loc[reference].where(~fails.loc[reference]).mean())  # relative columns: against it
    # no peeking: one run still to come anywhere in the design makes every row an interim reading
    # (Holm's family and each arm's folds are the full design's only once every run is in)
    interim = not sequential and not stages_over and bool(_folds(table) < k or (table.isna() & ~fails).to_numpy().any())
    ref_failed = int(fails.loc[reference].sum())
    codes = np.asarray(tests.verdict).copy()
    usable = table.where(~fails)
    ref_usable = bool(usable.loc[reference].notna().any())
    barred_by, all_failed = [], []
    for i, arm in enumerate(others):
        arm_failed = int(fails.loc[arm].sum())
        verdict = VERDICTS[int(codes[i])]
        barred = ({"better", "equivalent"} if arm_failed else set()) | ({"worse", "equivalent"} if ref_failed else set())
        if interim or verdict in barred:
            codes[i] = UNDECIDED
        barred_by.append(verdict in barred and not interim)
        # every run of the arm failed, the reference has a usable one: worse by the failure rule
        all_failed.append(not interim and not sequential and arm_failed > 0 and ref_usable
                          and not usable.loc[arm].notna().any())
        if all_failed[-1]:
            codes[i] = VERDICTS.index("worse")
    # paired differences that do not vary have no standard error (intervals.corrected_stats): no test
    # decided them, and the row says why
    unvaried = [bool(still) and not interim and not all_failed[i] for i, still in enumerate(not_varying(diffs))]
    n_undecided = int(np.sum(codes == UNDECIDED))
    different = np.asarray(tests.different)
    levels = _levels(tests, codes, margin, options.alpha, sequential)
    verdicts = []
    for i, arm in enumerate(others):
        paired = ~np.isnan(diffs[i])
        pairs = diffs[i][paired]
        mean, se, df = float(tests.mean[i]), float(tests.se[i]), float(tests.df[i])
        confidence, tost = levels[0][i], levels[1][i]
        low, high = (float(x) for x in interval(mean, se, df, confidence))
        low90, high90 = (float(x) for x in interval(mean, se, df, tost))
        rel = (lambda x: x / ref_mean) if ref_mean else (lambda x: math.nan)
        verdict = VERDICTS[int(codes[i])]
        components = _components(parts, i, cells)
        tunings, folds_to_decide, decided_by = None, None, None
        if tuned is not None:  # the observations the interval was computed from: one per tuning
            tunings = int(np.sum(np.isfinite(tuning_means(diffs[i:i + 1], tuned))))
        elif verdict == "undecided" and len(pairs) >= 2 and not barred_by[i] and not unvaried[i]:
            # the runs per arm at which the test that can decide it reaches 80 % power (answers.decide),
            # for every endpoint alike, from the sources of variance its interval was computed from
            design = arm_design(mean, components.sigma_fold, components.sigma_seed, int(paired.sum()), k,
                                margin, options.alpha, n_undecided)
            folds_to_decide, decided_by = design.runs_per_arm, design.test
        verdicts.append(part(
            arm, interim=interim, failed_runs=int(fails.loc[arm].sum()), reference_failed_runs=ref_failed,
            runs=int(table.shape[1]), barred_by_failures=barred_by[i], all_failed=True if all_failed[i] else None,
            n_folds=int(paired.sum()), mean=float(table.loc[arm][paired].mean()) if paired.any() else None,
            diff=number(mean), rel_diff=number(rel(mean)), low=number(low), high=number(high),
            rel_low=number(rel(low)), rel_high=number(rel(high)), equivalence_low=number(low90),
            equivalence_high=number(high90), p_value_difference=number(tests.p_difference[i]),
            p_value_equivalence=number(tests.p_equivalence[i]),
            p_value_beyond_rope=number(tests.p_beyond[i]),
            confidence=float(confidence) if math.isfinite(confidence) else None,
            verdict=verdict, region="every run failed" if all_failed[i] else _region(verdict, bool(different[i]), interim),
            holds_up_to_rho=float(holds[i]) if verdict != "undecided" and math.isfinite(holds[i])
            and not all_failed[i] else None,
            measured_rho=float(measured[i]) if math.isfinite(measured[i]) else None,
            folds_to_decide=folds_to_decide, decided_by=decided_by, sigma_fold=components.sigma_fold,
            sigma_seed=components.sigma_seed, cells=components.cells, seeds=components.seeds, tunings=tunings,
            unresolved=UNVARIED if unvaried[i] else None))
    return verdicts


UNVARIED = "the paired differences do not vary (the same on every fold): no interval to decide from"


def _levels(tests: FoldTests, codes: np.ndarray, margin: float, alpha: float, sequential: bool) -> tuple[np.ndarray, np.ndarray]:
    """(the confidence of each arm's printed interval, that of its equivalence interval): the levels
    its verdict was decided at (the module's docstring); 1 − alpha and 1 − 2·alpha for a sequential
    design, whose looks spend their own levels."""
    m = len(codes)
    if sequential:
        return np.full(m, 1 - alpha), np.full(m, 1 - 2 * alpha)
    mean, se, df = (np.asarray(x, dtype="float64") for x in (tests.mean, tests.se, tests.df))
    beyond = 1 - holm_levels(beyond_p(mean, se, df, margin), alpha)
    within = 1 - 2 * holm_levels(equivalence_p(mean, se, df, margin), alpha)
    shown = np.where(np.isin(codes, [VERDICTS.index("better"), VERDICTS.index("worse")]), beyond,
                     np.where(codes == VERDICTS.index("equivalent"), within, np.fmax(beyond, within)))
    return shown, within


@dataclass(frozen=True)
class Sources:
    """An arm's sources of variance as its verdict gives them (ArmVerdict's fields of the same names)."""

    sigma_fold: float | None  # the partition's share as the folds show it (with one seed a cell, the seeds' noise too)
    sigma_seed: float | None  # the training noise of one run's difference (None without two seeds in a cell)
    cells: int  # the (repeat, fold) cells paired
    seeds: float  # the mean number of seeds a cell


def _components(parts: VarianceComponents, i: int, cells: np.ndarray | None) -> Sources:
    """Arm i's sources of variance (fold_tests.variance_components): sigma_fold, sigma_seed (None
    without seeds in the table), cells and seeds (1 without seeds in the table)."""
    seed_var = float(parts.seed_var[i])
    partition = float(parts.partition_var[i])
    n_cells = int(parts.cells[i])
    return Sources(sigma_fold=math.sqrt(partition) if math.isfinite(partition) else None,
                   sigma_seed=math.sqrt(seed_var) if cells is not None and math.isfinite(seed_var) else None,
                   cells=n_cells, seeds=float(1.0 / parts.inv_seeds[i]) if cells is not None and n_cells else 1.0)


def _region(verdict: str, different: bool, interim: bool) -> str:
    """The decision rule's region, in the words the outputs use: "beyond the ROPE" (better or worse),
    "within the ROPE" (equivalent), "different, size undecided" (undecided: its interval
    excludes 0 yet reaches into the ROPE), "undecided", or "interim" (folds still to run)."""
    if interim:
        return "interim"
    if verdict in ("better", "worse"):
        return "beyond the ROPE"
    if verdict == "equivalent":
        return "within the ROPE"
    return "different, size undecided" if different else "undecided"
