"""The `lpstudy` command line. Each group of commands lives in its own module and registers itself
on `app`; `main` turns a user's mistake into one line on standard error and exit status 2, a database
that could not be reached into one line and exit status 75 (lpstudy.errors)."""

from __future__ import annotations

import sys

import typer

try:  # typer ≥ 0.25 vendors click
    from typer._click import exceptions as click_exceptions
except ImportError:  # pragma: no cover - older typer on top of click
    from click import exceptions as click_exceptions  # type: ignore[no-redef]  # the same module, before typer vendored it

from lpstudy.errors import UserError

app = typer.Typer(
    name="lpstudy",
    help="Hyperparameter studies of Lp-QKNorm attention: train, search, watch, export.",
    no_args_is_help=True,
    invoke_without_command=False,
    pretty_exceptions_enable=False,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    # Plain help (click's): it wraps at the terminal's width, piped too, and never cuts a value
    # (rich's option tables cut long words such as the default storage URL at 80 columns).
    rich_markup_mode=None,
)


def _print_version(value: bool) -> None:
    if value:
        from lpstudy import __version__

        print(f"lpstudy {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", callback=_print_version, is_eager=True,
                                 help="Print lpstudy's version and exit."),
) -> None:
    """Hyperparameter studies of Lp-QKNorm attention: train, search, watch, export."""


def fail(message: str, code: int = 2) -> None:
    print(f"lpstudy: error: {message}", file=sys.stderr)
    sys.exit(code)


def one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A warning as one line on standard error (Python's own adds its source file and line of code)."""
    text = str(message).strip().splitlines()
    print(f"lpstudy: warning: {text[0] if text else category.__name__}", file=file or sys.stderr)


def main(argv: list[str] | None = None) -> None:
    import warnings

    from lpstudy.training.threads import prefer_passive_wait

    prefer_passive_wait()  # before torch loads OpenMP: its waiting threads sleep beside other work
    warnings.showwarning = one_line_warning
    _register_commands()
    try:
        result = app(args=argv, prog_name="lpstudy", standalone_mode=False)
    except UserError as exc:  # DatabaseUnreachable (an outage) included: its own exit status, 75
        fail(str(exc), exc.exit_code)
    except click_exceptions.NoArgsIsHelpError as exc:
        print(exc.ctx.get_help() if exc.ctx else str(exc), file=sys.stderr)
        sys.exit(2)
    except click_exceptions.ClickException as exc:  # a usage mistake: unknown option, bad value, ...
        ctx = getattr(exc, "ctx", None)  # a UsageError's context; other ClickExceptions have none
        where = f" (see 'lpstudy {ctx.command_path.split(' ', 1)[-1]} --help')" if ctx and " " in ctx.command_path else ""
        fail(exc.format_message() + where)
    except (typer.Abort, KeyboardInterrupt):
        print("lpstudy: interrupted", file=sys.stderr)
        sys.exit(130)
    if result == 130:  # typer turns a KeyboardInterrupt (a second Ctrl-C) into exit code 130, silently
        print("lpstudy: interrupted", file=sys.stderr)
    sys.exit(result if isinstance(result, int) else 0)


def _register_commands() -> None:
    """Import the command modules; each adds its commands to `app`."""
    import importlib

    for name in COMMAND_MODULES:
        importlib.import_module(f"lpstudy.cli.{name}")


# Command modules, in the order their commands are listed by --help.
COMMAND_MODULES = ["search", "train", "study", "studies", "compare", "verdict", "replay", "proxy", "dashboard", "note"]
