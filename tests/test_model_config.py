"""The model sees a model-only config: GPT takes a GPTConfig and nothing else, every setting the model
reads is a field of it, and each field is the training run's field of the same name."""

import ast
import dataclasses
import math
from pathlib import Path

import pytest
import torch

import lpstudy.model
from lpstudy.model.config import GPTConfig
from lpstudy.model.gpt import GPT
from lpstudy.training.config import PRESETS, TrainConfig
from lpstudy.training.fields import FIELDS

MODEL_DIR = Path(lpstudy.model.__file__).parent
MODEL_FIELDS = [f.name for f in dataclasses.fields(GPTConfig) if f.name != "vocab_size"]

# A value other than the default for each field of the model, chosen by hand: a field added to
# GPTConfig without a row here fails test_the_table_names_every_field_of_the_model.
NOT_THE_DEFAULT = {"n_layer": 3, "n_head": 8, "n_embd": 64, "block_size": 48, "dropout": 0.25, "bias": True,
                   "p": 3.5, "gain_init": 7.0, "gain_per": "head", "attention": "baseline"}


def test_gpt_refuses_a_training_config():
    with pytest.raises(TypeError, match="GPT takes a GPTConfig .* not a TrainConfig"):
        GPT(PRESETS["smoke"])


def test_the_table_names_every_field_of_the_model():
    assert sorted(NOT_THE_DEFAULT) == sorted(MODEL_FIELDS)


def test_every_field_of_the_model_is_a_training_field_and_reaches_the_model_config():
    for name in MODEL_FIELDS:
        assert name in FIELDS, f"GPTConfig.{name} is no field of a training run (lpstudy/training/fields.py)"
        assert NOT_THE_DEFAULT[name] != FIELDS[name].default, name
    model = TrainConfig(**NOT_THE_DEFAULT).model_config(vocab_size=17)
    assert model == GPTConfig(vocab_size=17, n_layer=3, n_head=8, n_embd=64, block_size=48, dropout=0.25,
                              bias=True, p=3.5, gain_init=7.0, gain_per="head", attention="baseline")


def test_the_model_config_holds_the_gain_as_a_number():
    assert TrainConfig(block_size=256).model_config(10).gain_init == pytest.approx(math.log2(256 * 256 - 256))
    # the temperature-matched gain at the defaults' head size 32 and context 64 (g₀ = log₂ 4032 = 11.98):
    # at p = 2 it is g₀ itself; at p = 4, 3.49 (lpstudy.training.gain's calibration, written down here)
    assert TrainConfig(gain_init="matched", p=2.0).model_config(10).gain_init == pytest.approx(math.log2(64 * 64 - 64))
    matched = TrainConfig(gain_init="matched", p=4.0).model_config(10).gain_init
    assert isinstance(matched, float) and matched == pytest.approx(3.489, rel=0.005)
    assert TrainConfig(gain_init=7.0, p=4.0).model_config(10).gain_init == 7.0  # a number stays that number


def test_the_model_config_restates_no_default():
    restated = [f.name for f in dataclasses.fields(GPTConfig)
                if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING]
    assert restated == [], "defaults are declared once, in lpstudy/training/fields.py"


def _model_sources() -> dict[str, ast.Module]:
    return {path.name: ast.parse(path.read_text()) for path in sorted(MODEL_DIR.glob("*.py"))}


def test_the_model_package_imports_nothing_of_training():
    for name, tree in _model_sources().items():
        for node in ast.walk(tree):
            modules = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            assert not any(m.startswith("lpstudy.training") for m in modules), f"{name} imports {modules}"


def test_every_setting_the_model_reads_is_a_field_of_its_config_and_every_field_is_read():
    """What the model reads off `config` (or `x.config`) in lpstudy/model/*.py: a name the model
    reads that GPTConfig lacks would be a training setting reaching the model another way."""
    properties = {name for name, value in vars(GPTConfig).items() if isinstance(value, property)}
    read = set()
    for tree in _model_sources().values():
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                owner = node.value
                if (isinstance(owner, ast.Name) and owner.id == "config") or \
                        (isinstance(owner, ast.Attribute) and owner.attr == "config"):
                    read.add(node.attr)
    unknown = read - set(MODEL_FIELDS) - properties - {"vocab_size"}
    assert not unknown, f"the model reads {sorted(unknown)} of its config; declare them in GPTConfig"
    assert set(MODEL_FIELDS) | {"vocab_size"} <= read


def test_each_setting_changes_the_model_built():
    """Each field of GPTConfig, changed alone, builds another model (its parameters, or its output on
    one batch with the same seed): none is carried and then ignored."""
    base = TrainConfig(n_layer=2, n_head=4, n_embd=32, block_size=16, dropout=0.0, gain_init=5.0)
    x = torch.randint(0, 11, (2, 16))

    def built(cfg: TrainConfig):
        torch.manual_seed(0)
        model = GPT(cfg.model_config(vocab_size=11)).train()
        torch.manual_seed(1)
        return {k: v.shape for k, v in model.state_dict().items()}, model(x)[0]

    shapes, out = built(base)
    for name, value in {**NOT_THE_DEFAULT, "dropout": 0.5, "block_size": 32, "n_head": 2}.items():
        other_shapes, other_out = built(dataclasses.replace(base, **{name: value}))
        assert other_shapes != shapes or not torch.equal(other_out, out), name
