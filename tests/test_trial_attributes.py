"""The synthetic studies the read side is tested on store what a real worker stores: the same user
attribute keys with values of the same types (p = ∞ as "inf" in both), and evaluations of the same
shape, because both write through lpstudy.study.trial_attributes."""

from __future__ import annotations

import math

import optuna
import pytest

from lpstudy.db.optuna_storage import open_storage
from lpstudy.study.synthetic import write_synthetic_study
from lpstudy.values import METRICS_ATTR_PREFIX, read_p
from tests.study_helpers import TINY, cli

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _trials(url: str, name: str) -> list:
    storage = open_storage(url, readonly=True).optuna
    return storage.get_all_trials(storage.get_study_id_from_name(name))


def _shape(mapping: dict) -> dict[str, type]:
    return {key: type(value) for key, value in mapping.items()}


def _same_shape(real: dict, synthetic: dict) -> list[str]:
    """Where the two differ: a key only one has, or a value of another type (None matches anything:
    a step never reached, a threshold not set)."""
    differences = [f"only the worker's: {k}" for k in sorted(set(real) - set(synthetic))]
    differences += [f"only the synthetic's: {k}" for k in sorted(set(synthetic) - set(real))]
    differences += [f"{k}: worker {type(real[k]).__name__}, synthetic {type(synthetic[k]).__name__}"
                    for k in sorted(set(real) & set(synthetic))
                    if real[k] is not None and synthetic[k] is not None and type(real[k]) is not type(synthetic[k])]
    return differences


@pytest.fixture(scope="module")
def real_and_synthetic(tmp_path_factory, corpus_path):
    """A grid of p ∈ {∞, 2} × 2 folds trained by a real CPU worker on a journal file (so that its
    evaluations land in system attributes), and the synthetic replicate study of the same grid."""
    work = tmp_path_factory.mktemp("attrs")
    real = f"journal:///{work / 'real.log'}"
    capsys = _NoCapture()
    code, _, err = cli(capsys, "replicate", "--study", "real", "--storage", real, "--preset", "smoke", "--p", "inf,2",
                       "--folds", "2", *TINY)
    assert code == 0, err
    code, _, err = cli(capsys, "worker", "--study", "real", "--storage", real, "--devices", "cpu", "--no-progress",
                       "--data", str(corpus_path))
    assert code == 0, err
    synthetic = f"journal:///{work / 'synthetic.log'}"
    write_synthetic_study(synthetic, "synthetic", kind="replicate", p_values=(math.inf, 2.0), folds=2, n_evals=3,
                          metrics="attrs", preset="smoke", diverge_scale=0.0)
    return _trials(real, "real"), _trials(synthetic, "synthetic")


class _NoCapture:
    """cli() reads captured output through capsys; a module fixture has none, so nothing to read."""

    def readouterr(self):
        return "", ""


def test_a_synthetic_trial_has_the_user_attributes_of_a_real_one(real_and_synthetic):
    real, synthetic = real_and_synthetic
    assert [t.state.name for t in real] == ["COMPLETE"] * 4
    on_cpu = [t for t in synthetic if t.state.name == "COMPLETE" and t.user_attrs["device"] == "cpu"]
    assert on_cpu
    for worker_trial in real:  # p = ∞ against p = ∞ ("inf", text), p = 2 against p = 2 (a number)
        alike = [t for t in on_cpu if t.params["p"] == worker_trial.params["p"]]
        assert alike
        for synthetic_trial in alike:
            assert _same_shape(worker_trial.user_attrs, synthetic_trial.user_attrs) == []
    for name in ("gain_rule", "threads", "overrides", "p"):  # what the synthetic studies used to lack or spell otherwise
        assert name in on_cpu[0].user_attrs


def test_p_infinity_is_the_string_inf_in_both(real_and_synthetic):
    for trials in real_and_synthetic:
        infinite = [t for t in trials if t.params.get("p") == "inf"]
        assert len(infinite) == 2
        assert {t.user_attrs["p"] for t in infinite} == {"inf"}
        assert all(t.user_attrs["overrides"]["p"] == "inf" for t in infinite)
        assert {t.user_attrs["p"] for t in trials if t not in infinite} == {2.0}


def test_a_synthetic_evaluation_has_the_shape_of_a_real_one(real_and_synthetic):
    def evaluations(trial) -> list[dict]:
        return [v for k, v in sorted(trial.system_attrs.items()) if k.startswith(METRICS_ATTR_PREFIX)]

    real, synthetic = real_and_synthetic
    real_evals = [e for t in real for e in evaluations(t)]
    synthetic_evals = [e for t in synthetic for e in evaluations(t)]
    assert len(real_evals) == 4 * 4 and synthetic_evals  # TINY: steps 0, 10, 20, 30
    for record in synthetic_evals[:6]:
        assert _same_shape(real_evals[-1], record) == []


def test_a_synthetic_trial_has_the_parameters_and_distributions_of_a_real_one(real_and_synthetic):
    real, synthetic = real_and_synthetic
    for worker_trial in real:
        alike = [t for t in synthetic if t.params == worker_trial.params]
        assert alike, worker_trial.params
        assert all(t.distributions == worker_trial.distributions for t in alike)


@pytest.mark.parametrize("include_inf", [True, False])
def test_a_synthetic_search_trial_is_what_the_worker_asks_and_samples(include_inf):
    """Each synthetic trial's parameters, enqueued in a fresh study and asked as the worker asks
    (study.ask, then the space's suggest), come back with the same distributions and values."""
    from lpstudy.study.synthetic import synthetic_spec, synthetic_trials

    spec = synthetic_spec("search", "smoke", (), 5, include_inf)
    study = optuna.create_study()
    trials = list(synthetic_trials(kind="search", n_trials=40, n_evals=3, include_inf=include_inf))
    infinite = [t for t in trials if math.isinf(spec.space.get("p").value_of(t.params))]  # p_or_inf's top slice
    assert (len(infinite) > 0) == include_inf
    assert all(math.isinf(read_p(t.user_attrs["p"])) for t in infinite if "p" in t.user_attrs)
    for synthetic in trials:
        study.enqueue_trial(synthetic.params)
        asked = study.ask()
        overrides = spec.space.suggest(asked)
        assert asked.params == synthetic.params
        assert study._storage.get_trial(asked._trial_id).distributions == synthetic.distributions
        if synthetic.state != "WAITING":
            assert synthetic.user_attrs["p"] == ("inf" if math.isinf(overrides["p"]) else overrides["p"])
        study.tell(asked, state=optuna.trial.TrialState.FAIL)


def test_a_trial_ends_by_one_rule_decided_here_by_hand():
    from optuna.trial import TrialState

    from lpstudy.study.trial_context import TrialOutcome
    from lpstudy.training.metrics import RunSummary

    trained = RunSummary(final_val_loss=1.7, steps=100)
    diverged = RunSummary(final_val_loss=math.nan, diverged=True, steps=40)
    no_loss = RunSummary(final_val_loss=math.nan, steps=100)
    cases = [  # (summary, pruned, interrupted, state, value, reason)
        (trained, False, False, TrialState.COMPLETE, 1.7, ""),
        (trained, True, False, TrialState.PRUNED, None, ""),
        (diverged, False, False, TrialState.COMPLETE, math.log(65), ""),  # ln V: the uniform guess
        (diverged, False, True, TrialState.COMPLETE, math.log(65), ""),  # it diverged before it was stopped
        (diverged, True, False, TrialState.PRUNED, None, ""),
        (trained, False, True, TrialState.FAIL, None, "interrupted"),
        (no_loss, False, False, TrialState.FAIL, None, "no finite validation loss"),
    ]
    for summary, pruned, interrupted, state, value, reason in cases:
        outcome = TrialOutcome.of_run(summary, 65, pruned=pruned, interrupted=interrupted)
        assert (outcome.state, outcome.reason) == (state, reason)
        assert outcome.value == (pytest.approx(value) if value is not None else None)


def test_synthetic_and_real_trials_hold_the_value_the_rule_gives(real_and_synthetic, tmp_path):
    """A completed trial's value is its final validation loss, or ln 65 when it diverged; a pruned
    one's is the last value it reported (what Optuna's tell stores)."""
    url = f"sqlite:///{tmp_path / 'search.db'}"
    written = write_synthetic_study(url, "s", n_trials=12, n_evals=6)  # with diverged and pruned runs
    search = _trials(url, "s")
    assert written.counts["PRUNED"] == 2 and any(t.user_attrs.get("diverged") for t in search)
    for trials in (*real_and_synthetic, search):
        for t in trials:
            if t.state.name == "COMPLETE":
                want = math.log(65) if t.user_attrs["diverged"] else t.user_attrs["final_val_loss"]
                assert t.value == pytest.approx(want)
            elif t.state.name == "PRUNED":
                assert t.value == t.intermediate_values[max(t.intermediate_values)]
