"""`lpstudy replay`: what a search method spends to find a grid's best configuration, measured by
replaying samplers and pruners against a grid of real learning curves (lpstudy.results.replay);
`lpstudy export-grid`: a grid study as the compact table file replay reads."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from lpstudy.cli import app
from lpstudy.cli.common import quiet_optuna, say
from lpstudy.cli.option_groups import option_groups
from lpstudy.cli.storage_option import StorageChoice

if TYPE_CHECKING:
    from lpstudy.results.replay.grid_table import GridTable
    from lpstudy.results.replay.result_types import GridReplay, SuiteReport
from lpstudy.errors import UserError
from lpstudy.names import check_study_name

SHIPPED_GRID = "benchmarks/data/grid-mid600.json.gz"
# The suite the search defaults are chosen on (docs/search-cost.md); grid-small300-inf is held out of it.
SUITE_GRIDS = ("benchmarks/data/grid-mid600.json.gz", "benchmarks/data/grid-smoke-inf.json.gz",
               "benchmarks/data/grid-matched800.json.gz")


def _study_names(names: Optional[list[str]]) -> Optional[list[str]]:
    return None if not names else [check_study_name(n) for n in names]


def _grid_name(path: Path) -> str:
    name = path.name.removesuffix(".gz").removesuffix(".json")
    return name.removeprefix("grid-")


def _tables(grids: Optional[list[Path]], suite: bool, study: Optional[list[str]], storage: StorageChoice
            ) -> list[tuple[str, GridTable]]:
    """(name, table) for each grid to replay: files, the shipped suite, or grid studies joined."""
    from lpstudy.results.replay.grid_join import from_studies
    from lpstudy.results.replay.grid_table import read_table

    files = list(grids or []) + ([Path(p) for p in SUITE_GRIDS] if suite else [])
    if files and study is not None:
        raise UserError("give --grid FILE (or --suite) or --study NAME (a grid study in --storage), not both")
    if files:
        names = [_grid_name(f) for f in files]
        if len(set(names)) < len(names):
            raise UserError(f"--grid names a grid twice ({', '.join(names)}); give each grid once")
        return [(name, read_table(f)) for name, f in zip(names, files)]
    if study is None:
        raise UserError(f"give --grid FILE (the shipped grid: --grid {SHIPPED_GRID}; --grid repeats), --suite "
                        "(the shipped suite of grids) or --study NAME, a grid study of your database (--storage URL)")
    with storage.reader() as reader:
        return [("+".join(study), from_studies(reader, study))]


@app.command()
@option_groups
def replay(
    *,
    grid: Annotated[Optional[list[Path]], typer.Option("--grid", help=f"A grid table file (`lpstudy export-grid`), e.g. {SHIPPED_GRID}; repeat it for a suite of grids.")] = None,
    suite: Annotated[bool, typer.Option("--suite", help="Replay the shipped suite of grids (" + ", ".join(Path(p).name for p in SUITE_GRIDS) + ") and rank the methods over it.")] = False,
    study: Annotated[Optional[list[str]], typer.Option("--study", "-s", help="Or a grid study of the database (every cell completed); repeat it to join grid studies that share their fixed settings.",
                                                       callback=_study_names)] = None,
    methods: Annotated[Optional[str], typer.Option(help="SAMPLER+PRUNER[@N][/raceR],... (e.g. tpe+median,random+none,gp+*,cmaes+sha@8,tpe+none@8/race3: @N a spread phase of N trials, /raceR the R leading configurations raced on more folds); default: the catalogue (GP only when named).")] = None,
    seeds: Annotated[int, typer.Option(help="Seeds per method (seed s tunes on fold s mod K). A share of 80 % has a 95 % interval of 58–92 % at 20 seeds and 71–87 % at 100 (Wilson); the shipped suite was scored at 100 or more.", min=1, max=10_000)] = 20,
    budget: Annotated[float, typer.Option(help="Compute per seed, as a fraction of the full grid's (every configuration on every fold).", min=0.001, max=10.0)] = 0.4,
    max_trials: Annotated[int, typer.Option("--max-trials", help="Trials per seed at most.", min=1, max=100_000)] = 2000,
    jobs: Annotated[int, typer.Option(help="Processes that replay seeds side by side.", min=1, max=256)] = 1,
    workers: Annotated[int, typer.Option("--workers", "-w", help="Workers a search runs at once, simulated on one clock (each run takes its stored time a step): the sampler asks beside the running trials, races are taken by whichever worker frees; the same total compute at any count. 1: one trial at a time.", min=1, max=4096)] = 1,
    chart: Annotated[Optional[Path], typer.Option(help="Write the chart of regret against compute here (PNG; with several grids, one file each, named after the grid).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object (grid, methods, ...; with several grids also grids and leave_one_out) on stdout.")] = False,
    no_progress: Annotated[bool, typer.Option("--no-progress", help="No progress bar.")] = False,
    storage: StorageChoice,
) -> None:
    """Replay search methods (sampler + pruner) against grids of real curves; score what each spends."""
    quiet_optuna()
    from lpstudy.paths import check_output_file
    from lpstudy.results.replay.scores import run_replay
    from lpstudy.results.replay.methods import pick_methods
    from lpstudy.results.replay.suite import SuiteResult

    pick_methods(methods)  # a wrong --methods is refused before any grid is read
    if chart is not None:
        check_output_file(chart, "--chart")
    tables = _tables(grid, suite, study, storage)
    results = []
    for name, table in tables:
        picked = pick_methods(methods)
        seed_list = list(range(seeds))
        shape = table.shape()
        if not as_json:
            say(f"grid {name}: {shape.configs} configurations × {shape.folds} folds, {shape.evals} evaluations "
                f"a curve, {shape.steps_total:,} steps in all · {len(picked)} method(s) × {seeds} seeds, "
                f"{budget:g} of the grid's compute each" + (f", {workers} workers at once" if workers > 1 else ""))
        if no_progress:
            result = run_replay(table, picked, seed_list, budget=budget, jobs=jobs, max_trials=max_trials,
                                workers=workers)
        else:
            result = _with_progress(table, picked, seed_list, budget, jobs, max_trials, workers)
        results.append(result)
        if chart is not None:
            from lpstudy.results.replay.chart import write_chart

            path = chart if len(tables) == 1 else chart.with_name(f"{chart.stem}-{name}{chart.suffix}")
            write_chart(result, path)
            if not as_json:
                say(f"chart: {path}")
        if not as_json:
            _render(result.report())
    if chart is None and not as_json:
        say("chart: none written; add --chart replay.png to draw the median regret against compute")
    if len(results) == 1:
        if as_json:
            sys.stdout.write(json.dumps(results[0].to_json()) + "\n")
        return
    report = SuiteResult([name for name, _ in tables], [r.report() for r in results]).report()
    if as_json:
        sys.stdout.write(json.dumps(report.to_plain()) + "\n")
        return
    _render_suite(report)


def _with_progress(table, methods, seeds, budget, jobs, max_trials, workers):
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    from lpstudy.results.replay.scores import run_replay
    from lpstudy.training.progress import stderr_console

    with Progress(TextColumn("[bold]replay[/] {task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), TimeRemainingColumn(), console=stderr_console, transient=True) as progress:
        task = progress.add_task("", total=len(methods) * len(seeds))

        def done(method, seed) -> None:
            progress.update(task, advance=1, description=f"{method.name} seed {seed}")

        return run_replay(table, methods, seeds, budget=budget, jobs=jobs, max_trials=max_trials, on_done=done,
                          workers=workers)


def _duration(seconds) -> str:
    if seconds is None:
        return "–"
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


def _fraction(x) -> str:
    return "∞" if x is None else f"{x:.3f}"


def _share(share: float, ci) -> str:
    return f"{share:.0%} [{ci[0]:.0%}, {ci[1]:.0%}]"


def _render(report: GridReplay) -> None:
    from rich.console import Console
    from rich.table import Table

    from lpstudy.results.replay.scores import TARGET_F
    from lpstudy.training.progress import stderr_console

    console = stderr_console if stderr_console.is_terminal else Console(file=sys.stderr, width=220)

    best = report.best
    config = " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in best.config.items())
    say(f"best configuration: {config} · mean loss {best.loss:.4f} over the folds · ε = {best.epsilon:.4f} "
        f"(the fold spread pooled over configurations, at least 0.5 % of the loss)")
    table = Table(title=f"What the user gets (the returned configuration's mean loss over all folds), search "
                        f"efficiency (against the tuning fold's best) and generalisation (on the other folds), "
                        f"{report.seeds} seeds, 95 % intervals")
    for column in ("method", "within 2 % [95 %]", "within 1 %", "mean regret", "reach ε [95 %]", "F median [95 %]",
                   f"F ≤ {TARGET_F:.2f}", "other folds [95 %]", "ever", "trials", "pruned", "capped",
                   "to its choice", "races", "repeats"):
        table.add_column(column, justify="left" if column == "method" else "right", no_wrap=True)
    for m in report.methods:
        low, high = m.f_ci
        name = m.name + (" (default)" if m.default else "")
        regret = "–" if m.regret_nats_mean is None else f"{m.regret_nats_mean:.4f}"
        table.add_row(name, _share(m.hold_share, m.hold_ci), f"{m.hold_tight_share:.0%}", regret,
                      _share(m.reach_share, m.reach_ci),
                      f"{_fraction(m.f_median)} [{_fraction(low)}, {_fraction(high)}]", f"{m.target_share:.0%}",
                      _share(m.general_share, m.general_ci), f"{m.ever_share:.0%}",
                      f"{m.trials_median:.0f}", f"{m.pruned_share:.0%}", f"{m.capped_share:.0%}",
                      _duration(m.chosen_at_median), f"{m.race_share:.0%}", f"{m.duplicate_share:.0%}")
    console.print(table)
    say("within 2 % (1 %): the share of seeds whose returned configuration's mean loss over all the grid's folds is "
        "within 2 % (1 %) of the best configuration's, at the end of --budget (Wilson interval); mean regret: the "
        "mean over seeds of that loss minus the best's, in nats; methods ranked on these · "
        "search efficiency: reach ε is the share of seeds whose returned configuration is within ε of the best on "
        "the fold it was tuned on, at the end of --budget (Wilson interval); F the fraction of the grid's compute "
        "spent until then (median, bootstrap interval; ∞: never) · generalisation: other folds is the share whose "
        "returned configuration is within ε of the best mean over the folds it was not tuned on · ever: within ε "
        "of the best mean over all folds at some point · capped: seeds stopped before their budget (stuck "
        "re-proposing a pruned configuration, or at --max-trials) · to its choice: the simulated wall-clock time "
        f"({report.workers} worker(s), each run its stored seconds a step) until the search first returned "
        "the configuration it returns at the end (median) · races: the compute races spent · repeats: the compute "
        "spent on a grid configuration and fold already run or running (a sampled point that maps to a grid point "
        "already taken)")
    rho = report.rank_correlation
    if rho:
        steps = list(rho)
        shown = [steps[i] for i in sorted({0, len(steps) // 4, len(steps) // 2, len(steps) - 2}) if 0 <= i < len(steps)]
        say("rank correlation of the loss at a step with the final loss (Spearman, every run): "
             + ", ".join(f"step {s}: {rho[s]:.2f}" for s in shown))
    versus = report.default_vs_random
    if versus is not None:
        say(f"default at F = {versus.budget:.3f}: {versus.default_reach_share:.0%} of seeds within ε; random "
            f"search at twice that: {versus.random_reach_share:.0%}")
        say(f"goal F ≤ {versus.target_f:g}: the default within ε by then in {versus.default_target_share:.0%} "
            f"of seeds; random search by {2 * versus.target_f:g} in {versus.random_twice_target_share:.0%}")


def _render_suite(report: SuiteReport) -> None:
    from rich.console import Console
    from rich.table import Table

    from lpstudy.training.progress import stderr_console

    console = stderr_console if stderr_console.is_terminal else Console(file=sys.stderr, width=180)
    names = report.grid.suite
    table = Table(title=f"The suite: {len(names)} grids, methods ranked by their worst share of seeds within 2 % of "
                        "the best all-fold loss, then by their mean median regret")
    for column in ("method", "worst within 2 %", *names):
        table.add_column(column, justify="left" if column == "method" else "right", no_wrap=True)
    for m in report.methods:
        default = f" (default on {', '.join(m.default_on)})" if m.default_on else ""
        cells = [f"{_share(m.hold_shares[n], m.hold_cis[n])} · reach {m.reach_shares[n]:.0%}" for n in names]
        table.add_row(m.name + default, f"{m.worst_hold_share:.0%}", *cells)
    console.print(table)
    say("each grid's cell: share of seeds whose returned configuration's mean loss over all folds is within 2 % of the "
        "best's at the end of the budget [Wilson 95 %] · reach: within ε of the tuning fold's best")
    say(f"leader: {report.leader}; not told apart from it on any grid (McNemar's exact test on within 2 %, sign "
        f"test on regret, paired over seeds, 5 %): {', '.join(a.name for a in report.alike)}")
    loo = Table(title="Leave one grid out: the method the other grids choose, scored on the grid left out")
    for column in ("left out", "chosen by the others", "its within 2 %", "its regret", "best there",
                   "best's within 2 %", "told apart"):
        loo.add_column(column, justify="left" if column in ("left out", "chosen by the others", "best there") else "right",
                       no_wrap=True)
    for row in report.leave_one_out:
        regret = "–" if row.chosen_regret is None else f"{row.chosen_regret:.4f}"
        loo.add_row(row.held_out, row.chosen, _share(row.chosen_hold_share, row.chosen_hold_ci),
                    regret, row.best, _share(row.best_hold_share, row.best_hold_ci),
                    "yes" if row.told_apart else "no")
    console.print(loo)
    say(f"chosen on the whole suite (among methods with a spread phase, which a first run needs; the simplest of "
        f"those not told apart from the leader): {report.chosen}")


@app.command("export-grid")
@option_groups
def export_grid(
    *,
    study: Annotated[list[str], typer.Option("--study", "-s", help="A grid study (every cell completed); repeat it to join grid studies run in parts (they must share every fixed setting).", callback=_study_names)],
    output: Annotated[Path, typer.Option("--output", "-o", help="The table file to write (gzipped JSON, e.g. grid.json.gz).")],
    storage: StorageChoice,
) -> None:
    """A grid study (or grid studies run in parts, joined) as a compact table file (every configuration × fold: curve, steps, wall time, diverged)."""
    from lpstudy.names import shell_quoted
    from lpstudy.paths import check_output_file
    from lpstudy.results.replay.grid_join import from_studies
    from lpstudy.results.replay.grid_table import write_table

    check_output_file(output, "--output")
    with storage.reader() as reader:
        table = from_studies(reader, study)
    studies = " ".join(f"--study {shell_quoted(name)}" for name in study)
    table.source["command"] = f"lpstudy export-grid {studies} -o {output}"
    write_table(table, output)
    shape = table.shape()
    size = output.stat().st_size
    joined = f" from {len(study)} grid studies" if len(study) > 1 else ""
    say(f"wrote {output} ({size / 1024:.0f} KiB){joined}: {shape.configs} configurations × {shape.folds} folds, "
         f"{shape.evals} evaluations a curve, {shape.steps_total:,} steps; replay it: "
         f"lpstudy replay --grid {output}")
