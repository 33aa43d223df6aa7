"""What the command modules share, each declared once: the storage, storage-file and study
options, the options of a study's search space, FIELD=VALUE pairs, one line to the user and a quiet
Optuna. Not a command module: it registers nothing."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from lpstudy.errors import UserError
from lpstudy.names import study_name_option

StorageOpt = Annotated[Optional[str], typer.Option(
    "--storage", help="Study database URL: sqlite:///FILE, postgresql+psycopg://USER:PW@HOST/DB, "
                      "journal:///FILE or grpc://HOST:PORT (default $LPSTUDY_STORAGE, else sqlite:///storage/lpstudy.db).")]
StorageFileOpt = Annotated[Optional[str], typer.Option(
    "--storage-file", help="A file holding the storage URL (chmod 600): keeps its password out of the "
                           "process list, where `ps` shows it to every user (default $LPSTUDY_STORAGE_FILE).")]
StudyOpt = Annotated[str, typer.Option("--study", "-s", help="The study's name.", callback=study_name_option)]

# A study's search space on the command line (create, search); --config and --search say the rest.
PSpaceOpt = Annotated[Optional[str], typer.Option("--p", help="p: a value, LOW:HIGH, LOW:HIGH,inf or A,B,C (default 1:4).")]
LrSpaceOpt = Annotated[Optional[str], typer.Option(help="Learning rate: a value, LOW:HIGH (log scale) or A,B (default 1e-4:1e-2).")]
GainSpaceOpt = Annotated[Optional[str], typer.Option(help="Initial gain: a value, LOW:HIGH (log scale) or A,B (default 2:64).")]


def parse_assignments(pairs: list[str] | None, flag: str = "--set") -> dict[str, str]:
    """FIELD=VALUE pairs of a repeatable option (--set, --search) as a dict."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{flag} takes FIELD=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def space_entries(set_: list[str] | None, search: list[str] | None, named: dict[str, object]) -> dict:
    """A study's entries from the command line: --set, then --search, then the named options
    (--p, --lr, ...) that were given, each later one winning."""
    entries: dict = {}
    entries.update(parse_assignments(set_, "--set"))
    entries.update(parse_assignments(search, "--search"))
    entries.update({name: value for name, value in named.items() if value is not None})
    return entries


def say(message: str) -> None:
    """One line to the user on standard error (rich markup allowed)."""
    from lpstudy.training.progress import say_stderr

    say_stderr(message)


def quiet_optuna() -> None:
    """Optuna's info lines and experimental warnings off: a command prints its own lines."""
    import warnings

    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    warnings.filterwarnings("ignore", category=FutureWarning, module="optuna")
