"""Lp normalisation and the Lp-QKNorm attention of arXiv:2602.05006.

    q̂ = q / ‖q‖_p        k̂ = k / ‖k‖_p        (per head, over the head dimension)
    A  = softmax(g · q̂ k̂ᵀ + causal mask) V     (g: a learnable gain, no 1/√d)

p = 2 is QKNorm (Henry et al., 2020); p = ∞ divides by max|xᵢ|.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from lpstudy.errors import UserError

DEFAULT_EPS = 1e-6


def check_p(p: object) -> float:
    """Return p as a float in [1, ∞], or raise UserError saying what is accepted."""
    if isinstance(p, str):
        text = p.strip().lower()
        p = math.inf if text in {"inf", "infinity", "∞", "+inf"} else _parse_float(text)
    if isinstance(p, bool) or not isinstance(p, (int, float)):
        raise UserError(f"p must be a number ≥ 1 or 'inf', got {p!r}")
    p = float(p)
    if math.isnan(p) or p < 1:
        raise UserError(f"p must be a number ≥ 1 or 'inf' (an Lp norm needs p ≥ 1), got {p}")
    return p


def _parse_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise UserError(f"p must be a number ≥ 1 or 'inf', got {text!r}") from None


def lp_norm(x: torch.Tensor, p: float, dim: int = -1) -> torch.Tensor:
    """‖x‖_p along dim (kept), in float32 or wider, by the cheapest exact route for p."""
    x = x if x.dtype in (torch.float32, torch.float64) else x.float()
    if p == 2:
        return torch.linalg.vector_norm(x, 2, dim=dim, keepdim=True)
    if p == 1:
        return x.abs().sum(dim, keepdim=True)
    if math.isinf(p):
        return x.abs().amax(dim, keepdim=True)
    if p == int(p):
        # Integer powers are repeated products: no exp/log per element.
        return _safe_root(x.abs().pow(int(p)).sum(dim, keepdim=True), p)
    return _lp_norm_general(x, p, dim)


def _safe_root(s: torch.Tensor, p: float) -> torch.Tensor:
    """s^(1/p) with a zero (not NaN) gradient at s = 0, where the root's slope is infinite."""
    positive = s > 0
    return torch.where(positive, torch.where(positive, s, torch.ones_like(s)).pow(1.0 / p), s)


def _lp_norm_general(x: torch.Tensor, p: float, dim: int = -1) -> torch.Tensor:
    """‖x‖_p for any real p ≥ 1, scaled by max|x| first so that |x|^p neither overflows nor
    underflows (p = 7.3 on values of 1e-6 would otherwise vanish)."""
    x = x if x.dtype in (torch.float32, torch.float64) else x.float()
    scale = x.abs().amax(dim, keepdim=True)
    safe_scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return scale * _safe_root((x / safe_scale).abs().pow(p).sum(dim, keepdim=True), p)


def lp_normalize(x: torch.Tensor, p: float, dim: int = -1, eps: float = DEFAULT_EPS) -> torch.Tensor:
    """x / max(‖x‖_p, eps) along dim, for p in [1, ∞].

    The norm is computed in float32 (or float64 for float64 input) whatever the input dtype, so
    bf16 and fp16 activations normalise safely; the result has the input's dtype. A zero vector
    maps to zero with finite gradients.
    """
    p = check_p(p)
    if math.isinf(p):
        norm = lp_norm(x, p, dim).clamp_min(eps)
        wide = x if x.dtype in (torch.float32, torch.float64) else x.float()
        return (wide / norm).to(x.dtype)
    if dim not in (-1, x.dim() - 1):
        return _LpNormalize.apply(x.movedim(dim, -1), p, eps).movedim(-1, dim)
    return _LpNormalize.apply(x, p, eps)


def _signed_power(rs: torch.Tensor, r: torch.Tensor, e: float) -> torch.Tensor:
    """sign(rs)·|rs|^e, given r = |rs| ≤ 1, with products and square roots instead of exp/log where
    e allows it: p = 3.5 (e = 2.5) is rs·r·√r, p = 4 (e = 3) is rs·r·r, p = 2 (e = 1) is rs itself."""
    whole, half = divmod(e, 1.0)
    if half not in (0.0, 0.5) or whole > 8:
        return r.pow(e).copysign(rs)
    if half:
        out = torch.sqrt(r) if whole == 0 else rs * torch.sqrt(r)
        start = 0 if whole == 0 else 1
    else:
        out = rs.sign() if whole == 0 else rs
        start = 0 if whole == 0 else 1
    for _ in range(int(whole) - start):
        out = out * r
    return out.copysign(rs) if half and whole == 0 else out


class _LpNormalize(torch.autograd.Function):
    """y = x / max(‖x‖_p, eps) over the last dim, finite p, with a hand-written backward.

    Forward, in a handful of passes over x: m = max|x|, u = x/m (so that |u| ≤ 1 and |x|^p can
    neither overflow nor underflow), g = sign(u)·|u|^(p−1), n = m·⟨g, u⟩^(1/p), y = u·(m/max(n, eps)).
    Backward: ∂n/∂x = g·(m/n)^(p−1), so with c = (m/n)^(p−1) (0 where the norm is clamped)
        dx = dy / max(n, eps) − g · (c·⟨dy, y⟩ / n).
    One cheap power per element in all, against about four pow() through autograd.
    """

    @staticmethod
    def forward(ctx, x: torch.Tensor, p: float, eps: float) -> torch.Tensor:
        wide = x if x.dtype in (torch.float32, torch.float64) else x.float()
        m = wide.abs().amax(-1, keepdim=True)
        zero = m == 0
        u = wide / m.masked_fill(zero, 1.0)
        g = _signed_power(u, u.abs(), p - 1.0)
        n = m * torch.linalg.vecdot(g, u).unsqueeze(-1).pow(1.0 / p)
        n_clamped = n.clamp_min(eps)
        y = u * (m / n_clamped)
        unclamped = n > eps
        c = torch.where(unclamped, (m / n.masked_fill(~unclamped, 1.0)).pow(p - 1.0), 0.0)
        ctx.save_for_backward(y, g, n_clamped, c)
        ctx.in_dtype = x.dtype
        return y.to(x.dtype)

    @staticmethod
    def backward(ctx, dy: torch.Tensor):
        y, g, n, c = ctx.saved_tensors
        dy = dy.to(y.dtype)
        coef = c * torch.linalg.vecdot(dy, y).unsqueeze(-1) / n
        return torch.addcmul(dy / n, g, coef, value=-1.0).to(ctx.in_dtype), None, None


def default_gain_init(block_size: int) -> float:
    """QKNorm's initial gain, g₀ = log₂(L² − L) for context length L (≈ 16 for L = 256)."""
    return math.log2(block_size * block_size - block_size)


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
            self.last_entropy = attention_entropy(q, k, scale)
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


def attention_entropy(q: torch.Tensor, k: torch.Tensor, scale: float | None) -> torch.Tensor:
    """Mean Shannon entropy (nats) of the attention rows: low means peaked, high means diffuse."""
    w = attention_weights(q.detach(), k.detach(), scale)
    return -(w * w.clamp_min(1e-30).log()).sum(-1).mean()
