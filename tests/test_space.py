"""The search space: what a study YAML and flags may say, what is refused at `create`, and how a
trial's parameters become a run (p = ∞ included)."""

from __future__ import annotations

import math

import optuna
import pytest

from lpstudy.errors import UserError
from lpstudy.design.space import DEFAULT_SPACE, P_INF_PARAM, Choice, Fixed, Range, SearchSpace, parse_param, parse_text
from lpstudy.design.spec import StudySpec, build_spec, replicate_spec
from lpstudy.values import P_OR_INF_PARAM, read_p

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _sample(space: SearchSpace, n: int = 30, seed: int = 0) -> list[dict]:
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=seed))
    out = []
    for _ in range(n):
        trial = study.ask()
        out.append((trial, space.suggest(trial)))
        study.tell(trial, 1.0)
    return out


def test_the_default_search_space_is_p_lr_and_gain_on_their_scales():
    spec = build_spec()
    assert spec.preset == "cpu" and spec.sampler == "tpe" and spec.pruner == "none"
    p, lr, gain = (spec.space.get(n) for n in ("p", "lr", "gain_init"))
    assert (p.low, p.high, p.log) == (1.0, 4.0, False)
    assert lr.log and gain.log and lr.low == DEFAULT_SPACE["lr"]["low"]
    for trial, run in _sample(spec.space):
        assert 1 <= run["p"] <= 4 and 1e-4 <= run["lr"] <= 1e-2 and 2 <= run["gain_init"] <= 64
        assert set(trial.params) == {"p", "lr", "gain_init"}


def test_command_line_forms_of_an_entry():
    assert parse_text("lr", "1e-4:1e-2") == {"low": "1e-4", "high": "1e-2"}
    assert parse_text("p", "1:4,inf") == {"low": "1", "high": "4", "inf": True}
    assert parse_text("dropout", "0:0.3:linear") == {"log": False, "low": "0", "high": "0.3"}
    assert parse_text("n_layer", "2,4") == ["2", "4"]
    assert parse_param("lr", "1e-4:1e-2") == Range("lr", 1e-4, 1e-2, log=True)  # lr: log by default
    assert parse_param("n_layer", "2,4") == Choice("n_layer", (2, 4))
    assert parse_param("n_layer", {"low": 2, "high": 6, "step": 2}) == Range("n_layer", 2, 6, step=2, integer=True)
    assert parse_param("dropout", "0.1") == Fixed("dropout", 0.1)
    assert parse_param("p", "inf") == Fixed("p", math.inf)


def test_a_yaml_and_flags_make_one_spec_flags_winning():
    data = {"preset": "smoke", "folds": 5, "fold": 2, "sampler": "random", "loss_threshold": 2.5,
            "space": {"lr": 1e-3, "n_layer": [1, 2], "dropout": {"low": 0, "high": 0.2}}}
    spec = build_spec(data, {"gain_init": "4:16", "max_steps": "40"}, {"pruner": "none"})
    assert spec.preset == "smoke" and spec.folds == 5 and spec.sampler == "random" and spec.pruner == "none"
    assert spec.space.fixed == {"lr": 1e-3, "folds": 5, "fold": 2, "max_steps": 40}
    assert spec.loss_threshold == 2.5
    runs = _sample(spec.space, 20)
    assert {r["n_layer"] for _, r in runs} == {1, 2}
    assert all(0 <= r["dropout"] <= 0.2 and 4 <= r["gain_init"] <= 16 and r["fold"] == 2 for _, r in runs)
    # the stored form gives the same spec back (what every worker reads)
    again = StudySpec.from_plain(spec.to_plain())
    assert again.to_plain() == spec.to_plain()


@pytest.mark.parametrize("space, message", [
    ({"lr": {"low": 1e-2, "high": 1e-4}}, "lr: low (0.01) is above high (0.0001)"),
    ({"p": {"low": 0.5, "high": 4}}, "p ≥ 1"),
    ({"p": [0.5, 2]}, "p ≥ 1"),
    ({"p": {"low": 1, "high": "inf"}}, "inf: true"),
    ({"n_layerz": 3}, "unknown field 'n_layerz'"),
    ({"device": "cuda"}, "chosen by each worker"),
    ({"lr": {"low": 0, "high": 1e-2, "log": True}}, "log-scale range needs low > 0"),
    ({"n_layer": {"low": 1.5, "high": 4}}, "integer field"),
    ({"attention": {"low": 1, "high": 2}}, "str field"),
    ({"dropout": {"low": 0, "high": 1.5}}, "dropout must be in [0, 1)"),
    ({"fold": 12}, "fold must be in 0..9"),
    ({"n_head": [3, 4]}, "multiple of n_head"),
    ({"lr": {"low": 1e-4}}, "needs both low and high"),
    ({"lr": {"low": 1e-4, "high": 1e-2, "scale": "log"}}, "unknown key"),
])
def test_a_space_that_cannot_be_sampled_is_refused(space, message):
    with pytest.raises(UserError) as caught:
        build_spec({"preset": "cpu", "space": space})
    assert message in str(caught.value)


def test_bad_study_options_are_refused():
    for options, message in [({"sampler": "nsgaii"}, "unknown sampler"), ({"pruner": "patient"}, "unknown pruner"),
                             ({"preset": "huge"}, "unknown preset"),
                             ({"heartbeat_interval": 10, "grace_period": 5}, "must be longer"),
                             ({"sampler": "grid"}, "grid needs at least one field")]:
        with pytest.raises(UserError) as caught:
            build_spec({}, {}, options)
        assert message in str(caught.value), options
    with pytest.raises(UserError, match="grid needs a list of choices"):
        build_spec({"sampler": "grid", "space": {"p": [1, 2], "lr": "1e-4:1e-3"}})


def test_p_infinity_as_a_choice_and_beside_a_range():
    choice = SearchSpace.from_mapping({"p": [2, "inf"]})
    seen = {run["p"] for _, run in _sample(choice, 20)}
    assert seen == {2.0, math.inf}
    for trial, run in _sample(choice, 10):  # Optuna holds the string, the run gets the float
        assert trial.params["p"] == ("inf" if math.isinf(run["p"]) else 2.0)

    ranged = SearchSpace.from_mapping({"p": "1:4,inf"})
    runs = _sample(ranged, 80)
    assert any(math.isinf(r["p"]) for _, r in runs) and any(1 <= r["p"] <= 4 for _, r in runs)
    for trial, run in runs:  # one parameter over [1, 4] and a top slice that is ∞
        assert set(trial.params) == {P_OR_INF_PARAM}
        assert (trial.params[P_OR_INF_PARAM] > 4) == math.isinf(run["p"])
        assert math.isinf(run["p"]) or run["p"] == trial.params[P_OR_INF_PARAM]
    assert ranged.params[0].stretched_high == pytest.approx(4 + 3 / 7)  # ∞: 1/8 of [1, 4 + 3/7]


def test_every_reader_decodes_p_as_the_sampler_encoded_it():
    """values.p_of_params decodes the encodings that hold p by themselves (a choice holding "inf",
    the switch `p_inf` of studies made before issue 37); the space decodes its range with ∞
    (Range.value_of), and a spread trial waiting to run carries its p as a user attribute."""
    from lpstudy.study.spread import enqueue_spread
    from lpstudy.values import p_of_params

    runs = _sample(SearchSpace.from_mapping({"p": [1, 2, "inf"]}), 40)
    assert {math.isinf(run["p"]) for _, run in runs} == {True, False}
    for trial, run in runs:
        assert p_of_params(trial.params) == run["p"], trial.params
    ranged = SearchSpace.from_mapping({"p": "1:4,inf"})
    runs = _sample(ranged, 80)
    assert {math.isinf(run["p"]) for _, run in runs} == {True, False}
    for trial, run in runs:
        assert ranged.params[0].value_of(trial.params) == run["p"], trial.params
    assert p_of_params({P_INF_PARAM: True}) == math.inf and p_of_params({P_INF_PARAM: False, "p": 2.5}) == 2.5
    assert ranged.params[0].value_of({P_INF_PARAM: True}) == math.inf  # an old trial, read by the space too
    assert math.isnan(p_of_params({"lr": 1e-3}))  # no p among the parameters
    study = optuna.create_study()
    enqueue_spread(study, ranged, 8, seed=0)
    waiting = study.get_trials(deepcopy=False)
    assert sorted(str(t.user_attrs["p"]) for t in waiting)[-1] == "inf"
    assert all(read_p(t.user_attrs["p"]) == ranged.params[0].value_of(t.system_attrs["fixed_params"]) for t in waiting)


def test_a_range_of_p_takes_inf_as_true_or_false_only():
    import yaml

    def space(text: str) -> SearchSpace:
        return SearchSpace.from_mapping(yaml.safe_load(text))

    assert space("p: {low: 1, high: 4, inf: no}").params[0].with_inf is False  # YAML's own false
    assert space("p: {low: 1, high: 4, inf: true}").params[0].with_inf is True
    for text, shown in (('"no"', "'no'"), ("0", "0"), ('"true"', "'true'")):
        with pytest.raises(UserError) as caught:
            space(f"p: {{low: 1, high: 4, inf: {text}}}")
        assert str(caught.value) == f"p: inf must be true or false, got {shown}", text


def test_a_replicate_grid_is_every_p_by_every_fold():
    spec = replicate_spec("smoke", ["1", "2", "inf"], 3, {"max_steps": "20"})
    assert spec.kind == "replicate" and spec.sampler == "grid" and spec.pruner == "none"
    assert spec.n_cells == 9 and spec.p_values == [1.0, 2.0, math.inf]
    cells = spec.space.grid_cells()
    assert len(cells) == 9 and {(c["p"], c["fold"]) for c in cells} == {
        (p, f) for p in (1.0, 2.0, math.inf) for f in range(3)}
    plain = spec.to_plain()
    assert plain["p_values"] == [1.0, 2.0, "inf"] and plain["kind"] == "replicate" and plain["folds"] == 3
    assert spec.space.optuna_params({"p": math.inf, "fold": 1}) == {"p": "inf", "fold": 1}
    with pytest.raises(UserError, match="set by the replicate grid"):
        replicate_spec("smoke", ["1"], 3, {"fold": 1})
    with pytest.raises(UserError, match="p ≥ 1"):
        replicate_spec("smoke", ["0.5", "2"], 3)
