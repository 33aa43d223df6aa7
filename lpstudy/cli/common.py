"""What the command modules share, each declared once: the study option, FIELD=VALUE pairs, the
checks before a command creates a study or starts workers, one line to the user and a quiet Optuna
(the storage options: storage_option; a study's options: study_options). Not a command module: it
registers nothing."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer

from lpstudy.errors import UserError
from lpstudy.names import study_name_option

if TYPE_CHECKING:
    from lpstudy.cli.storage_option import StorageChoice
    from lpstudy.db.kinds.base import StudyStorage

StudyOpt = Annotated[str, typer.Option("--study", "-s", help="The study's name.", callback=study_name_option)]


def parse_assignments(pairs: list[str] | None, flag: str = "--set") -> dict[str, str]:
    """FIELD=VALUE pairs of a repeatable option (--set, --search) as a dict."""
    out = {}
    for pair in pairs or []:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{flag} takes FIELD=VALUE, got {pair!r}")
        out[key.strip()] = value.strip()
    return out


def checked_corpus(data: str | None) -> str:
    """The corpus this command's local workers will train on, found now (--data, $LPSTUDY_DATA,
    the cache) or downloaded into the cache, before a study is created or a worker started: one
    line (UserError) when there is none, said once rather than by every worker. Its absolute path,
    handed to the workers."""
    from lpstudy.training.data import resolve_corpus_path  # torch: only where this command trains

    return str(resolve_corpus_path(data).absolute())


def preflight(storage: StorageChoice, data: str | None, trains: bool, creates: bool = False
              ) -> tuple[StudyStorage, str | None]:
    """What a command that creates a study or starts workers checks before it does either (search,
    create, replicate, compare, worker): the storage URL, and where it trains, the corpus. (the
    storage, nothing opened yet: the command's one, which it uses until it closes it; the corpus's
    absolute path or None when this command trains nothing here). creates: the storage waits for a
    database that starts late (lpstudy.study.studies.creating_storage)."""
    if creates:
        from lpstudy.study.studies import creating_storage

        checked = creating_storage(storage.url())
    else:
        checked = storage.checked_storage()
    return checked, checked_corpus(data) if trains else None


def check_port_free(host: str, port: int) -> None:
    """UserError (one line) when this machine cannot listen on host:port (busy, or not an address
    of this machine), before a server (dashboard, storage proxy) starts; host may be bracketed IPv6."""
    import socket

    address = host.strip("[]")
    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((address or "0.0.0.0", port))
        except OSError as exc:
            raise UserError(f"cannot listen on {host}:{port} ({exc.strerror}); "
                            "pick another --port or stop what holds it") from None


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


def checked_threshold(value: float | None, flag: str = "--threshold") -> float | None:
    """A loss threshold a command takes (`report`, `verdict`), refused by the one rule of a study's
    loss threshold (lpstudy.design.options: OPTIONS["loss_threshold"], above 0 and finite): one line."""
    from lpstudy.design.options import OPTIONS

    allowed = OPTIONS["loss_threshold"]
    if value is not None and not allowed.within(value):
        raise UserError(f"{flag} must be in {allowed.describe_bound()}, got {value!r}")
    return value


def checked_share(value: float, flag: str) -> float:
    """A margin given as a share (verdict's --convergence-rope), by --rope's rule: above 0 (at 0 no arm
    can ever be equivalent) and at most 1: one line."""
    import math

    if not math.isfinite(value) or not 0 < value <= 1:
        raise UserError(f"{flag} {value:g} must be above 0 (at 0 no arm can ever be equivalent) and at most 1: "
                        f"a share of the reference's restricted mean steps, e.g. {flag} 0.05")
    return value


def stage_folds(folds: int, max_folds: int | None, until_decided: bool, default_folds: int) -> int:
    """K for `replicate` and `compare`, one rule: --folds, or with --until-decided --max-folds (the
    folds the stages draw from). --max-folds without --until-decided, or beside a --folds that says
    another K, is refused in one line (it was taken without a word)."""
    if max_folds is None:
        return folds
    if not until_decided:
        raise UserError("--max-folds goes with --until-decided (without it, --folds sets K)")
    if folds != default_folds and folds != max_folds:
        relation = "below" if max_folds < folds else "above"
        raise UserError(f"--max-folds {max_folds} is {relation} --folds {folds}: with --until-decided both name K, the "
                        f"folds the stages draw from; give one of them")
    return max_folds
