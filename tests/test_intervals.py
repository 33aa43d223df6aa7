"""Each interval formula written once (lpstudy/intervals.py) and read by every layer that gives one:
the search's race gives its best configuration (what `export` and `status` print) the verdicts'
interval, corrected for the training text K-fold's folds share; the pages' rates and the replay
benchmark's shares one Wilson interval."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from lpstudy.design.intensify import Evaluation, Intensifier
from tests.study_helpers import ROOT


def _returned(losses: list[float], n_folds: int):
    """The configuration a search returns when 'a' was raced on len(losses) folds of n_folds and 'b'
    was seen on its tuning fold alone."""
    rule = Intensifier.of(top=2, max_folds=len(losses), tuning_fold=0, n_folds=n_folds)
    runs = [Evaluation("a", fold, loss) for fold, loss in enumerate(losses)] + [Evaluation("b", 0, 9.0)]
    return rule.returned(runs)


def test_the_race_gives_the_best_configuration_baycomps_correlated_interval_on_all_folds():
    """On all K folds, the interval is the credible interval of baycomp's correlated t-test (Corani &
    Benavoli 2015: Student's t with Nadeau and Bengio's variance), as the verdicts' is."""
    from baycomp import CorrelatedTTest
    from scipy import stats

    losses = [1.71, 1.75, 1.69, 1.80, 1.74]
    returned = _returned(losses, n_folds=5)
    assert returned.key == "a" and returned.folds == (0, 1, 2, 3, 4)
    posterior = CorrelatedTTest(np.zeros(5), np.array(losses), rope=0.01)
    expected = stats.t.interval(0.95, posterior.df, posterior.mean, math.sqrt(posterior.var))
    assert returned.interval == pytest.approx(expected, rel=1e-12)


def test_the_race_corrects_by_the_partitions_k_not_by_the_folds_measured():
    """3 folds of a 10-fold partition: var × (1/3 + 1/9), 2 degrees of freedom; wider than the plain
    t interval (var / 3), which claims more than folds that share training text support."""
    from scipy import stats

    losses = [1.71, 1.75, 1.69]
    low, high = _returned(losses, n_folds=10).interval
    mean, sd = np.mean(losses), np.std(losses, ddof=1)
    half = stats.t.ppf(0.975, 2) * sd * math.sqrt(1 / 3 + 1 / 9)
    assert (low, high) == pytest.approx((mean - half, mean + half), rel=1e-12)
    plain = stats.t.ppf(0.975, 2) * sd / math.sqrt(3)
    assert high - low > 2 * plain
    assert _returned([1.71], n_folds=10) is not None and _returned([1.71], 10).interval == (-math.inf, math.inf)


def test_one_wilson_interval_statsmodels_and_no_interval_without_runs():
    from statsmodels.stats.proportion import proportion_confint

    from lpstudy.intervals import wilson_interval
    from lpstudy.results import analysis as A
    from lpstudy.results.replay import scores

    assert A.wilson_interval is wilson_interval and scores.wilson_interval is wilson_interval
    assert wilson_interval(3, 10, 0.9) == pytest.approx(proportion_confint(3, 10, alpha=0.1, method="wilson"))
    assert all(math.isnan(v) for v in wilson_interval(0, 0))  # the rate is NaN too: no runs, no estimate


# what computes an interval: t's quantile, a rate's interval
_INTERVAL_CALLS = re.compile(r"\bstdtrit\(|\bproportion_confint\(|\.proportion_ci\(")  # binomtest alone: a test


def test_no_module_but_lpstudy_intervals_computes_a_t_or_a_wilson_interval():
    found = [f"{path.relative_to(ROOT)}: {m.group(0)}"
             for path in sorted([*(ROOT / "lpstudy").rglob("*.py"), *(ROOT / "app").rglob("*.py")])
             if path != ROOT / "lpstudy" / "intervals.py"
             for m in _INTERVAL_CALLS.finditer(path.read_text(encoding="utf-8"))]
    assert found == []


def test_one_name_for_an_arm_whoever_writes_it():
    """The verdict table, the convergence sentence and the pages name an arm through one function."""
    from lpstudy.values import arm_name

    assert [arm_name("p", v) for v in (2.0, "2", math.inf, "inf", 3.14159, "x")] == [
        "p = 2", "p = 2", "p = ∞", "p = ∞", "p = 3.14", "p = x"]
    assert arm_name("n_layer", 4) == "n_layer = 4"
    defined = [f"{path.relative_to(ROOT)}" for path in sorted((ROOT / "lpstudy").rglob("*.py"))
               if re.search(r"(?m)^def _?arm_name\(", path.read_text(encoding="utf-8"))]
    assert defined == ["lpstudy/values.py"]


def test_the_pruners_are_listed_once_simplest_first():
    """The study's flag, the replay's catalogue and its chart read one list, whose order is the one the
    replay suite prefers the simpler method by."""
    from lpstudy.results.replay import chart, methods, suite
    from lpstudy.design.options import OPTIONS, PRUNERS

    assert OPTIONS["pruner"].words == PRUNERS and chart.PRUNERS is PRUNERS and methods.PRUNERS is PRUNERS
    assert sorted(suite.PRUNER_SIMPLICITY, key=suite.PRUNER_SIMPLICITY.get) == [*PRUNERS, methods.FOLD_PRUNER]
    assert {m.pruner for m in methods.all_methods()} == {*PRUNERS, methods.FOLD_PRUNER}
