"""`lpstudy studies` (every study a database holds) and `lpstudy delete-study NAME` (a study and
every row lpstudy wrote for it), on every kind of storage, as Optuna's own CLI has `studies` and
`delete-study`."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Optional

import typer

from lpstudy.cli import app
from lpstudy.cli.common import quiet_optuna, say
from lpstudy.cli.option_groups import option_groups
from lpstudy.cli.storage_option import StorageChoice
from lpstudy.errors import UserError
from lpstudy.names import study_name_option


@app.command()
@option_groups
def studies(
    *,
    as_json: Annotated[bool, typer.Option("--json", help="Print the studies as one JSON list.")] = False,
    storage: StorageChoice,
) -> None:
    """Every study in the database: kind, trials by state, best value, last activity."""
    from lpstudy.db.urls import redact
    from lpstudy.results.reading.study_list import render_rows, study_rows

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
    name: Annotated[Optional[str], typer.Argument(help="The study to delete (or give --study).", show_default=False,
                                                  callback=study_name_option)] = None,
    study: Annotated[Optional[str], typer.Option("--study", "-s", help="The study to delete, as every other command "
                                                 "names it.", callback=study_name_option)] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Delete without asking for the name again.")] = False,
    force: Annotated[bool, typer.Option("--force", help="Delete even while trials run (their workers are gone).")] = False,
    storage: StorageChoice,
) -> None:
    """Delete a study: its trials, their curves and attributes; a comparison with its arms' studies
    (asks for its name again unless --yes)."""
    quiet_optuna()
    from lpstudy.study.deletion import delete_study as delete, running_trials, studies_of

    if name and study and name != study:
        raise UserError(f"two studies named: {name!r} and --study {study!r}; delete-study deletes one, give it once")
    name = name or study
    if not name:
        raise UserError("which study? give its name: lpstudy delete-study --study NAME (lpstudy studies lists them)")
    store = storage.checked_storage().open()
    running_trials(store, name)  # no such study: said before asking anything
    arms = len(studies_of(store, name)) - 1
    with_arms = f" and its {arms} arm studies" if arms else ""
    if not yes:  # the name again: typed on a terminal, or piped (echo NAME | lpstudy delete-study NAME)
        if sys.stdin.isatty():
            typed = typer.prompt(f"Type the study's name ({name}) to delete it{with_arms} and all their trials",
                                 default="", show_default=False, err=True)
        else:
            try:
                typed = sys.stdin.readline()
            except (OSError, ValueError):  # no input to read (closed)
                typed = ""
        if typed.strip() != name:
            raise UserError(f"{typed.strip()!r} is not {name!r}; nothing deleted (give the name again on standard "
                            f"input, or --yes to delete without asking)")
    done = delete(store, name, force=force, hint=storage.hint)
    checkpoints = f", {done.checkpoints} checkpoint(s)" if done.checkpoints else ""
    say(f"deleted study {name!r}{with_arms} from {store.display_url}: {done.trials} trial(s), {done.metric_rows} row(s) "
        f"of curves{checkpoints}; the studies left: lpstudy studies{storage.hint}")
