"""A replay's results are typed values (lpstudy.results.replay.result_types) that `lpstudy replay`
prints by attribute and writes as JSON with to_plain(); a written result read back (from_plain) is
the same result, so a suite put together from grids replayed apart chooses as one replayed at once."""

from __future__ import annotations

import json

from lpstudy.results.replay.methods import Method
from lpstudy.results.replay.result_types import GridReplay, MethodRow
from lpstudy.results.replay.scores import run_replay
from lpstudy.results.replay.suite import SuiteResult
from tests.test_replay import HAND, _table


def _replay() -> GridReplay:
    methods = [Method("random", "none"), Method("random", "none", spread=2)]
    return run_replay(_table(HAND), methods, seeds=[0, 1, 2], budget=10).report()


def test_a_grids_replay_is_typed_ranked_and_written_as_it_reads_back():
    report = _replay()
    assert report.grid.configs == 4 and report.grid.folds == 2 and report.seeds == 3
    assert report.best.config == {"lr": 1e-3} and report.best.loss == 1.9
    assert [m.rank for m in report.methods] == [1, 2]
    assert all(isinstance(m, MethodRow) and len(m.per_seed.hold) == 3 for m in report.methods)
    # a seed returns its tuning fold's best (HAND: fold 0 prefers lr = 1e-2, fold 1 lr = 1e-3), every
    # configuration seen with ten times the grid's compute; within 2 %: the share of seeds whose pick holds
    for m in report.methods:
        assert m.per_seed.returned == [{"lr": 1e-2}, {"lr": 1e-3}, {"lr": 1e-2}]
        assert m.hold_share == sum(m.per_seed.hold) / 3

    written = json.loads(json.dumps(report.to_plain()))
    assert list(written) == ["grid", "best", "fold_spread", "budget", "seeds", "methods", "workers",
                             "rank_correlation", "default_vs_random"]
    assert written["methods"][0]["name"] == report.methods[0].name and list(written["methods"][0])[-1] == "rank"
    assert GridReplay.from_plain(written) == GridReplay.from_plain(report.to_plain())
    assert GridReplay.from_plain(written).to_plain() == written


def test_a_suite_of_grids_read_back_is_the_suite_replayed_at_once():
    report = _replay()
    read_back = GridReplay.from_plain(json.loads(json.dumps(report.to_plain())))
    at_once = SuiteResult(["a", "b"], [report, report]).report()
    apart = SuiteResult(["a", "b"], [read_back, read_back]).report()
    assert apart.to_plain() == at_once.to_plain()
    assert apart.chosen == at_once.chosen and [a.name for a in apart.alike] == [a.name for a in at_once.alike]
    assert [row.held_out for row in apart.leave_one_out] == ["a", "b"]
    assert [g["name"] for g in apart.to_plain()["grids"]] == ["a", "b"]
