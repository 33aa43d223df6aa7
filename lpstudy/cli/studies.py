"""`lpstudy studies` (every study a database holds) and `lpstudy delete-study NAME` (a study and
every row lpstudy wrote for it), on every kind of storage, as Optuna's own CLI has `studies` and
`delete-study`."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from lpstudy.cli import app
from lpstudy.cli.common import quiet_optuna, say
from lpstudy.cli.option_groups import option_groups
from lpstudy.cli.storage_option import StorageChoice
from lpstudy.errors import UserError


@app.command()
@option_groups
def studies(
    *,
    as_json: Annotated[bool, typer.Option("--json", help="Print the studies as one JSON list.")] = False,
    storage: StorageChoice,
) -> None:
    """Every study in the database: kind, trials by state, best value, last activity."""
    from lpstudy.db.urls import redact
    from lpstudy.results.study_list import render_rows, study_rows

    with storage.reader() as reader:
        rows = study_rows(reader)
    if as_json:
        sys.stdout.write(json.dumps(rows) + "\n")
    else:
        sys.stdout.write(render_rows(rows, redact(storage.url())) + "\n")


@app.command("delete-study")
@option_groups
def delete_study(
    *,
    name: Annotated[str, typer.Argument(help="The study to delete.", show_default=False)],
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking for the name again.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Delete even while trials run (their workers are gone).")] = False,
    storage: StorageChoice,
) -> None:
    """Delete a study: its trials, their curves and attributes (asks for its name again unless --yes)."""
    quiet_optuna()
    from lpstudy.study.deletion import delete_study as delete, running_trials

    store = storage.checked_storage().open()
    running_trials(store, name)  # no such study: said before asking anything
    if not yes:
        if not sys.stdin.isatty():
            raise UserError(f"delete-study asks for the study's name again on a terminal; to delete {name!r} "
                            f"without asking, give --yes")
        typed = typer.prompt(f"Type the study's name ({name}) to delete it and all its trials", default="",
                             show_default=False, err=True)
        if typed.strip() != name:
            raise UserError(f"{typed.strip()!r} is not {name!r}; nothing deleted")
    done = delete(store, name, force=force, hint=storage.hint)
    checkpoints = f", {done.checkpoints} checkpoint(s)" if done.checkpoints else ""
    say(f"deleted study {name!r} from {store.display_url}: {done.trials} trial(s), {done.metric_rows} row(s) "
        f"of curves{checkpoints}; the studies left: lpstudy studies{storage.hint}")

