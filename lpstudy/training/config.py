"""What one training run is: the config made of every field (declared in lpstudy.training.fields),
the presets (declared once, here), how a run is validated, and how it is read from and written to
a run file.

A run is a preset plus overrides. The same overrides come from the command line, a YAML file
(`lpstudy train --config`, and what `lpstudy export` writes), or a study's sampled parameters, so
all three go through `resolve_config`. Plain Python: the read side imports it without torch.
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from lpstudy.errors import UserError
from lpstudy.files import atomic_write_text, read_yaml_mapping
from lpstudy.model.config import GPTConfig
from lpstudy.training.fields import FIELDS, field_named
from lpstudy.training.gain import resolve_gain_init
from lpstudy.training.threads import THREADS_ENV, default_threads
from lpstudy.values import RUN_FILE_ALWAYS, json_safe


if TYPE_CHECKING:  # the fields written out (generated from FIELDS, checked by tests/test_fields.py)
    from lpstudy.training.config_fields import DeclaredFields
else:
    DeclaredFields = object


def _declared_fields(cls: type) -> type:
    """Give the class (before @dataclass) the fields of lpstudy.training.fields.FIELDS: each one's
    type, default and help, in their order. A reader (and a type checker) sees them written out in
    lpstudy/training/config_fields.py."""
    cls.__annotations__ = {f.name: f.annotation for f in FIELDS.values()}
    for f in FIELDS.values():
        setattr(cls, f.name, dataclasses.field(default=f.default, metadata={"help": f.help}))
    return cls


def seeds_inside(seed: int, count: int) -> list[int]:
    """The training seeds of a cell run with `count` seeds (replicate/compare --seeds): `seed` itself
    first (so seed 0 of a study with seeds is the run every study without them makes), then seeds drawn
    from a generator seeded by (seed, i), so that no two runs share a stream (the trainer starts its
    weights, batches and dropout from a seed and the two after it: consecutive seeds would overlap)."""
    return [seed] + [random.Random(f"lpstudy seed {seed} inside {i}").randrange(2**31) for i in range(1, count)]


@dataclass(frozen=True)
@_declared_fields
class TrainConfig(DeclaredFields):
    """One training run: every field of lpstudy.training.fields (its type, default, range and help
    are declared there; written out in lpstudy/training/config_fields.py), checked when the config is made: a field outside its range, p below 1 or
    NaN, a word a field does not take are one UserError naming each problem. p is a P from then on."""

    def __post_init__(self) -> None:
        problems = []
        for f in FIELDS.values():
            value = getattr(self, f.name)
            try:
                held = f.checked(value)
            except UserError as exc:
                problems.append(str(exc))
                continue
            if held is not value:
                object.__setattr__(self, f.name, held)  # p as a P
        if self.n_head >= 1 and self.n_embd % self.n_head:
            problems.append(f"n_embd ({self.n_embd}) must be a multiple of n_head ({self.n_head})")
        if not 0 <= self.fold < self.folds:
            problems.append(f"fold must be in 0..{self.folds - 1} for {self.folds} folds, got {self.fold}")
        if problems:
            raise UserError("; ".join(problems))

    @property
    def resolved_gain_init(self) -> float:
        """The initial gain as a number (None: QKNorm's g₀; 'matched': the temperature-matched gain)."""
        return resolve_gain_init(self.gain_init, self.p, self.n_embd // self.n_head, self.block_size)

    def model_config(self, vocab_size: int) -> GPTConfig:
        """The model this run trains: each field of GPTConfig is the run's field of that name, the
        gain's initial value resolved to a number; the vocabulary is the corpus's."""
        values = {f.name: getattr(self, f.name) for f in fields(GPTConfig) if f.name != "vocab_size"}
        return GPTConfig(**{**values, "vocab_size": vocab_size, "gain_init": self.resolved_gain_init})

    @property
    def run_seed(self) -> int:
        """The seed the run's weights, batches and dropout start from: `seed` in repeat 0 (every run made
        before repeats), else one drawn from a generator seeded by (seed, repeat), so that a repeat of the
        cross-validation trains with new seeds as well as on a new partition."""
        if self.repeat == 0:
            return self.seed
        return random.Random(f"lpstudy seed {self.seed} {self.repeat}").randrange(2**31)

    @property
    def min_lr(self) -> float:
        return self.lr * self.min_lr_ratio

    def to_dict(self) -> dict[str, Any]:
        """Every field as lpstudy writes it (p = ∞ as 'inf')."""
        return {f.name: json_safe(getattr(self, f.name)) for f in fields(self)}


# The presets, declared once: the trainer, the study, the dashboard and the export read them here.
PRESETS: dict[str, TrainConfig] = {
    # The paper's experiment: nanoGPT's Shakespeare-char recipe (6 layers, 6 heads, 384 dims,
    # context 256, dropout 0.2, batch 64, AdamW β₂ = 0.99, lr 1e-3 → 1e-4 by cosine, 100 warm-up
    # steps, 5000 steps).
    "paper": TrainConfig(
        n_layer=6, n_head=6, n_embd=384, block_size=256, dropout=0.2,
        batch_size=64, max_steps=5000, lr=1e-3, warmup_steps=100,
        eval_interval=250, eval_iters=200,
    ),
    # nanoGPT's CPU recipe: 4 layers, 4 heads, 128 dims, context 64, batch 12, 2000 steps, no dropout.
    "cpu": TrainConfig(
        n_layer=4, n_head=4, n_embd=128, block_size=64, dropout=0.0,
        batch_size=12, max_steps=2000, lr=1e-3, warmup_steps=100,
        eval_interval=100, eval_iters=20,
    ),
    # A model that learns something in seconds on one CPU core: for tests and trying things out.
    "smoke": TrainConfig(
        n_layer=2, n_head=2, n_embd=32, block_size=32, dropout=0.0,
        batch_size=16, max_steps=150, lr=3e-3, warmup_steps=10,
        eval_interval=25, eval_iters=4,
    ),
}


def get_preset(name: str) -> TrainConfig:
    try:
        return PRESETS[name]
    except KeyError:
        raise UserError(f"unknown preset {name!r}; choose one of: {', '.join(PRESETS)}") from None


def coerce_field(name: str, value: Any) -> Any:
    """Convert a user-given value (string from the command line, or YAML scalar) to the field's type."""
    return field_named(name).coerce(value)


def resolve_config(preset: str, overrides: dict[str, Any] | None = None) -> TrainConfig:
    """The preset's config with overrides applied and validated (UserError on any problem)."""
    base = get_preset(preset)
    changes = {name: coerce_field(name, value) for name, value in (overrides or {}).items()}
    return dataclasses.replace(base, **changes)


def with_cpu_threads(config: TrainConfig, device: str, threads: int | None = None) -> TrainConfig:
    """On CPU, the config with its thread count made explicit, so that the run can be reproduced to
    the last digit from its run file: the config's own if set, else `threads` (a worker's
    --threads), else OMP_NUM_THREADS's where it is set, else the default for the model's size and
    this process's cores (lpstudy.training.threads: one thread for smoke and cpu)."""
    if device != "cpu" or config.threads > 0:
        return config
    if threads:
        return dataclasses.replace(config, threads=threads)
    if os.environ.get(THREADS_ENV):
        import torch

        return dataclasses.replace(config, threads=torch.get_num_threads())
    return dataclasses.replace(config, threads=default_threads(config.batch_size, config.block_size, config.n_embd))


def overrides_of(config: TrainConfig, preset: str) -> dict[str, Any]:
    """The fields in which config differs from its preset, as plain values."""
    base = get_preset(preset).to_dict()
    return {k: v for k, v in config.to_dict().items() if base[k] != v}


# A run file (`lpstudy train --config`, `lpstudy export`): `preset`, any TrainConfig field, and an
# optional `source` mapping (where the run came from and the score it reached) that training ignores.
def load_run_file(path: str | Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Read a run file; return (preset, overrides, source). UserError on anything malformed."""
    data = read_yaml_mapping(path, "config file", "preset, source and training fields")
    preset = data.pop("preset", "cpu")
    source = data.pop("source", None) or {}
    if not isinstance(source, dict):
        raise UserError(f"config file {path}: 'source' must be a mapping")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise UserError(f"config file {path}: unknown field(s) {', '.join(unknown)}; "
                        f"allowed: preset, source and {', '.join(sorted(FIELDS))}")
    return str(preset), data, source


READABLE_DIGITS = 4  # what a person reads of a long float in a run file's comment


def readable_floats(text: str) -> str:
    """A run file's YAML with each long float followed by a comment of its first READABLE_DIGITS
    significant digits (`lr: 0.0028800597026613283  # 0.00288`). The value itself keeps every digit:
    a run retrained from a rounded one is another run (at the smoke preset, lr rounded to 6 digits
    moved the final loss after 60 steps from 3.1697 to 3.1919), so the file stays exact and the
    comment is what a person reads."""
    import re

    def comment(match: re.Match) -> str:
        number = float(match.group(2))
        return f"{match.group(0)}  # {number:.{READABLE_DIGITS}g}"

    return re.sub(r"^(\s*[A-Za-z_]\w*: )(-?\d+\.\d{6,}(?:e[-+]?\d+)?|-?\d\.\d+e[-+]?\d+)$", comment, text, flags=re.M)


def write_run_file(path: str | Path | None, preset: str, config: TrainConfig,
                   source: dict[str, Any] | None = None, always: tuple[str, ...] = RUN_FILE_ALWAYS,
                   fmt: str = "yaml") -> str:
    """Serialise a run as the file `lpstudy train --config` reads; write it atomically if a path is given."""
    values = config.to_dict()
    body: dict[str, Any] = {"preset": preset}
    body.update({k: values[k] for k in always})
    body.update(overrides_of(config, preset))
    if source:
        body["source"] = source
    text = (json.dumps(body, indent=2) + "\n") if fmt == "json" else readable_floats(yaml.safe_dump(body, sort_keys=False))
    if path is not None:
        atomic_write_text(path, text)
    return text
