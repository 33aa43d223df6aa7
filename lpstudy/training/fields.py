"""Every field of a training run, declared once: its type, default, range, default search range and
one line of help.

TrainConfig (lpstudy.training.config) is made of these fields; the bounds (bounds.FIELD_BOUNDS),
the search space (study.space: DEFAULT_SPACE, log scales, which fields a study cannot set), the
attributes each trial stores (study.trial_attributes) and the columns of the trials frame
(results.reading.frames) are read from here. Adding a field is one line in FIELDS (and, where the trainer
or the model should use it, the code that does).

Types are real types: int, float, bool, str, or P (the norm exponent, which checks itself:
lpstudy.values.P). Plain Python: the read side imports it without torch.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from lpstudy.errors import UserError
from lpstudy.training.gain import MATCHED
from lpstudy.values import P, parse_bool


@dataclass(frozen=True)
class Bound:
    """low ≤ value ≤ high (or < high when high_open; > low when low_open)."""

    low: float
    high: float
    low_open: bool = False
    high_open: bool = False

    def contains(self, value: float) -> bool:
        if not math.isfinite(value):
            return False
        above = value > self.low if self.low_open else value >= self.low
        below = value < self.high if self.high_open else value <= self.high
        return above and below

    def describe(self) -> str:
        left = "(" if self.low_open else "["
        right = ")" if self.high_open else "]"
        return f"{left}{_fmt(self.low)}, {_fmt(self.high)}{right}"


def _fmt(value: float) -> str:
    if isinstance(value, int) or float(value).is_integer():
        number = int(value)
        return f"10^{len(str(number)) - 1}" if number >= 10**6 and str(number).strip("0") == "1" else str(number)
    return f"{value:g}"


def _either(words: tuple[str, ...]) -> str:
    """'lp' or 'baseline'; 'auto', 'float32' or 'bfloat16'."""
    quoted = [repr(w) for w in words]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


_NONE_WORDS = ("none", "null", "default")  # an optional number left unset, as text


@dataclass(frozen=True)
class Field:
    """One field of a training run."""

    name: str
    type: type  # int, float, bool, str or P
    default: Any
    help: str  # one line
    bound: Bound | None = None  # the values a real run can have (numbers)
    search: tuple[float, float] | None = None  # the default search range (low, high) of a search study
    log: bool = False  # a range of it is searched on a log scale unless it says `log: false`
    words: tuple[str, ...] = ()  # a str field: the values it takes; a number: the words it takes too
    optional: bool = False  # None is a value (gain_init: QKNorm's g₀)
    by_worker: bool = False  # chosen by each worker (--devices), never by a study
    trial_attr: bool = False  # each trial stores it as a user attribute; the trials frame has its column

    @property
    def annotation(self) -> Any:
        """The field's type as TrainConfig declares it (float | str | None for gain_init)."""
        kind: Any = self.type
        if self.words and self.type is not str:
            kind = kind | str
        return kind | None if self.optional else kind

    @property
    def numeric(self) -> bool:
        """Whether the field is a number, and so can be searched over a range."""
        return self.type is not bool and issubclass(self.type, (int, float))

    def coerce(self, value: Any) -> Any:
        """A user-given value (text from the command line, a YAML scalar, an Optuna parameter) as
        the field's type; UserError (one line) when it is not one."""
        if self.type is P:
            return P(value)
        if self.words and self.type is not str and isinstance(value, str) and value.strip().lower() in self.words:
            return value.strip().lower()
        if value is None:
            if self.optional:
                return None
            raise UserError(f"{self.name} needs a value")
        try:
            if self.type is bool:
                return parse_bool(value)
            if isinstance(value, bool):
                raise ValueError
            if self.type is int:
                if isinstance(value, float) and not value.is_integer():
                    raise ValueError
                return int(str(value)) if isinstance(value, str) else int(value)
            if self.type is float:
                if self.optional and isinstance(value, str) and value.strip().lower() in _NONE_WORDS:
                    return None
                return float(value)
            return str(value)
        except (TypeError, ValueError):
            what = f"a number or {_either(self.words)}" if self.words else self.type.__name__
            raise UserError(f"{self.name} must be {what}, got {value!r}") from None

    def checked(self, value: Any) -> Any:
        """value as a run holds it (p as a P), or UserError saying what is wrong with it."""
        if self.type is P:
            return P(value)
        if value is None and self.optional:
            return value
        if self.type is str or (self.words and isinstance(value, str)):
            if self.words and value not in self.words:
                what = _either(self.words) if self.type is str else f"a number or {_either(self.words)}"
                raise UserError(f"{self.name} must be {what}, got {value!r}")
            return value
        if self.bound is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                       or not self.bound.contains(float(value))):
            raise UserError(f"{self.name} must be in {self.bound.describe()}, got {value!r}")
        return value


def _fields(*declared: Field) -> dict[str, Field]:
    return {f.name: f for f in declared}


# The fields, in TrainConfig's order: what a search varies by default first, then the model, the
# optimisation (nanoGPT's Shakespeare recipe), evaluation, data and hardware. The bounds are
# generous: ten to a hundred times what the paper's experiment uses, and what one accelerator can
# still hold (a model within them can still be too large for the machine: bounds.memory_estimate).
FIELDS: dict[str, Field] = _fields(
    # what a search varies by default: the method's p, and the two it interacts with
    Field("p", P, P(2.0), "the norm exponent of q̂ = q/‖q‖_p, k̂ = k/‖k‖_p: a number ≥ 1 or 'inf' (2: QKNorm)",
          search=(1.0, 4.0), trial_attr=True),
    Field("lr", float, 1e-3, "peak learning rate (AdamW), reached after the warm-up",
          Bound(0, 1, low_open=True), search=(1e-4, 1e-2), log=True, trial_attr=True),
    Field("gain_init", float, None, "the attention gain's initial value: a number, 'matched' (the spread of "
          "p = 2's logits) or unset (QKNorm's log₂(L² − L))", Bound(0, 10_000), search=(2.0, 64.0), log=True,
          words=(MATCHED,), optional=True, trial_attr=True),
    # the model
    Field("n_layer", int, 4, "transformer blocks", Bound(1, 64)),
    Field("n_head", int, 4, "attention heads per block (divides n_embd)", Bound(1, 256)),
    Field("n_embd", int, 128, "width of the residual stream", Bound(1, 8192)),
    Field("block_size", int, 64, "context length L in characters", Bound(2, 65536)),
    Field("dropout", float, 0.0, "dropout probability (attention, residual, embeddings)",
          Bound(0, 1, high_open=True)),
    Field("bias", bool, False, "biases in the linear layers and layer norms"),
    Field("attention", str, "lp", "'lp' (Lp-QKNorm) or 'baseline' (1/√d, no QK normalisation)",
          words=("lp", "baseline")),
    Field("gain_per", str, "layer", "one learnable gain per 'layer' or per 'head'", words=("layer", "head")),
    # optimisation
    Field("batch_size", int, 12, "sequences per step", Bound(1, 65536)),
    Field("max_steps", int, 2000, "optimisation steps", Bound(1, 10**7), trial_attr=True),
    Field("min_lr_ratio", float, 0.1, "the cosine decay ends at lr · min_lr_ratio (1e-3 → 1e-4)", Bound(0, 1)),
    Field("warmup_steps", int, 100, "steps of linear warm-up", Bound(0, 10**7)),
    Field("weight_decay", float, 0.1, "AdamW's weight decay on matrices", Bound(0, 10)),
    Field("beta1", float, 0.9, "AdamW's β₁", Bound(0, 1, high_open=True)),
    Field("beta2", float, 0.99, "AdamW's β₂", Bound(0, 1, high_open=True)),
    Field("grad_clip", float, 1.0, "gradient norm clipping (0: none)", Bound(0, 10**6)),
    # evaluation and stopping
    Field("eval_interval", int, 250, "steps between evaluations", Bound(1, 10**7)),
    Field("eval_iters", int, 20, "batches per evaluation", Bound(1, 10**6)),
    Field("divergence_factor", float, 3.0, "a train loss above this multiple of the first one is divergence",
          Bound(1, 10**6, low_open=True)),
    # data: fold `fold` of `folds` is held out for validation
    Field("fold", int, 0, "the validation fold, 0-based", Bound(0, 999), trial_attr=True),
    Field("folds", int, 10, "K of K-fold cross-validation", Bound(2, 1000), trial_attr=True),
    Field("seed", int, 0, "random seed (weights, batches, dropout)", Bound(0, 2**32 - 1), trial_attr=True),
    # repeated cross-validation (replicate/compare --repeats): repeat r > 0 is a new partition of the text
    # (lpstudy.training.data.fold_split) and new training seeds (TrainConfig.run_seed); 0 is the plain K-fold CV
    Field("repeat", int, 0, "the repeat of the K-fold cross-validation: a new partition and new seeds when > 0",
          Bound(0, 999), trial_attr=True),
    # hardware
    Field("device", str, "auto", "'auto', 'cpu', 'cuda', 'cuda:1', ...", by_worker=True),
    Field("dtype", str, "auto", "'auto' (bf16 autocast on CUDA, fp32 on CPU), 'float32' or 'bfloat16'",
          words=("auto", "float32", "bfloat16")),
    Field("compile", bool, False, "torch.compile the model"),
    # Float sums depend on the thread count, so a CPU run is reproducible to the last digit only
    # with the same count: workers and `lpstudy train` record it.
    Field("threads", int, 0, "CPU threads for torch (0: one for smoke and cpu, else the usable cores)", Bound(0, 1024), trial_attr=True),
)


def field_named(name: str) -> Field:
    """The field called `name`; UserError naming the known fields otherwise."""
    try:
        return FIELDS[name]
    except KeyError:
        from lpstudy.names import did_you_mean

        raise UserError(f"unknown training field {name!r}{did_you_mean(name, FIELDS)} "
                        f"(known fields: {', '.join(sorted(FIELDS))})") from None


# -- TrainConfig's fields as a reader sees them -----------------------------------------------------

FIELDS_STUB = "lpstudy/training/config_fields.py"  # under the repository root


def _default_text(field: Field) -> str:
    if field.type is P and field.default is not None:
        return f"P({float(field.default)!r})"
    return repr(field.default)


def fields_stub() -> str:
    """The text of lpstudy/training/config_fields.py: TrainConfig's fields (their names, types and
    defaults, in FIELDS' order, each with its help) written out for a reader and a type checker
    (lpstudy.declared). FIELDS stays their one declaration: `python -m lpstudy.training.fields` writes
    the file again, and tests/test_fields.py fails where the two differ."""
    from lpstudy.declared import Written, class_text, type_text

    doc = ["TrainConfig's fields as a reader and a type checker see them. Generated from",
           "lpstudy/training/fields.py (FIELDS, their one declaration) by `python -m lpstudy.training.fields`:",
           "never edit it by hand; tests/test_fields.py fails where it and FIELDS differ. TrainConfig",
           "(lpstudy/training/config.py) takes its fields from FIELDS when it is made; a type checker reads",
           "them here."]
    return class_text(doc, ["from lpstudy.values import P"], "@dataclass(frozen=True)", "DeclaredFields",
                      (Written(f.name, type_text(f.annotation), _default_text(f), f.help) for f in FIELDS.values()))


if __name__ == "__main__":
    from lpstudy.declared import write

    print(f"wrote {write(FIELDS_STUB, fields_stub())}")
