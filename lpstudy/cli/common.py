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


def checked_storage_url(storage: str | None, storage_file: str | None) -> str:
    """The storage URL this command uses (--storage, --storage-file, the environment, the default),
    checked by its kind's rules (lpstudy.db.kinds: a port that is a number, no unencoded '@' in a
    password, ...) without connecting or creating anything."""
    from lpstudy.db.kinds import kind_of
    from lpstudy.db.urls import storage_url

    url = storage_url(storage, storage_file)
    kind_of(url)
    return url


def checked_corpus(data: str | None) -> str:
    """The corpus this command's local workers will train on, found now (--data, $LPSTUDY_DATA,
    the cache) or downloaded into the cache, before a study is created or a worker started: one
    line (UserError) when there is none, said once rather than by every worker. Its absolute path,
    handed to the workers."""
    from lpstudy.training.data import resolve_corpus_path  # torch: only where this command trains

    return str(resolve_corpus_path(data).absolute())


def preflight(storage: str | None, storage_file: str | None, data: str | None, trains: bool) -> tuple[str, str | None]:
    """What a command that creates a study or starts workers checks before it does either (search,
    replicate, compare, worker): the storage URL, and where it trains, the corpus. (the URL, the
    corpus's absolute path or None when this command trains nothing here)."""
    url = checked_storage_url(storage, storage_file)
    return url, checked_corpus(data) if trains else None


def work_estimate(n_left: int, preset: str, fixed: dict, workers: int, devices: str, pruned: bool = False) -> str:
    """The trials left (a replicate's cells, a comparison's tuning trials and fold runs) and about
    how long they take, said before any worker starts: with local workers, for them; else for one
    CPU thread and one GPU. `pruned`: some of them may be pruned (a comparison's tuning)."""
    from lpstudy.training.config import resolve_config
    from lpstudy.training.costs import serial_estimate, study_estimate

    steps = resolve_config(preset, {"max_steps": fixed["max_steps"]}).max_steps if "max_steps" in fixed else None
    if workers:
        gpu = devices not in ("cpu",) and not all(d.strip() == "cpu" for d in devices.split(",")) and (
            devices != "auto" or cuda_visible())
        return "runs " + study_estimate(n_left, preset, workers, gpu=gpu, max_steps=steps, pruned=pruned)
    return "left: " + serial_estimate(n_left, preset, max_steps=steps)


def cuda_visible() -> bool:
    import torch

    return torch.cuda.is_available()


def say(message: str) -> None:
    """One line to the user on standard error (rich markup allowed)."""
    from lpstudy.training.progress import say_stderr

    say_stderr(message)


def quiet_optuna() -> None:
    """Optuna's info lines and experimental warnings off (lpstudy.db.optuna_storage.quiet_optuna)."""
    from lpstudy.db.optuna_storage import quiet_optuna as quiet

    quiet()
