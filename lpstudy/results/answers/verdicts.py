"""The verdicts of a replicate, grid or comparison study: each arm (a p value, or a compared field's
value) against a reference arm, on the folds both ran.

Why frequentist tests rather than the Bayesian correlated t-test: the user asks two things of a
verdict, that a "better" or "worse" is wrong at most 5 % of the time across all arms, and that this
holds when the comparison is looked at after every round (`--until-decided`). Tests control both by
construction (Holm across arms, alpha spending across looks); a posterior probability does not, and
would need its thresholds calibrated by simulation for every K and number of arms. The interval is
the same either way (fold_tests: the corrected resampled t; the tests check it against baycomp).

The verdict of an arm (fold_tests states the rule once): "better" or "worse" where its difference
from the reference lies beyond the ROPE (in nats, 0.01 by default: options.Rope), "equivalent" where
the TOST puts it within the ROPE, else "undecided", with the folds that would decide it at the
current mean difference and spread at 80 % power (decide.design_to_decide). The per-arm rows come from the one
engine (endpoint_verdicts): failed runs (diverged, FAIL, a non-finite loss) count against the arm
that made them, a study with runs still to come gives an interim reading and no verdict unless it
runs the sequential design, and each verdict says the fold correlation up to which it holds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Callable, Hashable, SupportsFloat, SupportsIndex

import numpy as np
import pandas as pd

from lpstudy.results.answers.answer_types import (ArmVerdict, CompareTuning, Look, LookArm, Reference, Rope, Sequential,
                                                  Stability, StageArm, Value, VerdictAnswer)
from lpstudy.results.answers.options import AnswerOptions
from lpstudy.results.answers.fold_importance import fold_importance, no_importance
from lpstudy.results.answers.endpoint_verdicts import endpoint_verdicts, number
from lpstudy.results.answers.fold_tests import VERDICTS, interval
from lpstudy.results.answers.sequential import (SequentialTests, information, look_levels, nominal_levels, rounds_of,
                                                sequential_verdicts)
from lpstudy.results.answers.stability_verdicts import stability_answer
from lpstudy.results.analysis.study_data import StudyData
from lpstudy.values import REFERENCE_P, format_p, json_safe

if TYPE_CHECKING:
    from lpstudy.design.until_decided import UntilDecided

METHOD = ("corrected resampled t over folds (Nadeau & Bengio 2003; repeated CV: Bouckaert & Frank 2004, repeats taken "
          "as independent), better or worse beyond the ROPE, equivalent within it by TOST (90 % interval), Holm across "
          "arms, each interval at the level its verdict was decided at")
SEQUENTIAL_METHOD = (", Lan–DeMets O'Brien–Fleming spending with boundaries from the looks' joint distribution "
                     "(Jennison & Turnbull ch. 7), Holm's graph across arms and looks (Maurer & Bretz 2013)")
SEEDED_STAGES = ", each look over its folds' seeds at the information fraction n/K (its lower bound: conservative)"


@dataclass(frozen=True)
class Compared:
    """What a study's verdicts compare, as comparison_answer chose it: the other endpoints (convergence)
    read the same arms against the same reference over the same K."""

    trials: pd.DataFrame  # with the arm column
    field: str  # the compared field: "p", or a comparison's factor
    column: str  # the trials' column that holds the arm: "p", or a comparison's "arm" (its label)
    values: dict[Hashable, Any]  # {arm: its value of the field}
    reference: Hashable  # the reference arm (a key of `values`), None before any arm has a finished run
    k: int  # the study's fold count


def _arms(data: StudyData) -> tuple[pd.DataFrame, str, str, dict[Hashable, Any]]:
    """(trials with an `arm` column, the compared field, the arm column, {arm: value})."""
    trials = data.trials
    if data.info.kind == "compare":
        arms = data.info.compare
        factor = arms.factor if arms is not None else "arm"
        labels: dict[Hashable, Any] = {label: value for label, value in arms.labels.items()} if arms is not None else {}
        return trials, factor, "arm", labels
    values: dict[Hashable, Any] = {p: p for p in trials["p"].dropna().unique()} if len(trials) else {}
    return trials, "p", "p", values


def _reference(options: AnswerOptions, data: StudyData, present: list[Hashable], values: dict[Hashable, Any]) -> Hashable:
    """The reference arm: the one asked for, else p = 2 (or a comparison's reference), else the first."""
    wanted = options.reference
    if wanted is None and data.info.kind == "compare":
        wanted = data.info.compare.reference_label if data.info.compare is not None else None
    if wanted is None:
        wanted = REFERENCE_P if data.info.kind != "compare" else None
    for arm in present:
        value = values.get(arm, arm)
        if wanted is not None and (arm == wanted or str(arm) == str(wanted) or _same_number(value, wanted)):
            return arm
    if options.reference is not None:
        from lpstudy.errors import UserError

        from lpstudy.values import arm_name

        field = "p" if data.info.kind != "compare" else (data.info.compare.factor if data.info.compare else "arm")
        shown = ", ".join(arm_name(field, values.get(a, a)) for a in present)
        raise UserError(f"the reference {arm_name(field, options.reference)} is not one of the study's arms ({shown}); "
                        "pick one of them with --reference")
    return present[0] if present else None


def _same_number(a: object, b: object) -> bool:
    if not (isinstance(a, (SupportsFloat, SupportsIndex, str)) and isinstance(b, (SupportsFloat, SupportsIndex, str))):
        return False  # not a number, nor its text
    try:
        x, y = float(a), float(b)
    except (TypeError, ValueError):
        return False
    return x == y or math.isclose(x, y)


def fold_count(data: StudyData) -> int:
    """K: the study's fold count (its trials' `folds`, the spec's otherwise)."""
    folds = data.trials["folds"].dropna() if "folds" in data.trials else pd.Series(dtype="float64")
    if len(folds):
        return int(folds.max())
    return data.info.folds


def endpoint_table(trials: pd.DataFrame, column: str, k: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(losses, failed, ended): arms × run positions (fold, or (repeat, fold) where the study repeats its
    CV), every position of the design a column. A cell's loss: the mean of its COMPLETE runs with a
    finite loss that did not diverge. A cell failed where a COMPLETE run diverged or has no finite
    loss, or where its runs ended FAIL and none is COMPLETE or still to run (a FAIL that a retry made
    good is the machine's failure, not the arm's). ended: one row per run that counts (arm, fold,
    diverged, trial_id) for the stability verdicts, a failed run counted as diverged."""
    runs, positions, seeded, _ = counted_runs(trials, column)
    tuned = positions[0] == "tuning"
    value = runs["value"].where(runs["value"].notna(), runs.get("final_val_loss")).astype("float64")
    complete = runs["state"] == "COMPLETE"
    diverged = runs["diverged"].fillna(False).astype(bool)
    usable = complete & ~diverged & np.isfinite(value)
    runs["loss"] = value.where(usable)
    runs["bad"] = complete & ~usable
    runs["ok"], runs["fail"] = usable, runs["state"].isin(NEVER_FINISHED)
    runs["open"] = runs["state"].isin(["WAITING", "RUNNING"])
    cells = runs.groupby([column, *positions], sort=False).agg(
        loss=("loss", "mean"), bad=("bad", "any"), ok=("ok", "any"), fail=("fail", "any"), open=("open", "any"))
    failed = cells["bad"] | (cells["fail"] & ~cells["ok"] & ~cells["open"])
    lost = (cells["fail"] & ~cells["ok"] & ~cells["open"]).rename("lost")
    runs = runs.join(lost, on=[column, *positions])
    ended = runs[complete | (runs["fail"] & runs["lost"])]
    ended = pd.DataFrame({"arm": ended[column], "fold": ended["fold"], "diverged": ~ended["ok"],
                          "trial_id": ended["trial_id"]})
    losses = cells["loss"].where(~failed).unstack(positions)
    failed = failed.unstack(positions).reindex(index=losses.index)
    if positions == ["fold"]:
        full = pd.Index(range(k), name="fold")
    else:
        levels = {"repeat": sorted(runs["repeat"].unique()) if "repeat" in runs else [0], "fold": range(k),
                  "seed": list(pd.unique(runs["seed"])) if seeded else [0]}
        if not tuned:
            full = pd.MultiIndex.from_product([levels[name] for name in positions], names=positions)
        else:  # every tuning with its own repeats, folds and seeds: no position of one tuning in another
            full = pd.MultiIndex.from_tuples(
                [(t, *rest) for t in sorted(runs["tuning"].unique())
                 for rest in pd.MultiIndex.from_product(
                     [sorted(runs.loc[runs["tuning"] == t, "repeat"].unique()) if name == "repeat" and "repeat" in runs
                      else list(pd.unique(runs.loc[runs["tuning"] == t, "seed"])) if name == "seed"
                      else levels[name] for name in positions[1:]])],
                names=positions)
    if k >= 2:
        losses, failed = losses.reindex(columns=full), failed.reindex(columns=full)
    failed = failed.astype("boolean").fillna(False).astype(bool)
    keep = losses.notna().any(axis=1) | failed.any(axis=1)  # an arm is present once a run of it ended
    return losses[keep], failed[keep], ended


NEVER_FINISHED = ("FAIL", "PRUNED")  # a run that ended without a loss: FAIL, or PRUNED (a replicate's run never resumes)


def counted_runs(trials: pd.DataFrame, column: str) -> tuple[pd.DataFrame, list[str], bool, list[dict[str, Any]]]:
    """(the runs that count, the run positions that make a cell, whether the cells hold several seeds,
    the duplicates left out). A cell ((arm, fold), with repeat and seed where the study has them) is run
    once; where two runs of one cell are COMPLETE, the first completed by trial number counts and the
    others are left out and named: [{column: arm, fold, [repeat, seed,] "counted": its trial number,
    "left_out": [theirs]}]."""
    positions = ["repeat", "fold"] if "repeat" in trials and trials["repeat"].fillna(0).nunique() > 1 else ["fold"]
    # compare --tunings T: each tuning's fold stage its own positions (the seeds of one tuning are its own)
    tuned = "tuning" in trials and trials["tuning"].fillna(0).nunique() > 1
    if tuned:
        positions = ["tuning", *positions]
    runs = trials[trials[column].notna() & trials["fold"].notna()].copy()
    if tuned:
        runs["tuning"] = runs["tuning"].fillna(0).astype(int)
    if "repeat" in runs:
        runs["repeat"] = runs["repeat"].fillna(0).astype(int)
    # --seeds: several seeds inside a cell (a study whose folds merely differ in seed has one a cell)
    seeded = "seed" in runs and bool(runs.groupby([column, *positions])["seed"].nunique().gt(1).any())
    if seeded:
        runs["seed"] = runs["seed"].fillna(0).astype("int64")
        positions = [*positions, "seed"]
    runs["fold"] = runs["fold"].astype(int)
    number = "number" if "number" in runs else "trial_id"
    complete = runs[runs["state"] == "COMPLETE"].sort_values(number, kind="stable")
    # every field a trial stores makes its cell (an lr sweep inside each arm: one cell per (arm, lr, fold)):
    # a run twice is the same configuration on the same fold, seed and repeat
    from lpstudy.training.fields import FIELDS

    settings = [name for name, f in FIELDS.items() if f.trial_attr and name in complete.columns
                and name not in {column, *positions}]
    again = complete.duplicated([column, *positions, *settings], keep="first")
    duplicates: list[dict[str, Any]] = []
    for key, group in complete[complete.duplicated([column, *positions, *settings], keep=False)].groupby(
            [column, *positions], sort=False, dropna=False):
        cell = dict(zip([column, *positions], key if isinstance(key, tuple) else (key,)))
        duplicates.append({**cell, "counted": int(group[number].iloc[0]),
                           "left_out": [int(n) for n in group[number].iloc[1:]]})
    return runs.drop(index=complete.index[again]), positions, seeded, duplicates


def _blocks(table: pd.DataFrame) -> pd.DataFrame:
    """The table with one column per block (a fold, or a (repeat, fold) run position) for the ANOVA;
    the runs of one block with several seeds (--seeds) averaged into it first (a configuration measured
    on a fold is one observation of it, whatever the seeds)."""
    if isinstance(table.columns, pd.MultiIndex) and "seed" in table.columns.names:
        others = [name for name in table.columns.names if name != "seed"]
        table = table.T.groupby(level=others, sort=False).mean().T
    flat = table.copy()
    flat.columns = pd.RangeIndex(table.shape[1], name="fold")
    return flat


def _count(table: pd.DataFrame, level: str) -> int:
    """How many values a level of the run positions takes (1 where the table has no such level)."""
    columns = table.columns
    return int(columns.get_level_values(level).nunique()) if isinstance(columns, pd.MultiIndex) and level in columns.names else 1


def comparison_answer(data: StudyData, options: AnswerOptions = AnswerOptions()) -> tuple[VerdictAnswer, Compared]:
    """(the answer of a replicate, grid or comparison study (see lpstudy.results.answers), what it compared).
    Its convergence is None here (lpstudy.results.answers.with_convergence reads it over what it compared)."""
    trials, field, column, values = _arms(data)
    k = fold_count(data)
    if len(trials):
        table, failed, runs = endpoint_table(trials, column, k)
    else:
        table, failed, runs = pd.DataFrame(), pd.DataFrame(), pd.DataFrame()
    present = list(table.index)
    reference = _reference(options, data, present, values) if present else None
    sequential = data.info.until_decided
    repeats, seeds = _count(table, "repeat"), _count(table, "seed")
    compared = Compared(trials, field, column, values, reference, k)

    def shown(arm: Hashable) -> dict[str, Any]:
        value = json_safe(values.get(arm, arm))
        return {"field": field, "value": value, "p": value if field == "p" else None}

    made = partial(VerdictAnswer, study=data.name, kind=data.info.kind, metric="final validation loss (nats)",
                   method=METHOD + (SEQUENTIAL_METHOD + (SEEDED_STAGES if seeds > 1 else "") if sequential else ""),
                   alpha=options.alpha, k=k, repeats=int(repeats), seeds=int(seeds) if seeds > 1 else None,
                   importance=fold_importance(_blocks(table.where(~failed)), field, k=k) if len(present) else
                   no_importance("no finished runs yet"), tuning=_tuning(data), convergence=None)
    if reference is None or k < 2:
        return made(reference=None, arms=[], rope=Rope(
            relative=options.rope.value if options.rope.relative else None, absolute=None,
            set="relative" if options.rope.relative else "nats", given=str(options.rope), words=options.rope.words()),
            stability=Stability(divergence=[], logit_growth=[], min_entropy=[]), interim=False,
            sentence="No verdict yet: no arm has a finished run." if reference is None else
            "No verdict: the runs do not say how many folds their cross-validation had."), compared
    ref_losses = table.loc[reference].where(~failed.loc[reference])
    ref_mean = float(ref_losses.mean())
    margin = options.rope.margin(ref_mean)
    rope = Rope(relative=number(margin / ref_mean) if ref_mean else None, absolute=number(margin),
                set="relative" if options.rope.relative else "nats", given=str(options.rope),
                words=options.rope.words() + (f" = {margin:.4g} nats" if options.rope.relative else ""))
    runs_in = (table.notna() | failed).sum(axis=1)  # per arm, the runs of the design that are over
    reference_part = Reference(**shown(reference), mean=number(ref_mean), n_folds=int(ref_losses.notna().sum()),
                               failed_runs=int(failed.loc[reference].sum()), runs_in=int(runs_in.loc[reference]))
    others = [a for a in present if a != reference]
    tests, stages = None, None
    if sequential and others and repeats == 1:
        usable = table.where(~failed)
        if seeds > 1:  # columns (fold, seed), every position of the design: a look takes its folds' seeds
            diffs = np.stack([(usable.loc[a] - ref_losses).to_numpy(dtype="float64") for a in others])
            fails = failed
            marks = {"folds": np.asarray(table.columns.get_level_values("fold"), dtype=int)}
        else:
            diffs = np.stack([(usable.loc[a] - ref_losses).reindex(range(k)).to_numpy(dtype="float64") for a in others])
            fails = failed.reindex(columns=range(k), fill_value=False)
            marks = {}
        marks.update({"failed": np.stack([fails.loc[a].to_numpy(bool) for a in others]),
                      "reference_failed": fails.loc[reference].to_numpy(bool)})
        tests, stages = _sequential(trials, column, others, reference, diffs, k, margin, options, sequential, ref_mean,
                                    values, marks)

    def part(arm: Hashable, **numbers: Any) -> ArmVerdict:
        return ArmVerdict(**shown(arm), **numbers, runs_in=int(runs_in.loc[arm]))

    arms = sorted(endpoint_verdicts(table, reference, k=k, margin=margin, options=options, failed=failed, tests=tests,
                                    part=part), key=lambda arm: _order(arm.value))
    duplicates, pruned = _left_out(trials, column, values)
    # its sentence says what the rest of it says (sentence reads the answer, as it reads one with to_decide later)
    draft = made(reference=reference_part, arms=arms, rope=rope,
                 stability=stability_answer(runs, trials, data.curves, reference, k, options, field, values, column,
                                            stages_over=stages is not None and stages.over),
                 interim=any(arm.interim for arm in arms), sequential=stages, duplicates=duplicates, pruned=pruned,
                 sentence="")
    return replace(draft, sentence=sentence(draft)), compared


def stages_over(answer: VerdictAnswer) -> bool:
    """A study run --until-decided whose stages are over (its other endpoints read over the folds it ran)."""
    return answer.sequential is not None and answer.sequential.over


def _left_out(trials: pd.DataFrame, column: str,
              values: dict[Hashable, Any]) -> tuple[list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """The answer's `duplicates` (counted_runs: a cell run twice, which run counts) and `pruned` (per
    arm, its PRUNED runs: counted as failed, since a replicate's pruned run never finishes); each None
    (left out of the answer) where there is none."""
    duplicates, pruned = None, None
    counted = counted_runs(trials, column)[3]
    if counted:
        duplicates = [json_safe({"value": values.get(d[column], d[column]),
                                 **{key: d[key] for key in ("repeat", "fold", "seed") if key in d},
                                 "counted": d["counted"], "left_out": d["left_out"]}) for d in counted]
    if "state" in trials:
        stopped = trials[(trials["state"] == "PRUNED") & trials[column].notna()].groupby(column).size()
        if len(stopped):
            pruned = [{"value": json_safe(values.get(arm, arm)), "runs": int(n)} for arm, n in stopped.items()]
    return duplicates, pruned


def _tuning(data: StudyData) -> CompareTuning | None:
    """A comparison's tuning, as its verdict counts it: each arm's budget, its independent tunings
    (T ≥ 2: the interval spans them), and the note where the budget cannot tune the searched fields;
    None for any other study (or a comparison's spec stored before it named its budget)."""
    plan = data.info.compare
    if data.info.kind != "compare" or plan is None or not plan.budget:
        return None
    tunings = int(plan.tunings or 1)
    return CompareTuning(budget=int(plan.budget), tunings=tunings, counted=tunings >= 2,
                         budget_note=plan.budget_note)


def _compared(answer: VerdictAnswer, name: Callable[[Value], str]) -> tuple[str, str]:
    """(what a comparison's verdict compares, what its interval leaves out): "p = 1 tuned with 8
    trials against p = 2 tuned with 8" and, with one tuning an arm, that the tuning's luck is not in
    the interval; ("", "") for any other study."""
    tuning = answer.tuning
    if not tuning or answer.reference is None:
        return "", ""
    budget, tunings = tuning.budget, tuning.tunings
    arms = ", ".join(name(a.value) for a in answer.arms)
    each = " each" if len(answer.arms) > 1 else ""
    over = f" ({tunings} independent tunings an arm, the interval a t over them)" if tunings >= 2 else ""
    what = (f"{arms} tuned with {budget} trial{'s' if budget != 1 else ''}{each} against "
            f"{name(answer.reference.value)} tuned with {budget}{over}: ")
    notes = []
    if tunings < 2:
        notes.append("one tuning an arm: the interval holds the folds' noise of the configurations the tunings "
                     "chose, not the luck of the tuning that chose them (--tunings T counts it)")
    else:
        notes.append("the tunings share the K folds: the partition's share of the spread is not in their interval")
    if tuning.budget_note:
        notes.append(f"note: {tuning.budget_note}")
    return what, "".join(f" {n[0].upper()}{n[1:]}." for n in notes)


def _order(value: Value) -> tuple[int, float, str]:
    try:
        return (0, float(value), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(value))


def _sequential(trials: pd.DataFrame, column: str, others: list[Hashable], reference: Hashable, diffs: np.ndarray, k: int,
                margin: float, options: AnswerOptions, plan: UntilDecided, ref_mean: float, values: dict[Hashable, Any],
                marks: dict[str, np.ndarray]) -> tuple[SequentialTests, Sequential]:
    """(the tests, the answer's `sequential`): the looks of a sequential study replayed over the rounds that
    are over (looks_done), and the rounds' state. Each arm there has its value (as the answer's arms have
    it) and its arm (the key "stopped" uses: a comparison's label "p=1", a replicate's p)."""
    rounds = rounds_of(k, plan.rounds)
    folds = marks.get("folds")
    labels = np.arange(diffs.shape[-1]) if folds is None else folds
    done = looks_done(trials, column, reference, others, diffs, k, margin, options.alpha, rounds, marks)
    tests = sequential_verdicts(diffs, k, margin, options.alpha, rounds, looks_done=max(done, 1), **marks)
    if done == 0:  # before the first round is over: no verdict yet, the first look's numbers for a glance
        tests = replace(tests, verdict=np.full(len(others), VERDICTS.index("undecided")))
    verdicts = [VERDICTS[int(v)] for v in tests.verdict]
    over = done == len(rounds) or (done > 0 and all(v != "undecided" for v in verdicts))
    complete = trials[trials["state"] == "COMPLETE"]
    per_fold = len(labels) // k  # the seeds inside a fold (1 without --seeds)
    ran = complete.groupby(column)[["fold", "seed"] if per_fold > 1 else "fold"].apply(
        lambda runs: len(runs.drop_duplicates()))
    cells_run = int(ran.reindex([reference, *others]).fillna(0).sum())
    cells_max = k * per_fold * (len(others) + 1)
    return tests, Sequential(
        rounds=[int(n) for n in rounds], looks_done=int(done), max_folds=int(k), over=bool(over),
        looks=_looks(tests, others, diffs, rounds, k, options.alpha, done, ref_mean, values, labels),
        arms=[StageArm(value=json_safe(values.get(arm, arm)), arm=json_safe(arm),
                       state=verdicts[i] if verdicts[i] != "undecided" or over else "running",
                       folds=_paired_folds(diffs[i], labels)) for i, arm in enumerate(others)],
        stopped={str(json_safe(arm)): int(tests.folds_used[i]) for i, arm in enumerate(others)
                 if verdicts[i] != "undecided"},
        cells_run=cells_run, cells_max=int(cells_max), folds_saved=int(cells_max - cells_run) if over else None)


def _paired_folds(diffs: np.ndarray, labels: np.ndarray) -> int:
    """The folds with at least one paired run (a fold's seeds count once)."""
    return len(np.unique(labels[~np.isnan(diffs)]))


def _looks(tests: SequentialTests, others: list[Hashable], diffs: np.ndarray, rounds: list[int], k: int, alpha: float,
           done: int, ref_mean: float, values: dict[Hashable, Any], labels: np.ndarray) -> list[Look]:
    """Each look (stage): its folds, the alpha it spends (its level) and the alpha spent up to it;
    for a look that is over, each arm's state there: the verdict of its test at that look (better,
    equivalent, worse, undecided), with its difference to the reference relative to the reference's
    mean loss and its 1 − alpha interval over that look's folds (the verdict table's interval, which
    its last look's is: the look's test itself spends only the look's level, with Holm across the
    arms), or "stopped" with the verdict an earlier look gave it."""
    seeded = len(labels) > k
    levels = look_levels(rounds, k, alpha, seeded)
    fractions, nominal = information(rounds, k, seeded), nominal_levels(rounds, k, alpha, seeded)
    looks = []
    for j, (n, level) in enumerate(zip(rounds, levels)):
        arms: list[StageArm] = []
        if j < done:
            seen = tests.history[j]
            low, high = interval(seen.mean, seen.se, seen.df, 1 - alpha)
            for i, arm in enumerate(others):
                value, key = json_safe(values.get(arm, arm)), json_safe(arm)
                if not seen.active[i]:
                    arms.append(StageArm(value=value, arm=key, state="stopped",
                                         decided=VERDICTS[int(tests.verdict[i])], folds=int(tests.folds_used[i])))
                    continue
                arms.append(LookArm(  # its difference written even where it is not a number (null)
                    value=value, arm=key, state=VERDICTS[int(seen.verdict[i])],
                    folds=_paired_folds(diffs[i][labels < n], labels[labels < n]),
                    rel_diff=json_safe(float(seen.mean[i]) / ref_mean), rel_low=json_safe(float(low[i]) / ref_mean),
                    rel_high=json_safe(float(high[i]) / ref_mean)))
        looks.append(Look(look=j + 1, folds=int(n), level=float(level), spent=float(sum(levels[:j + 1])),
                          information=float(fractions[j]), boundary=float(nominal[j]), over=j < done, arms=arms))
    return looks


def finished_folds(trials: pd.DataFrame, column: str, arm: Hashable, seeds: int = 1) -> set[int]:
    """The folds of an arm that are over: each of its cells (the fold, or with seeds inside the folds
    each of its `seeds` (fold, seed) cells) has a COMPLETE run or trials none of which is still open."""
    mine = trials[trials[column] == arm].dropna(subset=["fold"])
    keys = ["fold", "seed"] if seeds > 1 and "seed" in mine else ["fold"]
    cells = mine.groupby(keys)["state"].agg(lambda states: (states == "COMPLETE").any()
                                            or not states.isin(["WAITING", "RUNNING"]).any())
    over = cells[cells].reset_index()
    counts = over.groupby("fold").size()
    return {int(f) for f, n in counts.items() if n >= seeds}


def looks_done(trials: pd.DataFrame, column: str, reference: Hashable, others: list[Hashable], diffs: np.ndarray, k: int,
               margin: float, alpha: float, rounds: list[int], marks: dict[str, np.ndarray] | None = None) -> int:
    """How many rounds are over: round j is when the reference and every arm still undecided after
    round j − 1 have each of the round's folds over."""
    folds = (marks or {}).get("folds")
    seeds = 1 if folds is None else len(folds) // k
    over = {arm: finished_folds(trials, column, arm, seeds) for arm in [reference, *others]}
    done = 0
    for n in rounds:
        if done:
            verdict = sequential_verdicts(diffs, k, margin, alpha, rounds, looks_done=done, **(marks or {})).verdict
            active = [arm for i, arm in enumerate(others) if VERDICTS[int(verdict[i])] == "undecided"]
        else:
            active = list(others)
        if not active or any(not set(range(n)) <= over[arm] for arm in [reference, *active]):
            break
        done += 1
    return done


def headline(answer: VerdictAnswer) -> str:
    """The answer in one sentence, for a page's first line: each verdict with its arms against the
    reference and the ROPE ("p = 1, p = 3 are equivalent to p = 2 within ±0.5 % …; p = 4 is undecided"),
    "interim" while runs are still to come. The full sentence (`sentence`) says the rest."""
    ref, arms = answer.reference, answer.arms
    if not ref or not arms:
        return answer.sentence or "No verdict yet."
    field = ref.field
    def name(v: Value) -> str:
        return f"p = {format_p(float(v))}" if field == "p" else f"{field} = {v}"

    if answer.interim:
        return (f"Interim: {len(arms)} arm{'s' if len(arms) > 1 else ''} against {name(ref.value)}, runs still to "
                "come (no verdict until every fold has run).")
    words = {"better": f"better than {name(ref.value)}", "equivalent": f"equivalent to {name(ref.value)}",
             "worse": f"worse than {name(ref.value)}", "undecided": "undecided"}
    parts = []
    for verdict, said in words.items():
        listed = [name(a.value) for a in arms if a.verdict == verdict]
        if listed:
            parts.append(f"{', '.join(listed)} {'is' if len(listed) == 1 else 'are'} {said}")
    return "; ".join(parts) + f" (ROPE {answer.rope.words})."


def sentence(answer: VerdictAnswer) -> str:
    """What the verdicts let the user conclude, in words: the ROPE stated, an interim reading
    labelled as one, failed runs named, and how far a verdict holds where that is below ρ = 0.5.
    Its own `sentence` is not read (the answer is the one it is written for)."""
    ref = answer.reference
    if ref is None:
        return answer.sentence
    field = ref.field
    def name(v: Value) -> str:
        return f"p = {format_p(float(v))}" if field == "p" else f"{field} = {v}"

    rope = f"the ROPE {answer.rope.words}"
    if not answer.arms:
        return f"Only {name(ref.value)} has finished runs: nothing to compare yet."
    arms = answer.arms
    tuning = answer.tuning
    positions = answer.k * answer.repeats * (answer.seeds or 1) * (tuning.tunings if tuning else 1)
    runs = _runs_in(ref, arms, name, positions)
    if answer.interim:
        lead = (f"Interim reading, {runs} in (no verdict until every fold has run, "
                f"or run it --until-decided: every look at full alpha would be a peek), {rope}")
    else:
        lead = f"With {runs}, at {100 * answer.alpha:.0f} % family-wise error, {rope}"
    groups: dict[str, list[ArmVerdict]] = {}
    for arm in arms:
        groups.setdefault(arm.verdict, []).append(arm)
    parts = []
    words = {"equivalent": f"equivalent to {name(ref.value)}", "better": f"better than {name(ref.value)} beyond the ROPE",
             "worse": f"worse than {name(ref.value)} beyond the ROPE"}
    lost = [a for a in groups.get("worse", []) if a.all_failed]
    if lost:
        groups["worse"] = [a for a in groups["worse"] if not a.all_failed]
        listed = ", ".join(f"{name(a.value)} ({a.failed_runs} of {a.runs} runs)" for a in lost)
        parts.append(f"{listed} {'is' if len(lost) == 1 else 'are'} worse than {name(ref.value)} by the failure "
                     f"rule: every run failed, where {name(ref.value)} has usable ones")
    for verdict, said in words.items():
        if groups.get(verdict):
            listed = ", ".join(name(a.value) for a in groups[verdict])
            part = f"{listed} {'is' if len(groups[verdict]) == 1 else 'are'} {said}"
            fragile = [f"{name(a.value)} up to ρ = {a.holds_up_to_rho:.2f}" for a in groups[verdict]
                       if a.holds_up_to_rho is not None and a.holds_up_to_rho < 0.5]
            if fragile:
                part += (" (holding only while the folds' differences correlate at most " + ", ".join(fragile)
                         + "; --repeats buys a robust answer)")
            parts.append(part)
    undecided = groups.get("undecided", [])
    if undecided:
        notes = []
        for arm in undecided:
            if arm.region == "different, size undecided":
                notes.append(f"{name(arm.value)} differs from {name(ref.value)} but not yet beyond the ROPE")
            elif arm.unresolved:
                notes.append(f"{name(arm.value)}: {arm.unresolved}")
        decidable = [a for a in undecided if not a.unresolved]  # more runs can decide these (not those that do not vary)
        more: str | None
        if not decidable:
            more = None
        elif answer.interim:
            more = "interim"
        elif answer.to_decide:  # what would decide them, at 80 % power, is the sentence's last clause
            more = None
        elif tuning and tuning.counted:
            more = "its interval spans the tunings: more --tunings narrow it"
        elif all(a.n_folds < 2 for a in decidable):
            more = "each needs 2 folds paired with the reference first"
        elif any(a.folds_to_decide for a in decidable):
            more = "folds to decide at the current difference and spread: " + ", ".join(
                f"{name(a.value)}: " + (str(a.folds_to_decide) if a.folds_to_decide else
                                       "over 50" if a.n_folds >= 2 else "2 paired folds first") for a in decidable)
        else:
            more = "no fold count up to 50 would decide it at the current difference and spread"
        listed = ", ".join(name(a.value) for a in undecided)
        parts.append(f"{listed} {'is' if len(undecided) == 1 else 'are'} undecided" + (f" ({more})" if more else "") +
                     ("; " + "; ".join(notes) if notes else ""))
    failures = [a for a in arms if a.failed_runs]
    if failures or ref.failed_runs:
        named = [f"{name(a.value)} failed (diverged or no finite loss) on {a.failed_runs} of {a.runs} runs"
                 for a in failures if not a.all_failed]
        if ref.failed_runs:
            named.append(f"the reference {name(ref.value)} failed on {ref.failed_runs}")
        if named:
            parts.append("; ".join(named) + ": failed runs count, so an arm that failed can be neither better nor "
                         "equivalent, nor worse where the reference failed")
    if answer.pruned:
        parts.append(", ".join(f"{name(d['value'])} was pruned on {d['runs']} run{'s' if d['runs'] > 1 else ''}"
                               for d in answer.pruned) + " (counted as failed: a pruned run never finishes)")
    if answer.duplicates:
        parts.append("a cell run twice counts its first COMPLETE run by trial number: " + ", ".join(
            f"{name(d['value'])} fold {d['fold']}" + (f" repeat {d['repeat']}" if "repeat" in d else "")
            + (f" seed {d['seed']}" if "seed" in d else "")
            + f" counts trial {d['counted']}, leaves out trial{'s' if len(d['left_out']) > 1 else ''} "
            + ", ".join(map(str, d["left_out"])) for d in answer.duplicates))
    what, left_out = _compared(answer, name)
    return what + lead[0].lower() + lead[1:] + ": " + "; ".join(parts) + "." + left_out if what else \
        lead + ": " + "; ".join(parts) + "."


def _runs_in(ref: Reference, arms: list[ArmVerdict], name: Callable[[Value], str], positions: int) -> str:
    """How many of the design's runs per arm are over, each arm's own count where they differ:
    "5 of the 5 runs per arm", "4 to 5 of the 5 runs per arm (p = 2: 5, p = 1: 4)"."""
    counts = {ref.value: ref.runs_in, **{a.value: a.runs_in if a.runs_in is not None else a.n_folds for a in arms}}
    low, high = min(counts.values()), max(counts.values())
    if low == high:
        return f"{low} of the {positions} runs per arm"
    each = ", ".join(f"{name(value)}: {n}" for value, n in counts.items())
    return f"{low} to {high} of the {positions} runs per arm ({each})"
