"""Lp-QKNorm attention (López-Rubio, Montes-Pérez and Palomo, arXiv:2602.05006):

    q̂ = q / ‖q‖_p        k̂ = k / ‖k‖_p        (per head, over the head dimension)
    A  = softmax(g · q̂ k̂ᵀ + causal mask) V     (g: a learnable gain, no 1/√d)

p = 2 is QKNorm (Henry et al., 2020). The baseline (1/√d, no normalisation) is kept for comparison.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from lpstudy.errors import UserError
from lpstudy.model.lpnorm import lp_normalize
from lpstudy.values import check_p, default_gain_init


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention, either Lp-QKNorm (`attention="lp"`) or the usual
    scaled dot product (`attention="baseline"`, 1/√d, no normalisation)."""

    def __init__(
        self,
        n_embd: int,
        n_head: int,
        block_size: int,
        dropout: float = 0.0,
        attention: str = "lp",
        p: float = 2.0,
        gain_init: float | None = None,
        gain_per: str = "layer",
        bias: bool = False,
    ):
        super().__init__()
        if n_embd % n_head:
            raise UserError(f"n_embd ({n_embd}) must be a multiple of n_head ({n_head})")
        if attention not in ("lp", "baseline"):
            raise UserError(f"attention must be 'lp' or 'baseline', got {attention!r}")
        if gain_per not in ("layer", "head"):
            raise UserError(f"gain_per must be 'layer' or 'head', got {gain_per!r}")
        self.n_head = n_head
        self.attention = attention
        self.p = check_p(p)
        self.dropout = dropout
        self.c_attn = nn.Linear(n_embd, 3 * n_embd, bias=bias)
        self.c_proj = nn.Linear(n_embd, n_embd, bias=bias)
        self.resid_dropout = nn.Dropout(dropout)
        if attention == "lp":
            g0 = default_gain_init(block_size) if gain_init is None else float(gain_init)
            shape = (1,) if gain_per == "layer" else (n_head,)
            self.gain = nn.Parameter(torch.full(shape, g0))
        else:
            self.register_parameter("gain", None)
        self.last_entropy: torch.Tensor | None = None  # set by forward when record_entropy is on
        self.last_stats: dict[str, torch.Tensor] | None = None  # attention_stats(), the same way
        self.record_entropy = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        qkv = self.c_attn(x).view(B, T, 3, self.n_head, C // self.n_head)
        if self.attention == "lp":
            # q̂ = q/‖q‖_p, k̂ = k/‖k‖_p (one call for both), and the gain folded into q̂, so that
            # the fused kernel computes softmax(g · q̂k̂ᵀ) V with scale 1.
            qk = lp_normalize(qkv[:, :, :2], self.p)
            q = (qk[:, :, 0] * self.gain.view(-1, 1).to(qk.dtype)).transpose(1, 2)
            k = qk[:, :, 1].transpose(1, 2)
            scale = 1.0
        else:
            q, k = qkv[:, :, 0].transpose(1, 2), qkv[:, :, 1].transpose(1, 2)
            scale = None  # 1/√d
        v = qkv[:, :, 2].transpose(1, 2)
        if self.record_entropy:
            self.last_stats = attention_stats(q, k, scale)
            self.last_entropy = self.last_stats["entropy"]
        y = F.scaled_dot_product_attention(
            q, k, v, is_causal=True, scale=scale, dropout_p=self.dropout if self.training else 0.0
        )
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


def attention_weights(q: torch.Tensor, k: torch.Tensor, scale: float | None) -> torch.Tensor:
    """softmax(scale · q kᵀ + causal mask), written out: the reference the fused kernel must match."""
    T = q.size(-2)
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    logits = (q.float() @ k.float().transpose(-2, -1)) * scale
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    return logits.masked_fill(~mask, float("-inf")).softmax(dim=-1)


def logit_bound(gain: float, p: float, head_size: int) -> float:
    """The largest logit g·q̂·k̂ can reach: |q̂·k̂| ≤ ‖q̂‖_p* ‖k̂‖_p ≤ d^max(0, 1 − 2/p) for unit-Lp q̂, k̂
    (Hölder; the bound of arXiv:2602.05006's analysis), so g·d^max(0, 1 − 2/p): the effective inverse
    temperature of the softmax at its coldest."""
    exponent = 1.0 if math.isinf(p) else max(0.0, 1.0 - 2.0 / p)
    return gain * head_size ** exponent


@torch.no_grad()
def attention_stats(q: torch.Tensor, k: torch.Tensor, scale: float | None) -> dict[str, torch.Tensor]:
    """What stability research watches in one attention layer, from one explicit softmax:
    `entropy` the mean row entropy (nats), `min_head_entropy` the smallest per-head mean (entropy
    collapse: Zhai et al., "Stabilizing Transformer Training by Preventing Attention Entropy
    Collapse", ICML 2023) and `max_logit` the largest unmasked logit (attention-logit growth:
    Dehghani et al. 2023; Wortsman et al., arXiv:2309.14322, §3.1.1)."""
    q, k = q.detach().float(), k.detach().float()
    T = q.size(-2)
    scale = 1.0 / math.sqrt(q.size(-1)) if scale is None else scale
    logits = (q @ k.transpose(-2, -1)) * scale
    mask = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    masked = logits.masked_fill(~mask, float("-inf"))
    w = masked.softmax(dim=-1)
    rows = -(w * w.clamp_min(1e-30).log()).sum(-1)  # (B, H, T)
    per_head = rows.mean(dim=(0, 2))
    return {"entropy": rows.mean(), "min_head_entropy": per_head.min(), "max_logit": masked.amax()}


def attention_entropy(q: torch.Tensor, k: torch.Tensor, scale: float | None) -> torch.Tensor:
    """Mean Shannon entropy (nats) of the attention rows: low means peaked, high means diffuse."""
    w = attention_weights(q.detach(), k.detach(), scale)
    return -(w * w.clamp_min(1e-30).log()).sum(-1).mean()
