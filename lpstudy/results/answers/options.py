"""What a reader of lpstudy.results.answers may choose (the ROPE, the error rate, the reference),
declared once: the branches import it from here, readers from lpstudy.results.answers."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_ROPE = 0.005  # ± 0.5 % of the reference arm's mean loss: "equivalent" within this
DEFAULT_ALPHA = 0.05
DEFAULT_CONVERGENCE_ROPE = 0.05  # ± 5 % of the reference's restricted mean steps: "as soon" within this


@dataclass(frozen=True)
class AnswerOptions:
    """What a reader may choose: the region of practical equivalence (relative to the reference's
    mean loss), the error rate, and the reference arm (p = 2, or a comparison's first arm, if None);
    for convergence, the loss threshold (None: lpstudy.results.analysis.convergence.default_threshold)
    and the ROPE of the steps to reach it, relative to the reference's restricted mean steps (the
    area under the curve is read with `rope`, as the final loss: both are losses in nats)."""

    rope: float = DEFAULT_ROPE
    alpha: float = DEFAULT_ALPHA
    reference: object | None = None
    threshold: float | None = None
    convergence_rope: float = DEFAULT_CONVERGENCE_ROPE


def study_rope(spec: dict | None) -> float:
    """The ROPE a study's verdicts are read with unless the reader picks another: the one it ran
    --until-decided with (its stages were decided with it), else DEFAULT_ROPE."""
    return float(((spec or {}).get("until_decided") or {}).get("rope", DEFAULT_ROPE))
