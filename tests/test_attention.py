"""The attention module against the formula written out by hand."""

import dataclasses
import math

import pytest
import torch

from lpstudy.errors import UserError
from lpstudy.model.attention import CausalSelfAttention
from lpstudy.model.config import GPTConfig
from lpstudy.model.gpt import GPT
from lpstudy.training.config import TrainConfig
from lpstudy.training.trainer import adamw


def model_config(vocab_size: int = 10, **fields) -> GPTConfig:
    """The model of a training run with these fields (the others at their defaults)."""
    return TrainConfig(**fields).model_config(vocab_size)


def reference_attention(attn: CausalSelfAttention, x: torch.Tensor) -> torch.Tensor:
    """softmax(g · q̂ k̂ᵀ + causal mask) V (or q kᵀ/√d for the baseline), with explicit loops-free math."""
    B, T, C = x.shape
    H = attn.n_head
    d = C // H
    q, k, v = (x @ attn.c_attn.weight.T).split(C, dim=2)
    q, k, v = (t.reshape(B, T, H, d).permute(0, 2, 1, 3) for t in (q, k, v))
    if attn.config.attention == "lp":
        p = attn.p
        norm = (lambda t: t.abs().amax(-1, keepdim=True)) if math.isinf(p) else \
               (lambda t: t.abs().pow(p).sum(-1, keepdim=True).pow(1 / p))
        qh, kh = q / norm(q), k / norm(k)
        g = attn.gain.reshape(1, -1, 1, 1)
        logits = g * (qh @ kh.transpose(-1, -2))
    else:
        logits = (q @ k.transpose(-1, -2)) / math.sqrt(d)
    mask = torch.tril(torch.ones(T, T, dtype=torch.bool))
    logits = torch.where(mask, logits, torch.tensor(float("-inf"), dtype=logits.dtype))
    weights = torch.exp(logits - logits.amax(-1, keepdim=True))
    weights = weights / weights.sum(-1, keepdim=True)
    y = (weights @ v).permute(0, 2, 1, 3).reshape(B, T, C)
    return y @ attn.c_proj.weight.T


@pytest.mark.parametrize("attention,p,gain_per", [
    ("lp", 2.0, "layer"), ("lp", 3.5, "layer"), ("lp", 1.0, "head"), ("lp", math.inf, "head"),
    ("lp", 2.7, "head"), ("baseline", 2.0, "layer"),
])
def test_attention_equals_the_formula(attention, p, gain_per):
    torch.manual_seed(0)
    attn = CausalSelfAttention(model_config(n_embd=32, n_head=4, p=p, gain_init=5.0, gain_per=gain_per,
                                            attention=attention)).double().eval()
    if attn.gain is not None:  # distinct gains per head, so that a mix-up of heads would show
        with torch.no_grad():
            attn.gain.copy_(torch.linspace(3.0, 9.0, attn.gain.numel(), dtype=torch.float64))
    x = torch.randn(2, 16, 32, dtype=torch.float64)
    torch.testing.assert_close(attn(x), reference_attention(attn, x))


def test_gain_defaults_to_qknorm_initialisation():
    model = GPT(model_config(n_layer=2, n_head=2, n_embd=16, block_size=256))
    assert [a.gain.item() for a in model.attentions()] == pytest.approx([math.log2(256 * 256 - 256)] * 2)
    assert math.log2(256 * 256 - 256) == pytest.approx(15.994, abs=1e-3)
    per_head = CausalSelfAttention(model_config(n_head=2, n_embd=16, gain_init=7.0, gain_per="head"))
    assert per_head.gain.tolist() == [7.0, 7.0]


def test_the_model_takes_every_setting_of_its_config():
    cfg = TrainConfig(n_layer=1, n_head=4, n_embd=32, block_size=16, p="inf", gain_init=3.0, gain_per="head",
                      dropout=0.1, bias=True)
    attn = GPT(cfg.model_config(vocab_size=10)).attentions()[0]
    assert attn.config == GPTConfig(vocab_size=10, n_layer=1, n_head=4, n_embd=32, block_size=16, dropout=0.1,
                                    bias=True, p=math.inf, gain_init=3.0, gain_per="head", attention="lp")
    assert math.isinf(attn.p) and attn.gain.shape == (4,) and attn.c_attn.bias is not None
    assert attn.resid_dropout.p == 0.1


@pytest.mark.parametrize("bad", [0.5, float("nan"), "abc"])
def test_a_model_config_refuses_a_p_that_is_no_norm(bad):
    with pytest.raises(UserError, match="p must be a number ≥ 1 or 'inf'"):
        dataclasses.replace(model_config(n_embd=16, n_head=2), p=bad)


def test_gain_is_learned_and_not_weight_decayed():
    cfg = TrainConfig(n_layer=2, n_head=2, n_embd=16, block_size=8, gain_per="head", gain_init=4.0)
    model = GPT(cfg.model_config(vocab_size=10))
    x = torch.randint(0, 10, (3, 8))
    _, loss = model(x, x)
    loss.backward()
    gains = [a.gain for a in model.attentions()]
    assert all(g.grad is not None and torch.isfinite(g.grad).all() for g in gains)
    optimizer = adamw(model, cfg, "cpu")
    decayed = {id(p) for group in optimizer.param_groups if group["weight_decay"] > 0 for p in group["params"]}
    assert not any(id(g) in decayed for g in gains)


def test_baseline_has_no_gain_and_tied_embeddings():
    model = GPT(model_config(n_layer=1, n_head=2, n_embd=16, block_size=8, attention="baseline"))
    assert model.gains().numel() == 0
    assert model.lm_head.weight is model.wte.weight
