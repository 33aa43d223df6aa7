"""The corpus: where it comes from, its checksum, its folds and its windows."""

import hashlib

import pytest
import torch

from lpstudy.errors import UserError
from lpstudy.training.data import (TINY_SHAKESPEARE_SHA256, BatchSampler, fold_split, load_corpus,
                          resolve_corpus_path, window_starts)


def test_tiny_shakespeare_is_what_the_paper_used(corpus, corpus_path):
    assert len(corpus) == 1_115_394
    assert corpus.vocab_size == 65
    assert hashlib.sha256(corpus_path.read_bytes()).hexdigest() == TINY_SHAKESPEARE_SHA256
    assert corpus.decode(corpus.tokens[:14].tolist()) == "First Citizen:"


@pytest.mark.parametrize("n,folds", [(1_115_394, 10), (1003, 7), (100, 3)])
def test_validation_folds_are_disjoint_and_cover_the_text(n, folds):
    covered = torch.zeros(n, dtype=torch.int64)
    for fold in range(folds):
        split = fold_split(n, fold, folds)
        ((start, end),) = split.validation  # repeat 0: one contiguous part
        covered[start:end] += 1
        # the training segments are exactly the rest
        train_cover = torch.zeros(n, dtype=torch.int64)
        for a, b in split.training:
            train_cover[a:b] += 1
        assert (train_cover + (torch.arange(n) >= start) * (torch.arange(n) < end) == 1).all()
    assert (covered == 1).all()


@pytest.mark.parametrize("fold", [0, 4, 9])
def test_no_training_window_crosses_the_validation_part(fold):
    n, block = 10_000, 64
    split = fold_split(n, fold, 10)
    starts = window_starts(split.training, block)
    ((v0, v1),) = split.validation
    ends = starts + block + 1  # inputs and the shifted target
    assert ((ends <= v0) | (starts >= v1)).all()
    assert (starts >= 0).all() and (ends <= n).all()
    # every admissible start is there: nothing silently dropped either side of the hole
    expected = sum(max(0, b - a - block) for a, b in split.training)
    assert len(starts) == expected


def test_batches_stay_in_their_segment_and_are_reproducible():
    tokens = torch.arange(5000)
    split = fold_split(5000, 2, 5)
    a = BatchSampler(tokens, split.training, 32, 64, seed=3)
    b = BatchSampler(tokens, split.training, 32, 64, seed=3)
    for _ in range(5):
        (xa, ya), (xb, yb) = a.next(), b.next()
        assert torch.equal(xa, xb) and torch.equal(ya, yb)
        assert torch.equal(ya[:, :-1], xa[:, 1:])  # targets are the next tokens
        ((v0, v1),) = split.validation
        assert not ((xa >= v0) & (xa < v1)).any() and not ((ya >= v0) & (ya < v1)).any()


def test_explicit_path_wins_and_missing_file_is_a_user_error(tmp_path, monkeypatch):
    text = tmp_path / "poems.txt"
    text.write_text("a b c\n" * 400, encoding="utf-8")
    monkeypatch.setenv("LPSTUDY_DATA", str(tmp_path / "elsewhere.txt"))
    assert resolve_corpus_path(text) == text
    assert load_corpus(text).chars == "\n abc"
    with pytest.raises(UserError, match="does not exist"):
        resolve_corpus_path()  # LPSTUDY_DATA names a missing file


def test_download_with_wrong_checksum_is_refused_and_leaves_nothing(tmp_path, monkeypatch):
    wrong = tmp_path / "not-shakespeare.txt"
    wrong.write_text("hello world\n" * 1000)
    cache = tmp_path / "cache"
    monkeypatch.delenv("LPSTUDY_DATA", raising=False)
    monkeypatch.setenv("LPSTUDY_CACHE", str(cache))
    monkeypatch.setenv("LPSTUDY_DATA_URL", wrong.as_uri())
    with pytest.raises(UserError, match="SHA-256"):
        resolve_corpus_path()
    assert not cache.exists()  # no half-written or wrong file left behind, nor the folder made for it


def test_download_puts_a_verified_file_in_the_cache(tmp_path, monkeypatch, corpus_path):
    cache = tmp_path / "cache"
    monkeypatch.delenv("LPSTUDY_DATA", raising=False)
    monkeypatch.setenv("LPSTUDY_CACHE", str(cache))
    monkeypatch.setenv("LPSTUDY_DATA_URL", corpus_path.as_uri())
    path = resolve_corpus_path()
    assert path == cache / "tinyshakespeare.txt"
    assert [p.name for p in cache.iterdir()] == ["tinyshakespeare.txt"]
    monkeypatch.setenv("LPSTUDY_DATA_URL", "http://127.0.0.1:9/unreachable")
    assert resolve_corpus_path() == path  # the cache is used, no second download


def test_offline_without_a_file_says_how_to_provide_it(tmp_path, monkeypatch):
    monkeypatch.delenv("LPSTUDY_DATA", raising=False)
    monkeypatch.setenv("LPSTUDY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("LPSTUDY_DATA_URL", "http://127.0.0.1:9/input.txt")  # nothing listens on port 9
    with pytest.raises(UserError, match="--data PATH"):
        resolve_corpus_path()
    assert not (tmp_path / "cache").exists()  # a failed download leaves no empty cache folder
