"""Stability, arm by arm against the reference, as verdicts through the engine that decides the
final loss.

The endpoints, declared once in ENDPOINTS (what each is, its unit, which way is better, its ROPE):
- max_logit: per run, the largest attention logit over training (Wortsman et al., "Small-scale
  proxies for large-scale Transformer training instabilities", 2023: attention-logit growth is the
  instability they trace); lower is better; ROPE ± 10 % of the reference's mean;
- min_entropy: per run, the smallest head entropy over training (Zhai et al., "Stabilizing
  Transformer Training by Preventing Attention Entropy Collapse", ICML 2023); higher is better
  (the engine reads its negative); ROPE ± 0.1 nats;
- loss_spikes: per run, the training losses counted far above their running median
  (lpstudy.training.spikes); lower is better; ROPE ± 1 spike;
- lr_sensitivity: where the study sweeps the learning rate inside each arm (`replicate --lr A,B,C`),
  per arm and fold Wortsman et al. 2023's LR sensitivity, E_lr[min(ℓ(lr), ℓ₀) − min_lr ℓ(lr)]: the
  mean excess of the final loss over the sweep's best, a diverged run (or one above it) counted at
  ℓ₀, the loss at initialisation (the run's first evaluation, ln 65 where none is stored); lower is
  better; ROPE the final loss's.
Each per-run endpoint is averaged over a cell's runs (its seeds, its learning rates), paired by fold
(and repeat), and decided by endpoint_verdicts as the final loss is: the corrected resampled t, TOST
against the ROPE, Holm across the arms within the endpoint (each endpoint one family), the interim
rule (a run still to come anywhere: an interim reading), the failure rule (a run without the
endpoint, FAIL, counts: its arm can be neither better nor equivalent), and the runs that would
decide. A diverged run keeps the values it reached (data, not a gap).

Divergence is a count, decided by exact and score methods on the counts, never a t: per arm the share
of runs that diverged with Wilson's interval; against the reference, Fisher's exact test (scipy),
Holm-adjusted across the arms, and Newcombe's hybrid score interval for the difference of the rates
("Interval estimation for the difference between independent proportions", Statistics in Medicine
17, 1998; statsmodels' confint_proportions_2indep, method "newcomb", built from the two Wilson
intervals). Worse (better): Fisher rejects and the 1 − alpha/m interval (Bonferroni over the m arms)
lies wholly above (below) the ROPE of ± DIVERGENCE_ROPE; equivalent: the 1 − 2·alpha/m interval
lies inside it; else undecided, with the runs per arm that would make that interval fit inside the
ROPE at the observed rates. Zero events in ten runs give an interval of about ± 0.21: never
"equivalent" from few runs that did not diverge.

The earlier fields stay as they were (divergence per arm with Fisher's p-value; logit_growth and
min_entropy as differences with the corrected interval); `verdicts`, `rope`, `endpoints`,
`reference` and `sentence` hold the verdicts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Hashable

import numpy as np
import pandas as pd

from lpstudy.intervals import wilson_interval
from lpstudy.results.answers.answer_types import Endpoint as EndpointPart
from lpstudy.results.answers.answer_types import (ComparedRow, EndpointReference, EndpointRope, Stability, StabilityRow,
                                                  StabilityVerdict, Value)
from lpstudy.results.answers.endpoint_verdicts import endpoint_verdicts, number
from lpstudy.results.answers.fold_tests import corrected_stats, difference_p, holm, interval
from lpstudy.results.answers.options import AnswerOptions
from lpstudy.values import arm_name, json_safe

INITIAL_LOSS = math.log(65)  # ℓ₀ where a run stores no first evaluation: guessing Tiny Shakespeare's 65 symbols
DIVERGENCE_ROPE = 0.10  # ± 10 percentage points of the share of runs that diverged
MAX_RUNS_TO_DECIDE = 10_000
EXACT_UP_TO = 1_000  # runs per arm up to which the divergence plan's power is summed exactly
DIVERGENCE_POWER = 0.80  # the power "what would decide" plans divergence at, as the other endpoints (answers.decide)


@dataclass(frozen=True)
class Endpoint:
    """A stability endpoint: what it is, its unit, whether higher is better, and its ROPE (± rope,
    a share of the reference's mean where relative; None: the final loss's ROPE)."""

    what: str
    unit: str
    higher_is_better: bool
    rope: float | None
    relative: bool = False

    def margin(self, reference_mean: float, options: AnswerOptions) -> float:
        if self.rope is None:
            return options.rope.margin(reference_mean)
        return self.rope * abs(reference_mean) if self.relative else self.rope

    def words(self, options: AnswerOptions) -> str:
        if self.rope is None:
            return f"{options.rope.words()} (the final loss's)"
        return f"±{100 * self.rope:g} % of the reference's mean" if self.relative else f"±{self.rope:g} {self.unit}"


ENDPOINTS = {  # the stability endpoints, declared once
    "max_logit": Endpoint("the largest attention logit over training (Wortsman et al. 2023)", "logit", False, 0.10,
                          relative=True),
    "min_entropy": Endpoint("the smallest head entropy over training (Zhai et al. 2023)", "nats", True, 0.1),
    "loss_spikes": Endpoint("loss spikes over training (count)", "spike", False, 1.0),
    "lr_sensitivity": Endpoint("the mean excess of the final loss over the best learning rate of the arm's sweep, "
                               "per fold (Wortsman et al. 2023)", "nats", False, None),
}
DIVERGENCE_WHAT = "the share of runs that diverged (Fisher's exact test, Newcombe's interval from Wilson's)"


def divergence(runs: pd.DataFrame, reference: Hashable, alpha: float, shown: Callable[[Any], Value] = json_safe) -> list[StabilityRow]:
    """runs: one row per finished run with `arm` and `diverged`. Per arm (in the order the runs name them):
    diverged, runs, rate, its Wilson interval, and Fisher's exact p-value against the reference,
    Holm-adjusted (the reference's: None). shown: an arm's value as the answer writes it."""
    from scipy.stats import fisher_exact

    counts = runs.groupby("arm", sort=False)["diverged"].agg(["sum", "size"])
    if reference not in counts.index:
        return []
    ref_k, ref_n = int(counts.loc[reference, "sum"]), int(counts.loc[reference, "size"])
    raw = [fisher_exact([[int(k), int(n - k)], [ref_k, ref_n - ref_k]])[1]
           for arm, (k, n) in counts.iterrows() if arm != reference]
    adjusted = iter(list(holm(np.asarray(raw), alpha)[1]) if raw else [])
    rows = []
    for arm, (k, n) in counts.iterrows():
        low, high = wilson_interval(int(k), int(n), 1 - alpha)
        rows.append(StabilityRow(value=shown(arm), diverged=int(k), runs=int(n), rate=number(k / n if n else math.nan),
                                 low=number(low), high=number(high),
                                 p_value=None if arm == reference else float(next(adjusted))))
    return rows


def paired_metric(table: pd.DataFrame, reference: Hashable, k: int, alpha: float,
                  shown: Callable[[Any], Value] = json_safe) -> list[StabilityRow]:
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
    rows = [StabilityRow(value=shown(reference), mean=number(ref.mean()), n_folds=int(ref.notna().sum()))]
    for i, arm in enumerate(arms):
        rows.append(ComparedRow(value=shown(arm), mean=number(table.loc[arm].mean()),
                                n_folds=int((~np.isnan(diffs[i])).sum()), diff=number(mean[i]), low=number(low[i]),
                                high=number(high[i]), p_value=number(adjusted[i])))
    return rows


def curve_extremes(curves: pd.DataFrame | None) -> pd.DataFrame:
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


@dataclass(frozen=True)
class StabilityRows:
    """The stability part's three row lists (stability_rows), Stability's fields of the same names."""

    divergence: list[StabilityRow]  # per arm: its runs that diverged, the rate, Fisher's p-value against the reference
    logit_growth: list[StabilityRow]  # per arm: its mean logit growth, and against the reference (none without curves)
    min_entropy: list[StabilityRow]  # per arm: its mean smallest head entropy, the same way


def stability_rows(runs: pd.DataFrame, curves: pd.DataFrame | None, reference: Hashable, k: int, alpha: float,
                   shown: Callable[[Any], Value] = json_safe) -> StabilityRows:
    """The stability part's three row lists: runs is one row per finished run with arm, fold, diverged
    and trial_id; curves the study's curves (may be empty: then only the divergence rates); shown: an
    arm's value as the answer writes it."""
    extremes = curve_extremes(curves)
    joined = runs.join(extremes, on="trial_id") if len(extremes) else None

    def compared(name: str) -> list[StabilityRow]:
        if joined is None:
            return []
        table = joined.groupby(["arm", "fold"], sort=False)[name].mean().unstack("fold")
        return paired_metric(table, reference, k, alpha, shown) if table.notna().to_numpy().any() else []

    return StabilityRows(divergence=divergence(runs, reference, alpha, shown), logit_growth=compared("logit_growth"),
                         min_entropy=compared("min_entropy"))


# --- the verdicts ---------------------------------------------------------------------------------

def run_metrics(curves: pd.DataFrame | None) -> pd.DataFrame:
    """Per run (trial_id) from its curve: max_logit (the largest over training), min_entropy (the
    smallest head entropy), loss_spikes (the count at its last evaluation) and first_loss (its
    validation loss at its first evaluation: ℓ₀ for the LR sensitivity); NaN where not stored."""
    columns = ["max_logit", "min_entropy", "loss_spikes", "first_loss"]
    if curves is None or curves.empty or "trial_id" not in curves:
        return pd.DataFrame(columns=columns)
    grouped = curves.groupby("trial_id")
    out = pd.DataFrame(index=grouped.size().index)
    out["max_logit"] = grouped["max_logit"].max() if "max_logit" in curves else math.nan
    out["min_entropy"] = grouped["min_head_entropy"].min() if "min_head_entropy" in curves else math.nan
    out["loss_spikes"] = grouped["loss_spikes"].max() if "loss_spikes" in curves else math.nan
    if "val_loss" in curves:
        first = curves.dropna(subset=["val_loss"]).sort_values(["trial_id", "step"]).drop_duplicates("trial_id")
        out["first_loss"] = first.set_index("trial_id")["val_loss"].reindex(out.index)
    else:
        out["first_loss"] = math.nan
    return out[columns]


def _positions(info: pd.DataFrame) -> list[str]:
    return ["repeat", "fold"] if "repeat" in info and info["repeat"].fillna(0).nunique() > 1 else ["fold"]


def _design(table: pd.DataFrame, positions: list[str], k: int, info: pd.DataFrame) -> pd.DataFrame:
    """The table with a column for every run position of the design (NaN: still to run)."""
    if positions == ["fold"]:
        full = pd.Index(range(k), name="fold")
    else:
        full = pd.MultiIndex.from_product([sorted(info["repeat"].fillna(0).astype(int).unique()), range(k)],
                                          names=positions)
    return table.reindex(columns=full.union(table.columns) if len(table.columns) else full)


def _lr_sensitivity(joined: pd.DataFrame, positions: list[str]) -> pd.DataFrame | None:
    """Per (arm, position): Wortsman et al. 2023's LR sensitivity over the arm's learning rates,
    E_lr[min(ℓ(lr), ℓ₀)] − min_lr min(ℓ(lr), ℓ₀), a diverged run at ℓ₀; NaN where a learning rate of
    the arm's sweep has no run there yet. None where no arm sweeps two learning rates or more."""
    if "lr" not in joined or joined.groupby("arm")["lr"].nunique().max() < 2:
        return None
    start = joined["first_loss"].fillna(INITIAL_LOSS)
    loss = joined["loss"].where(~joined["diverged"] & np.isfinite(joined["loss"]), start)
    frame = joined.assign(capped=np.minimum(loss, start), lr_key=joined["lr"].round(12))
    per_lr = frame.groupby(["arm", *positions, "lr_key"])["capped"].mean()
    swept = frame.groupby("arm")["lr_key"].nunique()
    cells = per_lr.groupby(level=["arm", *positions])
    sensitivity = cells.mean() - cells.min()
    complete = cells.size() == swept.reindex(cells.size().index.get_level_values("arm")).to_numpy()
    return sensitivity.where(complete).unstack(positions)


def _negated(value: float | None) -> float | None:
    return None if value is None else -value


def _flipped(row: StabilityVerdict) -> StabilityVerdict:
    """A verdict of an endpoint the engine read negated (higher is better), back in its units."""
    def ends(low: float | None, high: float | None) -> tuple[float | None, float | None]:
        return (_negated(high), _negated(low)) if low is not None and high is not None else (low, high)

    (low, high), (rel_low, rel_high) = ends(row.low, row.high), ends(row.rel_low, row.rel_high)
    equivalence_low, equivalence_high = ends(row.equivalence_low, row.equivalence_high)
    return replace(row, mean=_negated(row.mean), diff=_negated(row.diff), rel_diff=_negated(row.rel_diff), low=low,
                   high=high, rel_low=rel_low, rel_high=rel_high, equivalence_low=equivalence_low,
                   equivalence_high=equivalence_high)


def divergence_verdicts(runs: pd.DataFrame, reference: Hashable, alpha: float,
                        shown: Callable[[Any], dict[str, Any]] | None = None) -> list[StabilityVerdict]:
    """Per arm other than the reference: the divergence verdict from the counts (module). shown: the
    arm's field, value and p as the answer writes them (by default its key, field "arm")."""
    from scipy.stats import fisher_exact
    from statsmodels.stats.proportion import confint_proportions_2indep

    counts = runs.groupby("arm", sort=False)["diverged"].agg(["sum", "size"])
    if reference not in counts.index:
        return []
    ref_k, ref_n = int(counts.loc[reference, "sum"]), int(counts.loc[reference, "size"])
    others = [a for a in counts.index if a != reference]
    m = max(len(others), 1)
    raw = np.array([fisher_exact([[int(counts.loc[a, "sum"]), int(counts.loc[a, "size"] - counts.loc[a, "sum"])],
                                  [ref_k, ref_n - ref_k]])[1] for a in others])
    _, adjusted = holm(raw, alpha) if len(raw) else (None, np.zeros(0))
    rows = []
    for i, arm in enumerate(others):
        k, n = int(counts.loc[arm, "sum"]), int(counts.loc[arm, "size"])
        diff = k / n - ref_k / ref_n
        low, high = (float(x) for x in confint_proportions_2indep(k, n, ref_k, ref_n, method="newcomb",
                                                                  compare="diff", alpha=alpha / m))
        eq_low, eq_high = (float(x) for x in confint_proportions_2indep(k, n, ref_k, ref_n, method="newcomb",
                                                                        compare="diff", alpha=2 * alpha / m))
        rejected = bool(adjusted[i] <= alpha)
        if rejected and low > DIVERGENCE_ROPE:
            verdict = "worse"
        elif rejected and high < -DIVERGENCE_ROPE:
            verdict = "better"
        elif -DIVERGENCE_ROPE < eq_low and eq_high < DIVERGENCE_ROPE:
            verdict = "equivalent"
        else:
            verdict = "undecided"
        region = {"better": "beyond the ROPE", "worse": "beyond the ROPE", "equivalent": "within the ROPE"}.get(
            verdict, "different, size undecided" if rejected else "undecided")
        named = shown(arm) if shown else {"field": "arm", "value": json_safe(arm)}
        rows.append(StabilityVerdict(
            **named, endpoint="divergence", unit="share of runs", interim=False, failed_runs=0,
            reference_failed_runs=0, runs=n, barred_by_failures=False, n_folds=n, mean=number(k / n), diff=number(diff),
            rel_diff=None, low=number(low), high=number(high), rel_low=None, rel_high=None,
            equivalence_low=number(eq_low), equivalence_high=number(eq_high),
            p_value_difference=number(adjusted[i]), p_value_equivalence=None, p_value_beyond_rope=None,
            verdict=verdict, region=region, holds_up_to_rho=None, measured_rho=None,
            folds_to_decide=runs_to_decide(k / n, ref_k / ref_n, alpha / m) if verdict == "undecided" else None,
            decided_by=(("equivalence" if abs(diff) < DIVERGENCE_ROPE else "beyond the ROPE")
                        if verdict == "undecided" else None),
            diverged=k, reference_diverged=ref_k, reference_runs=ref_n))
    return rows


def runs_to_decide(rate: float, ref_rate: float, alpha: float) -> int | None:
    """The runs per arm (the same in both) at which the divergence verdict's own rule decides with
    DIVERGENCE_POWER, the true rates taken to be the ones measured (a planning figure): where they
    differ by the ROPE or more, Fisher's exact test rejecting at `alpha` (Holm's strictest step,
    alpha/m) with Newcombe's 1 − alpha interval wholly beyond the ROPE; else Newcombe's 1 − 2·alpha
    interval inside it. The power is exact: every pair of counts the binomials can give, weighted by
    its probability (divergence_power), up to EXACT_UP_TO runs; beyond, the normal approximation's count
    (the difference's z test, two proportions). None where no count up to MAX_RUNS_TO_DECIDE reaches it."""
    from scipy.stats import norm

    beyond = abs(rate - ref_rate) >= DIVERGENCE_ROPE
    gap = abs(rate - ref_rate) - DIVERGENCE_ROPE if beyond else DIVERGENCE_ROPE - abs(rate - ref_rate)
    spread = rate * (1 - rate) + ref_rate * (1 - ref_rate)
    z = norm.isf(alpha / 2 if beyond else alpha) + norm.isf(1 - DIVERGENCE_POWER if beyond else (1 - DIVERGENCE_POWER) / 2)
    guess = z * z * spread / gap ** 2 if gap > 0 else math.inf  # the normal approximation: where to start looking
    if guess > MAX_RUNS_TO_DECIDE:
        return None
    if guess > EXACT_UP_TO:  # the counts' pairs grow as n; this far the normal approximation is close (and quick)
        return int(math.ceil(guess))

    def decides(n: int) -> bool:
        return divergence_power(rate, ref_rate, n, alpha, beyond) >= DIVERGENCE_POWER

    below, n = 1, max(2, int(guess / 2))
    while not decides(n):  # up by 15 % a step from half the approximation, then halve the last step
        below, n = n, int(n * 1.15) + 1
        if n > MAX_RUNS_TO_DECIDE:
            return None
    while n - below > 1:
        middle = (below + n) // 2
        below, n = (below, middle) if decides(middle) else (middle, n)
    return n


def divergence_power(rate: float, ref_rate: float, n: int, alpha: float, beyond: bool) -> float:
    """The probability that the divergence verdict decides with n runs in each arm at these true
    rates: beyond (Fisher's two-sided exact p ≤ alpha and Newcombe's 1 − alpha interval wholly beyond
    ±DIVERGENCE_ROPE), or equivalent (Newcombe's 1 − 2·alpha interval inside it), summed exactly over
    the pairs of counts (those of probability under 1e-9 in either arm left out)."""
    from scipy.stats import binom
    from statsmodels.stats.proportion import confint_proportions_2indep

    def support(p: float) -> np.ndarray:
        low, high = binom.ppf(1e-9, n, p), binom.isf(1e-9, n, p)
        return np.arange(int(low), int(high) + 1)

    k1, k2 = np.meshgrid(support(rate), support(ref_rate), indexing="ij")
    k1, k2 = k1.ravel(), k2.ravel()
    weight = binom.pmf(k1, n, rate) * binom.pmf(k2, n, ref_rate)
    if beyond:
        low, high = confint_proportions_2indep(k1, n, k2, n, method="newcomb", compare="diff", alpha=alpha)
        decided = (low > DIVERGENCE_ROPE) | (high < -DIVERGENCE_ROPE)
        decided[decided] &= fisher_p(k1[decided], k2[decided], n) <= alpha
    else:
        low, high = confint_proportions_2indep(k1, n, k2, n, method="newcomb", compare="diff", alpha=2 * alpha)
        decided = (low > -DIVERGENCE_ROPE) & (high < DIVERGENCE_ROPE)
    return float(np.sum(weight[decided]))


def fisher_p(k1: np.ndarray, k2: np.ndarray, n: int) -> np.ndarray:
    """Fisher's two-sided exact p-value of k1 of n against k2 of n, for arrays of counts: given the
    events' total t, k1 is hypergeometric; the p-value sums the probabilities of the k1 no more
    likely than the one seen (the relative tolerance 1e-7 scipy's fisher_exact allows)."""
    from scipy.special import gammaln

    def log_choose(a: int | np.ndarray, b: int | np.ndarray) -> np.ndarray:
        log: np.ndarray = gammaln(a + 1) - gammaln(b + 1) - gammaln(a - b + 1)
        return log

    out = np.empty(len(k1))
    totals = k1 + k2
    for t in np.unique(totals):
        x = np.arange(max(0, t - n), min(t, n) + 1)
        pmf = np.exp(log_choose(n, x) + log_choose(n, t - x) - log_choose(2 * n, t))
        at = totals == t
        ordered = np.sort(pmf)
        below = np.searchsorted(ordered, pmf[k1[at] - x[0]] * (1 + 1e-7), side="right")
        out[at] = np.minimum(1.0, np.concatenate([[0.0], np.cumsum(ordered)])[below])
    return out


def stability_answer(runs: pd.DataFrame, trials: pd.DataFrame, curves: pd.DataFrame | None, reference: Hashable,
                     k: int, options: AnswerOptions, field: str = "p", values: dict[Hashable, Any] | None = None,
                     arm_column: str = "p", stages_over: bool = False) -> Stability:
    """The answer's `stability` part: the three row lists (stability_rows) and the verdicts: endpoints,
    rope, verdicts (one per arm and endpoint, ArmVerdict's fields with endpoint and unit; divergence's with
    its counts), reference (per endpoint) and sentence. runs: one row per counted run (arm, fold,
    diverged, trial_id). stages_over: a study run --until-decided whose stages are over
    (endpoint_verdicts: no interim)."""
    values = values or {}

    def shown(arm: Hashable) -> dict[str, Any]:
        value = json_safe(values.get(arm, arm))
        return {"field": field, "value": value, "p": value if field == "p" else None}

    rows = stability_rows(runs, curves, reference, k, options.alpha, lambda arm: shown(arm)["value"])
    if runs.empty or reference not in set(runs["arm"]):
        return Stability(divergence=rows.divergence, logit_growth=rows.logit_growth,
                         min_entropy=rows.min_entropy, endpoints={}, rope={}, verdicts=[], reference={}, sentence="")
    info = trials.drop_duplicates("trial_id").set_index("trial_id")
    info = info.assign(arm_key=info[arm_column]) if arm_column in info else info
    positions = _positions(info)
    joined = runs.join(run_metrics(curves), on="trial_id")
    for column in ("repeat", "lr", "value", "final_val_loss"):
        if column in info and column not in joined:
            joined[column] = info[column].reindex(joined["trial_id"]).to_numpy()
    if "repeat" in positions:
        joined["repeat"] = joined["repeat"].fillna(0).astype(int)
    joined["loss"] = joined["value"].where(joined["value"].notna(), joined.get("final_val_loss")).astype("float64") \
        if "value" in joined else math.nan
    arms = list(dict.fromkeys([reference, *runs["arm"]]))
    tables = {}
    for name in ("max_logit", "min_entropy", "loss_spikes"):
        if name in joined and joined[name].notna().any():
            cells = joined.groupby(["arm", *positions])[name]
            table = cells.mean().unstack(positions)
            missing = cells.apply(lambda s: bool(s.isna().any())).unstack(positions)  # a run without it: counts
            tables[name] = (table, missing)
    sensitivity = _lr_sensitivity(joined, positions)
    if sensitivity is not None:
        tables["lr_sensitivity"] = (sensitivity, None)
    endpoints: dict[str, EndpointPart] = {}
    ropes: dict[str, EndpointRope] = {}
    verdicts: list[StabilityVerdict] = []
    references: dict[str, EndpointReference] = {}
    for name, (table, missing) in tables.items():
        endpoint = ENDPOINTS[name]
        table = _design(table.reindex(arms), positions, k, info)
        failed = None if missing is None else _design(missing.reindex(arms), positions, k, info).fillna(False) \
            .astype(bool) & table.isna()
        if reference not in table.index or table.loc[reference].isna().all():
            continue
        ref_mean = float(table.loc[reference].mean())
        if name == "lr_sensitivity":  # its ROPE is the final loss's: a share of the reference's mean loss
            loss_mean = float(joined.loc[(joined["arm"] == reference) & ~joined["diverged"], "loss"].mean())
            margin = endpoint.margin(loss_mean, options)
        else:
            margin = endpoint.margin(ref_mean, options)
        if not (math.isfinite(margin) and margin > 0):
            continue
        endpoints[name] = EndpointPart(unit=endpoint.unit, what=endpoint.what)
        ropes[name] = EndpointRope(relative=margin / ref_mean if ref_mean else None, absolute=margin,
                                   words=endpoint.words(options))
        sign = -1.0 if endpoint.higher_is_better else 1.0

        def part(arm: Hashable, name: str = name, endpoint: Endpoint = endpoint, **numbers: Any) -> StabilityVerdict:
            verdict = StabilityVerdict(**shown(arm), endpoint=name, unit=endpoint.unit, **numbers)
            return _flipped(verdict) if endpoint.higher_is_better else verdict

        verdicts += endpoint_verdicts(sign * table, reference, k=k, margin=margin, options=options, failed=failed,
                                      stages_over=stages_over, part=part)
        references[name] = EndpointReference(**shown(reference), mean=number(ref_mean),
                                             n_folds=int(table.loc[reference].notna().sum()))
    endpoints["divergence"] = EndpointPart(unit="share of runs", what=DIVERGENCE_WHAT)
    ropes["divergence"] = EndpointRope(relative=None, absolute=DIVERGENCE_ROPE,
                                       words=f"±{100 * DIVERGENCE_ROPE:g} percentage points")
    to_come = set(info.loc[info["state"].isin(["WAITING", "RUNNING"]), "arm_key"]) if "arm_key" in info else set()
    for verdict in divergence_verdicts(runs, reference, options.alpha, shown):
        if to_come:  # no peeking: a run still to come anywhere makes every row an interim reading
            verdict = replace(verdict, interim=True, verdict="undecided", region="interim", folds_to_decide=None,
                              decided_by=None)
        verdicts.append(verdict)
    ref_runs = runs[runs["arm"] == reference]
    references["divergence"] = EndpointReference(**shown(reference), mean=number(ref_runs["diverged"].mean()),
                                                 n_folds=int(len(ref_runs)))
    return Stability(divergence=rows.divergence, logit_growth=rows.logit_growth, min_entropy=rows.min_entropy,
                     endpoints=endpoints, rope=ropes, verdicts=verdicts, reference=references,
                     sentence=stability_sentence(verdicts, ropes, field, shown(reference)["value"]))


NAMES = {"max_logit": "largest logit", "min_entropy": "smallest head entropy", "loss_spikes": "loss spikes",
         "lr_sensitivity": "LR sensitivity", "divergence": "divergence"}
WORDS = {"max_logit": ("lower", "higher"), "min_entropy": ("higher", "lower"), "loss_spikes": ("fewer", "more"),
         "lr_sensitivity": ("less sensitive", "more sensitive"), "divergence": ("diverges less", "diverges more")}


def stability_sentence(rows: list[StabilityVerdict], ropes: dict[str, EndpointRope], field: str,
                       reference_value: Value) -> str:
    """The stability verdicts in words, one clause per endpoint with its ROPE: "Stability against
    p = 2: largest logit (±10 % of the reference's mean): p = 3 higher; p = 1, p = 4 undecided; …;
    divergence (±10 percentage points): p = 3 undecided (0 of 10 against 0 of 10; 170 runs per arm
    would decide)". While runs are still to come: one interim clause."""
    named = [NAMES[n] for n in [*ENDPOINTS, "divergence"] if any(r.endpoint == n for r in rows)]
    if not rows:
        return ""
    lead = f"Stability against {arm_name(field, reference_value)}"
    if all(r.interim for r in rows):
        return f"{lead}: an interim reading (runs still to come), no verdict yet on {', '.join(named)}."
    clauses = []
    for name in [*ENDPOINTS, "divergence"]:
        ours = [r for r in rows if r.endpoint == name]
        if not ours:
            continue
        better, worse = WORDS[name]
        groups: dict[str, list[str]] = {}
        for r in ours:
            said = {"better": better, "worse": worse, "equivalent": "equivalent"}.get(r.verdict, "undecided")
            who = arm_name(field, r.value)
            if name == "divergence":
                who += f" ({r.diverged} of {r.runs} against {r.reference_diverged} of {r.reference_runs}"
                who += f"; {r.folds_to_decide} runs per arm would decide)" if r.folds_to_decide else ")"
            groups.setdefault(said, []).append(who)
        said = "; ".join(f"{', '.join(arms)} {verdict}" for verdict, arms in groups.items())
        clauses.append(f"{NAMES[name]} ({ropes[name].words}): {said}")
    return f"{lead}: " + "; ".join(clauses) + "."
