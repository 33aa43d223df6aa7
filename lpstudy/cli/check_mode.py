"""`--check`: a long-running command's own start-up checks, run on the settings it is given, then an
exit without connecting to anything or starting work. A container's settings (its arguments, its
environment, the files its mounts provide) are checked this way before a cluster runs it: every value
is parsed by the code that will use it, every file the command will read is opened, and a mistake
gets the command's own one line and exit status 2 (lpstudy.errors.UserError).

What it cannot check: that a server is reachable, that a password is right, that a study exists
(those need the database), that a GPU is there (that needs the node)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from lpstudy.errors import UserError

CheckOpt = Annotated[bool, typer.Option(
    "--check", help="Check every value and file this command is given (parse them, open the files it will read), "
                    "then exit 0 without connecting or starting work.")]


def _storage(storage, readonly: bool = False) -> str:
    """The storage URL by its kind's rules, nothing opened; its display form (no password)."""
    from lpstudy.db.kinds import storage_at

    return storage_at(storage.url(), readonly=readonly).display_url


def _readable_file(path: str | Path, what: str) -> None:
    try:
        with open(path, "rb") as handle:
            handle.read(1)
    except OSError as exc:
        raise UserError(f"{what} {path}: cannot be read ({exc.strerror})") from None


def _artifacts(location: str | None) -> str:
    """The artifact store as given (--artifacts, else $LPSTUDY_ARTIFACTS): s3://BUCKET, or a folder
    that is there (a volume in a pod)."""
    location = location or os.environ.get("LPSTUDY_ARTIFACTS") or None
    if location is None:
        return "the storage's default"
    if location.startswith("s3://"):
        bucket = location[5:].strip("/")
        if not bucket or "/" in bucket:
            raise UserError(f"--artifacts {location!r}: give s3://BUCKET")
    elif not Path(location).expanduser().is_dir():
        raise UserError(f"--artifacts {location}: no such folder (in a pod: mount the artifact volume there)")
    return location


def _ok(command: str, checked: list[str]) -> None:
    from lpstudy.cli.common import say

    say(f"lpstudy {command} --check: ok · " + " · ".join(checked))
    raise typer.Exit(0)


def check_worker(storage, study: str, devices: str, data: str | None, config: Path | None,
                 metrics_port: int | None, artifacts: str | None) -> None:
    """lpstudy worker --check: the devices' names, the metrics port and linger, the storage URL and
    its retry budget, the corpus and the study file opened and read, the artifact store."""
    from lpstudy.db.outages import retry_budget
    from lpstudy.study.launch import resolve_devices
    from lpstudy.study.telemetry import linger_s, metrics_port as checked_metrics_port

    # the names only: the GPUs are the node's, where the worker will run (--devices refuses a missing one there)
    checked = [f"study {study}", f"devices {','.join(resolve_devices(devices if devices != 'auto' else 'cpu', present=False))}"]
    checked.append(f"metrics port {checked_metrics_port(metrics_port)}, linger {linger_s():g} s")
    checked.append(f"storage {_storage(storage)}, retried {retry_budget():g} s")
    corpus = data or os.environ.get("LPSTUDY_DATA")
    if corpus:
        _readable_file(corpus, "the corpus")
    checked.append(f"corpus {corpus or 'the cache (or a download)'}")
    if config is not None:
        from lpstudy.design.spec import build_spec, read_study_file

        checked.append(f"study file {config}: {build_spec(read_study_file(config)).describe()}")
    checked.append(f"artifacts {_artifacts(artifacts)}")
    _ok("worker", checked)


def check_create(spec, storage, study: str) -> None:
    """lpstudy create --check: the spec (its study file read, every option checked: done before this
    is called) and the storage URL."""
    _ok("create", [f"study {study}: {spec.describe()}", f"storage {_storage(storage)}"])


def check_server(command: str, storage, host: str, port: int, readonly: bool, artifacts: str | None = None) -> None:
    """lpstudy dashboard, optuna-dashboard or storage-proxy --check: the storage URL by its kind's
    rules (the proxy's: a SQL database it can serve), the address, and the artifact store."""
    from lpstudy.db.kinds import storage_at

    served = storage_at(storage.url(), readonly=readonly)
    if command == "storage-proxy":
        served.check_proxy_target()
    checked = [f"storage {served.display_url}", f"listens on {host}:{port}"]
    if command == "optuna-dashboard":
        checked.append(f"artifacts {_artifacts(artifacts)}")
    _ok(command, checked)
