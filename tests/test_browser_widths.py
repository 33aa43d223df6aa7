"""Every page read in a real browser at 1400 and at 1000 pixels (the sidebar open): no chart title that
runs past its chart or lies under its legend, no heading, line of text, metric or table cut, and no
chart drawn twice on a page (the same title twice).

A static table (st.table: every results table) wraps its cells and must fit the page's column at both
widths, 538 pixels at 1000. The one grid (st.dataframe), the Trials page's table whose rows are picked
and sorted, is read by its own horizontal scroller (the columns' total width against the width it
shows) and must fit at 1400; at 1000 it scrolls sideways, its trial column pinned. Screenshots under
test-artifacts/screenshots/widths/<width>/. Chromium from Debian, as tests/test_browser.py drives it."""

from __future__ import annotations

import pytest

from lpstudy.study.synthetic import write_synthetic_study
from tests.test_browser import CHROMIUM, CHROMIUM_ARGS, SCREENSHOTS, WAIT_MS, served, settle

pytestmark = [pytest.mark.browser, pytest.mark.slow]

WIDTHS = (1400, 1000)
# what is checked at each width (MEASURE's kinds of problem)
CHECKED = {1400: ("heading", "text", "table", "grid", "chart title", "caption", "legend", "metric"),
           1000: ("heading", "text", "table", "chart title", "caption", "legend", "metric")}
PATHS = {"Home": "", "Effect of p": "Effect_of_p", "Convergence": "Convergence", "Stability": "Stability",
         "Stability lens": "Stability_lens", "Compare": "Compare", "Trials": "Trials", "Export": "Export"}
# (study, page): every page of a search, and the pages that draw verdict tables of a replicate and a comparison
VISITS = [*(("search", name) for name in PATHS), ("grid", "Effect of p"), ("grid", "Convergence"),
          ("cmp", "Effect of p"), ("cmp", "Compare")]

# What is cut on the page: each problem in one line, and the titles of its charts.
MEASURE = """() => {
    const main = document.querySelector('[data-testid="stMain"]');
    const problems = [];
    const cut = (el, slack) => el.scrollWidth > el.clientWidth + slack;
    for (const el of main.querySelectorAll('h1, h2, h3')) {
        if (el.clientWidth > 0 && cut(el, 1)) problems.push(`heading cut: "${el.textContent.slice(0, 60)}" ${el.scrollWidth} > ${el.clientWidth}`);
    }
    for (const el of main.querySelectorAll('[data-testid="stMarkdownContainer"], [data-testid="stCaptionContainer"]')) {
        if (el.clientWidth > 0 && cut(el, 1)) problems.push(`text cut: "${el.textContent.slice(0, 60)}" ${el.scrollWidth} > ${el.clientWidth}`);
    }
    for (const el of main.querySelectorAll('[data-testid="stMetricLabel"], [data-testid="stMetricLabel"] *, [data-testid="stMetricValue"], [data-testid="stMetricValue"] *')) {
        if (el.clientWidth > 0 && cut(el, 1)) problems.push(`metric cut: "${el.textContent.slice(0, 60)}" ${el.scrollWidth} > ${el.clientWidth}`);
    }
    for (const frame of main.querySelectorAll('[data-testid="stDataFrame"]')) {
        // the grid's scroller holds the columns' whole width; a wider one than it shows hides columns
        const scroller = frame.querySelector('.dvn-scroller');
        const headers = [...frame.querySelectorAll('th')].map(th => th.textContent).join(', ');
        if (scroller && cut(scroller, 2)) problems.push(`grid cut: [${headers.slice(0, 80)}] ${scroller.scrollWidth} > ${scroller.clientWidth}`);
    }
    for (const frame of main.querySelectorAll('[data-testid="stTable"]')) {
        // a static table wraps its cells: its columns' whole width is the table's, within the box it shows
        const table = frame.querySelector('table') || frame;
        const headers = [...frame.querySelectorAll('th')].map(th => th.textContent).join(', ');
        if (cut(frame, 2) || table.getBoundingClientRect().width > frame.getBoundingClientRect().width + 2)
            problems.push(`table cut: [${headers.slice(0, 80)}] ${table.scrollWidth} > ${frame.clientWidth}`);
    }
    for (const plot of main.querySelectorAll('.js-plotly-plot')) {
        const svg = plot.querySelector('.main-svg'), title = plot.querySelector('.gtitle');
        if (!svg || !title) continue;
        const box = svg.getBoundingClientRect(), text = title.getBoundingClientRect();
        if (text.left < box.left - 1 || text.right > box.right + 1)
            problems.push(`chart title cut: "${title.textContent}" ${Math.round(text.right - text.left)} px in ${Math.round(box.width)}`);
    }
    for (const plot of main.querySelectorAll('.js-plotly-plot')) {
        // a caption or label written on the chart (an annotation) that runs past the chart's edge is cut there
        const svg = plot.querySelector('.main-svg');
        if (!svg) continue;
        const box = svg.getBoundingClientRect();
        for (const note of plot.querySelectorAll('.annotation-text')) {
            const text = note.getBoundingClientRect();
            if (text.width > 0 && (text.left < box.left - 1 || text.right > box.right + 1))
                problems.push(`caption cut: "${note.textContent.slice(0, 60)}" ${Math.round(text.right - box.left)} px in ${Math.round(box.width)}`);
        }
    }
    for (const plot of main.querySelectorAll('.js-plotly-plot')) {
        // each drawn line of the title against each entry of the legend: glyphs, not their boxes' union
        const title = plot.querySelector('.gtitle');
        if (!title) continue;
        const lines = [...title.querySelectorAll('tspan.line')];
        const boxes = (lines.length ? lines : [title]).map(e => e.getBoundingClientRect());
        const entries = [...plot.querySelectorAll('.legend .traces')].map(e => e.getBoundingClientRect());
        const over = (a, b) => a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1 && b.top < a.bottom - 1;
        if (boxes.some(a => entries.some(b => b.width > 0 && over(a, b))))
            problems.push(`legend cut: over the title "${title.textContent}"`);
    }
    const titles = [...main.querySelectorAll('.js-plotly-plot .gtitle')].map(e => e.textContent);
    return {problems, titles};
}"""


@pytest.fixture(scope="module")
def address(tmp_path_factory):
    from tests.staged_studies import write_staged_compare

    url = f"sqlite:///{tmp_path_factory.mktemp('widths') / 'study.db'}"
    write_synthetic_study(url, "search", n_trials=40, n_evals=6, seed=1)
    write_synthetic_study(url, "grid", kind="replicate", folds=4, n_evals=6, seed=1)
    ref = [2.80, 2.90, 2.70, 2.85, 2.75]
    write_staged_compare(url, "cmp", {"p=2": ref, "p=1": [v + 0.002 + 0.0001 * i for i, v in enumerate(ref)],
                                      "p=3": [v + d for v, d in zip(ref, [0.3, -0.25, 0.28, -0.2, 0.3])],
                                      "p=4": [v - 0.28 - 0.0005 * i for i, v in enumerate(ref)]}, max_folds=5, rounds=[5], rope=0.05)
    with served(url) as served_at:
        yield served_at


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: install Debian's chromium; the browser tests do not skip"
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _drawn(page) -> None:
    """Wait until the page's run is over and every chart on it has drawn its title."""
    page.get_by_role("heading", level=1).first.wait_for(timeout=WAIT_MS)
    for _ in range(2):  # a cached read shows a spinner after the page's first elements: wait it out, twice
        settle(page)
        page.wait_for_function("() => !document.querySelector('[data-testid=\"stSpinner\"]')", timeout=WAIT_MS)
    page.wait_for_function("""() => [...document.querySelectorAll('[data-testid="stPlotlyChart"]')]
        .every(c => c.querySelector('.gtitle'))""", timeout=WAIT_MS)
    # the page's run over: more than its heading, and as many elements as a second ago (on a busy
    # machine the first checks passed on a page that had drawn its title only)
    page.wait_for_function("""() => {
        const n = document.querySelectorAll('[data-testid="stMain"] [data-testid="stElementContainer"]').length;
        const same = window.__lpstudyCount === n;
        window.__lpstudyCount = n;
        return same && n > 3;
    }""", polling=1000, timeout=WAIT_MS)
    page.wait_for_timeout(800)  # the grids lay their columns out after the first frame


@pytest.mark.parametrize("width", WIDTHS)
def test_no_page_cuts_a_table_or_a_title_nor_draws_a_chart_twice(address, browser, width):
    shots = SCREENSHOTS / "widths" / str(width)
    shots.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport={"width": width, "height": 1800})
    page = context.new_page()
    found: list[str] = []
    for study, name in VISITS:
        page.goto(f"{address}/{PATHS[name]}?study={study}", timeout=WAIT_MS)
        _drawn(page)
        assert page.locator("[data-testid='stException']").count() == 0, (study, name)
        measured = page.evaluate(MEASURE)
        assert measured["titles"] or name == "Export", (study, name, "measured before its charts were drawn")
        twice = sorted({t for t in measured["titles"] if measured["titles"].count(t) > 1})
        found += [f"{study} · {name}: {problem}" for problem in measured["problems"]
                  if problem.split(" cut:")[0] in CHECKED[width]]
        found += [f"{study} · {name}: chart drawn twice: {title}" for title in twice]
        page.screenshot(path=str(shots / f"{study}_{PATHS[name] or 'Home'}.png"), full_page=True)
    context.close()
    assert not found, "\n".join(found)
