"""The range of every training field, declared once: what a real run can have.

A run, a study's fixed values and the two ends of every searched range are checked against these
bounds (TrainConfig.__post_init__ calls `problems_of`), so that a mistyped value (`max_steps=10^23`,
`beta1=2`, a negative weight decay) is refused in one line before anything is written or trained.
The bounds are generous: ten to a hundred times what the paper's experiment (6 layers, 384
dimensions, context 256, 5000 steps, 10 folds) uses, and what one accelerator can still hold.

`memory_estimate` is the other half: a config within every bound can still be too large for the
machine (64 layers of 8192 dimensions), so the trainer compares its estimate with the memory there
is before it allocates the model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


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


# Every numeric TrainConfig field (p is checked by values.check_p; gain_init may also be None).
FIELD_BOUNDS: dict[str, Bound] = {
    "n_layer": Bound(1, 64),
    "n_head": Bound(1, 256),
    "n_embd": Bound(1, 8192),
    "block_size": Bound(2, 65536),
    "dropout": Bound(0, 1, high_open=True),
    "gain_init": Bound(0, 10_000),
    "batch_size": Bound(1, 65536),
    "max_steps": Bound(1, 10**7),
    "lr": Bound(0, 1, low_open=True),
    "min_lr_ratio": Bound(0, 1),
    "warmup_steps": Bound(0, 10**7),
    "weight_decay": Bound(0, 10),
    "beta1": Bound(0, 1, high_open=True),
    "beta2": Bound(0, 1, high_open=True),
    "grad_clip": Bound(0, 10**6),  # 0: no clipping
    "eval_interval": Bound(1, 10**7),
    "eval_iters": Bound(1, 10**6),
    "divergence_factor": Bound(1, 10**6, low_open=True),
    "fold": Bound(0, 999),
    "folds": Bound(2, 1000),
    "seed": Bound(0, 2**32 - 1),
    "threads": Bound(0, 1024),
}


def problems_of(values: dict[str, Any]) -> list[str]:
    """One message per field of `values` outside its bound (None values are left alone)."""
    problems = []
    for name, bound in FIELD_BOUNDS.items():
        value = values.get(name)
        if value is None or isinstance(value, bool) or (name == "gain_init" and isinstance(value, str)):
            continue  # gain_init may be a rule ("matched"), which TrainConfig checks
        if not isinstance(value, (int, float)) or not bound.contains(float(value)):
            problems.append(f"{name} must be in {bound.describe()}, got {value!r}")
    return problems


# -- memory ---------------------------------------------------------------------------------------

VOCAB_BOUND = 1 << 16  # a generous character vocabulary, for estimates made before the corpus is read


def parameter_count(n_layer: int, n_embd: int, block_size: int, vocab_size: int = VOCAB_BOUND) -> int:
    """nanoGPT's parameter count: 12·d² per block (attention 4·d², MLP 8·d²), token and position
    embeddings (the output head shares the token embedding)."""
    return 12 * n_layer * n_embd * n_embd + (vocab_size + block_size) * n_embd


def memory_estimate(cfg: Any, vocab_size: int = VOCAB_BOUND, bytes_per_value: int = 4) -> int:
    """Bytes a training step needs, roughly: the weights, their gradients and AdamW's two moments
    (four copies), plus the activations kept for the backward pass, per layer s·b·h·(34 + 5·a·s/h)
    values (Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
    arXiv:2205.05198, 2022, eq. 2, for sequence s, batch b, width h and a heads), plus the logits."""
    params = parameter_count(cfg.n_layer, cfg.n_embd, cfg.block_size, vocab_size)
    s, b, h, a = cfg.block_size, cfg.batch_size, cfg.n_embd, cfg.n_head
    activations = cfg.n_layer * s * b * (34 * h + 5 * a * s) // 2  # eq. 2 counts 2-byte values
    logits = 2 * s * b * vocab_size
    return bytes_per_value * (4 * params + activations + logits)
