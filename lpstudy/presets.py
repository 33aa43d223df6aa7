"""The presets, declared once: every other module (trainer, study, dashboard, export) reads them here."""

from __future__ import annotations

from lpstudy.config import TrainConfig
from lpstudy.errors import UserError

PRESETS: dict[str, TrainConfig] = {
    # The paper's experiment: nanoGPT's Shakespeare-char recipe (6 layers, 6 heads, 384 dims,
    # context 256, dropout 0.2, batch 64, AdamW β₂ = 0.99, lr 1e-3 → 1e-4 by cosine, 100 warm-up
    # steps, 5000 steps).
    "paper": TrainConfig(
        n_layer=6, n_head=6, n_embd=384, block_size=256, dropout=0.2,
        batch_size=64, max_steps=5000, lr=1e-3, warmup_steps=100,
        eval_interval=250, eval_iters=200,
    ),
    # nanoGPT's CPU recipe: 4 layers, 4 heads, 128 dims, context 64, batch 12, 2000 steps, no dropout.
    "cpu": TrainConfig(
        n_layer=4, n_head=4, n_embd=128, block_size=64, dropout=0.0,
        batch_size=12, max_steps=2000, lr=1e-3, warmup_steps=100,
        eval_interval=100, eval_iters=20,
    ),
    # A model that learns something in seconds on one CPU core: for tests and trying things out.
    "smoke": TrainConfig(
        n_layer=2, n_head=2, n_embd=32, block_size=32, dropout=0.0,
        batch_size=16, max_steps=150, lr=3e-3, warmup_steps=10,
        eval_interval=25, eval_iters=4,
    ),
}


def get_preset(name: str) -> TrainConfig:
    try:
        return PRESETS[name]
    except KeyError:
        raise UserError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}") from None
