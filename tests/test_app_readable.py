"""The pages read at a glance: tables under human headers whose numbers stay numbers (they sort as
numbers) and show per-cents as the command line prints them, the entropy chart as points per gain
rule with a legend, ticks at the points and never `1e+06`, icons that need no emoji font."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from lpstudy.study.synthetic import write_synthetic_study
from tests.test_app import NOW, _storage_env, displayed, figures, plotted, run_page  # noqa: F401 - _storage_env: autouse here too

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def search(seeded) -> str:
    """The seeded search and grid studies' database (tests/conftest.py)."""
    return seeded[0]


@pytest.mark.slow
def test_stability_and_lens_tables_have_human_labels_and_numeric_columns(search):
    at = run_page("Stability", search, "search")
    assert not at.exception
    spread = at.table[-1]
    values = spread.value
    assert {"runs", "standard deviation", "range (max − min)", "coefficient of variation"} <= set(values.columns)
    assert "p range" in values.columns  # a search: binned p, "1.24–1.62"
    for name in ("runs", "standard deviation", "range (max − min)", "coefficient of variation"):
        assert pd.api.types.is_numeric_dtype(values[name]), (name, values[name].dtype)
    shown = displayed(spread)
    std = "standard deviation"
    assert [f"{v:.4f}" if not math.isnan(v) else "–" for v in values[std]] == list(shown[std])

    lens = run_page("Stability lens", search, "search")
    assert not lens.exception
    # a search samples lr together with p and the gain: no sweep, so no LR-sensitivity table (that
    # needs lr varied at one p and one gain; tests/test_lr_sensitivity.py checks the sweep's table)
    assert not lens.dataframe and not lens.table
    from lpstudy.results.tables.columns import labelled  # a sweep's table, as the page and the report label it

    shown = labelled(pd.DataFrame({"n_lrs": [3], "ci_low": [0.1], "n_folds": [2], "lr_sensitivity": [0.2]}))
    assert list(shown.columns) == ["learning rates", "95 % CI low", "folds", "LR sensitivity (nats)"]


def test_effect_of_p_shows_the_verdict_table_the_command_line_prints(search):
    from lpstudy.results.tables.verdicts import VERDICT_COLUMNS

    at = run_page("Effect of p", search, "grid")
    verdicts = at.table[0].value
    assert tuple(verdicts.columns) == VERDICT_COLUMNS
    # `lpstudy verdict` prints "+3.76 %" and "[-1.20 %, +8.72 %]": the page the same cells
    assert all(re.fullmatch(r"[+-]\d+\.\d\d %", v) for v in verdicts["relative"].iloc[1:]), list(verdicts["relative"])
    intervals = verdicts["interval (relative)"][verdicts["folds"].astype(int) >= 2].iloc[1:]  # an interval needs 2 folds
    assert len(intervals) and all(re.fullmatch(r"\[[+-]\d+\.\d\d %, [+-]\d+\.\d\d %\]", v) for v in intervals)


def test_the_compare_page_labels_its_tables(search, tmp_path):
    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.study.compare import create_compare, make_plan

    url = f"sqlite:///{tmp_path / 'compare.db'}"
    plan = make_plan("p", ["1", "2"], ["lr"], budget=3, folds=3, preset="smoke")
    create_compare(open_storage(url, create_tables=True), "cmp", plan)
    for p in (1.0, 2.0):
        write_synthetic_study(url, f"cmp:p={p:g}:folds", kind="replicate", p_values=[p], folds=3, n_evals=4,
                              seed=3, states=False, include_inf=False, now=NOW)
    at = run_page("Compare", url, "cmp")
    assert not at.exception
    budgets, verdicts = at.table  # the verdicts: the one table comparing arms (tests/test_one_engine.py)
    assert {"trials spent", "best lr"} <= set(budgets.value.columns)
    assert "p-value (difference)" in verdicts.value.columns and not any(c == "p" or c.startswith("p ")
                                                                        for c in verdicts.value.columns)


def entropy_table() -> pd.DataFrame:
    """A search's step-0 entropies: many close p values (3.94, 3.95, ...), two gain rules, and ∞."""
    rng = np.random.default_rng(0)
    p = np.concatenate([np.sort(rng.uniform(1, 4, 30)), [3.94, 3.95, math.inf]])
    rows = [{"gain_rule": rule, "p": v, "n": 1, "entropy": 3.3 - 0.6 * min(v, 5) + (rule == "matched"),
             "gain_init": 12.0} for rule in ("default", "matched") for v in p]
    frame = pd.DataFrame(rows)
    frame["p_bin"] = frame["p"].map(lambda v: "∞" if math.isinf(v) else f"{v:g}")
    return frame[["p_bin", "p", "gain_rule", "n", "entropy", "gain_init"]]


def test_the_entropy_chart_is_points_per_gain_rule_with_a_legend_and_ticks_apart():
    from lpstudy.results.charts.lens import initial_entropy_chart

    fig = initial_entropy_chart(entropy_table()).to_plotly_json()
    traces = fig["data"]
    assert [t["name"] for t in traces] == ["fixed gain g₀ = log₂(L²−L)", "matched gain"]
    assert all(t["mode"] == "markers" for t in traces)  # no line joins separate runs across p
    assert all(t["showlegend"] for t in traces) and fig["layout"]["showlegend"] is True
    axis = fig["layout"]["xaxis"]
    values, labels = list(axis["tickvals"]), list(axis["ticktext"])
    assert labels[-1] == "∞" and 3 <= len(values) <= 13 and len(set(labels)) == len(labels)
    gaps = np.diff(values)
    assert gaps.min() >= (values[-1] - values[0]) / 13, values  # never 3.94 over 3.95


def test_one_gain_rule_still_has_its_legend():
    from lpstudy.results.charts.lens import initial_entropy_chart

    table = entropy_table()
    fig = initial_entropy_chart(table[table["gain_rule"] == "matched"].reset_index(drop=True)).to_plotly_json()
    assert fig["layout"]["showlegend"] is True and fig["data"][0]["name"] == "matched gain"


def test_the_mean_per_p_chart_puts_its_ticks_at_the_points(search):
    at = run_page("Effect of p", search, "search")
    mean = figures(at)["Mean final validation loss per p (95 % interval)"]
    (trace,) = mean["data"]
    points = plotted(trace["x"])
    ticks = mean["layout"]["xaxis"]["tickvals"]
    assert ticks and set(ticks) <= set(points)  # a tick sits under a point, never on a bin edge between them
    assert len(ticks) >= min(len(points), 6)


def test_log_ticks_above_ten_to_the_five_are_powers_of_ten():
    from lpstudy.results.charts.stability import max_grad_norm_chart

    grads = pd.DataFrame({"trial_number": [0, 1, 2, 3], "max_grad_norm": [0.5, 40.0, 3e5, 2.5e6],
                          "p": [1.0, 2.0, 3.0, 4.0], "lr": [1e-3] * 4, "state": ["COMPLETE"] * 4,
                          "diverged": [False, False, False, True]})
    axis = max_grad_norm_chart(grads).to_plotly_json()["layout"]["yaxis"]
    assert axis["type"] == "log"
    assert not any("e+" in t or "e-" in t for t in axis["ticktext"]), axis["ticktext"]
    shown = dict(zip(axis["tickvals"], axis["ticktext"]))
    assert shown[1e6] == "10⁶" and shown[1.0] == "1" and shown[100.0] == "100"


def test_the_learning_rate_colour_bar_labels_its_ticks_as_learning_rates():
    from lpstudy.results.charts.effect import loss_vs_p

    trials = pd.DataFrame({"number": range(4), "state": ["COMPLETE"] * 4, "value": [2.1, 2.2, 2.3, 2.4],
                           "p": [1.0, 2.0, 3.0, 4.0], "lr": [1e-4, 3e-4, 1e-2, 4.6e-2], "gain_init": [12.0] * 4,
                           "diverged": [False] * 4})
    (trace,) = loss_vs_p(trials).data
    bar = trace.marker.colorbar
    shown = dict(zip(bar.tickvals, bar.ticktext))  # at log10(lr): 1e-4 … 1e-1
    assert shown == {-4.0: "0.0001", -3.0: "0.001", -2.0: "0.01", -1.0: "0.1"}, shown
    assert list(trace.marker.color) == pytest.approx([-4.0, np.log10(3e-4), -2.0, np.log10(4.6e-2)])


def test_the_sidebar_icons_are_material_icons_not_emoji():
    from streamlit.string_util import validate_material_icon

    source = (ROOT / "app" / "dashboard.py").read_text()
    icons = re.findall(r"(?<!page_)icon=\"([^\"]*)\"", source)
    assert len(icons) == 8  # one per page
    # the favicon: a file the dashboard serves itself, never a Material icon (fetched from fonts.gstatic.com)
    assert 'page_icon=str(Path(__file__).with_name("icon.png"))' in source and (ROOT / "app" / "icon.png").is_file()
    for icon in icons:
        assert re.fullmatch(r":material/[a-z0-9_]+:", icon), icon
        validate_material_icon(icon)  # a name Streamlit's icon font has
    assert not re.search("[\U0001F300-\U0001FAFF\u2600-\u27BF]", source)  # no emoji left


def test_an_entropy_spread_of_a_few_thousandths_is_drawn_flat_and_said():
    """A matched replicate: every p starts within 0.008 nats (1.350–1.358); an axis fitted to those
    points would draw the spread as a trend."""
    from lpstudy.results.charts.lens import ENTROPY_MIN_SPAN, initial_entropy_chart

    p = [1.0, 2.0, 3.0, 4.0]
    table = pd.DataFrame({"p_bin": [f"{v:g}" for v in p], "p": p, "gain_rule": "matched", "n": 3,
                          "entropy": [1.350, 1.354, 1.358, 1.352], "gain_init": 12.0})
    fig = initial_entropy_chart(table).to_plotly_json()
    low, high = fig["layout"]["yaxis"]["range"]
    assert high - low >= ENTROPY_MIN_SPAN >= 0.5 and low < 1.350 and high > 1.358
    notes = [a["text"] for a in fig["layout"].get("annotations", [])]
    assert notes == ["every p within 0.008 nats of each other"], notes
    wide = initial_entropy_chart(entropy_table()).to_plotly_json()  # a fixed gain's 3.2 … 0.6: fitted, unsaid
    assert "range" not in wide["layout"]["yaxis"] and not wide["layout"].get("annotations")


def test_several_p_at_one_learning_rate_stand_side_by_side():
    from lpstudy.results.charts.lens import lr_curve_chart

    curve = pd.DataFrame({"p_bin": ["1", "2", "3", "4"], "p": [1.0, 2.0, 3.0, 4.0], "lr": 1e-3, "mean": 1.9,
                          "ci_low": 1.88, "ci_high": 1.92, "n": 3, "n_diverged": 0})
    fig = lr_curve_chart(curve).to_plotly_json()
    xs = [plotted(t["x"])[0] for t in fig["data"]]
    assert len(set(xs)) == 4 and xs == sorted(xs), xs  # in the order of p, none on top of another
    assert all(abs(math.log10(x / 1e-3)) <= 0.05 for x in xs), xs  # still at their learning rate
    traces = lr_curve_chart(curve).data  # the hover says the learning rate run, not the drawn place
    assert all("customdata[2]" in t.hovertemplate and t.customdata[0][2] == 1e-3 for t in traces)


def test_a_message_instead_of_a_chart_fits_a_half_width_column():
    from lpstudy.results.charts.look import EMPTY_LINE
    from lpstudy.results.charts.lens import lr_sensitivity_chart

    fig = lr_sensitivity_chart(pd.DataFrame()).to_plotly_json()
    (note,) = fig["layout"]["annotations"]
    lines = note["text"].split("<br>")
    assert len(lines) >= 2 and max(map(len, lines)) <= EMPTY_LINE <= 50, lines
    assert " ".join(lines) == ("needs a sweep of at least two learning rates per p (lpstudy replicate --lr A,B,C)")


def test_the_trial_dynamics_panels_leave_room_for_their_tick_labels():
    from lpstudy.results.charts.trials import trial_dynamics_chart

    layout = trial_dynamics_chart(pd.DataFrame(columns=["trial_number", "step"]), 0).to_plotly_json()["layout"]
    domains = [layout[f"xaxis{i}" if i > 1 else "xaxis"]["domain"] for i in (1, 2, 3)]
    gaps = [b[0] - a[1] for a, b in zip(domains, domains[1:])]
    assert min(gaps) >= 0.1, gaps  # at 900 px, 90 px: the y ticks of the next panel ("0.001") fit


def test_a_charts_caption_is_wrapped_again_for_its_column_and_the_chart_grows_by_its_lines():
    """A caption wrapped for a half-page chart at 1400 px ran past a half-page chart at 1000 px (262 px):
    the dashboard wraps it again for its column (tests/test_browser_widths.py measures it drawn)."""
    import plotly.graph_objects as go

    from lpstudy.results.charts.look import CAPTION_LINE_PX, caption, fitted_caption

    text = "Median and band over one cohort at every step: the 32 configurations that ran every step of the horizon"
    fig = caption(go.Figure(layout={"height": 400}), text)
    narrow = fitted_caption(fig, 30)
    (note,) = [n for n in narrow.layout.annotations if n.name == "caption"]
    lines = note.text.split("<br>")
    assert max(map(len, lines)) <= 30 and " ".join(lines) == text
    before = len(fig.layout.annotations[0].text.split("<br>"))
    assert narrow.layout.height == fig.layout.height + CAPTION_LINE_PX * (len(lines) - before)
    assert fig.layout.annotations[0].text.split("<br>")[0] != lines[0]  # the cached figure kept its own lines


def test_a_caption_wrapped_inside_a_hyphenated_word_reads_whole_when_wrapped_again():
    """textwrap breaks a caption after a word's hyphen ("Gaussian-" then "process"): wrapped again for
    a column, the word is whole, not "Gaussian- process"."""
    import plotly.graph_objects as go

    from lpstudy.results.charts.look import caption, fitted_caption

    fig = caption(go.Figure(), "placeholder")
    fig.layout.annotations[0].text = "Median over one cohort, a Gaussian-<br>process surrogate of the loss"
    (note,) = fitted_caption(fig, 30).layout.annotations
    assert note.text.replace("<br>", " ") == "Median over one cohort, a Gaussian-process surrogate of the loss"
