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

from lpstudy.model.config import GPTConfig
from lpstudy.model.lpnorm import lp_normalize


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention, either Lp-QKNorm (`attention="lp"`) or the usual
    scaled dot product (`attention="baseline"`, 1/√d, no normalisation), as the model's config says: width,
    heads, p, the gain's initial value (one gain per layer or per head), dropout and biases."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.config = config
        self.n_head = config.n_head
        self.p = float(config.p)  # the kernels take a plain float
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.resid_dropout = nn.Dropout(config.dropout)
        if config.attention == "lp":
            shape = (1,) if config.gain_per == "layer" else (config.n_head,)
            self.gain = nn.Parameter(torch.full(shape, float(config.gain_init)))
        else:
            self.register_parameter("gain", None)
        self.record_stats = False  # GPT.attention_stats turns it on for one forward pass
        self.last_stats: dict[str, torch.Tensor] | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        qkv = self.c_attn(x).view(B, T, 3, self.n_head, C // self.n_head)
        if self.gain is not None:
            qk = lp_normalize(qkv[:, :, :2], self.p)  # q̂ = q/‖q‖_p, k̂ = k/‖k‖_p, in one call
            q = qk[:, :, 0] * self.gain.view(-1, 1).to(qk.dtype)  # g · q̂, so that the kernel's scale is 1
            k, scale = qk[:, :, 1], 1.0
        else:
            q, k, scale = qkv[:, :, 0], qkv[:, :, 1], None  # the baseline: q kᵀ / √d
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), qkv[:, :, 2].transpose(1, 2)  # (B, H, T, d)
        if self.record_stats:
            self.last_stats = attention_stats(q, k, scale)
        # softmax(g · q̂ k̂ᵀ + causal mask) V, fused
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=scale,
                                           dropout_p=self.config.dropout if self.training else 0.0)
        return self.resid_dropout(self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C)))


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
