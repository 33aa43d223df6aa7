"""A real browser on the real dashboard: `lpstudy dashboard` serves a seeded SQLite study, Debian's
Chromium (driven by Playwright for Python, never a downloaded browser) opens every page through the
sidebar, waits for the Plotly charts to be drawn, checks their titles, downloads the export, and
keeps a screenshot of each page under test-artifacts/screenshots/. The offline report is opened
with the network off and must draw its charts too.

CI installs Chromium (`.ci/run`); without /usr/bin/chromium these tests fail rather than skip."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.request
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

import pytest
import yaml

from lpstudy.study.synthetic import write_synthetic_study
from tests.once_per_run import once_per_run
from tests.pgserver import free_port
from tests.study_helpers import best_by_hand, trials_of

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
VIEWPORT = {"width": 1400, "height": 2000}
# (link in the sidebar, chart titles the page must draw)
PAGES = [
    ("Home", ["Trials by state", "Optimisation history"]),
    ("Effect of p", ["Final validation loss against p", "Mean final validation loss per p (95 % interval)",
                     "Validation loss over p × learning rate", "Parameter importance (type II sums of squares)"]),
    ("Convergence", ["Validation loss curves, coloured by p", "Training loss curves, coloured by p",
                     "Median validation loss per p", "Steps to reach validation loss 2",
                     "Area under the validation curve against p"]),
    ("Stability", ["Divergence rate per p (95 % Wilson interval)", "Divergence rate over p × learning rate",
                   "Largest gradient norm against p", "Attention gain over training, per p (median",
                   "Spread of final validation loss across configurations ("]),
    ("Stability lens", ["Final loss against learning rate per p",
                        "LR sensitivity per p (Wortsman et al. 2023; 95 % CI)",
                        "Largest attention logit per p (median",
                        "Smallest head entropy per p (median",
                        "Attention entropy at initialisation against p, "]),  # then the gain rules its runs used
    ("Trials", []),  # the chosen trial's charts: checked by prefix
    ("Export", []),
]
WAIT_MS = 90_000
# the two studies every page is looked at with: a small search and a large one
SIZES = {"small": 8, "large": 400}



def wait_until_serving(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"lpstudy dashboard exited with {proc.returncode}: {proc.stdout.read()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"lpstudy dashboard did not answer at {url} within {timeout:.0f} s")


@pytest.fixture(scope="module")
def study_db(tmp_path_factory) -> str:
    """The studies the dashboard serves; written once per test run (tests/once_per_run.py: the
    400-trial study takes most of a minute), read by every xdist worker's dashboard."""
    return once_per_run(tmp_path_factory, "browser-studies", _write_studies)


def _write_studies(folder: Path) -> str:
    path = folder / "study.db"
    url = f"sqlite:///{path}"
    now = datetime(2026, 1, 1, 12, 0, 0)
    write_synthetic_study(url, "search", n_trials=60, n_evals=8, seed=2, now=now)
    for size, n in SIZES.items():
        write_synthetic_study(url, size, n_trials=n, n_evals=8, seed=3)  # running for minutes, as now
    write_synthetic_study(url, "grid", kind="replicate", folds=5, n_evals=8, seed=2, now=now)
    write_synthetic_study(url, "synthetic", n_trials=60, n_evals=8, seed=4, now=now, marked=True)  # the demo's
    return url


@contextmanager
def served(storage: str):
    """`lpstudy dashboard --storage STORAGE` as a user starts it, stopped after; its address."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "lpstudy", "dashboard", "--storage", storage, "--port", str(port),
                             "--headless"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_serving(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture(scope="module")
def dashboard(study_db):
    """`lpstudy dashboard` as a user starts it; its address."""
    with served(study_db) as url:
        yield url


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install chromium); "
                    "the browser tests do not skip")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def wait_for_titles(page, titles: list[str]) -> list[str]:
    """Wait until every expected chart title is drawn (Plotly's .gtitle); all titles drawn."""
    page.wait_for_function(
        """titles => {
            const drawn = [...document.querySelectorAll('.js-plotly-plot .gtitle')].map(e => e.textContent);
            return drawn.length > 0 && titles.every(t => drawn.some(d => d.startsWith(t)));
        }""", arg=titles, timeout=WAIT_MS)
    return page.locator(".js-plotly-plot .gtitle").all_text_contents()


def open_page(page, name: str) -> None:
    """Go to the dashboard page called name from the sidebar (Home is where a visit starts) and wait
    for its heading."""
    if name != "Home":
        page.get_by_role("link", name=name, exact=True).click()
        page.wait_for_url(f"**/{name.replace(' ', '_')}**", timeout=WAIT_MS)
    page.get_by_role("heading", level=1).first.wait_for(timeout=WAIT_MS)


def settle(page) -> None:
    """Let Streamlit finish its run (no 'running' indicator) so the screenshot shows the whole page."""
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=WAIT_MS)
    page.wait_for_timeout(500)


def offline(context, page, dashboard: str) -> tuple[list[str], list[str], list[str]]:
    """Every request outside the dashboard refused and recorded (a page must need none: no font server,
    no CDN), and every failed request and error in the browser's log recorded: (outside, failed, logged)."""
    import re

    outside: list[str] = []
    failed: list[str] = []
    logged: list[str] = []

    def refuse(route) -> None:
        outside.append(route.request.url)
        route.abort()

    context.route(re.compile(r"^(?!" + re.escape(dashboard) + r")(?!data:)(?!blob:).*"), refuse)
    page.on("requestfailed", lambda request: failed.append(f"{request.url}: {request.failure}"))
    page.on("console", lambda message: logged.append(f"{message.text} ({message.location.get('url', '')})")
            if message.type == "error" else None)
    page.on("pageerror", lambda exc: logged.append(str(exc)))
    return outside, failed, logged


def test_every_page_draws_its_charts_in_chromium(dashboard, browser, study_db, tmp_path):
    """Every page of a search, its charts drawn, the export downloaded, and offline as the replicate and
    the synthetic study are in test_every_page_of_a_replicate_and_the_synthetic_study_offline (which
    leaves a search to this walk of its pages): no request outside the dashboard, none failed, no
    error in the browser's log, no synthetic banner."""
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    page = context.new_page()
    outside, failed, logged = offline(context, page, dashboard)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    downloaded: list[str] = []
    page.goto(f"{dashboard}/?study=search", timeout=WAIT_MS)
    for number, (name, titles) in enumerate(PAGES, start=1):
        open_page(page, name)
        if name == "Trials":  # the picked runs' chart comes first; wait for the one trial's curves too
            drawn = wait_for_titles(page, ["Picked runs", "Trial "])
            assert any(t.startswith("Trial ") and t.endswith(": loss curves") for t in drawn), drawn
        elif name == "Export":
            page.get_by_text("Retrain it:").wait_for(timeout=WAIT_MS)
            with page.expect_download(timeout=WAIT_MS) as download:
                page.get_by_role("button", name="Download search-best.yaml").click()
            downloaded.append(download.value.url)
            saved = tmp_path / download.value.suggested_filename
            download.value.save_as(saved)
            assert saved.name == "search-best.yaml"
            exported, best = yaml.safe_load(saved.read_text()), best_by_hand(trials_of(study_db, "search"))
            assert exported["source"]["trial"] == best.number and exported["source"]["value"] == best.value
            assert [float(exported[k]) for k in ("p", "lr", "gain_init")] == [
                float(best.user_attrs[k]) for k in ("p", "lr", "gain_init")]
            # the download's click reruns the page: wait for the command to be drawn again, not read it mid-rerun
            page.locator("code", has_text="lpstudy train --config search-best.yaml").first.wait_for(timeout=WAIT_MS)
            settle(page)
            assert "lpstudy train --config search-best.yaml" in page.locator("code").all_text_contents()
        else:
            drawn = wait_for_titles(page, titles)
            assert all(any(d == t or d.startswith(t) for d in drawn) for t in titles), (name, drawn)
            if name == "Stability lens":  # the entropy at initialisation: every kind records step 0
                assert not page.get_by_text("no evaluation at step 0 recorded").count(), drawn
        assert page.locator("[data-testid='stException']").count() == 0, name
        settle(page)
        assert page.get_by_text("A synthetic study: its curves were made up").count() == 0, name
        page.screenshot(path=str(SCREENSHOTS / f"{number}_{name.replace(' ', '_')}.png"))
        if name in ("Home", "Convergence"):
            _check_compute_is_visible(page, name, study_db)
    assert outside == [], outside
    # the download is the one request the browser ends itself (net::ERR_ABORTED): the file was saved
    assert [f for f in failed if not any(f.startswith(f"{url}: ") for url in downloaded)] == [], failed
    assert logged == [], logged
    # a replicate grid: the verdict of each p against p = 2 across folds, its page's address opened
    # directly (Streamlit's frontend then asks Effect_of_p/_stcore/host-config first: a 404 in the log)
    page.goto(f"{dashboard}/Effect_of_p?study=grid", timeout=WAIT_MS)
    drawn = wait_for_titles(page, ["Verdict per arm: difference to the reference",
                                   "Validation loss over p × fold"])
    settle(page)
    page.screenshot(path=str(SCREENSHOTS / "7_Effect_of_p_grid.png"))
    assert not errors, errors
    context.close()


def _check_compute_is_visible(page, name: str, study_db: str) -> None:
    """Home: the compute spent and saved, and the best value against compute with pruned trials as ×;
    Convergence: each pruned trial marked on the validation curves. Each chart also kept on its own
    (1_Home_compute.png, 3_Convergence_pruned.png)."""
    from optuna.trial import TrialState

    pruned = sum(t.state == TrialState.PRUNED for t in trials_of(study_db, "search"))
    assert pruned >= 1  # the synthetic search has pruned trials, or there is nothing to mark
    if name == "Home":
        wait_for_titles(page, ["Best value so far against compute spent"])
        assert page.get_by_text("Steps trained", exact=True).count() == 1
        assert page.get_by_text("Saved by pruning", exact=True).count() == 1
        compute = _chart(page, "Best value so far against compute spent")
        legend = compute.locator(".legend .legendtext").all_text_contents()
        assert legend == ["complete", "pruned", "best so far"], legend
        assert compute.locator(".scatterlayer .trace").nth(1).locator(".point").count() == pruned
        compute.scroll_into_view_if_needed()
        compute.screenshot(path=str(SCREENSHOTS / "1_Home_compute.png"))
    else:
        curves = _chart(page, "Validation loss curves, coloured by p")
        assert f"pruned ({pruned})" in curves.locator(".legend .legendtext").all_text_contents()
        curves.screenshot(path=str(SCREENSHOTS / "3_Convergence_pruned.png"))


def test_the_report_draws_its_charts_offline(browser, study_db, tmp_path):
    report = tmp_path / "report.html"
    done = subprocess.run([sys.executable, "-m", "lpstudy", "report", "--study", "search", "--storage", study_db,
                           "-o", str(report)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    context = browser.new_context(viewport=VIEWPORT, offline=True)  # no network: plotly.js must be inside
    page = context.new_page()
    page.goto(report.as_uri(), timeout=WAIT_MS)
    titles = [t for _, expected in PAGES for t in expected]
    drawn = wait_for_titles(page, titles)
    assert all(any(d == t or d.startswith(t) for d in drawn) for t in titles)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "8_report.png"))
    context.close()


def test_the_compare_page_draws_the_stages_of_a_comparison_run_until_decided(browser, tmp_path):
    """A comparison run --until-decided (planted: p = 1 equivalent and p = 4 better at the first look,
    p = 3 undecided to the tenth fold): the Compare page draws its stages chart, with each decided
    arm's look marked, and the table of the looks (kept as 9_Compare_stages.png)."""
    from tests.staged_studies import write_staged_compare

    ref = [2.80, 2.90, 2.70, 2.85, 2.75, 2.80, 2.95, 2.72, 2.83, 2.78]
    url = f"sqlite:///{tmp_path / 'staged.db'}"
    write_staged_compare(url, "cmp", {"p=2": ref, "p=1": [v + 0.002 + 0.0001 * i for i, v in enumerate(ref[:3])],
                                      "p=3": [v + d for v, d in zip(ref, [0.3, -0.25, 0.28, -0.2, 0.3, -0.1, 0.25,
                                                                          -0.3, 0.2, -0.27])],
                                      "p=4": [v - 0.28 - 0.0005 * i for i, v in enumerate(ref[:3])]},
                         max_folds=10, rounds=[3, 5, 8, 10], rope=0.05)
    with served(url) as address:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.goto(f"{address}/Compare?study=cmp", timeout=WAIT_MS)
        title = "Stages: each arm's difference to the reference at every look"
        wait_for_titles(page, [title])
        settle(page)
        stages = _chart(page, title)
        assert sorted(stages.locator(".textpoint").all_text_contents()) == ["decided: better", "decided: equivalent"]
        assert page.get_by_text("stopped (equivalent)").count() == 3  # p = 1 at the looks after its first
        assert page.locator("[data-testid='stException']").count() == 0 and not errors, errors
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        stages.scroll_into_view_if_needed()
        page.screenshot(path=str(SCREENSHOTS / "9_Compare_stages.png"), full_page=True)
        context.close()


def _chart(page, title_prefix: str):
    """The Plotly chart whose title starts with title_prefix."""
    return page.locator(".js-plotly-plot").filter(has=page.locator(".gtitle", has_text=title_prefix)).first


def _no_overlap(boxes: list[dict]) -> bool:
    boxes = sorted(boxes, key=lambda b: b["x"])
    return all(a["x"] + a["width"] <= b["x"] + 0.5 for a, b in zip(boxes, boxes[1:]))


@pytest.mark.parametrize("size", list(SIZES))
def test_every_page_reads_at_a_glance_on_a_small_and_a_large_study(dashboard, browser, size):
    """Screenshots of every page at 8 and at 400 trials (test-artifacts/screenshots/<size>/), and in
    the drawn page: the p-bins slider, p tick labels that do not overlap, divergence rates as points,
    log ticks 1, 10, 100 (or 1-2-5), legends on a trial's panels, no literal None."""
    import re

    shots = SCREENSHOTS / size
    shots.mkdir(parents=True, exist_ok=True)
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{dashboard}/?study={size}", timeout=WAIT_MS)
    for number, (name, titles) in enumerate(PAGES, start=1):
        open_page(page, name)
        if name == "Export":
            page.get_by_text("Retrain it:").wait_for(timeout=WAIT_MS)
        else:
            wait_for_titles(page, titles)
        settle(page)
        assert page.locator("[data-testid='stException']").count() == 0, name
        assert not re.search(r"\bNone\b", page.locator("body").inner_text()), name
        page.screenshot(path=str(shots / f"{number}_{name.replace(' ', '_')}.png"), full_page=True)
        if name == "Effect of p":
            assert page.locator("[data-testid='stSidebar']").get_by_text("p bins").count() == 1
            mean = _chart(page, "Mean final validation loss per p")
            ticks = mean.locator(".xtick text")
            points = mean.locator(".scatterlayer .point").count()
            assert ticks.count() >= min(2, points)  # a label for each group (one group: the first runs' p bin)
            assert _no_overlap([t.bounding_box() for t in ticks.all()]), ticks.all_text_contents()
            assert all(t in ("", "n = 1", "n = 2") for t in mean.locator(".textpoint").all_text_contents())
        if name == "Stability":
            # a search's rate per p group; a study with verdicts draws divergence once, as its verdict per arm
            per_p = page.get_by_text("Divergence rate per p").count() > 0
            rate = _chart(page, "Divergence rate per p" if per_p else "Divergence rate per arm against the reference")
            assert rate.locator(".point").count() >= 1
            labels = _chart(page, "Largest gradient norm against p").locator(".ytick text").all_text_contents()
            assert labels and all(re.fullmatch(r"(1|2|5)0*|0\.0*(1|2|5)|([25]×)?10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+", t)
                                  for t in labels), labels  # 1, 20, 0.05; from 10⁵ up 10⁶ or 2×10⁶
        if name == "Trials":
            dynamics = _chart(page, "gradient, learning rate and gain")
            dynamics.locator(".legend .traces").nth(3).wait_for(timeout=WAIT_MS)  # plotly draws the legend last
            assert dynamics.locator(".legend .traces").count() >= 4
            assert dynamics.locator(".g-xtitle, .g-x2title, .g-x3title").count() == 3
    assert not errors, errors
    context.close()


# a search's pages are walked offline by test_every_page_draws_its_charts_in_chromium
LIFE = {"grid": "a replicate", "synthetic": "the synthetic study"}
GRID_TITLES = {"Home": ["Trials by state"],  # no optimisation history: a grid optimises nothing
               "Effect of p": ["Verdict per arm: difference to the reference", "Validation loss over p × fold"]}


def test_every_page_of_a_replicate_and_the_synthetic_study_offline(dashboard, browser):
    """Every page of a replicate and of the synthetic study, with every request outside the dashboard
    refused and recorded (the page must need none: no font server, no CDN), no failed request and no
    error in the browser's log; the synthetic study says so on every page and offers no run file.
    Screenshots under test-artifacts/screenshots/life/<study>/. A search's pages are walked the same
    way, offline, by test_every_page_draws_its_charts_in_chromium, which looks at every one of them."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    outside, failed, logged = offline(context, page, dashboard)
    for study in LIFE:
        shots = SCREENSHOTS / "life" / study
        shots.mkdir(parents=True, exist_ok=True)
        page.goto(f"{dashboard}/?study={study}", timeout=WAIT_MS)
        for number, (name, titles) in enumerate(PAGES, start=1):
            open_page(page, name)
            if name == "Export":
                wanted = "offers no run file" if study == "synthetic" else "Retrain it:"
                page.get_by_text(wanted).first.wait_for(timeout=WAIT_MS)
            else:  # a grid draws its own charts on Effect of p and Stability (folds, not a learning-rate map)
                drawn = wait_for_titles(page, titles if study != "grid" or name == "Stability lens"
                                        else GRID_TITLES.get(name, []))
                if name == "Stability lens":  # the entropy at initialisation: every kind records step 0
                    assert not page.get_by_text("no evaluation at step 0 recorded").count(), (study, drawn)
            settle(page)
            assert page.locator("[data-testid='stException']").count() == 0, (study, name)
            banner = page.get_by_text("A synthetic study: its curves were made up").count()
            assert banner == (1 if study == "synthetic" else 0), (study, name, banner)
            page.screenshot(path=str(shots / f"{number}_{name.replace(' ', '_')}.png"), full_page=True)
    assert outside == [], outside
    assert failed == [], failed
    assert logged == [], logged
    context.close()


ALL_PAGES = ["Home", "Effect of p", "Convergence", "Stability", "Stability lens", "Compare", "Trials", "Export"]


def _visit_every_page(page, address: str, study: str, shots: Path, shown: dict[str, str]) -> dict[str, str]:
    """Every page of the study in turn, each once it shows its text in `shown` (a text, or a tuple of
    texts: a page draws its title first and the rest as it runs; under load a read taken when one of
    them shows can miss another), without an error and kept as a screenshot; the text of each."""
    shots.mkdir(parents=True, exist_ok=True)
    page.goto(f"{address}/?study={study}", timeout=WAIT_MS)
    texts = {}
    for number, name in enumerate(ALL_PAGES, start=1):
        open_page(page, name)
        for text in (shown[name],) if isinstance(shown[name], str) else shown[name]:
            page.get_by_text(text).first.wait_for(timeout=WAIT_MS)
        settle(page)
        assert page.locator("[data-testid='stException']").count() == 0, name
        texts[name] = page.locator("[data-testid='stMain']").inner_text()
        page.screenshot(path=str(shots / f"{number}_{name.replace(' ', '_')}.png"), full_page=True)
    return texts


def test_a_comparison_and_a_search_read_right_on_every_page(browser, tmp_path):
    """A comparison is a study on every page (its arms' runs counted where its own study holds none),
    and a search's pages that group by p say that the groups mix p with the lr and gain its runs drew;
    the run picker overlays the best runs' curves. Screenshots: test-artifacts/screenshots/comparison/
    and search_first/."""
    from tests.staged_studies import write_staged_compare

    url = f"sqlite:///{tmp_path / 'afternoon.db'}"
    write_staged_compare(url, "cmp", {"p=2": [3.0, 3.1, 3.2], "p=3": [2.8, 2.92, 2.99], "p=4": [2.9, 3.0, 3.05]},
                         max_folds=3, rounds=[3], rope=0.005)
    write_synthetic_study(url, "lp", n_trials=8, n_evals=6, seed=5, states=False)
    with served(url) as address:
        context = browser.new_context(viewport=VIEWPORT)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        texts = _visit_every_page(page, address, "cmp", SCREENSHOTS / "comparison", {
            "Home": "Fold runs", "Effect of p": "Verdict.", "Convergence": "No learning curve", "Stability":
            "Divergence rate per arm against the reference", "Stability lens": "Final loss against learning rate", "Compare": "Equal-budget",
            "Trials": ("Picked runs", "9 of 9 trials match", "replicate runs"), "Export": "Retrain it:"})
        assert "Fold runs\n\n9 / 9" in texts["Home"] and "Tuning trials\n\n6 / 6" in texts["Home"], texts["Home"]
        assert "no trials yet" not in " ".join(texts.values())
        assert "Verdict." in texts["Effect of p"] and "p = 3" in texts["Effect of p"]
        assert "9 of 9 trials match" in texts["Trials"] and "replicate runs" in texts["Trials"]
        assert "p=3 has the lowest mean loss" in texts["Export"], texts["Export"]
        texts = _visit_every_page(page, address, "lp", SCREENSHOTS / "search_first", {
            "Home": "Leading configuration", "Effect of p": "Final validation loss against p", "Convergence": "Each p group",
            "Stability": "Each p group", "Stability lens": "Each p group", "Compare": "Equal-budget",
            "Trials": "Picked runs", "Export": "Retrain it:"})
        for name in ("Convergence", "Stability", "Stability lens"):
            assert "Each p group here mixes p with the learning rate and gain its runs drew" in texts[name], name
        assert "Each p group here mixes p" not in texts["Effect of p"]
        assert "8 of 8 trials match" in texts["Trials"]
        open_page(page, "Trials")
        picked = _chart(page, "Picked runs: validation loss against step")
        picked.wait_for(timeout=WAIT_MS)
        assert len([t for t in picked.locator(".legend .legendtext").all_text_contents() if t.startswith("trial ")]) == 3
        assert not errors, errors
        context.close()

