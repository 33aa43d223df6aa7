"""What a study can say about p: the one module behind every verdict, profile and importance that
the dashboard's pages, `lpstudy report` and `lpstudy verdict` show.

`study_answer(data, options)` returns one JSON-ready dict (numbers, ∞ as "inf" through
lpstudy.values.json_safe). Its shape, shared by every reader:

Every study
    study, kind ("search", "replicate", "grid" or "compare"), metric (what the numbers are of),
    sentence (the plain words a page shows above its charts: what the data let the user conclude),
    importance {shares: {field: share}, low: {...}, high: {...}, null: float | None, reason: str}
        (shares empty and reason set where nothing can be estimated).

A replicate, grid or comparison study (lpstudy.results.answers.verdicts; each arm's row from the one
engine, lpstudy.results.answers.endpoint_verdicts, which every endpoint goes through)
    method (the test, named once), alpha, rope {relative, absolute},
    reference {field, value, mean},
    arms: [{field, value, p (when the field is p), n_folds, mean, diff, rel_diff, low, high,
            p_value_difference, p_value_equivalence (Holm-adjusted across arms), verdict
            ("better" | "equivalent" | "worse" | "undecided"), folds_to_decide (int or None)}],
    stability {divergence: [...], logit_growth: [...], min_entropy: [...]},
    sequential {rounds, looks: [...], stopped: {...}, folds_saved} where --until-decided ran,
    to_decide {power, max_repeats, repeats, runs, command, time, arms: [{value, test, folds, repeats,
        runs_per_arm, power}]} where an arm is undecided (lpstudy.results.answers.decide).
    convergence (None without learning curves; lpstudy.results.answers.convergence) {threshold,
        threshold_rule, horizon (the shared step budget), tokens_per_step (or None), rope
        {steps_to_threshold (relative to the reference's mean restricted steps), auc (relative)},
        method, endpoints {name: {unit, what}}, reference {endpoint: {field, value, mean, n_folds}},
        arms: [{field, value, p, endpoint ("steps_to_threshold" | "auc"), unit, the verdict keys of
                arms[] above, censored (runs that did not reach the threshold), censored_by
                {reason: count}}],
        restricted_mean: [{field, value, p, runs, reached, censored, rmst, low, high, rmst_tokens,
                           median_seconds_reached (one kind of device only, else None)}] (every arm),
        reach: [{field, value, p, step: [...], reached: [...], low: [...], high: [...]}] (Kaplan–Meier:
               the share of the arm's runs that reached the threshold by each step),
        sentence}; its sentence also ends the answer's.
    Also: k (the study's fold count K), arms[].rel_low/rel_high (the interval relative to the
    reference's mean), arms[].decided_by ("equivalence" | "difference": the test folds_to_decide
    expects to decide), reference.n_folds; importance adds p_value (the within-fold ANOVA's F test
    corrected for the folds' correlation, answers.fold_importance), f_corrected, method, confidence, k,
    eta_squared and eta_squared_null (what noise alone gives), n_folds, n_arms; shares are partial ω²,
    unclipped, low/high its noncentral-F interval; sequential adds looks_done, max_folds,
    over, arms [{value, arm (the key of stopped), state, folds}], cells_run, cells_max, and per look
    {look, folds, level (the alpha it spends), spent (up to it), over, arms: [{value, arm, state, folds,
    rel_diff, rel_low, rel_high} (state at that look; its 1 − alpha interval there), or {value,
    arm, state "stopped", decided, folds}]}.
    Issue 44 adds: repeats (R: the CV repeated over new partitions and seeds; 1 without), interim
    (true while any run of the design is still to come: every arm's verdict is then "undecided");
    rope.set ("nats" | "relative"), rope.given (as typed: "0.01", "0.5%"), rope.words (how outputs
    state it); rope.absolute is the ROPE in nats, rope.relative that over the reference's mean loss;
    reference.failed_runs; arms[]: region ("beyond the ROPE" | "within the ROPE" | "different, size
    undecided" | "undecided" | "interim"), interim, equivalence_low/equivalence_high (the 1 − 2·alpha
    interval TOST uses), p_value_beyond_rope (Holm-adjusted; it decides better/worse), holds_up_to_rho
    (the largest fold correlation at which a verdict still stands; None when undecided or in a
    sequential study), measured_rho (what the repeats' spread implies; None with one repeat),
    failed_runs, reference_failed_runs, runs (run positions of the design: R × K),
    barred_by_failures (a verdict the failed runs took away); a sequential study's p-values are those
    of the arm's last look, compared with that look's boundary; each look adds information (its
    information fraction from the corrected variance) and boundary (its nominal two-sided level).

The branches import AnswerOptions from lpstudy.results.answers.options (importing it from here
would be an import cycle: this module imports them).

A search study (lpstudy.results.answers.search)
    p_profile: [{p, loss, low, high}] (the best loss reachable at each p with lr and gain tuned
        for it, from a surrogate, with its band), p_partial_dependence: [{p, loss, low, high}],
    entanglement {field: rank correlation with p among the trials}, separable (bool),
    suggest (the command that would decide p's effect, or None).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lpstudy.results.answers.options import DEFAULT_ALPHA, DEFAULT_ROPE, AnswerOptions, Rope, parse_rope, study_rope

if TYPE_CHECKING:  # the CLI imports the options from here without pandas
    from lpstudy.results.reading.frames import StudyData, StudyInfo

__all__ = ["AnswerOptions", "DEFAULT_ALPHA", "DEFAULT_ROPE", "Rope", "answered_by_verdicts", "has_verdicts",
           "parse_rope", "study_answer", "study_rope"]


def answered_by_verdicts(info: StudyInfo) -> bool:
    """A replicate, a comparison or a grid study: its arms ran on the same folds, and the answer is
    a verdict per arm. A search samples p, lr and the gain together: its answer is p's profile."""
    return info.kind != "search" or info.spec.get("sampler") == "grid"


def has_verdicts(data: StudyData) -> bool:
    """Whether the study's answer is verdicts per arm that it has folds to pair: a replicate or a
    comparison always, a grid where its arms ran on more than one fold."""
    if not answered_by_verdicts(data.info):
        return False
    if data.info.kind != "search":
        return True
    from lpstudy.results.analysis.selection import finished

    trials = data.trials
    return len(trials) > 0 and trials["fold"].nunique() > 1 and finished(trials)["p"].nunique() > 1


def study_answer(data: StudyData, options: AnswerOptions = AnswerOptions()) -> dict:
    """The answer a study gives about p (the shape above)."""
    if not answered_by_verdicts(data.info):
        from lpstudy.results.answers.search import search_answer

        return search_answer(data, options)
    from lpstudy.results.answers.verdicts import comparison_answer

    return with_convergence(data, options, with_what_decides(comparison_answer(data, options), data, options))


def with_what_decides(answer: dict, data: StudyData, options: AnswerOptions) -> dict:
    """The answer with "to_decide" (lpstudy.results.answers.decide: the repeats of the K folds that would
    decide each undecided arm at 80 % power, the command and its time) and its clause in the sentence."""
    from lpstudy.results.analysis.paired import fold_losses
    from lpstudy.results.answers.decide import decide_sentence, to_decide
    from lpstudy.results.tables.verdicts import arm_name
    from lpstudy.values import json_safe

    ref = answer.get("reference")
    if not ref or not answer.get("arms") or not len(data.trials):
        return answer
    column = "arm" if data.info.kind == "compare" else "p"
    labels = ((data.info.spec or {}).get("compare") or {}).get("labels") or {}
    # one difference per run position: (repeat, fold) where the CV was repeated (--repeats), as decide's model
    trials = data.trials.assign(run=data.trials.get("repeat", 0) * 100_000 + data.trials["fold"])
    table = fold_losses(trials, column, "run").unstack("run")
    by_value = {json_safe(labels.get(key, key)): key for key in table.index}
    if json_safe(ref["value"]) not in by_value:
        return answer
    reference = table.loc[by_value[json_safe(ref["value"])]]
    diffs = {arm["value"]: (table.loc[by_value[json_safe(arm["value"])]] - reference).to_numpy()
             for arm in answer["arms"] if json_safe(arm["value"]) in by_value}
    plan = to_decide(answer, data, diffs, options.alpha)
    if plan:
        from lpstudy.results.answers.verdicts import sentence

        # one figure per arm: the runs at 80 % power within the design replace the plug-in crossing point
        designs = {json_safe(a["value"]): a for a in plan["arms"]}
        for arm in answer["arms"]:
            design = designs.get(json_safe(arm["value"]))
            if design is not None:
                arm["folds_to_decide"], arm["decided_by"] = design["runs_per_arm"], design["test"]
        answer["to_decide"] = json_safe(plan)
        answer["sentence"] = sentence(answer) + decide_sentence(answer, lambda v: arm_name(ref["field"], v))
    return answer


def with_convergence(data: StudyData, options: AnswerOptions, answer: dict) -> dict:
    """The answer with its `convergence` entry (lpstudy.results.answers.convergence) and its words
    after the final loss's in the sentence; the arms, the reference and K as the verdicts chose them."""
    from lpstudy.results.analysis.paired import fold_losses
    from lpstudy.results.answers.convergence import convergence_answer
    from lpstudy.results.answers.verdicts import _arms, _reference, fold_count
    from lpstudy.values import json_safe

    if answer.get("reference") is None or data.curves is None or data.curves.empty:
        answer["convergence"] = None
        return answer
    trials, field, column, values = _arms(data)
    present = list(dict.fromkeys(fold_losses(trials, column, "fold").index.get_level_values(0)))
    reference = _reference(options, data, present, values)
    convergence = json_safe(convergence_answer(data, options, reference, column, field, values, fold_count(data)))
    answer["convergence"] = convergence
    if convergence["arms"]:
        answer["sentence"] = f"{answer['sentence']} {convergence['sentence']}"
    return answer
