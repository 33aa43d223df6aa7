"""The Kaplan–Meier chart (lpstudy.results.charts.convergence.reach_chart) drawn right: every curve a
step from 0 to the horizon, two groups that reach the threshold at the same step both visible, an
interval only for a group of 3 runs or more (the pages' rule), the legend clear of the title."""

from __future__ import annotations


def planted_curves():
    # two groups whose every run reaches the threshold at step 25: one step each, the same one
    return [{"name": "p 2", "step": [25.0], "reached": [1.0], "low": [0.4], "high": [1.0], "runs": 2},
            {"name": "p 4", "step": [25.0], "reached": [1.0], "low": [0.6], "high": [1.0], "runs": 3}]


def test_each_curve_steps_from_0_to_the_horizon_and_both_groups_show():
    from lpstudy.results.charts.convergence import reach_chart

    fig = reach_chart(planted_curves(), threshold=2.0, horizon=150)
    lines = [t for t in fig.data if t.showlegend is not False]
    assert [t.name for t in lines] == ["p 2, 2 runs", "p 4, 3 runs"]
    for t in lines:  # a step at 25 held to the horizon, not a spike at 25
        assert list(t.x) == [0, 25.0, 150] and list(t.y) == [0.0, 1.0, 1.0], (t.x, t.y)
        assert t.line.shape == "hv"
    assert tuple(fig.layout.xaxis.range) == (0, 150)  # the axis to the horizon the caption names
    assert lines[0].line.dash != lines[1].line.dash and lines[0].line.width > lines[1].line.width  # the first seen beneath


def test_an_interval_only_for_a_group_of_three_runs_or_more():
    from lpstudy.results.charts.convergence import reach_chart

    fig = reach_chart(planted_curves(), threshold=2.0, horizon=150)
    bands = [t for t in fig.data if t.showlegend is False]
    assert {t.legendgroup for t in bands} == {"p 4"} and len(bands) == 2  # none for the group of 2
    assert "drawn for groups of 3 runs or more" in fig.layout.annotations[-1].text.replace("<br>", " ")


def test_the_legend_stands_beside_the_plot_clear_of_the_title():
    from lpstudy.results.charts.convergence import reach_chart

    fig = reach_chart(planted_curves(), threshold=2.0, horizon=150, verdicts={"p 4": "better"}, reference="p 2")
    assert fig.layout.title.x < 0.1 and fig.layout.legend.x > 1 and fig.layout.legend.xanchor == "left"
    assert fig.layout.legend.orientation == "v" and fig.layout.margin.r >= 150
