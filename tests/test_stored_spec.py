"""A study's stored spec is read once, where the study is read (lpstudy.results.rows.build.study_info),
into a StudySpec that every reader reads by attribute; a study without one (plain Optuna's) has None,
and a comparison's plan is built typed into its StudyInfo, never written into a stored dict."""

from __future__ import annotations

import json

import pandas as pd

from lpstudy.design.spec import build_spec, replicate_spec
from lpstudy.results.analysis.cells import PAPER_CELL, grid_fields
from lpstudy.results.answers import answered_by_verdicts
from lpstudy.results.answers.convergence import tokens_per_step
from lpstudy.results.rows.arms import arms_study_data
from lpstudy.results.rows.build import study_info
from lpstudy.study.compare import make_plan
from lpstudy.values import SPEC_ATTR


def test_a_stored_spec_reads_as_the_spec_that_was_stored_and_a_study_without_one_as_none():
    spec = replicate_spec("smoke", [1, 2, "inf"], 3)
    info = study_info("r", {SPEC_ATTR: spec.to_plain(), "kind": "replicate", "preset": "smoke"})
    assert info.spec == spec and info.spec.to_plain() == spec.to_plain()
    assert (info.kind, info.preset, info.folds, info.is_grid) == ("replicate", "smoke", 3, True)
    assert grid_fields(info.spec) == ("p", "fold")
    as_text = study_info("r", {SPEC_ATTR: json.dumps(spec.to_plain())})  # a storage that hands back JSON text
    assert as_text.spec == spec and as_text.kind == "replicate"

    plain = study_info("optuna's", {})  # made by plain Optuna: no spec, and what that means said once
    assert plain.spec is None and plain.kind == "search"
    assert (plain.is_grid, plain.folds, plain.until_decided) == (False, 0, None)
    assert grid_fields(plain.spec) == () and not answered_by_verdicts(plain)


def test_a_spec_whose_space_this_version_cannot_read_keeps_the_rest():
    """An older lpstudy's field in the space: the study still reads (its sampler, its kind), as a spec
    without a space; a replicate's cells are the paper's (p, fold)."""
    stored = replicate_spec("smoke", [1, 2], 2).to_plain()
    stored["space"]["retired_field"] = {"type": "fixed", "value": 1}
    info = study_info("old", {SPEC_ATTR: stored})
    assert info.spec is not None and info.spec.sampler == "grid" and info.spec.kind == "replicate"
    assert info.spec.space.params == () and grid_fields(info.spec) == PAPER_CELL

    search = build_spec({"preset": "smoke"}).to_plain()
    search["space"]["retired_field"] = {"type": "fixed", "value": 1}
    assert study_info("old-search", {SPEC_ATTR: search}).spec.sampler == "tpe"


def test_a_comparisons_plan_is_read_typed_into_its_info():
    plan = make_plan("p", ["1", "2", "3"], ["lr"], budget=4, folds=3, preset="smoke", repeats=2, tunings=2)
    data = arms_study_data("cmp", plan, pd.DataFrame(), plan.label(plan.reference))
    info = data.info
    assert info.kind == "compare" and info.preset == "smoke"
    assert info.compare is not None
    assert info.compare.factor == "p" and info.compare.reference_label == plan.label(plan.reference)
    assert info.compare.labels == {plan.label(v): v for v in plan.values}
    assert (info.compare.budget, info.compare.tunings, info.compare.budget_note) == (4, 2, plan.budget_note())
    assert info.spec is not None and (info.folds, info.spec.repeats, info.until_decided) == (3, 2, None)
    assert answered_by_verdicts(info)
    assert tokens_per_step(info) == 16 * 32  # the smoke preset's batch, not the cpu preset's (12 × 64)


def test_a_comparisons_tokens_per_step_are_its_presets_with_its_set_batch_shape():
    plan = make_plan("p", ["1", "2"], ["lr"], budget=4, folds=3, preset="smoke", fixed={"batch_size": 8})
    info = arms_study_data("cmp", plan, pd.DataFrame(), plan.label(plan.reference)).info
    assert tokens_per_step(info) == 8 * 32
