"""`lpstudy compare`: an equal-budget comparison of the values of one field (lpstudy.study.compare):
create or resume it, optionally run local workers, and print where it stands with the paired table."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lpstudy.cli import app, parse_assignments
from lpstudy.cli.study import StorageOpt, StudyOpt, _quiet_optuna, _say


@app.command()
def compare(
    study: StudyOpt,
    p: Annotated[Optional[str], typer.Option("--p", help="The arms: p values, comma-separated (shortcut for --arms p=...).")] = None,
    arms: Annotated[Optional[str], typer.Option(help="The arms as FIELD=A,B,C: any training field (e.g. n_layer=2,4).")] = None,
    reference: Annotated[Optional[str], typer.Option(help="The reference arm's value (default p = 2, else the first).")] = None,
    tune: Annotated[str, typer.Option(help="Fields tuned in every arm, comma-separated (default ranges: lr 1e-4:1e-2, gain_init 2:64).")] = "lr,gain_init",
    search: Annotated[Optional[list[str]], typer.Option("--search", help="A tuned field's range: --search lr=3e-4:3e-2 (repeatable).")] = None,
    budget: Annotated[int, typer.Option(help="Tuning trials per arm (TPE with the median pruner, on fold 0).", min=1)] = 20,
    folds: Annotated[int, typer.Option(help="K: each arm's best configuration runs on each of the K folds.", min=2)] = 5,
    preset: Annotated[str, typer.Option(help="paper, cpu or smoke.")] = "cpu",
    set_: Annotated[Optional[list[str]], typer.Option("--set", help="Fix any other field: --set max_steps=500 (repeatable).")] = None,
    sampler_seed: Annotated[Optional[int], typer.Option(help="Seed of every arm's sampler.")] = None,
    workers: Annotated[int, typer.Option(help="Also run this many local worker processes and wait for them.", min=0)] = 0,
    devices: Annotated[str, typer.Option(help="With --workers: auto, cpu, or a list shared out round-robin.")] = "auto",
    data: Annotated[Optional[str], typer.Option(help="With --workers: the text file to train on.")] = None,
    storage: StorageOpt = None,
) -> int:
    """Compare the values of one field fairly: the same tuning budget per arm, then K folds each."""
    _quiet_optuna()
    from lpstudy.db.optuna_storage import open_storage
    from lpstudy.db.urls import storage_url
    from lpstudy.errors import UserError
    from lpstudy.study.compare import create_compare, make_plan

    if (p is None) == (arms is None):
        raise UserError("give the arms: --p 1,2,3,4 or --arms FIELD=A,B,C (one of them)")
    factor, _, values = ("p", "=", p) if p is not None else arms.partition("=")
    if not values:
        raise UserError(f"--arms takes FIELD=A,B,C, got {arms!r}")
    plan = make_plan(factor.strip(), values.split(","), tune.split(","), budget, folds, preset, reference,
                     parse_assignments(search, "--search"), parse_assignments(set_, "--set"), sampler_seed)
    url = storage_url(storage)
    store = open_storage(url, create_tables=True)
    created = create_compare(store, study, plan)
    _say(f"comparison {study!r} {'created' if created else 'resumed'} in {store.display_url}: "
         f"{len(plan.values)} arms of {plan.factor} · {plan.budget} tuning trials each on fold "
         f"{plan.tune_fold} · then {plan.folds} folds each")
    code = 0
    if workers:
        from lpstudy.study.launch import resolve_devices, spawn_workers
        from lpstudy.study.worker import WorkerOptions

        available = resolve_devices(devices)
        code = spawn_workers(WorkerOptions(study=study, storage=url, data=data, show_progress=False),
                             [available[i % len(available)] for i in range(workers)], say=_say)
    else:
        _say(f"start workers anywhere: lpstudy worker --study {study}")
    render_compare(url, study)
    return code


def render_compare(url: str, study: str) -> None:
    """The arms' budgets and the paired table, as rich tables on standard output."""
    from rich.console import Console
    from rich.table import Table

    from lpstudy.results.compare import load_compare

    data = load_compare(url, study)
    console = Console()
    budgets = Table(title=f"tuning ({data.plan.budget} trials per arm)")
    for col in ("arm", "spent", "complete", "pruned", "diverged", "best loss", "lr", "gain_init"):
        budgets.add_column(col)
    for _, r in data.budgets.iterrows():
        budgets.add_row(r["arm"], str(r["spent"]), str(r["complete"]), str(r["pruned"]), str(r["diverged"]),
                        f"{r['best_loss']:.4f}", f"{r['best_lr']:.3g}", f"{r['best_gain_init']:.3g}")
    console.print(budgets)
    paired = data.paired
    if paired.empty:
        console.print(f"paired table: none yet (needs the {data.reference} arm and another on the same folds)")
        return
    table = Table(title=f"final validation loss on {data.plan.folds} folds, paired against {data.reference} (95 % CI)")
    for col in ("arm", "pairs", "mean", "diff", "95 % CI", "relative", "p-value"):
        table.add_column(col)
    for _, r in paired.iterrows():
        table.add_row(r["arm"], str(r["n_pairs"]), f"{r['mean_loss']:.4f}", f"{r['mean_diff']:+.4f}",
                      f"[{r['ci_low']:+.4f}, {r['ci_high']:+.4f}]", f"{100 * r['relative_diff']:+.2f} %",
                      f"{r['p_value']:.3g}")
    console.print(table)
