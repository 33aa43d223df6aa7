"""TrainConfig's fields as a reader and a type checker see them. Generated from
lpstudy/training/fields.py (FIELDS, their one declaration) by `python -m lpstudy.training.fields`:
never edit it by hand; tests/test_fields.py fails where it and FIELDS differ. TrainConfig
(lpstudy/training/config.py) takes its fields from FIELDS when it is made; a type checker reads
them here."""

from __future__ import annotations

from dataclasses import dataclass

from lpstudy.values import P


@dataclass(frozen=True)
class DeclaredFields:
    # the norm exponent of q̂ = q/‖q‖_p, k̂ = k/‖k‖_p: a number ≥ 1 or 'inf' (2: QKNorm)
    p: P = P(2.0)
    # peak learning rate (AdamW), reached after the warm-up
    lr: float = 0.001
    # the attention gain's initial value: a number, 'matched' (the spread of p = 2's logits) or unset (QKNorm's log₂(L² − L))
    gain_init: float | str | None = None
    # transformer blocks
    n_layer: int = 4
    # attention heads per block (divides n_embd)
    n_head: int = 4
    # width of the residual stream
    n_embd: int = 128
    # context length L in characters
    block_size: int = 64
    # dropout probability (attention, residual, embeddings)
    dropout: float = 0.0
    # biases in the linear layers and layer norms
    bias: bool = False
    # 'lp' (Lp-QKNorm) or 'baseline' (1/√d, no QK normalisation)
    attention: str = 'lp'
    # one learnable gain per 'layer' or per 'head'
    gain_per: str = 'layer'
    # sequences per step
    batch_size: int = 12
    # optimisation steps
    max_steps: int = 2000
    # the cosine decay ends at lr · min_lr_ratio (1e-3 → 1e-4)
    min_lr_ratio: float = 0.1
    # steps of linear warm-up
    warmup_steps: int = 100
    # AdamW's weight decay on matrices
    weight_decay: float = 0.1
    # AdamW's β₁
    beta1: float = 0.9
    # AdamW's β₂
    beta2: float = 0.99
    # gradient norm clipping (0: none)
    grad_clip: float = 1.0
    # steps between evaluations
    eval_interval: int = 250
    # batches per evaluation
    eval_iters: int = 20
    # a train loss above this multiple of the first one is divergence
    divergence_factor: float = 3.0
    # the validation fold, 0-based
    fold: int = 0
    # K of K-fold cross-validation
    folds: int = 10
    # random seed (weights, batches, dropout)
    seed: int = 0
    # the repeat of the K-fold cross-validation: a new partition and new seeds when > 0
    repeat: int = 0
    # 'auto', 'cpu', 'cuda', 'cuda:1', ...
    device: str = 'auto'
    # 'auto' (bf16 autocast on CUDA, fp32 on CPU), 'float32' or 'bfloat16'
    dtype: str = 'auto'
    # torch.compile the model
    compile: bool = False
    # CPU threads for torch (0: one for smoke and cpu, else the usable cores)
    threads: int = 0
