"""The corpus (Tiny Shakespeare by default, any UTF-8 text by option), its K folds, and batches.

Where the text comes from, first match wins:
  1. an explicit path (`--data PATH`), 2. the environment variable LPSTUDY_DATA,
  3. the user cache ($LPSTUDY_CACHE, else $XDG_CACHE_HOME/lpstudy, else ~/.cache/lpstudy),
  4. a download from the canonical address, checked by SHA-256 before it enters the cache.
"""

from __future__ import annotations

import hashlib
import os
import random
import tempfile
import urllib.error
import urllib.request
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from lpstudy.errors import UserError

TINY_SHAKESPEARE_URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"
TINY_SHAKESPEARE_SHA256 = "86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed"
CACHE_NAME = "tinyshakespeare.txt"
HOW_TO_PROVIDE = ("download input.txt of Tiny Shakespeare yourself and pass --data PATH "
                  "or set LPSTUDY_DATA=PATH")


def cache_dir() -> Path:
    if os.environ.get("LPSTUDY_CACHE"):
        return Path(os.environ["LPSTUDY_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "lpstudy"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def resolve_corpus_path(data: str | os.PathLike | None = None) -> Path:
    """The path of the text to train on, downloading Tiny Shakespeare into the cache if needed."""
    explicit = data or os.environ.get("LPSTUDY_DATA")
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            origin = "--data" if data else "LPSTUDY_DATA"
            problem = "is a folder, not a file" if path.is_dir() else "does not exist"
            raise UserError(f"data file {path} (from {origin}) {problem}; give the path of a UTF-8 text file")
        return path
    cached = cache_dir() / CACHE_NAME
    if cached.is_file():
        if sha256_of(cached) != TINY_SHAKESPEARE_SHA256:
            raise UserError(f"the cached corpus {cached} has the wrong SHA-256; delete it to download it again")
        return cached
    return download_tiny_shakespeare(cached)


def download_tiny_shakespeare(target: Path) -> Path:
    """Download to a temporary file beside target, check its SHA-256, then rename it into place:
    a failed or corrupted download never leaves a file at target."""
    url = os.environ.get("LPSTUDY_DATA_URL", TINY_SHAKESPEARE_URL)
    made = [folder for folder in target.absolute().parents if not folder.exists()]  # innermost first
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"cannot create the cache folder {target.parent} ({exc.strerror}); set "
                        f"LPSTUDY_CACHE, or {HOW_TO_PROVIDE}") from None
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".part")
    tmp = Path(tmp_name)
    try:
        try:
            with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=30) as response:
                while chunk := response.read(1 << 16):
                    out.write(chunk)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or exc
            raise UserError(f"no corpus found and the download from {url} failed ({reason}); "
                            f"{HOW_TO_PROVIDE}") from None
        got = sha256_of(tmp)
        if got != TINY_SHAKESPEARE_SHA256:
            raise UserError(f"the file downloaded from {url} has SHA-256 {got[:12]}…, expected "
                            f"{TINY_SHAKESPEARE_SHA256[:12]}…; refused. {HOW_TO_PROVIDE}")
        os.replace(tmp, target)
        return target
    finally:
        tmp.unlink(missing_ok=True)
        if not target.exists():  # a failed download leaves no empty cache folder behind
            for folder in made:
                try:
                    folder.rmdir()
                except OSError:
                    break


@dataclass(frozen=True)
class Corpus:
    """A character-level corpus: its vocabulary and its text as token ids."""

    chars: str
    tokens: torch.Tensor  # int64, one id per character
    source: str

    @property
    def vocab_size(self) -> int:
        return len(self.chars)

    def __len__(self) -> int:
        return self.tokens.numel()

    def encode(self, text: str) -> list[int]:
        index = {c: i for i, c in enumerate(self.chars)}
        return [index[c] for c in text]

    def decode(self, ids) -> str:
        return "".join(self.chars[i] for i in ids)


def load_corpus(data: str | os.PathLike | None = None) -> Corpus:
    return _load_corpus_at(str(resolve_corpus_path(data).resolve()))


@lru_cache(maxsize=4)
def _load_corpus_at(path: str) -> Corpus:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise UserError(f"data file {path} is not UTF-8 text") from None
    if len(text) < 1000:
        raise UserError(f"data file {path} holds {len(text)} characters; a corpus needs at least 1000")
    chars = "".join(sorted(set(text)))
    lookup = torch.full((max(map(ord, chars)) + 1,), -1, dtype=torch.int64)
    lookup[torch.tensor([ord(c) for c in chars])] = torch.arange(len(chars))
    codes = torch.frombuffer(bytearray(text.encode("utf-32-le")), dtype=torch.int32).to(torch.int64)
    return Corpus(chars=chars, tokens=lookup[codes], source=path)


@dataclass(frozen=True)
class FoldSplit:
    """Fold `fold` of `folds` in repeat `repeat` of the cross-validation: the fold-th contiguous 1/K of the
    text is validation, the rest training; repeat r > 0 first rotates the text by a shift drawn from a
    generator seeded by r (partition_shift), so its K folds cut the text at other places.

    Segments are half-open [start, end) ranges of token positions; where the rotation carries a part
    across the text's end it is two segments, split there, so no window joins the end to the start."""

    fold: int
    folds: int
    validation: tuple[tuple[int, int], ...]
    training: tuple[tuple[int, int], ...]
    repeat: int = 0


def partition_shift(n_tokens: int, repeat: int) -> int:
    """Where repeat `repeat`'s partition starts: 0 for repeat 0 (the plain K-fold CV, as every trial made
    before repeats ran), else a position drawn from a generator seeded by the repeat (the same on every
    machine: Python's Mersenne Twister), so repeats are new partitions of the same text (Bouckaert and
    Frank, "Evaluating the replicability of significance tests for comparing learning algorithms", 2004)."""
    if repeat == 0:
        return 0
    return random.Random(f"lpstudy partition {repeat}").randrange(1, n_tokens)


def _rotated(segment: tuple[int, int], shift: int, n_tokens: int) -> tuple[tuple[int, int], ...]:
    """The positions [start, end) of the rotated text as segments of the text itself."""
    start, end = segment[0] + shift, segment[1] + shift
    if end <= n_tokens:
        return ((start, end),)
    if start >= n_tokens:
        return ((start - n_tokens, end - n_tokens),)
    return ((start, n_tokens), (0, end - n_tokens))


def fold_split(n_tokens: int, fold: int, folds: int, repeat: int = 0) -> FoldSplit:
    if folds < 2:
        raise UserError(f"folds must be at least 2, got {folds}")
    if not 0 <= fold < folds:
        raise UserError(f"fold must be in 0..{folds - 1}, got {fold}")
    if repeat < 0:
        raise UserError(f"repeat must be 0 or more, got {repeat}")
    shift = partition_shift(n_tokens, repeat)
    start, end = fold * n_tokens // folds, (fold + 1) * n_tokens // folds
    validation = _rotated((start, end), shift, n_tokens)
    training = tuple(part for seg in ((0, start), (end, n_tokens)) if seg[1] > seg[0]
                     for part in _rotated(seg, shift, n_tokens))
    return FoldSplit(fold, folds, validation, training, repeat)


def window_starts(segments, block_size: int) -> torch.Tensor:
    """Every start s of a window (block_size inputs plus the next-token target) that lies wholly
    inside one segment: s ≥ start and s + block_size + 1 ≤ end. No window straddles a hole."""
    parts = [torch.arange(a, b - block_size) for a, b in segments if b - a > block_size]
    if not parts:
        raise UserError(f"the corpus is too short for a context of {block_size} in every fold; "
                        "use fewer folds or a smaller block_size")
    return torch.cat(parts)


class BatchSampler:
    """Random windows of one split, reproducible from a seed."""

    def __init__(self, tokens: torch.Tensor, segments, block_size: int, batch_size: int, seed: int):
        self.tokens = tokens
        self.starts = window_starts(segments, block_size)
        self.offsets = torch.arange(block_size + 1)
        self.batch_size = batch_size
        self.seed = seed
        self.generator = torch.Generator().manual_seed(seed)

    def reset(self) -> None:
        self.generator.manual_seed(self.seed)

    def next(self) -> tuple[torch.Tensor, torch.Tensor]:
        pick = torch.randint(len(self.starts), (self.batch_size,), generator=self.generator)
        windows = self.tokens[self.starts[pick, None] + self.offsets]
        return windows[:, :-1].contiguous(), windows[:, 1:].contiguous()
