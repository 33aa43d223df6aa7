"""Study names: what a name may hold, and how one is shown.

A name is echoed on terminals, pasted into suggested commands and shown on dashboard pages, so it
must be printable text of bounded length: no control characters (a newline, a terminal's escape
sequence), no invisible formatting characters. Where a name goes into a command to copy, it goes
through `shell_quoted`; on a page it is shown as text, never as markdown. A name that is not in the
database is answered with the closest names that are (a mistyped name is far likelier than a study
to create)."""

from __future__ import annotations

import difflib
import shlex
import unicodedata

from lpstudy.errors import UserError

MAX_STUDY_NAME = 128


def check_study_name(name: object) -> str:
    """The name, if it is 1..MAX_STUDY_NAME printable characters without surrounding spaces;
    UserError otherwise (the name quoted with its escapes visible, never raw)."""
    if not isinstance(name, str) or not name.strip():
        raise UserError("a study name must be 1 to 128 printable characters, got an empty one")
    if len(name) > MAX_STUDY_NAME:
        raise UserError(f"a study name must be at most {MAX_STUDY_NAME} characters, got {len(name)}")
    bad = [c for c in name if not c.isprintable() or unicodedata.category(c) in ("Cc", "Cf", "Co", "Cs")]
    if bad:
        shown = ", ".join(sorted({f"U+{ord(c):04X}" for c in bad}))
        raise UserError(f"a study name must be printable text; {ascii(name)[:80]} holds {shown}")
    if name != name.strip():
        raise UserError(f"a study name must not start or end with a space, got {name!r}")
    return name


def shell_quoted(text: str) -> str:
    """text as one word of a POSIX shell command (for commands the tool suggests)."""
    return shlex.quote(text)


def study_name_option(value: str | None) -> str | None:
    """A --study option's callback: the name checked, or None when the option is not given."""
    return value if value is None else check_study_name(value)


LISTED_STUDIES = 10  # a message lists at most this many of a database's studies
ARM_STUDY_ENDS = (":tune", ":folds")  # a comparison's arm studies: NAME:ARM:tune, NAME:ARM:folds (lpstudy.study.compare)


def arm_study_names(name: str, names) -> list[str]:
    """The studies among `names` that belong to comparison `name`'s arms (its tuning and replicate
    studies, named NAME:ARM:tune and NAME:ARM:folds by lpstudy.study.compare), sorted."""
    return sorted(n for n in names if n.startswith(f"{name}:") and n.endswith(ARM_STUDY_ENDS))


def closest_study_names(name: str, names: list[str], n: int = 3) -> list[str]:
    """The names in `names` closest to `name` (difflib's ratio, case ignored), best first; [] when
    none is close."""
    by_folded: dict[str, str] = {}
    for candidate in names:
        by_folded.setdefault(candidate.casefold(), candidate)
    close = difflib.get_close_matches(name.casefold(), list(by_folded), n=n, cutoff=0.6)
    return [by_folded[c] for c in close]


def did_you_mean(word: str, words) -> str:
    """'; did you mean 'max_steps'?' for the words closest to `word` (closest_study_names' rule), '' where none is close."""
    close = closest_study_names(word, list(words))
    return f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""


def no_such_study(name: str, where: str, names: list[str]) -> str:
    """One line for a study name that `where` (a redacted storage URL) does not hold: the closest
    names when some are close ("did you mean 'lp-search'?"), else how to create it; with the names
    the database holds (the first LISTED_STUDIES)."""
    names = sorted(names)
    if not names:
        return (f"no study named {name!r} in {where}; it holds no studies yet. Run it with "
                f"`lpstudy search --study {shell_quoted(name)}` (or make it with `lpstudy create`, `lpstudy replicate` or `lpstudy compare`)")
    listed = ", ".join(names[:LISTED_STUDIES]) + (f" and {len(names) - LISTED_STUDIES:,} more"
                                                    if len(names) > LISTED_STUDIES else "")
    close = closest_study_names(name, names)
    if close:
        return (f"no study named {name!r} in {where}; did you mean {' or '.join(repr(c) for c in close)}? "
                f"(studies there: {listed})")
    return (f"no study named {name!r} in {where} (studies there: {listed}); run it with "
            f"`lpstudy search --study {shell_quoted(name)}` (or make it with `lpstudy create`, `lpstudy replicate` or `lpstudy compare`)")
