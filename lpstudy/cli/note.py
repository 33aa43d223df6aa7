"""`lpstudy note --study S [--trial N] "text"`: a note (Markdown) on a study or one of its trials,
kept where optuna-dashboard keeps its notes (its save_note), so that optuna-dashboard and lpstudy's
Home and Trials pages show it. A new note replaces the one before, as optuna-dashboard's editor does."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lpstudy.cli import app
from lpstudy.cli.common import StudyOpt, quiet_optuna, say
from lpstudy.cli.option_groups import option_groups
from lpstudy.cli.storage_option import StorageChoice
from lpstudy.errors import UserError

MAX_NOTE_CHARS = 100_000  # a note is read on a page: longer is a file, not a note


@app.command()
@option_groups
def note(
    *,
    text: Annotated[str, typer.Argument(help="The note, in Markdown (replaces the one before; \"\" clears it).",
                                        show_default=False)],
    study: StudyOpt,
    trial: Annotated[Optional[int], typer.Option(help="The trial's number (as status and the pages show it); "
                                                 "without it, the note is the study's.", min=0)] = None,
    storage: StorageChoice,
) -> None:
    """Write a note on a study or a trial, where optuna-dashboard shows notes too."""
    quiet_optuna()
    import optuna
    from optuna.trial import Trial

    from lpstudy.db.optuna_private import trial_id
    from lpstudy.results.reading.notes import note_api

    if len(text) > MAX_NOTE_CHARS:
        raise UserError(f"the note is {len(text):,} characters; at most {MAX_NOTE_CHARS:,} (link a file instead)")
    _, save_note = note_api()  # not installed: one line, before the storage opens
    store = storage.checked_storage().open()
    with store:
        reader = storage.reader()
        with reader:
            _, trials = reader.optuna_study(study)  # no such study: one line, nothing written
        target = optuna.load_study(study_name=study, storage=store.optuna)
        if trial is not None:
            found = [t for t in trials if t.number == trial]
            if not found:
                top = max((t.number for t in trials), default=None)
                held = "it has no trials yet" if top is None else f"its trials are numbered 0 to {top}"
                raise UserError(f"study {study!r} has no trial {trial}; {held}")
            save_note(Trial(target, trial_id(found[0])), text)
        else:
            save_note(target, text)
    what = f"trial {trial} of study {study!r}" if trial is not None else f"study {study!r}"
    say(f"{'cleared the note on' if not text.strip() else 'noted on'} {what}; it shows on the dashboard's Home and "
        f"Trials pages and in `lpstudy optuna-dashboard`")
