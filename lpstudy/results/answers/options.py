"""What a reader of lpstudy.results.answers may choose (the ROPE, the error rate, the reference),
declared once: the branches import it from here, readers from lpstudy.results.answers, and every
command that takes --rope parses it with parse_rope.

The ROPE (region of practical equivalence) is set in nats of validation loss, in advance: a
difference of losses in nats is already the log of a perplexity ratio (0.01 nats: perplexities
within 1 %), so a ROPE in nats means the same on an easy task and a hard one. A relative form,
"0.5%", is a share of the reference arm's mean loss, as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lpstudy.design.spec import StudySpec
    from lpstudy.design.until_decided import UntilDecided

DEFAULT_ALPHA = 0.05


@dataclass(frozen=True)
class Rope:
    """± value nats, or ± value × the reference's mean loss where relative."""

    value: float
    relative: bool = False

    def margin(self, reference_mean: float) -> float:
        """The ROPE in nats for a reference with this mean loss."""
        return self.value * reference_mean if self.relative else self.value

    def __str__(self) -> str:
        return f"{100 * self.value:g}%" if self.relative else f"{self.value:g}"

    def words(self) -> str:
        """How an output states it: "±0.01 nats" or "±0.5 % of the reference's mean loss"."""
        return f"±{100 * self.value:g} % of the reference's mean loss" if self.relative else f"±{self.value:g} nats"


DEFAULT_ROPE = Rope(0.01)  # ± 0.01 nats: perplexities within 1 % are "equivalent"


def parse_rope(text: Rope | str | float) -> Rope:
    """A --rope value: nats ("0.01") or a share of the reference's mean loss ("0.5%"); a Rope or a
    number passes through (a number is nats). Refused in one line (UserError) where it is not a
    number or not above 0 (at 0 no arm could ever be equivalent)."""
    from lpstudy.errors import UserError

    if isinstance(text, Rope):
        rope = text
    else:
        raw = str(text).strip()
        relative = raw.endswith("%")
        try:
            value = float(raw[:-1] if relative else raw)
        except ValueError:
            raise UserError(f"--rope {raw!r} is not a number: give nats (--rope 0.01) or a share of the reference's "
                            "mean loss (--rope 0.5%)") from None
        rope = Rope(value / 100 if relative else value, relative)
    if not rope.value > 0 or rope.value != rope.value or rope.value == float("inf"):
        raise UserError(f"--rope {rope} must be above 0 (at 0 no arm can ever be equivalent): give nats "
                        "(--rope 0.01) or a share of the reference's mean loss (--rope 0.5%)")
    return rope


@dataclass(frozen=True)
class StepsRope:
    """The ROPE of the steps to reach a loss: ± value steps, or ± value × the reference's restricted
    mean steps where relative."""

    value: float
    relative: bool = True

    def margin(self, reference_mean: float) -> float:
        """The ROPE in steps for a reference with these restricted mean steps."""
        return self.value * reference_mean if self.relative else self.value

    def __str__(self) -> str:
        return f"{100 * self.value:g}%" if self.relative else f"{self.value:g}"

    def words(self) -> str:
        """How an output states it: "±5 % of the reference's restricted mean steps" or "±50 steps"."""
        return f"±{100 * self.value:g} % of the reference's restricted mean steps" if self.relative else \
            f"±{self.value:g} steps"


DEFAULT_CONVERGENCE_ROPE = StepsRope(0.05)  # ± 5 % of the reference's restricted mean steps: "as soon" within this


def parse_steps_rope(text: StepsRope | str | float) -> StepsRope:
    """A --convergence-rope value: steps ("50") or a share of the reference's restricted mean steps
    ("5%"); a number below 1 is a share too (0.05: 5 %, its older form: no ROPE is under one step). A
    StepsRope passes through. Refused in one line (UserError) where it is not a number above 0."""
    from lpstudy.errors import UserError

    if isinstance(text, StepsRope):
        return text
    raw = str(text).strip()
    relative = raw.endswith("%")
    try:
        value = float(raw[:-1] if relative else raw)
    except ValueError:
        raise UserError(f"--convergence-rope {raw!r} is not a number: give steps (--convergence-rope 50) or a share "
                        "of the reference's restricted mean steps (--convergence-rope 5%)") from None
    if not 0 < value < float("inf"):
        raise UserError(f"--convergence-rope {raw} must be above 0 (at 0 no arm can ever reach it as soon): give "
                        "steps (--convergence-rope 50) or a share (--convergence-rope 5%)")
    if relative:
        return StepsRope(value / 100, True)
    return StepsRope(value, True) if value < 1 else StepsRope(value, False)


@dataclass(frozen=True)
class AnswerOptions:
    """What a reader may choose: the region of practical equivalence (a Rope; text or a number of
    nats is parsed), the error rate, and the reference arm (p = 2, or a comparison's first arm, if None);
    for convergence, the loss threshold (None: lpstudy.results.analysis.convergence.default_threshold)
    and the ROPE of the steps to reach it (a StepsRope: steps, or a share of the reference's restricted
    mean steps; text or a number is parsed by parse_steps_rope; the area under the curve is read with
    `rope`, as the final loss: both are losses in nats)."""

    rope: Rope = DEFAULT_ROPE
    alpha: float = DEFAULT_ALPHA
    reference: object | None = None
    threshold: float | None = None
    convergence_rope: StepsRope = DEFAULT_CONVERGENCE_ROPE

    def __post_init__(self) -> None:
        object.__setattr__(self, "rope", parse_rope(self.rope))
        object.__setattr__(self, "convergence_rope", parse_steps_rope(self.convergence_rope))


def study_rope(spec: StudySpec | None) -> Rope:
    """The ROPE a study's verdicts are read with unless the reader picks another: the one it ran
    --until-decided with (its stages were decided with it), else DEFAULT_ROPE."""
    return stages_rope(spec.until_decided if spec is not None else None)


def stages_rope(stages: UntilDecided | None) -> Rope:
    """The ROPE stages were decided with: the one their plan stores, else DEFAULT_ROPE. A stage plan
    written before ROPEs were in nats holds a bare number: a share of the reference's mean loss."""
    stored = stages.rope if stages is not None else None
    if stored is None:
        return DEFAULT_ROPE
    if isinstance(stored, (int, float)):
        return Rope(float(stored), relative=True)
    return parse_rope(stored)


def stage_options(stages: dict[str, Any] | UntilDecided | None, reference: object | None = None) -> AnswerOptions:
    """The AnswerOptions a sequential study's stages were decided with: its spec's (or comparison
    plan's) until_decided, as stored or as lpstudy.design.until_decided.UntilDecided (rope, alpha, and
    the reference where the plan names one), for the stage engine and the commands that report them."""
    from lpstudy.design.until_decided import UntilDecided

    plan = UntilDecided.from_plain(stages)
    if plan is None:
        return AnswerOptions(reference=reference)
    return AnswerOptions(rope=stages_rope(plan),
                         alpha=DEFAULT_ALPHA if plan.alpha is None else float(plan.alpha),
                         reference=plan.reference if reference is None else reference)
