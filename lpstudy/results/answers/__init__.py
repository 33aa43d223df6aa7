"""What a study can say about p: the one module behind every verdict, profile and importance that
the dashboard's pages, `lpstudy report` and `lpstudy verdict` show.

`study_answer(data, options)` returns the answer as typed objects
(lpstudy.results.answers.answer_types: a VerdictAnswer for a replicate, grid or comparison, a
SearchAnswer for a search), read by attribute; `answer.to_json()` is the JSON `lpstudy verdict
--json` writes. The schema, each key commented once, is those types.

The branches (lpstudy.results.answers.verdicts, .convergence, .decide, .search) build the answer as
plain dicts; study_answer types it once they are done. The verdicts say what they compared
(verdicts.Compared: the arms, the reference, K) and convergence reads the same, never choosing again. They import AnswerOptions from
lpstudy.results.answers.options (importing it from here would be an import cycle: this module
imports them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lpstudy.results.answers.answer_types import SearchAnswer, VerdictAnswer
from lpstudy.results.answers.options import DEFAULT_ALPHA, DEFAULT_ROPE, AnswerOptions, Rope, parse_rope, study_rope

if TYPE_CHECKING:  # the CLI imports the options from here without pandas
    from lpstudy.results.answers.verdicts import Compared
    from lpstudy.results.analysis.study_data import StudyData, StudyInfo

__all__ = ["AnswerOptions", "DEFAULT_ALPHA", "DEFAULT_ROPE", "Rope", "SearchAnswer", "VerdictAnswer",
           "answered_by_verdicts", "has_verdicts", "parse_rope", "study_answer", "study_rope"]


def answered_by_verdicts(info: StudyInfo) -> bool:
    """A replicate, a comparison or a grid study: its arms ran on the same folds, and the answer is
    a verdict per arm. A search samples p, lr and the gain together: its answer is p's profile."""
    return info.kind != "search" or info.is_grid


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


def study_answer(data: StudyData, options: AnswerOptions = AnswerOptions()) -> VerdictAnswer | SearchAnswer:
    """The answer a study gives about p (lpstudy.results.answers.answer_types)."""
    if not answered_by_verdicts(data.info):
        from lpstudy.results.answers.search import search_answer

        return SearchAnswer.of(search_answer(data, options))
    from lpstudy.results.answers.verdicts import comparison_answer

    answer, compared = comparison_answer(data, options)
    answer = with_convergence(data, options, with_what_decides(answer, data, options), compared)
    with_stability_decides(answer, data, options)
    said = (answer.get("stability") or {}).get("sentence")
    if said:
        answer["sentence"] = f"{answer['sentence']} {said}"
    return VerdictAnswer.of(answer)


def with_what_decides(answer: dict, data: StudyData, options: AnswerOptions) -> dict:
    """The answer with "to_decide" (lpstudy.results.answers.decide: the design of folds, repeats and seeds
    that would decide each undecided arm at 80 % power, the command and its time) and its clause in the
    sentence, computed on the numbers the verdicts were (each arm's difference and sources of variance)."""
    from lpstudy.results.answers.decide import decide_sentence, to_decide
    from lpstudy.values import arm_name
    from lpstudy.values import json_safe

    ref = answer.get("reference")
    if not ref or not answer.get("arms") or not len(data.trials):
        return answer
    tuning = answer.get("tuning")  # a comparison's (answer_types.CompareTuning)
    if tuning is not None and tuning.counted:  # its interval spans tunings, not folds: no fold design decides it
        return answer
    plan = to_decide(answer, data, options.alpha)
    if plan:
        from lpstudy.results.answers.verdicts import sentence

        # one figure per arm: the runs at 80 % power within the design
        designs = {a["value"]: a for a in plan["arms"]}  # each design holds its arm's own value
        for arm in answer["arms"]:
            design = designs.get(arm["value"])
            if design is not None:
                arm["folds_to_decide"], arm["decided_by"] = design["runs_per_arm"], design["test"]
        answer["to_decide"] = json_safe(plan)
        answer["sentence"] = sentence(answer) + decide_sentence(answer, lambda v: arm_name(ref["field"], v))
    return answer


def with_stability_decides(answer: dict, data: StudyData, options: AnswerOptions) -> None:
    """The stability entry with "to_decide" (answers.decide.stability_to_decide: per endpoint, the design, its
    command and time) and its clause at the end of the stability sentence."""
    from lpstudy.results.answers.decide import stability_decide_sentence, stability_to_decide
    from lpstudy.results.answers.stability_verdicts import NAMES

    plans = stability_to_decide(answer, data, options.alpha)  # typed: answer_types.StabilityDecide
    if plans:
        answer["stability"]["to_decide"] = plans
        answer["stability"]["sentence"] += stability_decide_sentence(plans, NAMES)


def with_convergence(data: StudyData, options: AnswerOptions, answer: dict, compared: Compared) -> dict:
    """The answer with its `convergence` entry (lpstudy.results.answers.convergence) and its words
    after the final loss's in the sentence; the arms, the reference and K as the verdicts chose them."""
    from lpstudy.results.answers.convergence import convergence_answer
    from lpstudy.values import json_safe

    if answer.get("reference") is None or data.curves is None or data.curves.empty:
        answer["convergence"] = None
        return answer
    from lpstudy.results.answers.verdicts import stages_over

    over = stages_over(answer)  # --until-decided: its stages ran out
    convergence = json_safe(convergence_answer(data, options, compared.reference, compared.column, compared.field,
                                               compared.values, compared.k, stages_over=over))
    answer["convergence"] = convergence
    if convergence["arms"]:
        answer["sentence"] = f"{answer['sentence']} {convergence['sentence']}"
    return answer
