"""The replay benchmark (lpstudy.results.replay, `lpstudy replay`, `lpstudy export-grid`): regret,
F and Borda on hand-made tables whose answers are worked out here by hand; what a pruned trial
pays; and the whole path on a real grid study made by real workers."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from lpstudy.results.replay.grid_table import GridShape, GridTable, Run, from_study, read_table, write_table
from lpstudy.results.replay.traces import Trace, replay_one, replay_spec
from lpstudy.intervals import wilson_interval
from lpstudy.results.replay.scores import f_of, mcnemar_p, median_interval, regret_of, run_replay, sign_p
from lpstudy.results.replay.methods import Method, default_method, pick_methods
from lpstudy.errors import UserError
from tests.study_helpers import ROOT, TINY, cli
from lpstudy.db.kinds import open_reader

STEPS = (0, 10, 20, 30)
FIXED = {"max_steps": 30, "eval_interval": 10, "warmup_steps": 10, "eval_iters": 2, "folds": 10}


def _run(final: float, start: float = 4.0) -> Run:
    """A curve from `start` straight down to `final` at steps 0, 10, 20, 30."""
    values = tuple(start + (final - start) * s / 30 for s in STEPS)
    return Run(steps=STEPS, val_loss=values, steps_run=30, value=final)


def _table(finals: dict[float, tuple[float, float]]) -> GridTable:
    """A grid over lr (values: the keys) × folds 0 and 1, each run ending at the given loss."""
    lrs = list(finals)
    runs = {(i, f): _run(finals[lr][f]) for i, lr in enumerate(lrs) for f in (0, 1)}
    return GridTable(params=("lr",), values={"lr": lrs}, configs=[(lr,) for lr in lrs], folds=[0, 1], runs=runs,
                     preset="smoke", fixed=dict(FIXED))


# Fold 0 prefers lr = 1e-2 (1.85), but over both folds lr = 1e-3 is best (1.90 against 2.00).
HAND = {1e-4: (2.0, 2.2), 1e-3: (1.9, 1.9), 1e-2: (1.85, 2.15), 1e-1: (2.5, 2.7)}


def test_regret_is_the_mean_over_folds_against_the_grids_best_and_worst_by_hand():
    table = _table(HAND)
    # means 2.1, 1.9, 2.0, 2.6: best 1.9, worst 2.6, span 0.7; nothing returned yet: 1
    assert regret_of(table) == pytest.approx([0.2 / 0.7, 0.0, 0.1 / 0.7, 1.0, 1.0])
    assert table.best_config() == 1
    assert table.steps_total == 4 * 2 * 30


def test_epsilon_is_the_fold_spread_pooled_over_configurations_by_hand():
    """Issue 37: ε from the best configuration's two folds had one degree of freedom. Now the
    configuration × fold residuals, pooled over the stable better half of the configurations."""
    table = _table(HAND)
    # the better half (means at or below the median 2.05): lr = 1e-3 (1.9, 1.9) and 1e-2 (1.85, 2.15);
    # fold means 1.875 and 2.025, grand mean 1.95: every residual is ±0.075, one degree of freedom
    assert table.fold_spread() == pytest.approx(math.sqrt(4 * 0.075 ** 2 / 1))
    assert table.epsilon() == pytest.approx(0.15)
    # folds that agree up to a shift of one fold: no spread, and ε falls back to 0.5 % of the best loss
    shifted = _table({1e-4: (2.0, 2.1), 1e-3: (1.9, 2.0), 1e-2: (1.95, 2.05), 1e-1: (2.5, 2.6)})
    assert shifted.fold_spread() == pytest.approx(0.0, abs=1e-12)
    assert shifted.epsilon() == pytest.approx(0.005 * 1.95)


def test_a_search_is_scored_on_its_tuning_folds_own_best_and_on_the_folds_it_was_not_tuned_on():
    """Issue 37: efficiency asks whether the search found what its fold rewards; generalisation
    how the configuration it returns does on the other folds. HAND's folds disagree: fold 0 prefers
    lr = 1e-2 (1.85), fold 1 lr = 1e-3 (1.90); ε = 0.15."""
    table = _table(HAND)
    method = Method("random", "none")
    # with ten times the grid's compute random search sees every configuration on its fold
    result = run_replay(table, [method], seeds=[0, 1], budget=10)
    s = result.score(method)
    assert [t.returned[-1] for t in result.traces[method]] == [2, 1]
    assert s.reach == [True, True]  # each seed found its own fold's best
    # seed 0's lr = 1e-2 scores 2.15 on fold 1, 0.25 above fold 1's best (1.90): outside ε;
    # seed 1's lr = 1e-3 scores 1.90 on fold 0, 0.05 above fold 0's best (1.85): inside
    assert s.general_excess == pytest.approx([0.25, 0.05])
    assert s.general == [False, True]
    # before issue 37 the score was "ever within ε of the best mean over both folds": 2.0 and 1.9 against 1.9
    assert s.ever == [True, True]


def test_reach_is_measured_at_the_end_of_the_budget():
    table = _table(HAND)
    # seed 0 tunes on fold 0, where lr = 1e-2 (index 2) is best at 1.85 and lr = 1e-4 is 0.15 above it
    trace = Trace(spent=[30, 60, 90, 100], returned=[3, 0, 2, 2])
    target = np.array([2.0, 1.9, 1.85, 2.5])
    assert f_of(trace, table, 0.15, target) == pytest.approx(60 / 240)
    assert f_of(trace, table, 0.01, target) == pytest.approx(90 / 240)
    assert f_of(trace, table, 0.01, target, budget_steps=80) == math.inf  # got there after the budget
    # the mean over both folds by default (the "ever" column): 1e-4's 2.1 is 0.2 above 1.9
    assert f_of(trace, table, 0.15) == pytest.approx(90 / 240)


def test_intervals_and_paired_tests_give_the_figures_of_issue_37():
    """75 % and 85 % of 20 seeds are 53–89 % and 64–95 % (Wilson 95 %); two methods that differ on
    four seeds, three to one, are not told apart (McNemar's exact p = 0.625)."""
    assert wilson_interval(15, 20) == pytest.approx((0.531, 0.888), abs=1e-3)
    assert wilson_interval(17, 20) == pytest.approx((0.640, 0.948), abs=1e-3)
    a = [True] * 14 + [True, True, True, False] + [False, False]
    b = [True] * 14 + [False, False, False, True] + [False, False]
    assert mcnemar_p(a, b) == pytest.approx(0.625)
    assert mcnemar_p(a, a) == 1.0
    # F: a sign test over seeds (∞ ties ∞); 10 wins of 10 is p = 2 / 2^10
    assert sign_p([0.1] * 10 + [math.inf], [0.2] * 10 + [math.inf]) == pytest.approx(2 / 1024)
    # the median's bootstrap interval holds the median and reaches ∞ where half the seeds never got there
    low, high = median_interval([0.1] * 50 + [math.inf] * 50)
    assert low == pytest.approx(0.1) and high == math.inf
    low, high = median_interval(list(np.linspace(0.0, 1.0, 101)))
    assert 0.35 < low < 0.5 < high < 0.65


def test_a_method_that_returns_the_known_best_gets_f_at_its_first_trial():
    table = _table({1e-3: (1.9, 1.9)})  # one configuration: whatever is sampled is the best
    for method in (Method("random", "none"), Method("tpe", "median"), Method("cmaes", "none")):
        trace = replay_one(table, method, seed=0, budget_steps=table.steps_total)
        assert trace.returned[0] == 0
        assert f_of(trace, table, table.epsilon()) == pytest.approx(30 / 60), method.name


def test_a_pruned_trial_pays_only_the_steps_it_ran():
    # Three good configurations share their curve up to step 20; lr = 1e-1 stays near ln V. Once
    # the median pruner has 5 finished trials, mostly good, a trial of lr = 1e-1 is above the
    # median at step 10 (the first evaluation after the 10 warm-up steps) and stops there: it
    # pays 10 steps. A good trial is never above the median before its last evaluation: it pays 30.
    def good(final):
        return Run(steps=STEPS, val_loss=(4.0, 3.3, 2.6, final), steps_run=30, value=final)

    bad = Run(steps=STEPS, val_loss=(4.0, 3.99, 3.98, 3.97), steps_run=30, value=3.97)
    lrs = [1e-4, 1e-3, 1e-2, 1e-1]
    runs = {(i, f): good(1.9 + 0.05 * i) if i < 3 else bad for i in range(4) for f in (0, 1)}
    table = GridTable(params=("lr",), values={"lr": lrs}, configs=[(lr,) for lr in lrs], folds=[0, 1], runs=runs,
                      preset="smoke", fixed=dict(FIXED))
    trace = replay_one(table, Method("random", "median"), seed=3, budget_steps=10 * table.steps_total)
    costs = np.diff([0, *trace.spent])
    pruned_bad = 0
    for cost, (config, was_pruned) in zip(costs, trace.last):
        if config == 3 and was_pruned:
            assert cost == 10
            pruned_bad += 1
        else:
            assert cost == 30
    assert pruned_bad >= 3 and trace.pruned >= pruned_bad
    assert trace.spent[-1] == sum(costs)


def test_nearest_grid_point_of_lr_is_on_a_log_scale_and_p_is_linear():
    table = GridTable(params=("p", "lr"), values={"p": [1.0, 2.0, 4.0], "lr": [1e-3, 1e-2]},
                      configs=[(p, lr) for p in (1.0, 2.0, 4.0) for lr in (1e-3, 1e-2)], folds=[0, 1],
                      runs={}, preset="smoke", fixed=dict(FIXED))
    # 3e-3 is nearer 1e-3 on a log scale (0.48 decades against 0.52), nearer 1e-2 on a linear one
    assert table.configs[table.nearest({"p": 2.9, "lr": 3e-3})] == (2.0, 1e-3)
    assert table.configs[table.nearest({"p": 3.1, "lr": 4e-3})] == (4.0, 1e-2)
    spec = replay_spec(table, fold=1)
    assert spec.space.get("lr").log and not spec.space.get("p").log
    assert (spec.space.get("p").low, spec.space.get("p").high) == (1.0, 4.0)
    assert spec.space.fixed["fold"] == 1 and spec.space.fixed["max_steps"] == 30


def test_methods_are_picked_by_name_and_the_default_is_what_search_uses():
    from lpstudy.design.spec import StudySpec, build_spec

    spec = build_spec({"preset": "smoke"})
    assert default_method() == Method(spec.sampler, spec.pruner, spec.spread_trials, spec.race, spec.race_folds,
                                      spec.race_reserve)
    with_inf = build_spec({"preset": "smoke"}, {"p": "1:4,inf"})  # one default, whatever the space
    assert default_method() == Method(with_inf.sampler, with_inf.pruner, with_inf.spread_trials, with_inf.race,
                                      with_inf.race_folds, with_inf.race_reserve)
    assert [m.name for m in pick_methods("cmaes+sha@8,random+sha@3")] == ["cmaes+sha@8", "random+sha@3"]
    assert [m.name for m in pick_methods("tpe+median,random+none")] == ["tpe+median", "random+none"]
    assert {m.pruner for m in pick_methods("gp+*")} == {"none", "median", "sha", "hyperband"}
    assert StudySpec.__dataclass_fields__["sampler"].default == default_method().sampler



def test_every_sampler_a_search_takes_is_a_replay_method_and_the_suite_knows_how_simple_each_is():
    """The samplers are declared once, in the study's catalogue (lpstudy.design.options): the replay
    measures every one a search can run (all but the grid's, which draws nothing), built by the
    study's own make_sampler, beside Optuna's replay-only ones declared where the replay builds them;
    and the suite's choice rule knows how simple each is (an unknown one would rank as the least)."""
    import dataclasses

    from lpstudy.results.replay.methods import REPLAY_ONLY_SAMPLERS, SAMPLER_NAMES, build_sampler
    from lpstudy.results.replay.suite import SAMPLER_SIMPLICITY
    from lpstudy.design.options import SAMPLERS
    from lpstudy.design.spec import build_spec
    from lpstudy.study.studies import make_sampler

    spec = build_spec({"preset": "smoke"})
    searching = [s for s in SAMPLERS if not dataclasses.replace(spec, sampler=s).is_grid]
    assert searching and set(searching) <= set(SAMPLER_NAMES)
    assert set(SAMPLER_NAMES) == {*searching, *REPLAY_ONLY_SAMPLERS} and not set(REPLAY_ONLY_SAMPLERS) & set(SAMPLERS)
    for sampler in SAMPLER_NAMES:
        assert [m.name for m in pick_methods(f"{sampler}+none")] == [f"{sampler}+none"]
        built = build_sampler(Method(sampler, "none"), spec, seed=3)
        if sampler in searching:  # what a study with this sampler runs
            assert type(built) is type(make_sampler(dataclasses.replace(spec, sampler=sampler, sampler_seed=3)))
    assert set(SAMPLER_SIMPLICITY) == set(SAMPLER_NAMES)


def _row(name: str, reach: list[bool], f: list[float]):
    """A method's row on one grid (result_types.MethodRow, as ReplayResult.report() gives it), from its
    per-seed scores: the planted shares and numbers stand for both what the user gets (within 2 %,
    regret) and search efficiency (reach, F)."""
    from lpstudy.results.replay.result_types import MethodRow, PerSeed

    sampler, _, rest = name.partition("+")
    pruner = rest.split("@")[0]
    finite = sorted(f)
    median = None if math.isinf(finite[len(f) // 2]) else finite[len(f) // 2]
    share, ci = sum(reach) / len(reach), list(wilson_interval(sum(reach), len(reach)))
    return MethodRow(
        name=name, sampler=sampler, pruner=pruner, spread=8 if "@" in name else 0, seeds=len(reach),
        reach_share=share, reach_ci=ci, f_median=median, f_ci=[None, None], f_iqr=[None, None], target_share=0.0,
        general_share=0.0, general_ci=[0.0, 1.0], general_excess_median=None, ever_share=0.0, trials_median=0.0,
        pruned_share=0.0, capped_share=0.0, end_regret_median=0.0, default=name == "tpe+none@8", race=0,
        spent_share=0.4, hold_share=share, hold_ci=ci, hold_tight_share=share, hold_tight_ci=ci,
        regret_nats_median=median, regret_nats_mean=median,  # the planted tie-break
        regret_nats_ci=[None, None], workers=1, chosen_at_median=None, clock_end_median=None, race_share=0.0,
        duplicate_share=0.0,
        per_seed=PerSeed(reach=[int(x) for x in reach], f=[None if math.isinf(x) else x for x in f],
                         general=[0] * len(reach), hold=[int(x) for x in reach], returned=[None] * len(reach),
                         regret=[None if math.isinf(x) else x for x in f], chosen_at=[None] * len(reach)))


def _grid(rows: list):
    from lpstudy.results.replay.result_types import BestConfig, GridReplay

    return GridReplay(grid=GridShape(configs=1, folds=2, evals=1, steps_total=1),
                      best=BestConfig(config={}, loss=1.0, epsilon=0.01), fold_spread=0.0, budget=0.4,
                      seeds=len(rows[0].per_seed.hold), methods=rows, workers=1, rank_correlation={},
                      default_vs_random=None)


def test_the_choice_rule_takes_the_simplest_method_it_cannot_tell_from_the_leader():
    """Planted: on 100 seeds, tpe+none@8 leads (90 % and 88 % of seeds within 2 %); random+none@8
    differs from it on 4 seeds of one grid and 2 of the other (McNemar p > 0.05), with regrets that
    no sign test tells apart: the rule names it alike and chooses it (random search is simpler).
    cmaes+sha@8 holds in 60 %: told apart. A method without a spread phase is never chosen,
    however it does."""
    from lpstudy.results.replay.suite import SuiteResult

    n = 100
    lead_a = [True] * 90 + [False] * 10
    lead_b = [True] * 88 + [False] * 12
    rand_a = [True] * 88 + [False] * 2 + [True, True] + [False] * 8   # 4 discordant: 2 + 2
    rand_b = [True] * 87 + [False] + [True] + [False] * 11              # 2 discordant: 1 + 1
    f_lead = [0.05 if x else math.inf for x in lead_a]
    f_rand = [0.05 + (0.01 if i % 2 else -0.01) if x else math.inf for i, x in enumerate(rand_a)]
    grid_a = [_row("tpe+none@8", lead_a, f_lead), _row("random+none@8", rand_a, f_rand),
              _row("cmaes+sha@8", [True] * 60 + [False] * 40, [0.02] * 60 + [math.inf] * 40),
              _row("cmaes+none", [True] * n, [0.01] * n)]
    f_lead_b = [0.05 if x else math.inf for x in lead_b]
    f_rand_b = [0.05 + (0.01 if i % 2 else -0.01) if x else math.inf for i, x in enumerate(rand_b)]
    grid_b = [_row("tpe+none@8", lead_b, f_lead_b), _row("random+none@8", rand_b, f_rand_b),
              _row("cmaes+sha@8", [True] * 70 + [False] * 30, [0.02] * 70 + [math.inf] * 30),
              _row("cmaes+none", [True] * n, [0.01] * n)]
    suite = SuiteResult(["a", "b"], [_grid(grid_a), _grid(grid_b)])
    assert suite.leader() == "tpe+none@8"  # worst 88 % against random's 88 %: the mean regret breaks the tie
    assert suite.alike("tpe+none@8") == ["tpe+none@8", "random+none@8"]
    assert suite.choose() == "random+none@8"
    plain = suite.to_json()
    assert plain["leader"] == "tpe+none@8" and plain["chosen"] == "random+none@8"
    assert [a["name"] for a in plain["alike"]] == ["tpe+none@8", "random+none@8"]
    assert plain["alike"][1]["tests"]["a"]["hold"] == pytest.approx(1.0)  # 2 against 2
    # leave one grid out: the other grid chooses; the best there is ranked as the rule ranks (hold, then regret)
    for row in plain["leave_one_out"]:
        assert row["chosen"] == "random+none@8" and row["best"] == "tpe+none@8"
        assert row["told_apart"] is False
    # the default against the goal on each grid, and against the best method there (cmaes+none: 100 %)
    check = plain["default"]["a"]
    assert check["best"] == "cmaes+none" and check["meets_goal"] is True and check["told_apart_from_best"] is True


def test_searchs_default_is_the_method_the_shipped_suite_chooses():
    """The suite's replays as the benchmark stored them (benchmarks/results/replay/): search's
    default is the rule's choice, and no method with a spread phase holds (within 2 % of the best
    all-fold loss) significantly more often than it on a grid where it misses the goal (McNemar's
    exact test, by hand here)."""
    import optuna
    from scipy.stats import binomtest

    from lpstudy.design.spec import build_spec
    from lpstudy.study.studies import make_pruner, make_sampler

    import dataclasses

    stored = json.loads((ROOT / "benchmarks" / "results" / "replay" / "suite.json").read_text())
    chosen = dataclasses.replace(default_method(), reserve=0.0)  # the race reserve: chosen with many workers, below
    assert chosen.name == stored["chosen"]
    for grid in stored["grids"] + stored["held_out"]:
        rows = {m["name"]: m for m in grid["methods"]}
        mine = rows[chosen.name]
        assert mine["seeds"] >= 40
        if mine["hold_share"] >= 0.8:
            continue
        for name, other in rows.items():
            if "@" not in name:
                continue
            only_other = sum(o and not m for o, m in zip(other["per_seed"]["hold"], mine["per_seed"]["hold"]))
            only_mine = sum(m and not o for o, m in zip(other["per_seed"]["hold"], mine["per_seed"]["hold"]))
            if only_other > only_mine:
                assert binomtest(only_other, only_other + only_mine, 0.5).pvalue >= 0.05, (grid["name"], name)
    # The race reserve (issue 54), chosen on the workers' benchmark (benchmarks/results/replay/workers.json):
    # the default as search runs it at W workers (its spread phase max(8, W)) holds within 2 % in at least
    # 80 % of seeds on every suite grid at every W, and at one worker it is not told apart from the suite's
    # choice on any grid (McNemar, paired over seeds).
    from lpstudy.results.replay.scores import mcnemar_p

    workers = json.loads((ROOT / "benchmarks" / "results" / "replay" / "workers.json").read_text())
    for w, per in workers["per_workers"].items():
        at_w = dataclasses.replace(default_method(), spread=max(default_method().spread, int(w)))
        for grid in per["suite"]["grids"] + list(per["held_out"].values()):
            rows = {m["name"]: m for m in grid["methods"]}
            if grid in per["suite"]["grids"]:
                assert rows[at_w.name]["hold_share"] >= 0.8, (w, grid["name"])
            if int(w) == 1:
                assert mcnemar_p(rows[at_w.name]["per_seed"]["hold"], rows[chosen.name]["per_seed"]["hold"]) >= 0.05
    spec = build_spec({"preset": "smoke"})
    assert (spec.sampler, spec.pruner, spec.spread_trials, spec.race) == (
        default_method().sampler, default_method().pruner, default_method().spread, default_method().race)
    assert isinstance(make_sampler(spec), optuna.samplers.TPESampler)
    assert isinstance(make_pruner(spec), optuna.pruners.NopPruner)
    # every space gets it, p = ∞ and choices too (TPE models both)
    for entries in ({"p": "1:4,inf"}, {"n_layer": "2,4"}):
        spec = build_spec({"preset": "smoke"}, entries)
        assert (spec.sampler, spec.pruner) == ("tpe", "none"), entries
    # what a user names is kept; a sampler named alone prunes nothing unless a pruner is named too
    spec = build_spec({"preset": "smoke", "sampler": "cmaes"}, {"p": "1:4,inf"})
    assert (spec.sampler, spec.pruner) == ("cmaes", "none")
    spec = build_spec({"preset": "smoke", "pruner": "sha"})
    assert (spec.sampler, spec.pruner) == ("tpe", "sha")
    pruner = make_pruner(spec)
    assert isinstance(pruner, optuna.pruners.SuccessiveHalvingPruner)
    assert pruner._min_resource == spec.base_config().eval_interval and pruner._reduction_factor == 3
    spec = build_spec({"preset": "smoke", "sampler": "cmaes", "pruner": "hyperband", "spread_trials": 0})
    assert (spec.sampler, spec.pruner, spec.spread_trials) == ("cmaes", "hyperband", 0)
    assert isinstance(make_sampler(spec), optuna.samplers.CmaEsSampler)


def test_a_spread_phase_beyond_what_a_study_takes_is_refused_in_one_line(capsys):
    """Issue 37: `--methods tpe+none@99999999999999999999` ended in NumPy's traceback."""
    code, _, err = cli(capsys, "replay", "--grid", "benchmarks/data/grid-matched800.json.gz",
                       "--methods", "tpe+none@99999999999999999999")
    assert code == 2 and err.count("\n") == 1, err
    assert "a spread phase of 99999999999999999999 trials; at most 4,096, as --spread-trials takes" in err


def test_the_suites_trace_cache_is_keyed_on_the_grid_the_budget_and_the_code(tmp_path):
    """Issue 37: the cache held results under the method list and the seeds only."""
    import optuna

    from benchmarks.replay_cache import TraceCache, cache_key
    from lpstudy.results.replay.traces import code_version

    grid = tmp_path / "grid.json.gz"
    write_table(_table(HAND), grid)
    key = cache_key(grid, 0.4, 2000)
    assert key == {"grid_sha256": key["grid_sha256"], "budget": 0.4, "max_trials": 2000, "workers": 1,
                   "code": code_version(), "optuna": optuna.__version__}
    cache = TraceCache(tmp_path / "g.traces.jsonl", key)
    cache.add("random+none", 0, Trace(spent=[30, 60, 90], returned=[0, 0, 1], pruned=1))
    again = TraceCache(tmp_path / "g.traces.jsonl", key)
    assert ("random+none", 0) in again
    kept = again.traces[("random+none", 0)]
    assert (kept.spent, kept.returned, kept.trials, kept.pruned) == ([30, 90], [0, 1], 3, 1)  # the changes and the end
    for changed in ({"budget": 0.5}, {"code": "another"}, {"optuna": "0.0"}, {"grid_sha256": "0" * 64},
                    {"workers": 8}):
        other = TraceCache(tmp_path / "g.traces.jsonl", {**key, **changed})
        assert ("random+none", 0) not in other, changed
        assert (tmp_path / "g.traces.jsonl.stale").exists()
        TraceCache(tmp_path / "g.traces.jsonl.stale", key).path.rename(tmp_path / "g.traces.jsonl")


def test_file_round_trip_keeps_every_run(tmp_path):
    table = _table(HAND)
    path = write_table(table, tmp_path / "grid.json.gz")
    again = read_table(path)
    assert again.configs == table.configs and again.folds == table.folds and again.fixed == table.fixed
    for key, run in table.runs.items():
        other = again.runs[key]
        assert (other.steps, other.steps_run, other.value, other.diverged) == (run.steps, run.steps_run,
                                                                                 run.value, run.diverged)
        assert other.val_loss == pytest.approx(run.val_loss, abs=1e-5)
    assert write_table(again, tmp_path / "again.json.gz").read_bytes() == path.read_bytes()


# -- the command line, on a real grid study (real_grids: tests/conftest.py, tests/real_study.py) ----

@pytest.mark.slow
def test_export_grid_and_replay_on_a_real_grid_study(real_grids, capsys, tmp_path):
    url, tmp = real_grids, tmp_path
    table = from_study(open_reader(url), "g")
    assert table.shape() == GridShape(configs=4, folds=2, evals=4, steps_total=8 * 30)
    assert table.params == ("p", "lr")
    for run in table.runs.values():
        assert run.steps == STEPS and run.steps_run == 30 and not run.diverged
        assert run.value == pytest.approx(run.val_loss[-1], abs=1e-5)

    out = tmp / "g.json.gz"
    code, _, err = cli(capsys, "export-grid", "--study", "g", "--storage", url, "-o", str(out))
    assert code == 0, err
    assert "4 configurations × 2 folds" in err
    assert read_table(out).runs.keys() == table.runs.keys()

    methods = f"random+none,tpe+median,tpe+wilcoxon,cmaes+sha,{default_method().name}"
    code, stdout, err = cli(capsys, "replay", "--study", "g", "--storage", url, "--json", "--seeds", "3",
                            "--methods", methods, "--budget", "1", "--no-progress")
    assert code == 0, err
    plain = json.loads(stdout)  # one object, as issue 16 gives its shape
    assert plain["grid"] == {"configs": 4, "folds": 2, "evals": 4, "steps_total": 240}
    assert sorted(m["name"] for m in plain["methods"]) == sorted(methods.split(","))
    for m in plain["methods"]:
        assert m["name"].split("@")[0] == f"{m['sampler']}+{m['pruner']}"
        for key in ("f_median", "reach_share"):
            assert m[key] is None or isinstance(m[key], float), (key, m)
        assert isinstance(m["f_iqr"], list) and len(m["f_iqr"]) == 2
        assert all(q is None or isinstance(q, float) for q in m["f_iqr"])
        assert 0 <= m["reach_share"] <= 1 and (m["f_median"] is None) == (m["reach_share"] < 0.5)
        assert m["reach_ci"][0] <= m["reach_share"] <= m["reach_ci"][1] and 0 <= m["general_share"] <= 1
        assert len(m["per_seed"]["reach"]) == 3 == m["seeds"]
        assert isinstance(m["rank"], int) and isinstance(m["default"], bool)
    from lpstudy.design.spec import build_spec

    spec = build_spec({"preset": "smoke"}, {"p": "1:3", "lr": "1e-3:1e-2"})  # the grid's space, as search has it
    searched = (f"{spec.sampler}+{spec.pruner}" + (f"@{spec.spread_trials}" if spec.spread_trials else "")
                + (f"/race{spec.race}" if spec.race else "")
                + (f"r{round(100 * spec.race_reserve)}" if spec.race and spec.race_reserve else ""))
    assert [m["name"] for m in plain["methods"] if m["default"]] == [searched]
    assert [m["rank"] for m in plain["methods"]] == [1, 2, 3, 4, 5]  # by what the user gets, then mean regret
    assert plain["seeds"] == 3

    chart = tmp / "chart.png"
    code, _, err = cli(capsys, "replay", "--grid", str(out), "--seeds", "2", "--methods", "random+*",
                       "--chart", str(chart), "--no-progress")
    assert code == 0, err
    assert "random+median" in err and "F median [95 %]" in err and "other folds [95 %]" in err
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_replay_refuses_what_it_cannot_replay(real_grids, capsys, tmp_path):
    url = real_grids
    code, _, err = cli(capsys, "replay", "--study", "g", "--storage", url, "--grid", "x.json.gz")
    assert code == 2 and "not both" in err
    code, _, err = cli(capsys, "replay", "--study", "g", "--storage", url, "--methods", "tpe+sometimes")
    assert code == 2 and "no method 'tpe+sometimes'" in err
    code, _, err = cli(capsys, "replay", "--grid", str(tmp_path / "none.json.gz"))
    assert code == 2 and "does not exist" in err
    # a grid with cells not yet run
    half = f"sqlite:///{tmp_path / 'half.db'}"
    code, _, err = cli(capsys, "create", "--study", "h", "--storage", half, "--preset", "smoke", "--sampler", "grid",
                       "--p", "1,3", "--fold", "0,1", *TINY)
    assert code == 0, err
    code, _, err = cli(capsys, "replay", "--study", "h", "--storage", half)
    assert code == 2 and "4 of 4 cells without a completed run" in err and "lpstudy worker --study h" in err
    # a search is not a grid
    code, _, err = cli(capsys, "create", "--study", "s", "--storage", half, "--preset", "smoke", *TINY)
    assert code == 0, err
    code, _, err = cli(capsys, "export-grid", "--study", "s", "--storage", half, "-o", str(tmp_path / "s.json.gz"))
    assert code == 2 and "not a grid" in err
    assert not (tmp_path / "s.json.gz").exists()


# -- grid studies run in parts, joined ----------------------------------------------------------------

@pytest.mark.slow
def test_export_grid_joins_grid_studies_that_share_their_fixed_settings(real_grids, capsys, tmp_path):
    url = real_grids
    out = tmp_path / "joined.json.gz"
    code, _, err = cli(capsys, "export-grid", "--study", "g", "--study", "g-lr", "--storage", url, "-o", str(out))
    assert code == 0, err
    assert "from 2 grid studies" in err and "6 configurations × 2 folds" in err
    joined = read_table(out)
    # g grids lr over {1e-3, 1e-2}, g-lr fixes it at 0.1: together lr is gridded over all three
    assert joined.params == ("p", "lr") and joined.values == {"p": [1.0, 3.0], "lr": [1e-3, 1e-2, 1e-1]}
    assert joined.folds == [0, 1] and len(joined.runs) == 12
    assert joined.fixed["folds"] == 10 and "lr" not in joined.fixed
    assert joined.source["studies"] == ["g", "g-lr"]
    assert joined.source["command"] == f"lpstudy export-grid --study g --study g-lr -o {out}"
    # every run is the very run of the study that made it
    g, g_lr = from_study(open_reader(url), "g"), from_study(open_reader(url), "g-lr")
    for (c, fold), run in g.runs.items():
        assert joined.run(joined.configs.index(g.configs[c]), fold).val_loss == pytest.approx(run.val_loss, abs=1e-5)
    for (c, fold), run in g_lr.runs.items():
        (p,) = g_lr.configs[c]  # g-lr grids p only
        mine = joined.run(joined.configs.index((p, 0.1)), fold)
        assert mine.val_loss == pytest.approx(run.val_loss, abs=1e-5) and mine.value == pytest.approx(run.value, abs=1e-5)
    # replay reads the same joined grid straight from the database
    code, stdout, err = cli(capsys, "replay", "--study", "g", "--study", "g-lr", "--storage", url, "--json",
                            "--seeds", "1", "--methods", "random+none", "--no-progress")
    assert code == 0, err
    assert json.loads(stdout)["grid"] == {"configs": 6, "folds": 2, "evals": 4, "steps_total": 12 * 30}


@pytest.mark.slow
def test_export_grid_refuses_studies_that_are_not_one_grid(real_grids, capsys, tmp_path):
    url = real_grids
    out = tmp_path / "x.json.gz"
    code, _, err = cli(capsys, "export-grid", "--study", "g", "--study", "g-k5", "--storage", url, "-o", str(out))
    assert code == 2 and err.count("\n") == 1, err
    assert "grid studies 'g' and 'g-k5' differ in their fixed settings (folds: g 10, g-k5 5)" in err
    code, _, err = cli(capsys, "export-grid", "--study", "g", "--study", "g", "--storage", url, "-o", str(out))
    assert code == 2 and "--study g is given twice" in err
    assert not out.exists()


def test_joining_refuses_a_cell_run_twice_and_a_grid_with_cells_left_out():
    from lpstudy.results.replay.grid_join import join_tables

    with pytest.raises(UserError, match=r"grid studies 'a' and 'b' both ran lr=0.0001 fold=0"):
        join_tables([_table(HAND), _table(HAND)], ["a", "b"])
    # b adds lr = 1 on folds 0, 1 and 2: a never ran fold 2, so 4 lrs × 1 fold of 5 lrs × 3 folds are missing
    b = GridTable(params=("lr",), values={"lr": [1.0]}, configs=[(1.0,)], folds=[0, 1, 2],
                  runs={(0, f): _run(3.0) for f in (0, 1, 2)}, preset="smoke", fixed=dict(FIXED))
    with pytest.raises(UserError, match=r"together leave 4 of 15 cells .* e\.g\. lr=0\.0001 fold=2"):
        join_tables([_table(HAND), b], ["a", "b"])
    joined = join_tables([_table(HAND), GridTable(params=("lr",), values={"lr": [1.0]}, configs=[(1.0,)],
                                                  folds=[0, 1], runs={(0, f): _run(3.0) for f in (0, 1)},
                                                  preset="smoke", fixed=dict(FIXED))], ["a", "b"])
    assert joined.values["lr"] == [1e-4, 1e-3, 1e-2, 1e-1, 1.0] and len(joined.runs) == 10
    assert joined.best_config() == 1  # lr = 1e-3, mean 1.90, as in HAND


# -- the shipped grid -----------------------------------------------------------------------------

def test_the_shipped_grid_spans_learning_rates_from_too_small_to_the_largest_allowed():
    from lpstudy.cli.replay import SHIPPED_GRID
    from lpstudy.training.bounds import FIELD_BOUNDS

    table = read_table(ROOT / SHIPPED_GRID)
    assert table.params == ("p", "lr", "gain_init")
    assert table.values["p"] == [1.0, 1.5, 2.0, 2.5, 3.0, 4.0]
    assert table.values["lr"] == [1e-4, 4.6e-4, 2.2e-3, 1e-2, 4.6e-2, 0.22, 1.0]
    assert table.values["gain_init"] == [3.0, 12.0, 48.0]
    assert table.values["lr"][-1] == FIELD_BOUNDS["lr"].high  # the largest learning rate the field allows
    assert table.folds == [0, 1] and len(table.runs) == 6 * 7 * 3 * 2 == 252
    assert table.n_evals >= 15 and all(len(run.steps) == table.n_evals or run.diverged for run in table.runs.values())
    assert table.source["studies"] == ["grid-mid600", "grid-mid600-lr1"]
    # diverging: some runs at lr = 1.0 diverge (the trainer's rule: a train loss above 3 × the first),
    # stopped early and valued ln V (65 symbols); none at a smaller learning rate does
    diverged = [(table.configs[c], run) for (c, _), run in table.runs.items() if run.diverged]
    assert diverged and {config[1] for config, _ in diverged} == {1.0}
    assert all(run.steps_run < 600 and run.value == pytest.approx(math.log(65), abs=1e-5) for _, run in diverged)
    # too small: lr = 1e-4 ends every run far above the best configuration's mean
    losses = table.config_losses()
    smallest = [i for i, c in enumerate(table.configs) if c[1] == 1e-4]
    assert min(losses[smallest]) > losses.min() + 0.5


# -- a suite of grids -------------------------------------------------------------------------------

@pytest.mark.slow
def test_replay_of_a_suite_ranks_over_grids_and_leaves_each_grid_out(real_grids, capsys, tmp_path):
    url, tmp = real_grids, tmp_path
    files = []
    for study in ("g", "g-k5"):
        path = tmp / f"grid-{study}.json.gz"
        code, _, err = cli(capsys, "export-grid", "--study", study, "--storage", url, "-o", str(path))
        assert code == 0, err
        files += ["--grid", str(path)]
    methods = "random+none,cmaes+sha,cmaes+sha@2,random+none@2"
    code, stdout, err = cli(capsys, "replay", *files, "--json", "--seeds", "3", "--methods", methods,
                            "--budget", "1", "--no-progress")
    assert code == 0, err
    plain = json.loads(stdout)
    assert plain["grid"]["suite"] == ["g", "g-k5"]
    assert [g["name"] for g in plain["grids"]] == ["g", "g-k5"]
    for grid in plain["grids"]:
        assert sorted(m["name"] for m in grid["methods"]) == sorted(methods.split(","))
    by_name = {g["name"]: {m["name"]: m for m in g["methods"]} for g in plain["grids"]}
    for m in plain["methods"]:  # the suite's columns are the grids' own figures, put together
        shares = [by_name[g][m["name"]]["reach_share"] for g in ("g", "g-k5")]
        assert m["worst_reach_share"] == min(shares)
        holds = [by_name[g][m["name"]]["hold_share"] for g in ("g", "g-k5")]
        assert m["worst_hold_share"] == min(holds)
    # leaving a grid out, the choice is made on the other grid alone, among the methods with a spread phase
    for row in plain["leave_one_out"]:
        other = by_name["g-k5" if row["held_out"] == "g" else "g"]
        assert "@" in row["chosen"] and row["chosen"] in other
        assert row["chosen_hold_share"] == by_name[row["held_out"]][row["chosen"]]["hold_share"]
    assert [r["held_out"] for r in plain["leave_one_out"]] == ["g", "g-k5"]
    # the table for people says the same
    code, _, err = cli(capsys, "replay", *files, "--seeds", "2", "--methods", methods, "--budget", "1", "--no-progress")
    assert code == 0, err
    assert "The suite: 2 grids" in " ".join(err.split()) and "Leave one grid out" in err
    assert (f"chosen on the whole suite (among methods with a spread phase, which a first run needs; the simplest of "
            f"those not told apart from the leader): {plain['chosen']}") in " ".join(err.split())


def test_replay_marks_what_search_runs_for_the_grids_space_and_prints_no_sampler_warnings(capsys, tmp_path):
    from lpstudy.results.replay.grid_table import write_table

    ps, lrs = [1.0, 2.0, "inf"], [0.01, 0.1]
    configs = [(p, lr) for p in ps for lr in lrs]
    runs = {(i, f): _run(2.0 + i * 0.1 + f * 0.01) for i in range(len(configs)) for f in (0, 1)}
    table = GridTable(params=("p", "lr"), values={"p": ps, "lr": lrs}, configs=configs, folds=[0, 1], runs=runs,
                      preset="smoke", fixed=dict(FIXED))
    path = write_table(table, tmp_path / "inf.json.gz")
    code, stdout, err = cli(capsys, "replay", "--grid", str(path), "--json", "--seeds", "2", "--budget", "1",
                            "--methods", f"cmaes+sha,tpe+hyperband@8,tpe+none@8,gp+sha,{default_method().name}",
                            "--no-progress")
    assert code == 0, err
    plain = json.loads(stdout)
    from lpstudy.design.spec import build_spec

    spec = build_spec({"preset": "smoke"}, {"p": "1:2,inf", "lr": "0.01:0.1"})  # the grid's space, as search has it
    expected = (f"{spec.sampler}+{spec.pruner}" + (f"@{spec.spread_trials}" if spec.spread_trials else "")
                + (f"/race{spec.race}" if spec.race else "")
                + (f"r{round(100 * spec.race_reserve)}" if spec.race and spec.race_reserve else ""))
    assert [m["name"] for m in plain["methods"] if m["default"]] == [expected]
    assert "warn" not in err.lower() and "[W " not in err, err[:2000]


def test_replay_refuses_a_methods_list_that_names_nothing(capsys):
    for empty in ("", " , "):
        code, _, err = cli(capsys, "replay", "--grid", "benchmarks/data/grid-mid600.json.gz", "--methods", empty)
        assert code == 2
        assert "--methods names no method" in err and "leave --methods out for the whole catalogue" in err
    code, _, err = cli(capsys, "replay", "--grid", "benchmarks/data/grid-mid600.json.gz", "--methods", "cmaes+sha@x")
    assert code == 2 and "SAMPLER+PRUNER[@N]" in err


def test_the_chart_draws_one_panel_per_pruner_as_a_png(capsys, tmp_path):
    """`lpstudy replay --chart`: two pruners are two panels side by side (6.2 × 4.2 inches each at
    110 dpi), written as a PNG."""
    from lpstudy.results.replay.grid_table import write_table

    path = write_table(_table(HAND), tmp_path / "hand.json.gz")
    chart = tmp_path / "chart.png"
    code, _, err = cli(capsys, "replay", "--grid", str(path), "--seeds", "2", "--methods", "random+none,random+median",
                       "--chart", str(chart), "--no-progress")
    assert code == 0, err
    png = chart.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")  # the IHDR chunk
    assert (width, height) == (round(2 * 6.2 * 110), round(4.2 * 110))
