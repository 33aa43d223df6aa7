"""CUDA paths: bf16 autocast and torch.compile. Skipped where there is no GPU (CI has none)."""

import math

import pytest
import torch

from lpstudy.model.lpnorm import lp_normalize
from lpstudy.training.config import resolve_config
from lpstudy.training.trainer import train

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.mark.parametrize("p", [2, 3.5, 2.7, math.inf])
def test_bf16_normalisation_matches_float32_on_cuda(p):
    x = torch.randn(8, 6, 256, 64, device="cuda")
    torch.testing.assert_close(lp_normalize(x.bfloat16(), p).float(), lp_normalize(x, p), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("compile_", [False, True])
def test_smoke_run_learns_with_bf16_autocast(corpus, compile_):
    cfg = resolve_config("smoke", {"device": "cuda", "compile": compile_, "p": 3.5})
    s = train(cfg, corpus).summary
    assert s.device.startswith("cuda") and not s.diverged
    assert s.final_val_loss < 0.8 * s.history[0].val_loss
