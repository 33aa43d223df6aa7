"""The search-space views users know from optuna-dashboard and W&B: parallel coordinates and slice
plots of a search's completed runs, coloured by p, drawn once on the Effect of p page of a search
(never for a grid, whose space is its cells)."""

from __future__ import annotations

import numpy as np

from tests.study_helpers import trials_of


def _runs(url: str, name: str):
    return [t for t in trials_of(url, name) if t.state.name == "COMPLETE" and not t.user_attrs.get("diverged")]


def test_parallel_coordinates_and_slices_draw_every_completed_run_coloured_by_p(seeded):
    from lpstudy.db.kinds import open_reader
    from lpstudy.results.charts.search import parallel_coordinates, slice_plot
    from lpstudy.results.reading.frames import load_study

    url, _ = seeded
    trials = load_study(open_reader(url), "search", curves=False).trials
    runs = _runs(url, "search")
    (lines,) = parallel_coordinates(trials).data
    dims = {d.label: d for d in lines.dimensions}
    assert list(dims) == ["p", "log10 learning rate", "gain₀", "final loss"]
    assert sorted(dims["final loss"].values) == sorted(t.value for t in runs)
    assert sorted(dims["log10 learning rate"].values) == sorted(np.log10([t.user_attrs["lr"] for t in runs]))
    assert list(lines.line.color) == list(dims["p"].values)  # coloured by p
    panels = slice_plot(trials).data
    assert len(panels) == 3 and all(len(panel.x) == len(runs) for panel in panels)
    assert all(list(panel.marker.color) == list(panels[0].x) for panel in panels)  # p's position, every panel


def test_the_effect_of_p_page_draws_them_once_for_a_search_and_not_for_a_grid(seeded, monkeypatch):
    from tests.test_app import chart_titles, run_page

    url, _ = seeded
    monkeypatch.setenv("LPSTUDY_STORAGE", url)
    wanted = ("Search space: each run across p", "Slice: the final loss against each searched field")
    titles = chart_titles(run_page("Effect of p", url, "search"))
    assert [sum(t.startswith(w) for t in titles) for w in wanted] == [1, 1], titles
    titles = chart_titles(run_page("Effect of p", url, "grid"))
    assert not any(t.startswith(w) for t in titles for w in wanted), titles
