"""The temperature-matched gain (`gain_init: matched`): at initialisation, the model's own attention
entropy on real batches is about p = 2's for every p, where QKNorm's fixed g₀ is not; a study
records the number it resolved to, and the export writes that number."""

from __future__ import annotations

import math

import pytest
import torch
import yaml

from lpstudy.errors import UserError
from lpstudy.training.config import resolve_config
from lpstudy.training.gain import matched_gain_init
from lpstudy.values import default_gain_init
from tests.study_helpers import TINY, cli, trials_of

P_VALUES = (1.0, 1.5, 2.0, 3.0, 4.0, math.inf)


def initial_entropy(corpus, p: float, gain_init) -> float:
    """Mean attention entropy (nats) of a freshly built smoke model on two training batches."""
    from lpstudy.model.gpt import GPT
    from lpstudy.training.data import BatchSampler, fold_split

    cfg = resolve_config("smoke", {"p": p, "gain_init": gain_init})
    torch.manual_seed(0)
    model = GPT(cfg, corpus.vocab_size).eval()
    batches = BatchSampler(corpus.tokens, fold_split(len(corpus), 0, 10).training, cfg.block_size,
                           cfg.batch_size, seed=1)
    return sum(model.mean_attention_entropy(batches.next()[0]) for _ in range(2)) / 2


def test_matched_gain_gives_every_p_the_initial_entropy_of_p2(corpus):
    fixed = {p: initial_entropy(corpus, p, None) for p in P_VALUES}
    matched = {p: initial_entropy(corpus, p, "matched") for p in P_VALUES}
    reference = fixed[2.0]
    assert matched[2.0] == pytest.approx(reference)  # at p = 2 the matched gain is g₀ itself
    for p in P_VALUES:
        assert abs(matched[p] - reference) < 0.05 * reference, (p, matched[p], reference)
    # with QKNorm's g₀ at every p, p sets the temperature: p = 1 near uniform, p ≥ 3 near collapse
    assert fixed[1.0] > 1.5 * reference and fixed[4.0] < 0.5 * reference and fixed[math.inf] < 0.3 * reference
    assert all(fixed[a] > fixed[b] for a, b in zip(P_VALUES, P_VALUES[1:]))


def test_matched_gain_is_a_deterministic_number_that_grows_as_p_shrinks():
    d, block = 32, 64
    gains = [matched_gain_init(p, d, block) for p in P_VALUES]
    assert gains[P_VALUES.index(2.0)] == default_gain_init(block)
    assert all(a > b for a, b in zip(gains, gains[1:]))
    assert resolve_config("cpu", {"p": 3, "gain_init": "matched"}).resolved_gain_init == gains[3]
    with pytest.raises(UserError, match="gain_init must be a number or 'matched'"):
        resolve_config("cpu", {"gain_init": "cold"})


def test_a_study_stores_the_resolved_matched_gain_and_the_export_writes_it(sqlite_url, tmp_path, capsys):
    code, _, err = cli(capsys, "replicate", "--study", "m", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "4", "--folds", "2", "--gain-init", "matched", *TINY)
    assert code == 0, err
    code, _, err = cli(capsys, "worker", "--study", "m", "--storage", sqlite_url, "--devices", "cpu", "--no-progress")
    assert code == 0, err
    trials = trials_of(sqlite_url, "m")
    expected = matched_gain_init(4.0, 16, 32)  # smoke: head size 32/2, context 32
    assert [t.user_attrs["gain_init"] for t in trials] == [pytest.approx(expected)] * 2
    assert {t.user_attrs["gain_rule"] for t in trials} == {"matched"}
    out = tmp_path / "best.yaml"
    code, _, err = cli(capsys, "export", "--study", "m", "--storage", sqlite_url, "-o", str(out))
    assert code == 0, err
    assert yaml.safe_load(out.read_text())["gain_init"] == pytest.approx(expected)
