"""`lpstudy dashboard`, `lpstudy optuna-dashboard`, `lpstudy report`: look at a study without
changing it.

    lpstudy dashboard --storage sqlite:///storage/lpstudy.db [--port 8501] [--host 127.0.0.1]
    lpstudy optuna-dashboard --storage ...                # Optuna's own dashboard, same data
    lpstudy report --study lp-search -o report.html       # the same figures in one offline HTML file

The storage URL reaches the Streamlit app through the environment ($LPSTUDY_STORAGE), never the
command line of the server process, so a password does not show in `ps`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from lpstudy.cli import app
from lpstudy.cli.check_mode import CheckOpt, check_server
from lpstudy.cli.common import StudyOpt, check_port_free
from lpstudy.cli.option_groups import option_groups
from lpstudy.cli.storage_option import StorageChoice
from lpstudy.errors import UserError
from lpstudy.names import closest_study_names, no_such_study, study_name_option
from lpstudy.db.urls import STORAGE_ENV, redact

APP_DIR_ENV = "LPSTUDY_APP_DIR"
APP_ENTRY = "dashboard.py"
# Where the Streamlit pages live: a source checkout (editable install) or the container image.
APP_DIR_CANDIDATES = (Path(__file__).resolve().parents[2] / "app", Path("/opt/lpstudy/app"))

# The server imports what every page needs before it listens, so that the first visitor does not
# wait for pandas, Plotly, SciPy and Optuna to import, and starts reading the study that visitor
# sees (app/read_ahead.py: into the pages' own copy, in the background); then it is `streamlit run`
# as usual (sys.argv: -c run APP_DIR/dashboard.py ...).
PRELOAD_AND_RUN_STREAMLIT = (
    "import pandas, plotly.graph_objects, plotly.colors, sqlalchemy, scipy.special, optuna.importance; "
    "import lpstudy.results.analysis, lpstudy.results.pages, lpstudy.results.reading.frames, lpstudy.results.export; "
    "import os, sys, threading, webbrowser; "
    "sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[2]))); from read_ahead import read_ahead; "
    "read_ahead(os.environ['LPSTUDY_STORAGE'], os.environ.get('LPSTUDY_DASHBOARD_STUDY')); "
    "url = os.environ.pop('LPSTUDY_OPEN_BROWSER', ''); "
    "url and threading.Timer(3.0, webbrowser.open, [url]).start(); "
    "from streamlit.web.cli import main; sys.argv[0] = 'streamlit'; main()"
)

def app_home(app_dir: Path | None = None) -> Path:
    """app/dashboard.py, the Streamlit dashboard's entry; UserError when it cannot be found."""
    candidates = [app_dir] if app_dir else [Path(p) for p in filter(None, [os.environ.get(APP_DIR_ENV)])]
    candidates += [] if app_dir else list(APP_DIR_CANDIDATES)
    for folder in candidates:
        if (folder / APP_ENTRY).is_file():
            return folder / APP_ENTRY
    raise UserError(f"cannot find the dashboard (app/{APP_ENTRY}); run from a source checkout, or set "
                    f"{APP_DIR_ENV} (or --app-dir) to the folder that holds {APP_ENTRY} and views/")


@app.command()
@option_groups
def dashboard(
    *,
    storage: StorageChoice,
    study: Annotated[Optional[str], typer.Option(help="The study to open first (any study can be chosen in the app).", callback=study_name_option)] = None,
    port: Annotated[int, typer.Option(help="Port to serve on.", min=1, max=65535)] = 8501,
    host: Annotated[str, typer.Option(help="Address to listen on; 0.0.0.0 for every interface.")] = "127.0.0.1",
    headless: Annotated[bool, typer.Option("--headless/--browser", help="Do not open a browser window.")] = False,
    app_dir: Annotated[Optional[Path], typer.Option(help=f"Folder of dashboard.py and views/ (default: found, or ${APP_DIR_ENV}).")] = None,
    check: CheckOpt = False,
) -> None:
    """Open the study dashboard (Streamlit): the effect of p on convergence and stability, live.
    It only reads: on PostgreSQL, give it a read-only role."""
    if check:
        app_home(app_dir)  # the app's files are there
        check_server("dashboard", storage, host, port, readonly=True)
    reader = storage.reader()  # the URL parsed and checked once; one engine, closed before the server
    url = reader.url
    home = app_home(app_dir)
    check_port_free(host, port)
    with reader:
        reader.check_readable()  # a mistyped path, a wrong password: one line now, not an error page later
        if study:
            check_study_is_not_mistyped(reader, study)
    env = dict(os.environ)
    env[STORAGE_ENV] = url
    env.setdefault("STREAMLIT_BROWSER_GATHER_USAGE_STATS", "false")
    if study:
        env["LPSTUDY_DASHBOARD_STUDY"] = study
    if not headless:
        # Streamlit itself runs headless (otherwise its first run asks for an e-mail address on the
        # terminal); the browser is opened for it once the server is up.
        env["LPSTUDY_OPEN_BROWSER"] = f"http://{_shown_host(host)}:{port}"
    argv = [sys.executable, "-c", PRELOAD_AND_RUN_STREAMLIT, "run", str(home),
            "--server.port", str(port), "--server.address", host,
            "--server.headless", "true",
            "--server.fileWatcherType", "none", "--server.runOnSave", "false",
            "--browser.gatherUsageStats", "false", "--theme.base", "light",
            "--client.toolbarMode", "minimal"]
    print(f"lpstudy dashboard: {redact(url)} (read-only) at http://{_shown_host(host)}:{port}", flush=True)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execvpe(argv[0], argv, env)  # the server replaces this process: stopping it stops the server


def check_study_is_not_mistyped(reader, study: str) -> None:
    """UserError (one line, the closest names) for a --study that the database does not hold while
    it holds studies of a close name: a typo, not a study still to be created (a dashboard may start
    before its study exists, and then shows it once it does). reader: the command's one reader."""
    from lpstudy.errors import StudyUnavailable
    from lpstudy.results.reading.frames import study_infos

    try:
        names = [info.name for info in study_infos(reader)]
    except StudyUnavailable:
        return  # the page says what is wrong with the database
    if study not in names and closest_study_names(study, names):
        raise UserError(no_such_study(study, redact(reader.url), names))


def _shown_host(host: str) -> str:
    return "localhost" if host in ("0.0.0.0", "::", "", "127.0.0.1") else host


@app.command("optuna-dashboard")
@option_groups
def optuna_dashboard(
    *,
    storage: StorageChoice,
    port: Annotated[int, typer.Option(help="Port to serve on.", min=1, max=65535)] = 8080,
    host: Annotated[str, typer.Option(help="Address to listen on; 0.0.0.0 for every interface.")] = "127.0.0.1",
    artifacts: Annotated[Optional[str], typer.Option(
        help="The workers' artifact store (their checkpoints): a folder or s3://BUCKET (default "
             "$LPSTUDY_ARTIFACTS, else FILE.artifacts beside a SQLite or journal file).")] = None,
    check: CheckOpt = False,
) -> None:
    """Serve Optuna's own dashboard on the same database, read-only where the database allows it
    (SQLite opened with mode=ro, PostgreSQL in read-only transactions: its edit buttons fail), with
    the trials' checkpoints from the workers' artifact store."""
    from lpstudy.db.kinds import storage_at

    if check:
        check_server("optuna-dashboard", storage, host, port, readonly=True, artifacts=artifacts)
    served = storage_at(storage.url(), readonly=True)  # the URL checked
    url = served.url
    check_port_free(host, port)
    import optuna_dashboard as od

    from lpstudy.study.checkpoints import artifact_location, artifact_store

    backend = served.open().optuna
    location = artifact_location(served, artifacts)
    # A folder that is not there holds no checkpoint yet: the dashboard never makes one.
    store = artifact_store(location) if location and (location.startswith("s3://")
                                                      or Path(location).expanduser().is_dir()) else None
    shown = f" · checkpoints from {location}" if store is not None else ""
    print(f"lpstudy optuna-dashboard: {redact(url)} (read-only) at http://{_shown_host(host)}:{port}{shown}",
          flush=True)
    try:
        od.run_server(backend, host=host, port=port, artifact_store=store)
    except KeyboardInterrupt:
        pass


@app.command()
@option_groups
def report(
    *,
    study: StudyOpt,
    storage: StorageChoice,
    output: Annotated[Path, typer.Option("--output", "-o", help="The HTML file to write.")] = Path("report.html"),
    threshold: Annotated[Optional[float], typer.Option(help="Loss threshold for 'steps to reach' (default: the study's).")] = None,
    bins: Annotated[Optional[int], typer.Option(help="Number of p bins (default: exact values for a grid, else 8).", min=1)] = None,
    trials: Annotated[Optional[str], typer.Option("--trials", help="Trial numbers to compare, e.g. 3,5,8 or 3-5: their "
                                                  "curves overlaid and their configurations side by side.")] = None,
    plotlyjs: Annotated[str, typer.Option("--plotlyjs", help="inline: plotly.js packed inside (2 MB; opens offline); "
                                          "cdn: loaded from Plotly's CDN (the file is the figures alone; needs the "
                                          "network).")] = "inline",
) -> None:
    """Write the dashboard's figures for one study into one HTML file that works offline."""
    from lpstudy.paths import check_output_file
    from lpstudy.results.report import write_report
    from lpstudy.cli.common import checked_threshold

    checked_threshold(threshold)  # a study's loss threshold: the same rule
    from lpstudy.results.report import PLOTLYJS

    if plotlyjs not in PLOTLYJS:
        raise UserError(f"--plotlyjs takes {' or '.join(PLOTLYJS)}, got {plotlyjs!r}")
    picked = None
    if trials is not None:
        from lpstudy.results.picked_runs import parse_trial_numbers

        picked = parse_trial_numbers(trials)
    reader = storage.reader()  # the URL checked first, then the output
    check_output_file(output, "--output")
    with reader:
        written = write_report(reader, study, output, threshold=threshold, bins=bins, trials=picked, plotlyjs=plotlyjs)
    opens = "opens offline" if plotlyjs == "inline" else "loads plotly.js from its CDN when opened"
    print(f"lpstudy report: {study} → {written} ({written.stat().st_size / 1e6:.1f} MB, {opens})")
