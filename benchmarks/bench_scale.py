"""How lpstudy reads a big study: status, export, the report and every dashboard page at N trials.

For each storage (PostgreSQL: the tests' throwaway server, or --pg-url; SQLite) and each N, a study
of N trials × 50 evaluations is written in bulk (benchmarks/scale_study.py: the rows a worker
writes), then timed, in one run:
  - `lpstudy status`, `lpstudy export` (the best trial) and `lpstudy report`: wall seconds of the
    command (a fresh interpreter: imports included) and its peak memory;
  - each dashboard page in Chromium (Playwright): "cold" for the first page after the server started
    (the study read from the database), "first" for each page in a fresh browser context (nothing
    cached in the browser), "revisit" for the same page again in that context; a page counts as
    drawn when all its charts (Plotly titles) are in the DOM; the dashboard's peak memory (VmHWM of
    its processes);
  - optuna-dashboard's study page (its history plot drawn), the same way, up to --od-timeout.
--before DIR times the same commands and pages with another checkout's code (e.g. `git archive main`
unpacked in DIR) beside this one, so that before and after are measured side by side: "after" runs
on the database with the indexes lpstudy adds (lpstudy.db.read_indexes: built first, their build
time recorded as index_build_s), "before" without them, as that code leaves the database (with them
when --before-indexes says that code makes them too).

    python benchmarks/bench_scale.py --sizes 1000,10000,100000 --backends postgresql,sqlite
    python benchmarks/bench_scale.py --sizes 10000 --before /tmp/main-code --json out.json
Targets at 100,000 trials on PostgreSQL: status and export ≤ 2 s, pages first ≤ 4 s and revisit
≤ 3 s, report ≤ 30 s, the dashboard ≤ 2 GB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.bench_dashboard import CHROMIUM, CHROMIUM_ARGS, OPTUNA_READY, free_port, wait_for  # noqa: E402
from benchmarks.results_file import add_result_argument, load_average, write_result  # noqa: E402

STUDY = "scale"
# (URL path, the number of charts the page draws; Export: its code block)
PAGES = [("", "Home", 2), ("Effect_of_p", "Effect of p", 4), ("Convergence", "Convergence", 6),
         ("Stability", "Stability", 5), ("Stability_lens", "Stability lens", 5), ("Trials", "Trials", 2),
         ("Export", "Export", 0)]
DRAWN = """n => {
    const titles = document.querySelectorAll('.js-plotly-plot .gtitle').length;
    const spinner = [...document.querySelectorAll('[data-testid="stSpinner"]')].length;
    if (n === 0) return document.querySelector('[data-testid="stCode"]') !== null && !spinner;
    return titles >= n && !spinner;
}"""


def peak_kib(pids: list[int]) -> int:
    """The largest VmHWM (peak resident memory) among the processes, KiB."""
    best = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    best = max(best, int(line.split()[1]))
        except OSError:
            pass
    return best


def tree(pid: int) -> list[int]:
    """pid and its descendants."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            children = Path(f"/proc/{p}/task/{p}/children").read_text().split()
        except OSError:
            children = []
        todo.extend(int(c) for c in children)
    return out


def stop(server: subprocess.Popen) -> None:
    """Stop a server and the processes it started."""
    for pid in reversed(tree(server.pid)):
        try:
            os.kill(pid, 15)
        except OSError:
            pass
    server.wait(timeout=30)


def env_for(code: Path) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(code)
    env["OMP_NUM_THREADS"] = "1"
    return env


def timed_command(code: Path, args: list[str], workdir: Path) -> dict:
    """Wall seconds and peak memory of `python -m lpstudy ARGS` run with the code in `code`."""
    started = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", sys.executable, "-m", "lpstudy", *args], cwd=workdir,
                          env=env_for(code), capture_output=True, text=True, timeout=3600)
    seconds = time.perf_counter() - started
    if proc.returncode != 0:
        return {"error": (proc.stderr or proc.stdout).strip().splitlines()[-1:], "seconds": seconds}
    peak = int(proc.stderr.strip().splitlines()[-1])
    return {"seconds": round(seconds, 2), "peak_mib": round(peak / 1024)}


def time_commands(code: Path, url: str, workdir: Path) -> dict:
    out = {}
    for name, args in (("status", ["status", "--study", STUDY, "--storage", url]),
                       ("export", ["export", "--study", STUDY, "--storage", url, "--output", str(workdir / "best.yaml")]),
                       ("report", ["report", "--study", STUDY, "--storage", url, "--output", str(workdir / "r.html")])):
        out[name] = timed_command(code, args, workdir)
        print(f"    {name}: {out[name]}", file=sys.stderr)
    return out


def page_time(context, url: str, n: int, timeout_s: float, screenshot: Path | None = None) -> float | None:
    page = context.new_page()
    started = time.perf_counter()
    try:
        page.goto(url, wait_until="commit", timeout=timeout_s * 1000)
        page.wait_for_function(DRAWN, arg=n, timeout=timeout_s * 1000, polling=50)
        elapsed = time.perf_counter() - started
        if screenshot is not None:
            page.wait_for_timeout(500)
            page.screenshot(path=str(screenshot), full_page=True)
    except Exception:  # noqa: BLE001 - not drawn in time: recorded as None
        elapsed = None
    page.close()
    return None if elapsed is None else round(elapsed, 2)


def time_dashboard(code: Path, url: str, browser, timeout_s: float, shots: Path | None, label: str) -> dict:
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "lpstudy", "dashboard", "--storage", url, "--port", str(port),
                               "--headless", "--study", STUDY], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, env=env_for(code), cwd=code)
    out: dict = {}
    try:
        wait_for(f"http://127.0.0.1:{port}/_stcore/health", server)
        base = f"http://127.0.0.1:{port}"
        cold_ctx = browser.new_context(viewport={"width": 1400, "height": 1600})
        out["cold_home"] = page_time(cold_ctx, f"{base}/?study={STUDY}", 2, timeout_s)
        cold_ctx.close()
        for path, name, n in PAGES:
            target = f"{base}/{path}?study={STUDY}"
            context = browser.new_context(viewport={"width": 1400, "height": 1600})
            shot = shots / f"{label}_{name.replace(' ', '_')}.png" if shots else None
            first = page_time(context, target, n, timeout_s, shot)
            revisit = page_time(context, target, n, timeout_s)
            context.close()
            out[name] = {"first": first, "revisit": revisit}
            print(f"    page {name}: {out[name]}", file=sys.stderr)
        out["peak_mib"] = round(peak_kib(tree(server.pid)) / 1024)
    finally:
        stop(server)
    return out


def time_optuna_dashboard(url: str, browser, timeout_s: float) -> dict:
    import sqlalchemy as sa

    engine = sa.create_engine(url)
    with engine.connect() as conn:
        sid = conn.execute(sa.text("SELECT study_id FROM studies WHERE study_name = :n"), {"n": STUDY}).scalar_one()
        complete = conn.execute(sa.text("SELECT count(*) FROM trials WHERE study_id = :s AND state = 'COMPLETE'"),
                                {"s": sid}).scalar_one()
    engine.dispose()
    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "lpstudy", "optuna-dashboard", "--storage", url, "--port",
                               str(port)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              env=env_for(ROOT), cwd=ROOT)
    try:
        wait_for(f"http://127.0.0.1:{port}/api/meta", server)
        context = browser.new_context(viewport={"width": 1400, "height": 1600})
        page = context.new_page()
        started = time.perf_counter()
        try:
            page.goto(f"http://127.0.0.1:{port}/dashboard/studies/{sid}", wait_until="commit", timeout=timeout_s * 1000)
            page.wait_for_function(OPTUNA_READY, arg=max(1, int(0.95 * complete)), timeout=timeout_s * 1000,
                                   polling=100)
            first = round(time.perf_counter() - started, 2)
        except Exception:  # noqa: BLE001
            first = None
        context.close()
        return {"first": first, "timeout_s": timeout_s, "peak_mib": round(peak_kib(tree(server.pid)) / 1024)}
    finally:
        stop(server)


def set_read_indexes(url: str, present: bool) -> dict:
    """The indexes lpstudy adds to Optuna's tables (lpstudy.db.read_indexes) made (present: as this
    code's first worker or `create` makes them) or dropped (as the database of a checkout without
    them is); {index: seconds to build} of those built now."""
    import sqlalchemy as sa

    from lpstudy.db.read_indexes import READ_INDEXES, ensure_read_indexes

    engine = sa.create_engine(url)
    built = {}
    try:
        existing = {i["name"] for index in READ_INDEXES.values() for i in sa.inspect(engine).get_indexes(index.table)}
        if present:
            started = time.perf_counter()
            ensure_read_indexes(engine)
            if set(READ_INDEXES) - existing:
                built = {"all": round(time.perf_counter() - started, 2)}
            with engine.begin() as conn:
                conn.exec_driver_sql("ANALYZE")
        else:
            with engine.begin() as conn:
                for name in set(READ_INDEXES) & existing:
                    conn.exec_driver_sql(f"DROP INDEX {name}")
    finally:
        engine.dispose()
    return built


def study_url(backend: str, n: int, workdir: Path, pg) -> str:
    """The database of the N-trial study (written if absent)."""
    from benchmarks.scale_study import write_scale_study

    if backend == "sqlite":
        path = workdir / f"scale{n}.db"
        url = f"sqlite:///{path}"
        exists = path.exists()
    else:
        import sqlalchemy as sa

        name = f"scale{n}"
        base = pg["url"].rsplit("/", 1)[0]
        admin = sa.create_engine(f"{base}/postgres", isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            if not conn.execute(sa.text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first():
                conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        admin.dispose()
        url = f"{base}/{name}"

        engine = sa.create_engine(url)
        with engine.connect() as conn:
            exists = sa.inspect(conn).has_table("studies") and conn.execute(
                sa.text("SELECT count(*) FROM studies WHERE study_name = :n"), {"n": STUDY}).scalar_one() > 0
        engine.dispose()
    if not exists:
        print(f"  writing {n} trials x 50 evaluations to {backend} …", file=sys.stderr)
        done = write_scale_study(url, STUDY, n)
        print(f"  written in {done['seconds']:.0f} s", file=sys.stderr)
    return url


def _shown(value) -> str:
    if value is None:
        return "not drawn"
    return "–" if value == "" else str(value)


def result_rows(results: dict) -> list[list]:
    """One column per storage, size and code; one row per command, page and memory."""
    columns = [(key, label) for key, entry in results.items() for label in ("before", "after") if label in entry]
    rows = [["", *(f"{key.replace('/', ', ')} trials" + (f" ({label})" if label == "before" else "")
                   for key, label in columns)]]

    def row(title, get):
        cells = []
        for key, label in columns:
            try:
                cells.append(_shown(get(results[key][label], results[key])))
            except (KeyError, TypeError):
                cells.append("–")
        rows.append([title, *cells])

    for name in ("status", "export", "report"):
        row(f"`lpstudy {name}` (s)", lambda e, _, n=name: e[n].get("seconds") if "error" not in e[n] else "error")
    row("`status` / `export` / `report` peak memory (MiB)",
        lambda e, _: " / ".join(str(e[n].get("peak_mib", "–")) for n in ("status", "export", "report")))
    row("dashboard: first page as soon as the server answers (s)", lambda e, _: e["pages"]["cold_home"])
    for _, page, _ in PAGES:
        row(f"{page}: first draw / revisit (s)",
            lambda e, _, p=page: f"{_shown(e['pages'][p]['first'])} / {_shown(e['pages'][p]['revisit'])}")
    row("dashboard peak memory (MiB)", lambda e, _: e["pages"]["peak_mib"])
    row("optuna-dashboard study page (s)", lambda e, whole: (
        f"{whole['optuna_dashboard']['first']} (peak {whole['optuna_dashboard']['peak_mib']} MiB)"
        if whole["optuna_dashboard"]["first"] is not None else
        f"not drawn within {whole['optuna_dashboard']['timeout_s']:.0f} s "
        f"(peak {whole['optuna_dashboard']['peak_mib']} MiB)"))
    row("load average (1, 5, 15 min) at start → end", lambda e, _: " → ".join("/".join(x) for x in e["load_average"]))
    return rows


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--backends", default="postgresql,sqlite")
    parser.add_argument("--pg-url", default=None, help="a PostgreSQL server's URL (a database on it per N); "
                                                       "default: a throwaway server")
    parser.add_argument("--workdir", type=Path, default=None, help="where SQLite files and outputs go (kept)")
    parser.add_argument("--before", type=Path, default=None, help="another checkout's code, timed beside this one")
    parser.add_argument("--before-sizes", default="10000", help="the sizes at which --before is timed")
    parser.add_argument("--before-indexes", action="store_true",
                        help="the --before code makes lpstudy's indexes too: keep them for it")
    parser.add_argument("--page-timeout", type=float, default=180.0)
    parser.add_argument("--od-timeout", type=float, default=120.0)
    parser.add_argument("--no-pages", action="store_true")
    parser.add_argument("--pages-for", default="before,after",
                        help="whose dashboard is timed (e.g. after: the before code's pages at 100,000 trials "
                             "take most of an hour on a loaded machine)")
    parser.add_argument("--screenshots", type=Path, default=ROOT / "test-artifacts" / "screenshots")
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    add_result_argument(parser, "scale-reading")
    args = parser.parse_args(argv)
    load_at_start = load_average()

    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="bench_scale_"))
    workdir.mkdir(parents=True, exist_ok=True)
    args.screenshots.mkdir(parents=True, exist_ok=True)
    backends = args.backends.split(",")
    pg = {"server": None, "url": args.pg_url}
    if "postgresql" in backends and pg["url"] is None:
        from tests.pgserver import ThrowawayPostgres

        pg["server"] = ThrowawayPostgres().start()
        pg["url"] = pg["server"].url()
    codes = {"before": args.before.resolve()} if args.before is not None else {}
    codes["after"] = ROOT
    results: dict = {}
    try:
        from playwright.sync_api import sync_playwright

        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            for backend in backends:
                for n in (int(s) for s in args.sizes.split(",")):
                    url = study_url(backend, n, workdir, pg)
                    entry = results.setdefault(f"{backend}/{n}", {})
                    for label, code in codes.items():
                        if label == "before" and str(n) not in args.before_sizes.split(","):
                            continue
                        print(f"{backend} {n} trials, {label}:", file=sys.stderr)
                        indexes = set_read_indexes(url, label == "after" or args.before_indexes)
                        if indexes:
                            entry.setdefault("index_build_s", indexes)
                            print(f"    indexes built: {indexes}", file=sys.stderr)
                        load_before = Path("/proc/loadavg").read_text().split()[:3]
                        entry[label] = time_commands(code, url, workdir)
                        if not args.no_pages and label in args.pages_for.split(","):
                            shots = args.screenshots if n >= 10_000 and label == "after" else None
                            entry[label]["pages"] = time_dashboard(code, url, browser, args.page_timeout, shots,
                                                                   f"scale_{backend}_{n}")
                        entry[label]["load_average"] = [load_before, Path("/proc/loadavg").read_text().split()[:3]]
                    if not args.no_pages:
                        entry["optuna_dashboard"] = time_optuna_dashboard(url, browser, args.od_timeout)
                        print(f"  optuna-dashboard: {entry['optuna_dashboard']}", file=sys.stderr)
                    if args.json:
                        args.json.write_text(json.dumps(results, indent=2))
            browser.close()
    finally:
        if pg["server"] is not None:
            pg["server"].cleanup()
    print(json.dumps(results, indent=2))
    write_result(args.result, None, result_rows(results), title="Reading a big study: commands and dashboard pages",
                 load_at_start=load_at_start,
                 notes="Seconds of wall time: each command a fresh interpreter (imports included); a page's first "
                       "draw in a fresh browser context, its revisit in the same context. Targets at 100,000 trials "
                       "on PostgreSQL: status and export ≤ 2 s, pages first ≤ 4 s and revisit ≤ 3 s, report ≤ 30 s, "
                       "the dashboard ≤ 2 GB.")
    return results


if __name__ == "__main__":
    main()
