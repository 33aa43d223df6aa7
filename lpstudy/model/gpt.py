"""A decoder-only GPT in nanoGPT's shape (pre-LayerNorm, GELU MLP, tied embeddings, dropout),
character level, whose attention is Lp-QKNorm (or the baseline, for comparison)."""

from __future__ import annotations

import math
from typing import TypedDict

import torch
import torch.nn.functional as F
from torch import nn

from lpstudy.model.attention import CausalSelfAttention, logit_bound
from lpstudy.model.config import GPTConfig


class MLP(nn.Module):
    def __init__(self, n_embd: int, dropout: float, bias: bool):
        super().__init__()
        self.c_fc = nn.Linear(n_embd, 4 * n_embd, bias=bias)
        self.c_proj = nn.Linear(4 * n_embd, n_embd, bias=bias)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x))))


class AttentionStats(TypedDict):
    """GPT.attention_stats: the stability lens on one batch."""

    entropy: float  # mean attention entropy (nats)
    min_head_entropy: float
    max_logit_per_layer: list[float]
    max_logit: float
    logit_bound: float  # g·d^max(0, 1 − 2/p), the largest over layers; NaN for the baseline


class Block(nn.Module):
    def __init__(self, config: GPTConfig):
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config.n_embd, config.dropout, config.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """The model a GPTConfig describes (TrainConfig.model_config builds one for a training run)."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        if not isinstance(config, GPTConfig):
            raise TypeError(f"GPT takes a GPTConfig (TrainConfig.model_config(vocab_size) makes one from a "
                            f"training run), not a {type(config).__name__}")
        self.config = config
        self.block_size = config.block_size
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)
        self.wpe = nn.Embedding(config.block_size, config.n_embd)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd, bias=config.bias)
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        self.lm_head.weight = self.wte.weight  # tied embeddings
        self.apply(self._init_weights)
        for name, param in self.named_parameters():  # GPT-2's scaled init of residual projections
            if name.endswith("c_proj.weight"):
                nn.init.normal_(param, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, (nn.Linear, nn.Embedding)):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
        if isinstance(module, nn.Linear) and module.bias is not None:
            nn.init.zeros_(module.bias)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        T = idx.size(1)
        pos = torch.arange(T, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x)
        logits = self.lm_head(self.ln_f(x))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), targets.reshape(-1))
        return logits, loss

    def attentions(self) -> list[CausalSelfAttention]:
        return [block.attn for block in self.blocks if isinstance(block, Block)]

    def gains(self) -> torch.Tensor:
        """Every attention gain of the model, flattened (empty for the baseline)."""
        found = [a.gain.detach().float().flatten() for a in self.attentions() if a.gain is not None]
        return torch.cat(found) if found else torch.empty(0)

    @torch.no_grad()
    def attention_stats(self, idx: torch.Tensor) -> AttentionStats:
        """The stability lens on one batch, one forward pass: mean attention entropy, the smallest
        head entropy, the largest logit per layer and over layers, and the largest possible logit
        g·d^max(0, 1 − 2/p) over layers (NaN for the baseline attention, which has no bound)."""
        attns = self.attentions()
        for a in attns:
            a.record_stats = True
        try:
            self(idx)
            stats = [a.last_stats for a in attns if a.last_stats is not None]
        finally:
            for a in attns:
                a.record_stats = False
                a.last_stats = None
        per_layer = [float(s["max_logit"]) for s in stats]
        bounds = [logit_bound(float(a.gain.max()), a.p, a.config.head_size) for a in attns if a.gain is not None]
        return AttentionStats(entropy=float(torch.stack([s["entropy"] for s in stats]).mean()),
                              min_head_entropy=min(float(s["min_head_entropy"]) for s in stats),
                              max_logit_per_layer=per_layer, max_logit=max(per_layer),
                              logit_bound=max(bounds) if bounds else math.nan)

    def param_groups(self, weight_decay: float) -> list[dict]:
        """The parameters in an optimiser's groups: weight decay on matrices only (not on gains,
        norms or biases), as nanoGPT."""
        params = [p for p in self.parameters() if p.requires_grad]
        return [{"params": [p for p in params if p.dim() >= 2], "weight_decay": weight_decay},
                {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]

    def num_params(self) -> int:
        return sum(p.numel() for p in self.parameters()) - self.wpe.weight.numel()
