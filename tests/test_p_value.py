"""p as one value type (lpstudy.values.P): checked once where it enters, ∞ written one way ("inf")
in everything lpstudy writes, and every older way of writing it still read."""

from __future__ import annotations

import json
import math
from datetime import datetime

import optuna
import pytest
import torch
import yaml

from lpstudy import values
from lpstudy.errors import UserError
from lpstudy.results.export import export_text
from lpstudy.results.reading.frames import load_study
from lpstudy.design.spec import StudySpec, build_spec, replicate_spec
from lpstudy.training.config import TrainConfig, resolve_config, write_run_file
from lpstudy.values import P, json_safe
from lpstudy.db.kinds import open_reader

optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.mark.parametrize("text,expected", [("inf", math.inf), ("∞", math.inf), ("Infinity", math.inf),
                                           (" +INF ", math.inf), ("3.5", 3.5), ("1", 1.0)])
def test_p_reads_numbers_and_infinity_written_as_text(text, expected):
    p = P(text)
    assert isinstance(p, P) and isinstance(p, float) and p == expected


@pytest.mark.parametrize("bad,fragment", [
    (0.5, "an Lp norm needs p ≥ 1), got 0.5"), (0, "got 0.0"), (-1, "got -1.0"), (math.nan, "got nan"),
    ("abc", "got 'abc'"), (None, "got None"), (True, "got True"), ("1e400", "p = 1e400 overflows a float"),
    ("-inf", "an Lp norm needs p ≥ 1), got -inf"), (-math.inf, "got -inf"), ("-1e400", "got -inf"),
])
def test_p_refuses_what_is_no_norm_exponent_in_one_line(bad, fragment):
    with pytest.raises(UserError) as refused:
        P(bad)
    message = str(refused.value)
    assert fragment in message and "\n" not in message
    if bad != "1e400":
        assert message.startswith("p must be a number ≥ 1 or 'inf'")


@pytest.mark.parametrize("bad", [0.5, math.nan])
def test_a_train_config_refuses_p_below_one_and_nan(bad):
    with pytest.raises(UserError, match=r"p must be a number ≥ 1 or 'inf' \(an Lp norm needs p ≥ 1\)"):
        TrainConfig(p=bad)


def test_a_train_config_holds_p_as_a_checked_value():
    assert type(TrainConfig(p="inf").p) is P and math.isinf(TrainConfig(p="inf").p)
    assert type(TrainConfig(p=3).p) is P and TrainConfig(p=3).p == 3.0
    assert type(TrainConfig().p) is P


def test_p_is_checked_once_where_it_enters_never_in_the_model(monkeypatch):
    calls = []
    original = values._checked_p
    monkeypatch.setattr(values, "_checked_p", lambda p: calls.append(p) or original(p))
    cfg = resolve_config("smoke", {"p": "3.5"})  # a flag's text: checked here, once
    assert calls == ["3.5"]
    from lpstudy.model.gpt import GPT

    model = GPT(cfg.model_config(vocab_size=20))
    for _ in range(3):
        model(torch.randint(0, 20, (2, 8)))
    model.attention_stats(torch.randint(0, 20, (2, 8)))
    assert calls == ["3.5"]  # building the model and its forward passes took the P as it is


def test_infinity_is_written_as_inf_in_run_files_and_specs(tmp_path):
    cfg = resolve_config("smoke", {"p": "inf"})
    assert cfg.to_dict()["p"] == "inf"
    assert yaml.safe_load(write_run_file(tmp_path / "run.yaml", "smoke", cfg))["p"] == "inf"
    assert json.loads(write_run_file(None, "smoke", cfg, fmt="json"))["p"] == "inf"
    grid = replicate_spec("smoke", ["inf", 2], 2).to_plain()
    assert grid["p_values"] == ["inf", 2.0] and grid["space"]["p"]["choices"] == ["inf", 2.0]
    fixed = build_spec(space_entries={"p": "∞"}, options={"preset": "smoke"}).to_plain()
    assert fixed["space"]["p"] == {"type": "fixed", "value": "inf"}
    # strict JSON all through: no bare Infinity that other readers refuse
    for plain in (cfg.to_dict(), grid, fixed):
        json.dumps(plain, allow_nan=False)
    assert json_safe([P("inf"), P(2)]) == ["inf", 2.0] and type(json_safe(P(2))) is float


OLD_GRID_SPEC = {  # what `replicate --p inf,2 --folds 2 --preset smoke` stored before p had a type
    "version": 1, "kind": "replicate", "preset": "smoke", "folds": 2, "sampler": "grid", "pruner": "none",
    "space": {"folds": {"type": "fixed", "value": 2}, "p": {"type": "choice", "choices": ["inf", 2.0]},
              "fold": {"type": "choice", "choices": [0, 1]}},
    "loss_threshold": None, "n_trials": None, "n_startup_trials": 10, "sampler_seed": None,
    "heartbeat_interval": 10, "grace_period": 60, "max_retry": 2, "n_cells": 4, "checkpoint_interval": 5,
    "p_values": ["inf", 2.0],
}
OLD_SEARCH_SPEC = {**OLD_GRID_SPEC, "kind": "search", "sampler": "tpe", "pruner": "median", "n_cells": None,
                   "p_values": None,
                   "space": {"p": {"type": "range", "low": 1.0, "high": 4.0, "log": False, "inf": True},
                             "lr": {"type": "range", "low": 1e-4, "high": 1e-2, "log": True},
                             "folds": {"type": "fixed", "value": 2}}}


def test_an_old_spec_with_infinity_as_text_or_a_float_is_read():
    assert StudySpec.from_plain(OLD_GRID_SPEC).p_values == [math.inf, 2.0]
    as_float = json.loads(json.dumps({**OLD_GRID_SPEC, "p_values": [math.inf, 2.0]}))  # JSON's bare Infinity
    spec = StudySpec.from_plain(as_float)
    assert spec.p_values == [math.inf, 2.0] and all(type(p) is P for p in spec.p_values)
    assert spec.space.get("p").choices == (math.inf, 2.0)
    assert StudySpec.from_plain(OLD_SEARCH_SPEC).space.get("p").with_inf


def _old_trial(value: float, user_attrs: dict, params: dict, distributions: dict):
    from optuna.trial import TrialState, create_trial

    trial = create_trial(state=TrialState.COMPLETE, value=value, params=params, distributions=distributions,
                         user_attrs={"lr": 3e-3, "gain_init": 8.0, "fold": 0, "folds": 2, "seed": 0,
                                     "diverged": False, "final_val_loss": value, **user_attrs})
    trial.datetime_start = datetime(2026, 1, 1)
    return trial


def test_studies_written_the_old_ways_are_still_read(tmp_path):
    from optuna.distributions import CategoricalDistribution

    url = f"sqlite:///{tmp_path / 'old.db'}"
    study = optuna.create_study(storage=url, study_name="old")
    study.set_user_attr("lpstudy", OLD_SEARCH_SPEC)
    choice = {"p": CategoricalDistribution(("inf", 2.0))}
    switch = {"p_inf": CategoricalDistribution((False, True))}
    study.add_trial(_old_trial(1.80, {"p": math.inf}, {"p": "inf"}, choice))  # a worker's float ∞
    study.add_trial(_old_trial(1.90, {"p": "inf"}, {"p": "inf"}, choice))  # the synthetic studies' text
    study.add_trial(_old_trial(1.95, {"p": "Infinity"}, {"p": "inf"}, choice))
    study.add_trial(_old_trial(2.00, {}, {"p_inf": True}, switch))  # a range's switch, no attribute
    raw = {row[0] for row in optuna.storages.RDBStorage(url).engine.connect().exec_driver_sql(
        "SELECT value_json FROM trial_user_attributes WHERE key = 'p'")}
    assert raw == {"Infinity", '"inf"', '"Infinity"'}  # the three old spellings, as stored

    for via_optuna in (False, True):
        trials = load_study(open_reader(url), "old", via_optuna=via_optuna).trials
        assert len(trials) == 4 and trials["p"].map(math.isinf).all()
    exported = yaml.safe_load(export_text(open_reader(url), "old"))  # the best trial: the worker's float ∞
    assert exported["p"] == "inf" and exported["source"]["trial"] == 0
