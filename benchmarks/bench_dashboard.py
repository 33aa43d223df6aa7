"""How fast the dashboard draws a big study, against Optuna's own dashboard on the same database.

A synthetic study of 1,000 trials with 50 evaluations each (SQLite, written once by
lpstudy.synthetic) is served by `lpstudy dashboard` and by `lpstudy optuna-dashboard`. Debian's
Chromium (Playwright) measures the time from the request to:
  - lpstudy: the Effect of p page with its four charts drawn (their titles in the DOM);
  - optuna-dashboard: the study page with its history plot drawn (a point per completed trial).
"cold" is the first request after the server started (nothing cached anywhere); "warm" the median
of the next --repeats requests, each in a fresh browser context (nothing cached in the browser, the
server's data cache warm); "revisit" the same in one browser context (its HTTP cache warm: a user
coming back); "reread" fresh contexts right after the study changed (lpstudy reads it again).

    python benchmarks/bench_dashboard.py                     # 1,000 x 50, prints a table
    python benchmarks/bench_dashboard.py --json --db /tmp/bench.db --repeats 5
For scale, the same is timed for a bare Streamlit page with four tiny Plotly charts (the floor of
any Streamlit + Plotly page on the machine: the browser loads and compiles Streamlit's and
plotly.js's bundles whatever the data).
Goal: lpstudy under 2 s, and not slower than optuna-dashboard (ratio ≤ 1).
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "app"))  # the dashboard's shared module, as Streamlit sees it

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
STUDY = "bench"
EFFECT_TITLES = ["Final validation loss against p", "Mean final validation loss per p (95 % interval)",
                 "Validation loss over p × learning rate", "Parameter importance (type II sums of squares)"]
SCREENSHOTS = ROOT / "test-artifacts" / "screenshots"

from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, proc: subprocess.Popen[str], timeout: float = 120.0) -> None:
    """Until url answers; the server's last output where it exits first (its stdout a pipe, stderr in it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            output, _ = proc.communicate()
            raise SystemExit(f"server exited ({proc.returncode}): {(output or '')[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"no answer from {url} within {timeout:.0f} s")


def ensure_study(db: Path, trials: int, evals: int) -> tuple[str, int, int]:
    """The study's URL, its Optuna study id and its number of COMPLETE trials (written if absent)."""
    import sqlalchemy as sa

    from lpstudy.study.synthetic import write_synthetic_study

    url = f"sqlite:///{db}"
    if not db.exists():
        started = time.perf_counter()
        print(f"writing a synthetic study of {trials} trials x {evals} evaluations to {db} …", file=sys.stderr)
        write_synthetic_study(url, STUDY, n_trials=trials, n_evals=evals, seed=0)
        print(f"  written in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        study_id = conn.execute(sa.text("SELECT study_id FROM studies WHERE study_name = :n"), {"n": STUDY}).scalar_one()
        complete = conn.execute(sa.text("SELECT count(*) FROM trials WHERE study_id = :s AND state = 'COMPLETE'"),
                                {"s": study_id}).scalar_one()
        total = conn.execute(sa.text("SELECT count(*) FROM trials WHERE study_id = :s"), {"s": study_id}).scalar_one()
    engine.dispose()
    if total != trials:
        print(f"note: {db} holds {total} trials (asked for {trials}); delete it to rewrite", file=sys.stderr)
    return url, study_id, complete


def touch_study(url: str) -> None:
    """Change the study as a worker would (one more study attribute), so readers see new data."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.load_study(study_name=STUDY, storage=url)
    study.set_user_attr(f"bench_touch_{time.time_ns()}", True)


def timed_load(browser, url: str, ready_js: str, arg, screenshot: Path | None = None, context=None) -> float:
    """Seconds from the request to ready_js(arg) being true: in a fresh browser context (nothing
    cached in the browser), or in `context` (its HTTP cache warm, as when a user comes back)."""
    own = context is None
    context = context or browser.new_context(viewport={"width": 1400, "height": 1600})
    page = context.new_page()
    started = time.perf_counter()
    page.goto(url, wait_until="commit", timeout=120_000)
    page.wait_for_function(ready_js, arg=arg, timeout=120_000, polling=20)
    elapsed = time.perf_counter() - started
    if screenshot is not None:
        page.wait_for_timeout(800)
        page.screenshot(path=str(screenshot))
    page.close()
    if own:
        context.close()
    return elapsed


KINDS = ("cold_s", "warm_s", "revisit_s", "reread_s")
# The floor: a bare Streamlit page with four tiny Plotly charts, what any Streamlit + Plotly page costs here.
FLOOR_APP = """
import plotly.graph_objects as go
import streamlit as st

st.title("floor")
for i in range(4):
    st.plotly_chart(go.Figure(go.Scatter(x=[1, 2], y=[1, 2])).update_layout(title=f"floor {i}"))
"""
FLOOR_TITLES = [f"floor {i}" for i in range(4)]
LPSTUDY_READY = """titles => {
    const drawn = [...document.querySelectorAll('.js-plotly-plot .gtitle')].map(e => e.textContent);
    return titles.every(t => drawn.includes(t));
}"""
OPTUNA_READY = """n => document.querySelectorAll('#plot-history .scatterlayer .point').length >= n"""


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--evals", type=int, default=50)
    parser.add_argument("--db", type=Path, default=None, help="SQLite file to reuse (written if absent)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    add_result_argument(parser, "dashboard")
    args = parser.parse_args(argv)
    load_at_start = load_average()

    from playwright.sync_api import sync_playwright

    from common import FINGERPRINT_TTL_S

    workdir = Path(tempfile.mkdtemp(prefix="bench_dashboard_"))
    db = args.db or workdir / "bench.db"
    url, study_id, complete = ensure_study(db, args.trials, args.evals)
    lp_port, od_port = free_port(), free_port()
    floor_app = workdir / "floor.py"
    floor_app.write_text(FLOOR_APP)
    floor_port = free_port()
    servers = [
        subprocess.Popen([sys.executable, "-m", "lpstudy", "dashboard", "--storage", url, "--port", str(lp_port),
                          "--headless", "--study", STUDY], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, cwd=ROOT),
        subprocess.Popen([sys.executable, "-m", "lpstudy", "optuna-dashboard", "--storage", url, "--port", str(od_port)],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT),
        subprocess.Popen([sys.executable, "-m", "streamlit", "run", str(floor_app), "--server.port", str(floor_port),
                          "--server.headless", "true", "--server.fileWatcherType", "none",
                          "--browser.gatherUsageStats", "false"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, cwd=workdir),
    ]
    lp_url = f"http://127.0.0.1:{lp_port}/Effect_of_p?study={STUDY}"
    od_url = f"http://127.0.0.1:{od_port}/dashboard/studies/{study_id}"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    result: dict = {"trials": args.trials, "evaluations": args.evals, "complete": complete, "repeats": args.repeats}
    try:
        wait_for(f"http://127.0.0.1:{lp_port}/_stcore/health", servers[0])
        wait_for(f"http://127.0.0.1:{od_port}/api/meta", servers[1])
        wait_for(f"http://127.0.0.1:{floor_port}/_stcore/health", servers[2])
        # Points the history plot must show: optuna-dashboard draws COMPLETE trials (and pruned ones).
        need = max(1, int(0.95 * complete))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for name, target, ready, arg in (("lpstudy", lp_url, LPSTUDY_READY, EFFECT_TITLES),
                                             ("optuna_dashboard", od_url, OPTUNA_READY, need),
                                             ("streamlit_floor", f"http://127.0.0.1:{floor_port}/", LPSTUDY_READY,
                                              FLOOR_TITLES)):
                cold = timed_load(browser, target, ready, arg, SCREENSHOTS / f"bench_{name}.png")
                warm = [timed_load(browser, target, ready, arg) for _ in range(args.repeats)]
                returning = browser.new_context(viewport={"width": 1400, "height": 1600})
                timed_load(browser, target, ready, arg, context=returning)  # fills its HTTP cache
                revisit = [timed_load(browser, target, ready, arg, context=returning) for _ in range(args.repeats)]
                returning.close()
                reread = []
                for _ in range(args.repeats):
                    touch_study(url)  # the study changed: lpstudy reads it again
                    time.sleep(FINGERPRINT_TTL_S + 0.5)
                    reread.append(timed_load(browser, target, ready, arg))
                result[name] = {"cold_s": cold, "warm_s": statistics.median(warm),
                                "revisit_s": statistics.median(revisit), "reread_s": statistics.median(reread)}
            browser.close()
    finally:
        for server in servers:
            server.terminate()
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                server.kill()
    for kind in KINDS:
        result[f"ratio_{kind[:-2]}"] = result["lpstudy"][kind] / result["optuna_dashboard"][kind]
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{args.trials} trials x {args.evals} evaluations ({complete} complete), SQLite; "
              f"seconds from request to charts drawn in Chromium")
        print(f"{'':26}" + "".join(f"{k[:-2]:>9}" for k in KINDS))
        for name, label in (("lpstudy", "lpstudy Effect of p"), ("optuna_dashboard", "optuna-dashboard history"),
                            ("streamlit_floor", "bare Streamlit+Plotly page")):
            print(f"{label:26}" + "".join(f"{result[name][k]:9.2f}" for k in KINDS))
        print(f"{'ratio lpstudy/optuna':26}" + "".join(f"{result['ratio_' + k[:-2]]:9.2f}" for k in KINDS))
        print(f"screenshots: {SCREENSHOTS}/bench_lpstudy.png, bench_optuna_dashboard.png")
    labels = (("lpstudy", "lpstudy Effect of p"), ("optuna_dashboard", "optuna-dashboard history"),
              ("streamlit_floor", "bare Streamlit+Plotly page"))
    write_result(args.result, None,
                 [["seconds to charts drawn", *(k[:-2] for k in KINDS)],
                  *([label, *(f"{result[name][k]:.2f}" for k in KINDS)] for name, label in labels),
                  ["ratio lpstudy/optuna", *(f"{result['ratio_' + k[:-2]]:.2f}" for k in KINDS)]],
                 title="The dashboard's Effect of p page against optuna-dashboard's history page",
                 load_at_start=load_at_start,
                 notes=f"{args.trials} trials × {args.evals} evaluations ({complete} complete), SQLite; seconds from "
                       f"request to charts drawn in Chromium, the median of {args.repeats}. cold: the first load after "
                       f"the server started; warm: a fresh browser context; revisit: the same context again; "
                       f"reread: after the study changed.")
    return result


if __name__ == "__main__":
    main()
