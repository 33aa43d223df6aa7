"""How a study run --until-decided spends its folds: the stages (the number of folds run after each),
and what its verdicts are read with. One typed value for `replicate --until-decided` (a grid spec's
`until_decided`) and `compare --until-decided` (a comparison plan's), stored as the plain JSON it
always had: only the keys it was given, so a spec's form (and its SHA-256) never changes.

lpstudy.study.stages runs the stages; lpstudy.results.answers.sequential reads the same JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lpstudy.errors import UserError
from lpstudy.values import json_safe

# what the stages cannot yet combine with, and why: each a fixed design for now (a flag, and the reason).
# A replicate's --seeds S combines (each stage's folds run with their S seeds: lpstudy.study.stages);
# a comparison's seeds do not yet (its stages run the arms' own replicate grids fold by fold).
FIXED_DESIGNS = {
    "repeats": ("--repeats", "the stages add folds of one cross-validation, and a repeat is a new partition of "
                             "the text whose looks the boundaries do not model; run --repeats R without "
                             "--until-decided, or --seeds S with it"),
    "seeds": ("--seeds", "a comparison's stages run its arms' replicate grids fold by fold, one seed a fold; run "
                         "`lpstudy replicate --until-decided --seeds S` on the configurations it chose, or --seeds S "
                         "as a fixed design"),
    "tunings": ("--tunings", "the stages stop an arm from one tuning's folds; run --tunings T as a fixed design"),
}


def refuse_beside_stages(until_decided: UntilDecided | dict[str, Any] | None, **counts: int) -> None:
    """UserError in one line where a study run --until-decided is also given one of FIXED_DESIGNS above 1
    (repeats=, seeds=, tunings=): the one rule replicate and compare refuse them by (a replicate passes
    no seeds=: its stages run seeds inside their folds)."""
    if until_decided is None:
        return
    for name, count in counts.items():
        if count > 1:
            flag, why = FIXED_DESIGNS[name]
            raise UserError(f"{flag} and --until-decided do not go together yet: {why}")


@dataclass(frozen=True)
class UntilDecided:
    """rounds: the folds run after each stage (3, 5, 8, 10: the last is K). reference: the arm every
    other is compared with (a replicate's p; a comparison names its own, None). rope and alpha: the
    region of practical equivalence and the error rate its verdicts were run with; None where the
    study was made without one (the verdicts' own default applies: lpstudy.results.answers). The rope
    is kept as stored: "0.01" (nats) or "0.5%" (a share of the reference's mean loss); a bare number,
    as plans made before ROPEs were in nats hold, is a share (answers.options.study_rope reads it)."""

    rounds: tuple[int, ...]
    reference: Any = None
    rope: str | float | None = None
    alpha: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "rounds", tuple(int(r) for r in self.rounds))

    @classmethod
    def from_plain(cls, plain: "dict[str, Any] | UntilDecided | None") -> "UntilDecided | None":
        """The stored JSON ({"rounds": [...], "reference": p, "rope": r, "alpha": a}) as the value;
        None for None (a study that runs every fold at once)."""
        if plain is None or isinstance(plain, UntilDecided):
            return plain
        return cls(rounds=plain["rounds"], reference=plain.get("reference"),
                   rope=plain.get("rope"),
                   alpha=None if plain.get("alpha") is None else float(plain["alpha"]))

    def to_plain(self) -> dict[str, Any]:
        """The JSON as stored: the rounds, then each of reference, rope, alpha that was given."""
        plain: dict[str, Any] = {"rounds": list(self.rounds)}
        for name in ("reference", "rope", "alpha"):
            if getattr(self, name) is not None:
                plain[name] = json_safe(getattr(self, name))
        return plain

    def one_stage_note(self) -> str | None:
        """What a user who asked for stages should hear when K leaves only one: with K ≤ 3 folds the
        first stage is every fold, so --until-decided saves no fold run."""
        if len(self.rounds) > 1:
            return None
        return (f"with {self.rounds[0]} folds --until-decided has one stage, so no arm can stop early and no fold "
                f"run is saved; give --max-folds 10 (stages of 3, 5, 8, 10) to let a decided arm stop")

    @property
    def first(self) -> int:
        """The folds of the first stage (the cells a study starts with)."""
        return self.rounds[0]
