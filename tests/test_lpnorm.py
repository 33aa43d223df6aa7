"""lp_normalize: the unit Lp sphere, its fast paths, and safe gradients."""

import math

import pytest
import torch
import torch.nn.functional as F

from lpstudy.model.lpnorm import lp_normalize
from lpstudy.model.lpnorm import _lp_norm_general, lp_norm
from lpstudy.values import P

PS = [1, 1.5, 2, 2.5, 3, 3.5, 4, 7.3, math.inf]


def lp_of(x, p):
    if math.isinf(p):
        return x.abs().amax(-1)
    return x.abs().pow(p).sum(-1).pow(1 / p)


def test_p2_equals_torch_normalize():
    x = torch.randn(4, 3, 16, 32)
    torch.testing.assert_close(lp_normalize(x, 2), F.normalize(x, p=2, dim=-1, eps=1e-6))


@pytest.mark.parametrize("p", PS)
def test_result_lies_on_the_unit_sphere(p):
    x = torch.randn(64, 48, dtype=torch.float64) * 3
    norms = lp_of(lp_normalize(x, p), p)
    torch.testing.assert_close(norms, torch.ones_like(norms))


@pytest.mark.parametrize("p", [1, 2, 3, 4])
def test_fast_paths_equal_the_general_path(p):
    x = torch.randn(32, 64)
    torch.testing.assert_close(lp_norm(x, p), _lp_norm_general(x, p), rtol=1e-5, atol=1e-6)


def test_infinity_path_is_the_limit_of_the_general_path():
    x = torch.randn(32, 64, dtype=torch.float64)
    torch.testing.assert_close(lp_norm(x, math.inf), _lp_norm_general(x, 2000.0), rtol=5e-3, atol=0)


@pytest.mark.parametrize("p", PS)
@pytest.mark.parametrize("scale", [0.0, 1e-30, 1e-8])
def test_gradients_are_finite_for_zero_and_tiny_vectors(p, scale):
    x = (torch.randn(3, 8) * scale).requires_grad_()
    y = lp_normalize(x, p)
    (y * torch.randn_like(y)).sum().backward()
    assert torch.isfinite(y).all()
    assert torch.isfinite(x.grad).all()


@pytest.mark.parametrize("p", [1, 1.5, 2, 2.5, 3, 3.5, 4, 7.3, math.inf])
def test_gradcheck_in_float64(p):
    x = torch.randn(3, 6, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: lp_normalize(t, p), (x,))


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("p", [1.5, 3.5, 4, 7.3])
def test_half_precision_input_is_normalised_in_float32(dtype, p):
    # 300^4 overflows float16 (max 65504): the norm must not be computed in the input's dtype.
    x = (torch.randn(16, 64) * 300).to(dtype)
    y = lp_normalize(x, p)
    assert y.dtype == dtype
    assert torch.isfinite(y).all()
    norms = lp_of(y.double(), p)
    torch.testing.assert_close(norms, torch.ones_like(norms), rtol=2e-2, atol=0)


def test_a_checked_p_normalises_as_the_float_it_is():
    x = torch.randn(4, 16, dtype=torch.float64)
    for p in (P("inf"), P("3.5"), P(1)):
        torch.testing.assert_close(lp_normalize(x, p), lp_normalize(x, float(p)))


@pytest.mark.parametrize("p", [1, 1.5, 2, 2.5, 3, 3.5, 4, 5.5, 2.7, 7.3])
def test_hand_written_backward_equals_autograd_through_the_general_path(p):
    # lp_normalize's products-and-square-roots powers and its hand-written backward against the
    # plain formula differentiated by autograd.
    x = torch.randn(5, 7, 24, dtype=torch.float64)
    x[0, 0] = 0.0  # a zero vector
    x[0, 1] = 1e-9  # a vector whose norm is clamped
    dy = torch.randn_like(x)
    a = x.clone().requires_grad_()
    b = x.clone().requires_grad_()
    ya = lp_normalize(a, p)
    yb = b / _lp_norm_general(b, p).clamp_min(1e-6)
    (ya * dy).sum().backward()
    (yb * dy).sum().backward()
    torch.testing.assert_close(ya, yb)
    torch.testing.assert_close(a.grad, b.grad)


def test_normalises_along_any_dim():
    x = torch.randn(4, 9, 3)
    torch.testing.assert_close(lp_normalize(x, 3.5, dim=1), lp_normalize(x.transpose(1, 2), 3.5).transpose(1, 2))
