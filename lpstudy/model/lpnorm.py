"""Lp normalisation, x / ‖x‖_p over the last dimension, for any p in [1, ∞] (López-Rubio,
Montes-Pérez and Palomo, arXiv:2602.05006, eq. for q̂ and k̂). p = 2 is QKNorm's L2 normalisation
(Henry et al., arXiv:2010.04245); p = ∞ divides by max|xᵢ|."""

from __future__ import annotations

import math

import torch

DEFAULT_EPS = 1e-6


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
    """x / max(‖x‖_p, eps) along dim, for p in [1, ∞] (a checked value: lpstudy.values.P, or any
    float ≥ 1; it is not checked again on every call).

    The norm is computed in float32 (or float64 for float64 input) whatever the input dtype, so
    bf16 and fp16 activations normalise safely; the result has the input's dtype. A zero vector
    maps to zero with finite gradients.
    """
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
