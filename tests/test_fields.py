"""A training field is declared once (lpstudy.training.fields): its type, default, range, default
search range and help; the config, the bounds, the space, the trial attributes and the frames read it."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from lpstudy.errors import UserError
from lpstudy.design.space import DEFAULT_SPACE, LOG_SCALE_FIELDS, WORKER_FIELDS, parse_param
from lpstudy.training.bounds import FIELD_BOUNDS
from lpstudy.training.config import PRESETS, TrainConfig, coerce_field
from lpstudy.values import P

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name,text,expected", [
    ("n_layer", "6", 6), ("n_layer", 6.0, 6), ("dropout", "0.1", 0.1), ("bias", "yes", True), ("bias", "off", False),
    ("attention", "baseline", "baseline"), ("gain_init", " Matched ", "matched"), ("gain_init", "none", None),
    ("gain_init", "12", 12.0), ("p", "inf", math.inf), ("p", 3, 3.0), ("device", "cuda:1", "cuda:1"),
])
def test_a_value_is_converted_by_its_fields_type(name, text, expected):
    value = coerce_field(name, text)
    assert value == expected and type(value) is (P if name == "p" else type(expected))


@pytest.mark.parametrize("name,text,message", [
    ("n_layer", "4.5", "n_layer must be int, got '4.5'"), ("n_layer", True, "n_layer must be int, got True"),
    ("lr", "fast", "lr must be float, got 'fast'"), ("bias", "maybe", "bias must be bool, got 'maybe'"),
    ("gain_init", "hot", "gain_init must be a number or 'matched', got 'hot'"),
    ("n_layer", None, "n_layer needs a value"), ("p", "0.5", "p must be a number ≥ 1 or 'inf'"),
    ("n_layers", "4", "unknown training field 'n_layers'; did you mean 'n_layer'? (known fields: attention, batch_size"),
])
def test_a_value_that_is_not_of_its_fields_type_is_refused_by_name(name, text, message):
    with pytest.raises(UserError) as refused:
        coerce_field(name, text)
    assert message in str(refused.value)


def test_a_config_names_each_problem_of_its_fields():
    with pytest.raises(UserError) as refused:
        TrainConfig(n_layer=0, beta1=1.0, attention="flash", dtype="fp8", gain_init="hot", p=0.9)
    message = str(refused.value)
    for fragment in ("n_layer must be in [1, 64], got 0", "beta1 must be in [0, 1), got 1.0",
                     "attention must be 'lp' or 'baseline', got 'flash'",
                     "dtype must be 'auto', 'float32' or 'bfloat16', got 'fp8'",
                     "gain_init must be a number or 'matched', got 'hot'", "p must be a number ≥ 1 or 'inf'"):
        assert fragment in message
    assert "\n" not in message


def test_the_bounds_are_the_readmes_table():
    expected = {"n_layer": "[1, 64]", "n_head": "[1, 256]", "n_embd": "[1, 8192]", "block_size": "[2, 65536]",
                "batch_size": "[1, 65536]", "max_steps": "[1, 10^7]", "warmup_steps": "[0, 10^7]",
                "eval_interval": "[1, 10^7]", "eval_iters": "[1, 10^6]", "folds": "[2, 1000]",
                "seed": "[0, 4294967295]", "threads": "[0, 1024]", "lr": "(0, 1]", "min_lr_ratio": "[0, 1]",
                "weight_decay": "[0, 10]", "beta1": "[0, 1)", "beta2": "[0, 1)", "grad_clip": "[0, 10^6]",
                "dropout": "[0, 1)", "gain_init": "[0, 10000]", "divergence_factor": "(1, 10^6]", "fold": "[0, 999]",
                "repeat": "[0, 999]"}
    assert {name: bound.describe() for name, bound in FIELD_BOUNDS.items()} == expected


def test_the_default_space_is_the_readmes_in_the_order_it_is_sampled():
    # docs/studies.md: p in [1, 4], the learning rate in [1e-4, 1e-2] (log scale), the gain's initial value in [2, 64] (log)
    assert list(DEFAULT_SPACE.items()) == [("p", {"low": 1.0, "high": 4.0}),
                                           ("lr", {"low": 1e-4, "high": 1e-2, "log": True}),
                                           ("gain_init", {"low": 2.0, "high": 64.0, "log": True})]
    assert LOG_SCALE_FIELDS == ("lr", "gain_init") and WORKER_FIELDS == ("device",)
    assert parse_param("lr", "1e-5:1e-3").log and not parse_param("dropout", "0:0.2").log


def test_only_number_fields_are_searched_over_a_range():
    for name, kind in (("attention", "str"), ("bias", "bool")):
        with pytest.raises(UserError, match=f"{name} is a {kind} field: give a value or a list of choices, not a range"):
            parse_param(name, "a:b")
    assert parse_param("n_layer", "2:8").integer and not parse_param("dropout", "0:0.5").integer


def test_the_presets_keep_their_values():
    # nanoGPT's recipes as the README and docs/studies.md state them (the fields' declaration must not move them)
    paper, cpu, smoke = PRESETS["paper"], PRESETS["cpu"], PRESETS["smoke"]
    assert (paper.n_layer, paper.n_head, paper.n_embd, paper.block_size, paper.dropout, paper.batch_size,
            paper.max_steps, paper.lr, paper.beta2) == (6, 6, 384, 256, 0.2, 64, 5000, 1e-3, 0.99)
    assert (cpu.n_layer, cpu.n_head, cpu.n_embd, cpu.block_size, cpu.batch_size, cpu.max_steps) == (4, 4, 128, 64, 12, 2000)
    assert (smoke.n_layer, smoke.n_embd, smoke.max_steps, smoke.p, smoke.gain_init) == (2, 32, 150, 2.0, None)


ADD_A_FIELD = """
import json, math
from datetime import datetime, timezone
import lpstudy.training.fields as F
F.FIELDS["label_smoothing"] = F.Field("label_smoothing", float, 0.0, "cross-entropy label smoothing",
                                      F.Bound(0, 1, high_open=True), search=(0.01, 0.2), log=True, trial_attr=True)
from lpstudy.errors import UserError
from lpstudy.training.config import TrainConfig, resolve_config
from lpstudy.training.bounds import FIELD_BOUNDS
from lpstudy.design.space import DEFAULT_SPACE, LOG_SCALE_FIELDS
from lpstudy.study.trial_attributes import start_attributes
from lpstudy.results.reading.frames import TRIAL_COLUMNS
cfg = resolve_config("smoke", {"label_smoothing": "0.1", "device": "cpu"})
try:
    TrainConfig(label_smoothing=1.5)
    refused = None
except UserError as exc:
    refused = str(exc)
attrs = start_attributes(cfg, "smoke", "default", {"host": "h", "pid": 1, "device": "cpu", "worker": "w"},
                         datetime.now(timezone.utc))
print(json.dumps({"value": cfg.label_smoothing, "bound": FIELD_BOUNDS["label_smoothing"].describe(),
                  "refused": refused, "space": DEFAULT_SPACE.get("label_smoothing"),
                  "log": "label_smoothing" in LOG_SCALE_FIELDS, "attr": attrs.get("label_smoothing"),
                  "override": attrs["overrides"].get("label_smoothing"),
                  "column": "label_smoothing" in TRIAL_COLUMNS}))
"""


def test_adding_a_field_is_one_declaration():
    """A field declared in FIELDS alone reaches the config, its bounds, the default space, the trial's
    attributes and the trials frame (in a fresh interpreter, so that nothing here sees it)."""
    done = subprocess.run([sys.executable, "-c", ADD_A_FIELD], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen == {"value": 0.1, "bound": "[0, 1)", "refused": "label_smoothing must be in [0, 1), got 1.5",
                    "space": {"low": 0.01, "high": 0.2, "log": True}, "log": True, "attr": 0.1,
                    "override": 0.1, "column": True}


def test_the_written_out_fields_are_fields_py_s():
    """lpstudy/training/config_fields.py shows TrainConfig's fields to a reader and a type checker:
    generated from FIELDS (`python -m lpstudy.training.fields`), it must say what FIELDS says, and
    TrainConfig must have exactly those fields with those defaults."""
    import dataclasses

    from lpstudy.training.config import TrainConfig
    from lpstudy.training.config_fields import DeclaredFields
    from lpstudy.training.fields import FIELDS, FIELDS_STUB, fields_stub

    assert (ROOT / FIELDS_STUB).read_text(encoding="utf-8") == fields_stub(), \
        "run `python -m lpstudy.training.fields` to write lpstudy/training/config_fields.py again"
    declared = [(f.name, f.default) for f in dataclasses.fields(DeclaredFields)]
    assert declared == [(f.name, f.default) for f in dataclasses.fields(TrainConfig)] == \
        [(f.name, f.default) for f in FIELDS.values()]
