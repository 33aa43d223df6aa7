"""What would decide an undecided arm, at a stated power, within what a study's design can run, and what
it costs: the runs, the command that buys them and its time.

An arm's decision comes from the corrected resampled t over its fold differences (fold_tests). One
run's difference varies by two sources (fold_tests.variance_components; Bouthillier et al.,
"Accounting for variance in machine learning benchmarks", MLSys 2021): the partition (σ²_fold, which
the folds' shared training text correlates) and the training seed (σ²_seed, independent from run to
run). A design of R repeats of K folds with S seeds inside every (repeat, fold) cell has

    se² = σ²_fold · (1/(R·K) + 1/(K − 1)) + σ²_seed / (R·K·S)

(the corrected repeated k-fold test, Bouckaert and Frank, PAKDD 2004, on the partition's share; the
seeds' share averaged away). More repeats shrink the first term's first part only; more seeds shrink
the second term only; more folds both. Where a study ran one seed a cell, the two cannot be told
apart: the whole spread is taken as the partition's (seeds then buy nothing in the plan), and the
answer says that --seeds measures it.

The power of each design is the one of the test the verdict uses (the beyond-the-ROPE test where
|difference| ≥ ROPE: the 1 − level interval wholly beyond ±ROPE, noncentrality (|d| − ROPE)/se; the
equivalence test where |d| < ROPE: two one-sided tests against ±ROPE, Schuirmann 1987, power
P(upper) + P(lower) − 1), at Holm's strictest level alpha/m, by the noncentral t with R·K − 1 degrees of
freedom (the normal approximation where scipy's noncentral t returns no number), the true difference
taken to be the one measured so far: a planning figure, as every sample-size calculation's, not a
promise. The designs tried: the study's K folds with R = 1 .. MAX_REPEATS repeats and S = 1 ..
MAX_SEEDS seeds, and a new study of K' = K + 1 .. MAX_FOLDS folds with S seeds; the one with the
fewest runs per arm that reaches POWER is the answer (fewer folds, then fewer repeats, on a tie),
with its runs and its time (lpstudy.training.costs).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Callable, NamedTuple, Sequence, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from lpstudy.results.answers.answer_types import (ArmDesign, ArmVerdict, EndpointRope, StabilityDecide,
                                                  StabilityVerdict, ToDecide, Value)
from lpstudy.results.answers.fold_tests import share_ratio

if TYPE_CHECKING:
    from lpstudy.results.analysis.study_data import StudyData

POWER = 0.80
MAX_REPEATS = 20  # the most repeats a suggestion asks for (the option allows more; the cost says why not)
MAX_FOLDS = 50  # where repeats cannot, a new study with more folds (each fold's training text grows) up to this
MAX_SEEDS = 20  # the most seeds inside a cell a suggestion asks for
A = TypeVar("A", bound=ArmVerdict)
BEYOND, EQUIVALENCE = "beyond the ROPE", "equivalence"


@dataclass(frozen=True)
class Design:
    """What design_to_decide finds for one arm (the answer's ArmDesign holds the same, with the arm): the test that would decide it, and the design with the
    fewest runs per arm at which that test reaches `power_target` (folds, repeats, seeds, runs_per_arm,
    and the power there); out of reach within the designs tried: repeats, seeds and runs_per_arm None,
    folds the study's K, power the best the study's K folds give (None where the numbers give none)."""

    test: str
    power_target: float
    folds: int
    repeats: int | None
    seeds: int | None
    runs_per_arm: int | None
    power: float | None


class StudyShape(NamedTuple):
    """A study's design: K folds, R repeats of them, S seeds inside each (fold, repeat) cell."""

    folds: int
    repeats: int
    seeds: int


def standard_error(sd: float, runs: ArrayLike, k: ArrayLike, seed_sd: float = 0.0, seeds: ArrayLike = 1) -> np.ndarray:
    """The corrected standard error of a mean over `runs` (repeat, fold) cells of K folds, each of
    `seeds` seeds: partition spread sd, training-noise spread seed_sd (arrays broadcast). With one seed a
    cell the test cannot tell the two apart and corrects the whole spread (fold_tests.corrected_stats):
    the plan does what the test will."""
    n, folds, per_cell = (np.asarray(x, dtype="float64") for x in (runs, k, seeds))
    overlap = 1.0 / (folds - 1)
    apart = sd ** 2 * (1.0 / n + overlap) + seed_sd ** 2 / (n * per_cell)
    together = (sd ** 2 + seed_sd ** 2) * (1.0 / n + overlap)
    return np.sqrt(np.where(per_cell > 1, apart, together))


def expected_df(sd: float, seed_sd: float, cells: ArrayLike, k: ArrayLike, seeds: ArrayLike) -> np.ndarray:
    """The degrees of freedom the test will have (fold_tests._seeded_stats): C − 1 with one seed a cell,
    else Welch–Satterthwaite's for (1/C + r)·cell_var − r·seed_var/S at the expected mean squares."""
    n_cells, folds, per_cell = (np.asarray(x, dtype="float64") for x in (cells, k, seeds))
    r = 1.0 / (folds - 1)
    cell_var = sd ** 2 + seed_sd ** 2 / per_cell
    var = cell_var / n_cells + r * sd ** 2
    with np.errstate(all="ignore"):
        df = var ** 2 / (((1.0 / n_cells + r) * cell_var) ** 2 / (n_cells - 1)
                         + (r * seed_sd ** 2 / per_cell) ** 2 / (n_cells * (per_cell - 1)))
    out: np.ndarray = np.where(per_cell > 1, np.clip(np.nan_to_num(df, nan=1.0), 1.0, n_cells - 1), n_cells - 1)
    return out


def power(mean: float, se: ArrayLike, df: ArrayLike, margin: float, level: float, test: str) -> np.ndarray:
    """The chance that the verdict's test decides at `level`, if the true difference is `mean`, for
    designs of standard error se and df degrees of freedom (arrays)."""
    import warnings

    from scipy.stats import nct, norm, t

    se_, df_ = np.asarray(se, dtype="float64"), np.asarray(df, dtype="float64")

    def upper_tail(crit: np.ndarray, shift: np.ndarray) -> np.ndarray:
        # P(T > crit), T noncentral t; the normal approximation where scipy gives none
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            exact = nct.sf(crit, df_, shift)
        tail: np.ndarray = np.where(np.isfinite(exact), exact, norm.sf(crit - shift))
        return tail

    with np.errstate(all="ignore"):
        if test == BEYOND:
            crit = t.ppf(1 - level / 2, df_)
            reached = upper_tail(crit, (abs(mean) - margin) / se_)
        else:
            crit = t.ppf(1 - level, df_)
            reached = upper_tail(crit, (margin - mean) / se_) + upper_tail(crit, (margin + mean) / se_) - 1.0
    chance: np.ndarray = np.where((df_ >= 1) & (se_ > 0), np.clip(reached, 0.0, 1.0), 0.0)
    return chance


def design_to_decide(mean: float, sd: float, n: int, k: int, margin: float, alpha: float,
                     n_tests: int = 1, seed_sd: float | None = None) -> Design:
    """The design with the fewest runs per arm (more than the n run) at which the verdict's test for the
    arm (equivalence where |mean| < margin, else beyond the ROPE) reaches POWER (a Design); or one out of
    reach, with the power the largest design of the study's K folds would give. sd: the partition's spread of one run's difference (the whole spread
    where seed_sd is None: one seed a cell cannot tell the two apart; seeds then buy nothing here)."""
    test = EQUIVALENCE if abs(mean) < margin else BEYOND
    level = alpha / max(1, n_tests)
    out = Design(test=test, power_target=POWER, folds=k, repeats=None, seeds=None, runs_per_arm=None, power=None)
    seed_part = float(seed_sd) if seed_sd is not None and math.isfinite(seed_sd) else None
    known = seed_part is not None
    if not (math.isfinite(mean) and math.isfinite(sd)) or sd < 0 or (sd == 0 and not known) or k < 2:
        return out
    max_seeds = MAX_SEEDS if known else 1
    seeds = np.arange(1, max_seeds + 1)
    same_k = np.array([(k, r, s) for r in range(1, MAX_REPEATS + 1) for s in seeds])
    more_k = np.array([(f, 1, s) for f in range(k + 1, MAX_FOLDS + 1) for s in seeds])
    designs = np.concatenate([same_k, more_k]) if len(more_k) else same_k
    folds, repeats, per_cell = designs[:, 0], designs[:, 1], designs[:, 2]
    cells = folds * repeats
    runs = cells * per_cell
    se = standard_error(sd, cells, folds, seed_part or 0.0, per_cell)
    reached = power(mean, se, expected_df(sd, seed_part or 0.0, cells, folds, per_cell), margin, level, test)
    ok = (reached >= POWER) & (runs > n)
    if not ok.any():
        return replace(out, power=float(reached[: len(same_k)].max()))
    best = min(np.flatnonzero(ok), key=lambda i: (runs[i], folds[i], repeats[i]))
    return replace(out, folds=int(folds[best]), repeats=int(repeats[best]), seeds=int(per_cell[best]),
                   runs_per_arm=int(runs[best]), power=float(reached[best]))


def _command(data: StudyData, arms: list[Value], design: StudyShape, now: StudyShape) -> str | None:
    """The replicate that runs the design (a new study: folds, repeats and seeds are part of a study's
    spec), with the arms it can decide and the reference; now: the study's own design."""
    from lpstudy.names import shell_quoted
    from lpstudy.values import format_p

    if data.info.kind != "replicate":
        return None
    if design == now:  # the study's own design, not yet run out
        return f"lpstudy worker --study {shell_quoted(data.name)}"
    fixed = data.info.spec.space.fixed if data.info.spec is not None else {}
    sets = "".join(f" --set {name}={value}" for name, value in fixed.items()
                   if name not in ("folds", "fold", "p", "repeat", "seed"))
    k, repeats, seeds = design
    ps = ",".join(format_p(float(p)) for p in arms)
    suffix = (f"-k{k}" if k != now.folds else "") + (f"-r{repeats}" if repeats > 1 else "") + \
        (f"-s{seeds}" if seeds > 1 else "")
    return (f"lpstudy replicate --study {shell_quoted(data.name + (suffix or '-again'))} --preset {data.info.preset} "
            f"--p {ps} --folds {k}" + (f" --repeats {repeats}" if repeats > 1 else "")
            + (f" --seeds {seeds}" if seeds > 1 else "") + sets)


def arm_design(diff: float | None, sigma_fold: float | None, sigma_seed: float | None, n_folds: int, k: int,
               margin: float, alpha: float, n_tests: int) -> Design:
    """design_to_decide for an arm of the answer, from the numbers its verdict was computed on: its
    difference, its sources of variance (sigma_fold, sigma_seed) and its paired runs."""
    return design_to_decide(float("nan") if diff is None else float(diff),
                            float("nan") if sigma_fold is None else float(sigma_fold), int(n_folds), k, margin, alpha,
                            n_tests, seed_sd=sigma_seed)


def to_decide(arms: Sequence[ArmVerdict], margin: float | None, reference: Value, *, k: int, repeats: int, seeds: int,
              data: StudyData, alpha: float, cell_seeds: int = 1) -> ToDecide | None:
    """The answer's `to_decide`: for each undecided arm with 2 paired runs, the design that would decide it
    (design_to_decide, on the verdict's own numbers) and, over them all, the study that runs it: its
    command (a replicate of the arms it decides and the reference), its runs and their time on one CPU
    thread and one GPU. The same for a convergence endpoint (answers.convergence: its arms, ROPE and
    reference). margin: the ROPE in the endpoint's unit (None before it is known); k, repeats, seeds: the
    study's design now. cell_seeds: where each paired cell is already the mean of S seeds (a convergence
    endpoint of a study run --seeds S, read a cell a fold) and no arm measured its seeds' share, the
    spread planned on is that of S-seed means: every design keeps the S seeds, and its runs count them.
    Each ArmDesign holds its arm's value (`value`): `decided` gives each arm its design's runs."""
    from lpstudy.training.costs import serial_estimate

    undecided = [a for a in arms if a.verdict == "undecided" and a.n_folds >= 2 and not a.barred_by_failures
                 and not a.unresolved]
    if not undecided or not margin:
        return None
    designs = [(arm, arm_design(arm.diff, arm.sigma_fold, arm.sigma_seed, arm.n_folds, k, float(margin), alpha,
                                len(undecided))) for arm in undecided]
    designs = [(arm, d) for arm, d in designs if d.power is not None]
    measured = any(a.sigma_seed is not None for a in undecided)
    if cell_seeds > 1 and not measured:  # the cells are S-seed means: a design keeps the S seeds inside them
        designs = [(arm, replace(d, seeds=cell_seeds, runs_per_arm=d.runs_per_arm * cell_seeds)
                    if d.repeats and d.runs_per_arm is not None else d) for arm, d in designs]
    if not designs:
        return None
    planned = [ArmDesign(value=arm.value, **asdict(d)) for arm, d in designs]  # the answer's part: the design and its arm
    reachable = [a for a in planned if a.repeats]
    if not reachable:
        return ToDecide(power=POWER, max_repeats=MAX_REPEATS, arms=planned, folds=None, repeats=None, seeds=None,
                        runs=None, command=None, time=None, seeds_measured=measured)
    # the design that decides them all: the most folds, repeats and seeds any of them needs
    folds = max(int(a.folds or 0) for a in reachable)
    most_repeats, most_seeds = max(int(a.repeats or 0) for a in reachable), max(int(a.seeds or 0) for a in reachable)
    design, now = StudyShape(folds, most_repeats, most_seeds), StudyShape(k, int(repeats or 1), int(seeds or 1))
    runs = folds * most_repeats * most_seeds * (len(reachable) + 1)  # the reference runs them too
    max_steps = data.trials["max_steps"].dropna().max() if "max_steps" in data.trials else None
    steps = int(max_steps) if max_steps is not None and math.isfinite(max_steps) else None
    preset = data.info.preset  # a study lpstudy did not make (no preset): the design, without a command
    return ToDecide(power=POWER, max_repeats=MAX_REPEATS, arms=planned, folds=folds, repeats=most_repeats,
                    seeds=most_seeds, runs=runs,
                    command=_command(data, [reference, *(a.value for a in reachable)], design, now) if preset else None,
                    time=serial_estimate(runs, preset, steps) if preset else None, seeds_measured=measured)


def decided(arms: Sequence[A], plan: ToDecide | None) -> list[A]:
    """The arms, each one the plan decides with its design's runs (folds_to_decide) and test (decided_by): one
    figure per arm, the runs at 80 % power within the design. A design holds its arm's value."""
    if plan is None:
        return list(arms)
    designs = {design.value: design for design in plan.arms}
    return [replace(arm, folds_to_decide=designs[arm.value].runs_per_arm, decided_by=designs[arm.value].test)
            if arm.value in designs else arm for arm in arms]


def _why_out_of_reach(arm: ArmVerdict | None, margin: float | None, name: Callable[[Value], str]) -> str:
    """Why no design decides an arm, from what was measured: the partition's share, which no number of
    folds or seeds averages away (at the largest design, MAX_FOLDS folds × MAX_SEEDS seeds, its term
    σ²_fold·(1/K + n₂/n₁) ≈ 0.04·σ²_fold outweighs the seeds' σ²_seed/(K·S) = 0.001·σ²_seed once
    σ_fold > 0.16·σ_seed), else a difference that sits at the ROPE's edge, where no interval can fall
    wholly on one side. "" where the arm's figures are not given."""
    if arm is None or margin is None or arm.diff is None:
        return ""
    sigma_fold, sigma_seed = arm.sigma_fold, arm.sigma_seed
    if sigma_fold and (sigma_seed is None or sigma_fold > 0.16 * sigma_seed):
        return (f"{name(arm.value)}: the folds' shared training text, σ_fold {sigma_fold:.4f} nats, bounds the "
                "interval however many folds or seeds run")
    edge = abs(abs(arm.diff) - margin)
    return (f"{name(arm.value)}: its difference, {arm.diff:+.4f} nats, lies {edge:.4f} from the ROPE's edge at "
            f"±{margin:.4f}: an interval that narrow is out of reach")


def decide_sentence(plan: ToDecide | None, k: int, name: Callable[[Value], str], arms: Sequence[ArmVerdict] = (), margin: float | None = None,
                    lead: str = "To decide", seeds_note: bool = True) -> str:
    """The clause the verdict's sentence ends with: what would decide the undecided arms, in runs and time
    (k: the study's folds; arms and margin: the verdicts and the ROPE the plan was made from, which say why an
    arm is out of reach; lead: its first words; seeds_note: say that one seed a fold cannot measure the seeds'
    share)."""
    if not plan:
        return ""
    lost = [name(a.value) for a in plan.arms if not a.repeats]
    parts = []
    if plan.repeats:
        how = f"`{plan.command}`" if plan.command else f"--folds {plan.folds} --repeats {plan.repeats} --seeds {plan.seeds}"
        design = (f"{plan.folds} folds" + (f" repeated {plan.repeats} times" if plan.repeats > 1 else "")
                  + (f" with {plan.seeds} seeds in each" if plan.seeds and plan.seeds > 1 else ""))
        parts.append(f"at {100 * plan.power:.0f} % power, {design} ({plan.runs} runs) would decide "
                     + ", ".join(name(a.value) for a in plan.arms if a.repeats) + f": {how}"
                     + (f", {plan.time}" if plan.time else ""))
    if lost:
        figures = {arm.value: arm for arm in arms}
        why = "; ".join(w for w in (_why_out_of_reach(figures.get(a.value), margin, name) for a in plan.arms
                                    if not a.repeats) if w)
        parts.append(f"{', '.join(lost)}: no design up to {plan.max_repeats} repeats of the {k} folds "
                     f"or {MAX_FOLDS} folds" + (f", with up to {MAX_SEEDS} seeds in each," if plan.seeds_measured else "")
                     + f" reaches {100 * plan.power:.0f} % power at the current difference and spread"
                     + (f" ({why})" if why else ""))
    if seeds_note and not plan.seeds_measured:
        parts.append("one seed a fold cannot tell training noise from the partition's share of the spread: "
                     "--seeds 3 measures it, and seeds inside the folds average the training noise away")
    return f" {lead}: " + "; ".join(parts) + "."


def stability_to_decide(verdicts: Sequence[StabilityVerdict], ropes: dict[str, EndpointRope], reference: Value, *,
                        k: int, repeats: int, seeds: int, data: StudyData, alpha: float) -> list[StabilityDecide]:
    """The stability part's `to_decide`: per stability endpoint with an undecided arm the runs could
    decide, the design that would decide its arms and the study that runs it, as to_decide does for
    the final loss: its command and its time. A per-run endpoint's design is design_to_decide's on
    the verdict's own numbers (arm_design, Holm's strictest level over the endpoint's undecided arms);
    divergence's is the runs per arm its exact rule needs (answers.stability_verdicts.runs_to_decide,
    already on the verdict), bought as repeats of the study's K folds (up to the option's bound of 100, then
    seeds inside each cell)."""
    from lpstudy.training.costs import serial_estimate

    if not verdicts or k < 2:
        return []
    now = StudyShape(k, int(repeats or 1), int(seeds or 1))
    preset = data.info.preset
    max_steps = data.trials["max_steps"].dropna().max() if "max_steps" in data.trials else None
    steps = int(max_steps) if max_steps is not None and math.isfinite(max_steps) else None
    plans = []
    for endpoint in dict.fromkeys(v.endpoint for v in verdicts):
        undecided = [r for r in verdicts if r.endpoint == endpoint and r.verdict == "undecided"
                     and r.folds_to_decide and not r.interim]
        if not undecided:
            continue
        designs: list[Design]
        if endpoint == "divergence":
            designs = []
            for row in undecided:
                needed = int(row.folds_to_decide or 0)
                repeats_needed = min(math.ceil(needed / k), 100)
                designs.append(Design(test=row.decided_by or "", power_target=POWER, folds=k, repeats=repeats_needed,
                                      seeds=math.ceil(needed / (k * repeats_needed)), runs_per_arm=needed, power=None))
        else:
            margin = float(ropes[endpoint].absolute or 0.0)
            designs = [arm_design(row.diff, row.sigma_fold, row.sigma_seed, row.n_folds, k, margin, alpha, len(undecided))
                       for row in undecided]
        # out of reach (no repeats) are left out; a reachable design has its repeats, seeds and runs
        reachable = [(row, d) for row, d in zip(undecided, designs) if d.repeats]
        if not reachable:
            continue
        design = StudyShape(max(d.folds for _, d in reachable), max(d.repeats or 0 for _, d in reachable),
                            max(d.seeds or 0 for _, d in reachable))
        runs = design.folds * design.repeats * design.seeds * (len(reachable) + 1)
        arms = [row.value for row, _ in reachable]
        plans.append(StabilityDecide(
            endpoint=endpoint, arms=arms, test=sorted({d.test for _, d in reachable}),
            folds=int(design.folds), repeats=int(design.repeats), seeds=int(design.seeds),
            runs_per_arm=int(max(d.runs_per_arm or 0 for _, d in reachable)), runs=int(runs),
            # a study lpstudy did not make (no preset): the design, without a command or a time (as to_decide)
            command=_command(data, [reference, *arms], design, now) if preset else None,
            time=serial_estimate(runs, preset, steps) if preset else None))
    return plans


def stability_decide_sentence(plans: list[StabilityDecide], names: dict[str, str]) -> str:
    """The stability sentence's last clause: per endpoint, the runs that would decide it at 80 % power,
    the command and its time."""
    if not plans:
        return ""
    parts = []
    for plan in plans:
        how = ", ".join(w for w in (f"`{plan.command}`" if plan.command else "", plan.time or "") if w)
        exact = " by Fisher's exact test" if plan.endpoint == "divergence" else ""
        parts.append(f"{names.get(plan.endpoint, plan.endpoint)}: {plan.runs_per_arm} runs per arm{exact} "
                     f"({plan.runs} runs)" + (f": {how}" if how else ""))
    return f" To decide stability at {100 * POWER:.0f} % power: " + "; ".join(parts) + "."
