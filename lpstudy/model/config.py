"""What the model is, and nothing else (nanoGPT's GPTConfig): its size, its attention and the two
settings every layer shares. The optimiser, the data, the folds and the hardware are the training
run's (lpstudy.training.config.TrainConfig), which builds this with `TrainConfig.model_config`.

No field has a default here: each one's default, range and help are declared once, as a training
field (lpstudy.training.fields), and a GPTConfig is always made from a TrainConfig or given every
value. Plain Python (no torch), so that the training config can build it on the read side.
"""

from __future__ import annotations

from dataclasses import dataclass

from lpstudy.values import P


@dataclass(frozen=True)
class GPTConfig:
    """A decoder-only GPT: vocabulary, depth, width, heads, context; the attention's norm exponent p
    (a P), the gain's initial value g₀ (a number), one gain per layer or per head, Lp-QKNorm or the
    baseline; dropout and biases as nanoGPT's."""

    vocab_size: int
    n_layer: int
    n_head: int
    n_embd: int
    block_size: int
    dropout: float
    bias: bool
    p: P
    gain_init: float  # g₀, a number (TrainConfig.resolved_gain_init)
    gain_per: str  # "layer" or "head"
    attention: str  # "lp" or "baseline"

    def __post_init__(self) -> None:
        object.__setattr__(self, "p", P(self.p))  # a P stays as it is; a plain number is checked here

    @property
    def head_size(self) -> int:
        return self.n_embd // self.n_head
