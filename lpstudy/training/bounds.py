"""The range of every training field (declared with the field, in lpstudy.training.fields), and
how much memory a run needs.

A run, a study's fixed values and the two ends of every searched range are checked against these
bounds (TrainConfig checks each field when it is made), so that a mistyped value
(`max_steps=10^23`, `beta1=2`, a negative weight decay) is refused in one line before anything is
written or trained.

`memory_estimate` is the other half: a config within every bound can still be too large for the
machine (64 layers of 8192 dimensions), so the trainer compares its estimate with the memory there
is before it allocates the model.
"""

from __future__ import annotations

from typing import Any

from lpstudy.training.fields import FIELDS, Bound

# Every numeric field's range (p's is [1, ∞], which lpstudy.values.P checks).
FIELD_BOUNDS: dict[str, Bound] = {f.name: f.bound for f in FIELDS.values() if f.bound is not None}


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
