"""The temperature-matched gain (`gain_init: matched`): at initialisation, a model's attention
entropy on real batches is about p = 2's for every p, where QKNorm's fixed g₀ is not; the matched
gain is the number its definition gives (checked against a Monte Carlo written here); a study
records the number it resolved to, and the export writes that number.

The entropy is computed here, from each layer's q and k with the formula written out (q̂ = q/‖q‖_p,
logits g·q̂k̂ᵀ under a causal mask, softmax, −Σ a·log a), not with the model's own entropy code."""

from __future__ import annotations

import math

import pytest
import torch
import yaml

from lpstudy.errors import UserError
from lpstudy.training.config import resolve_config
from lpstudy.training.gain import matched_gain_init
from tests.study_helpers import TINY, cli, trials_of

P_VALUES = (1.0, 1.5, 2.0, 3.0, 4.0, math.inf)


def lp_unit(x: torch.Tensor, p: float) -> torch.Tensor:
    """x / ‖x‖_p over the last dimension: (Σ|xᵢ|^p)^(1/p), or max|xᵢ| for p = ∞."""
    norm = x.abs().amax(dim=-1, keepdim=True) if math.isinf(p) else x.abs().pow(p).sum(-1, keepdim=True).pow(1 / p)
    return x / norm


def attention_entropy_by_hand(x: torch.Tensor, c_attn: torch.nn.Linear, n_head: int, p: float,
                              gain: torch.Tensor) -> torch.Tensor:
    """Mean row entropy (nats) of Lp-QKNorm attention on a layer's input x (B, T, C)."""
    B, T, C = x.shape
    qkv = c_attn(x).view(B, T, 3, n_head, C // n_head)
    q = lp_unit(qkv[:, :, 0].transpose(1, 2).double(), p)  # (B, H, T, d)
    k = lp_unit(qkv[:, :, 1].transpose(1, 2).double(), p)
    logits = gain.double().view(-1, 1, 1) * (q @ k.transpose(-2, -1))
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    weights = logits.masked_fill(~causal, -math.inf).softmax(dim=-1)
    return -(weights * torch.log(weights.clamp_min(1e-300))).sum(-1).mean()


@torch.no_grad()
def initial_entropy(corpus, p: float, gain_init) -> float:
    """Mean attention entropy of a freshly built smoke model over its layers and two training batches."""
    from lpstudy.model.gpt import GPT
    from lpstudy.training.data import BatchSampler, fold_split

    cfg = resolve_config("smoke", {"p": p, "gain_init": gain_init})
    torch.manual_seed(0)
    model = GPT(cfg.model_config(corpus.vocab_size)).eval()
    seen: dict[int, torch.Tensor] = {}  # layer -> the input its attention got in the forward pass
    hooks = [block.attn.register_forward_pre_hook(lambda module, args, i=i: seen.__setitem__(i, args[0]))
             for i, block in enumerate(model.blocks)]
    batches = BatchSampler(corpus.tokens, fold_split(len(corpus), 0, 10).training, cfg.block_size,
                           cfg.batch_size, seed=1)
    entropies = []
    try:
        for _ in range(2):
            model(batches.next()[0])
            for i, block in enumerate(model.blocks):
                entropies.append(attention_entropy_by_hand(seen[i], block.attn.c_attn, cfg.n_head, p, block.attn.gain))
    finally:
        for hook in hooks:
            hook.remove()
    return float(torch.stack(entropies).mean())


def test_matched_gain_gives_every_p_the_initial_entropy_of_p2(corpus):
    fixed = {p: initial_entropy(corpus, p, None) for p in P_VALUES}
    matched = {p: initial_entropy(corpus, p, "matched") for p in P_VALUES}
    reference = fixed[2.0]
    for p in P_VALUES:
        assert abs(matched[p] - reference) < 0.05 * reference, (p, matched[p], reference)
    # with QKNorm's g₀ at every p, p sets the temperature: p = 1 near uniform, p ≥ 3 near collapse
    assert fixed[1.0] > 1.5 * reference and fixed[4.0] < 0.5 * reference and fixed[math.inf] < 0.3 * reference
    assert all(fixed[a] > fixed[b] for a, b in zip(P_VALUES, P_VALUES[1:]))
    # the spread the matched gain removes is large next to what is left of it
    assert max(fixed.values()) - min(fixed.values()) > 10 * (max(matched.values()) - min(matched.values()))


def independent_matched_gain(p: float, head_size: int, block_size: int, pairs: int = 1 << 16) -> float:
    """g₀ · sd(q̂·k̂ at p = 2) / sd(q̂·k̂ at p), q, k ~ N(0, I_d), by a Monte Carlo of its own (torch's
    generator, another seed and four times the pairs of lpstudy's NumPy one); g₀ = log₂(L² − L)."""
    generator = torch.Generator().manual_seed(12345)
    q = torch.randn(pairs, head_size, generator=generator, dtype=torch.float64)
    k = torch.randn(pairs, head_size, generator=generator, dtype=torch.float64)

    def spread(r: float) -> float:
        return float((lp_unit(q, r) * lp_unit(k, r)).sum(-1).std())

    return math.log2(block_size * block_size - block_size) * spread(2.0) / spread(p)


@pytest.mark.parametrize("head_size", [16, pytest.param(32, marks=pytest.mark.slow)])
def test_the_matched_gain_is_what_its_definition_gives(head_size):
    block = 64
    gains = [matched_gain_init(p, head_size, block) for p in P_VALUES]
    for p, gain in zip(P_VALUES, gains):
        assert gain == pytest.approx(independent_matched_gain(p, head_size, block), rel=0.01), p
    assert gains[P_VALUES.index(2.0)] == pytest.approx(math.log2(64 * 64 - 64))  # QKNorm's g₀ at p = 2
    assert all(a > b for a, b in zip(gains, gains[1:]))  # a smaller p spreads q̂·k̂ less: a larger gain
    # for p = 2 the spread is known exactly (1/√d for independent directions), which checks the Monte Carlo
    generator = torch.Generator().manual_seed(7)
    q, k = (lp_unit(torch.randn(1 << 16, head_size, generator=generator, dtype=torch.float64), 2.0) for _ in range(2))
    assert float((q * k).sum(-1).std()) == pytest.approx(1 / math.sqrt(head_size), rel=0.02)


def test_a_config_resolves_matched_to_that_number_and_refuses_other_words():
    assert resolve_config("cpu", {"p": 3, "gain_init": "matched"}).resolved_gain_init == pytest.approx(
        independent_matched_gain(3.0, 32, 64), rel=0.02)  # cpu: head size 128/4, context 64
    with pytest.raises(UserError, match="gain_init must be a number or 'matched'"):
        resolve_config("cpu", {"gain_init": "cold"})


@pytest.mark.slow
def test_a_study_stores_the_resolved_matched_gain_and_the_export_writes_it(sqlite_url, tmp_path, capsys):
    code, _, err = cli(capsys, "replicate", "--study", "m", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "4", "--folds", "2", "--gain-init", "matched", *TINY)
    assert code == 0, err
    code, _, err = cli(capsys, "worker", "--study", "m", "--storage", sqlite_url, "--devices", "cpu", "--no-progress")
    assert code == 0, err
    trials = trials_of(sqlite_url, "m")
    stored = [t.user_attrs["gain_init"] for t in trials]
    assert len(stored) == 2 and stored[0] == stored[1]  # one number for every trial of the study
    # smoke: head size 32/2, context 32
    assert stored[0] == pytest.approx(independent_matched_gain(4.0, 16, 32), rel=0.02)
    assert {t.user_attrs["gain_rule"] for t in trials} == {"matched"}
    out = tmp_path / "best.yaml"
    code, _, err = cli(capsys, "export", "--study", "m", "--storage", sqlite_url, "-o", str(out))
    assert code == 0, err
    assert yaml.safe_load(out.read_text())["gain_init"] == stored[0]  # the number, not the word
