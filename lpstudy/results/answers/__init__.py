"""What a study can say about p: the one module behind every verdict, profile and importance that
the dashboard's pages, `lpstudy report` and `lpstudy verdict` show.

`study_answer(data, options)` returns the answer as typed objects
(lpstudy.results.answers.answer_types: a VerdictAnswer for a replicate, grid or comparison, a
SearchAnswer for a search), read by attribute; `answer.to_json()` is the JSON `lpstudy verdict
--json` writes. The schema, each key commented once, is those types.

The branches build its parts typed: the verdicts (lpstudy.results.answers.verdicts, each arm's from
endpoint_verdicts, the one engine, which the stability and convergence verdicts share), the stability
part (.stability_verdicts), convergence (.convergence), what would decide (.decide), a search's answer
(.search). study_answer takes the verdicts' answer and adds what depends on it, each step taking and
giving a VerdictAnswer (dataclasses.replace): what would decide its undecided arms, its convergence,
what would decide its stability endpoints. The verdicts say what they compared (verdicts.Compared: the
arms, the reference, K) and convergence reads the same, never choosing again. They import AnswerOptions
from lpstudy.results.answers.options (importing it from here would be an import cycle: this module
imports them).
"""

from __future__ import annotations

from dataclasses import replace
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

        return search_answer(data, options)
    from lpstudy.results.answers.verdicts import comparison_answer

    answer, compared = comparison_answer(data, options)
    answer = with_stability_decides(with_convergence(with_what_decides(answer, data, options), data, options, compared),
                                    data, options)
    said = answer.stability.sentence
    return replace(answer, sentence=f"{answer.sentence} {said}") if said else answer


def with_what_decides(answer: VerdictAnswer, data: StudyData, options: AnswerOptions) -> VerdictAnswer:
    """The answer with its `to_decide` (lpstudy.results.answers.decide: the design of folds, repeats and seeds
    that would decide each undecided arm at 80 % power, the command and its time), each arm it decides with
    its design's runs, and its clause in the sentence, computed on the numbers the verdicts were (each arm's
    difference and sources of variance)."""
    from lpstudy.results.answers.decide import decide_sentence, decided, to_decide
    from lpstudy.results.answers.verdicts import sentence
    from lpstudy.values import arm_name

    ref = answer.reference
    if ref is None or not answer.arms or not len(data.trials):
        return answer
    if answer.tuning is not None and answer.tuning.counted:  # its interval spans tunings, not folds: no fold design
        return answer
    plan = to_decide(answer.arms, answer.rope.absolute, ref.value, k=answer.k, repeats=answer.repeats,
                     seeds=answer.seeds or 1, data=data, alpha=options.alpha)
    if plan is None:
        return answer
    planned = replace(answer, arms=decided(answer.arms, plan), to_decide=plan)
    return replace(planned, sentence=sentence(planned) + decide_sentence(
        plan, answer.k, lambda v: arm_name(ref.field, v), arms=planned.arms, margin=answer.rope.absolute))


def with_stability_decides(answer: VerdictAnswer, data: StudyData, options: AnswerOptions) -> VerdictAnswer:
    """The answer with its stability part's `to_decide` (answers.decide.stability_to_decide: per endpoint, the
    design, its command and time) and its clause at the end of the stability sentence."""
    from lpstudy.results.answers.decide import stability_decide_sentence, stability_to_decide
    from lpstudy.results.answers.stability_verdicts import NAMES

    stability = answer.stability
    if answer.reference is None or not stability.verdicts:
        return answer
    plans = stability_to_decide(stability.verdicts, stability.rope or {}, answer.reference.value, k=answer.k,
                                repeats=answer.repeats, seeds=answer.seeds or 1, data=data, alpha=options.alpha)
    if not plans:
        return answer
    return replace(answer, stability=replace(stability, to_decide=plans, sentence=(stability.sentence or "")
                                             + stability_decide_sentence(plans, NAMES)))


def with_convergence(answer: VerdictAnswer, data: StudyData, options: AnswerOptions,
                     compared: Compared) -> VerdictAnswer:
    """The answer with its `convergence` part (lpstudy.results.answers.convergence) and its words after the
    final loss's in the sentence; the arms, the reference and K as the verdicts chose them."""
    from lpstudy.results.answers.convergence import convergence_answer
    from lpstudy.results.answers.verdicts import stages_over

    if answer.reference is None or data.curves is None or data.curves.empty:
        return answer
    convergence = convergence_answer(data, options, compared.reference, compared.column, compared.field,
                                     compared.values, compared.k, stages_over=stages_over(answer))
    return replace(answer, convergence=convergence, sentence=f"{answer.sentence} {convergence.sentence}"
                   if convergence.arms else answer.sentence)
