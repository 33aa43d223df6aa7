"""What a study can say about p: the one module behind every verdict, profile and importance that
the dashboard's pages, `lpstudy report` and `lpstudy verdict` show.

`study_answer(data, options)` returns one JSON-ready dict (numbers, ∞ as "inf" through
lpstudy.values.json_safe). Its shape, shared by every reader:

Every study
    study, kind ("search", "replicate", "grid" or "compare"), metric (what the numbers are of),
    sentence (the plain words a page shows above its charts: what the data let the user conclude),
    importance {shares: {field: share}, low: {...}, high: {...}, null: float | None, reason: str}
        (shares empty and reason set where nothing can be estimated).

A replicate, grid or comparison study (lpstudy.results.answers.verdicts)
    method (the test, named once), alpha, rope {relative, absolute},
    reference {field, value, mean},
    arms: [{field, value, p (when the field is p), n_folds, mean, diff, rel_diff, low, high,
            p_value_difference, p_value_equivalence (Holm-adjusted across arms), verdict
            ("better" | "equivalent" | "worse" | "undecided"), folds_to_decide (int or None)}],
    stability {divergence: [...], logit_growth: [...], min_entropy: [...]},
    sequential {rounds, looks: [...], stopped: {...}, folds_saved} where --until-decided ran.

A search study (lpstudy.results.answers.search)
    p_profile: [{p, loss, low, high}] (the best loss reachable at each p with lr and gain tuned
        for it, from a surrogate, with its band), p_partial_dependence: [{p, loss, low, high}],
    entanglement {field: rank correlation with p among the trials}, separable (bool),
    suggest (the command that would decide p's effect, or None).
"""

from __future__ import annotations

from dataclasses import dataclass

from lpstudy.results.frames import StudyData

DEFAULT_ROPE = 0.005  # ± 0.5 % of the reference arm's mean loss: "equivalent" within this
DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class AnswerOptions:
    """What a reader may choose: the region of practical equivalence (relative to the reference's
    mean loss), the error rate, and the reference arm (p = 2, or a comparison's first arm, if None)."""

    rope: float = DEFAULT_ROPE
    alpha: float = DEFAULT_ALPHA
    reference: object | None = None


def study_answer(data: StudyData, options: AnswerOptions = AnswerOptions()) -> dict:
    """The answer a study gives about p (the shape above)."""
    if data.info.kind == "search":
        from lpstudy.results.answers.search import search_answer

        return search_answer(data, options)
    from lpstudy.results.answers.verdicts import comparison_answer

    return comparison_answer(data, options)
