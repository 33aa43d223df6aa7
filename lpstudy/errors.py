"""The exceptions that mean "the command cannot do what was asked", each with its exit status.

The command line turns them into a single line on standard error: a UserError exits 2; a
DatabaseUnreachable exits 75 (EX_TEMPFAIL of sysexits.h: try again later), so that whatever runs the
command (a Job's pod failure policy, a script) tells a database that could not be reached from a
mistake in the input. Anything else that escapes is a bug and keeps its traceback.
"""

EX_USAGE_ERROR = 2
EX_TEMPFAIL = 75


class UserError(Exception):
    """A mistake in the user's input: the message says what was wrong and what to do next."""

    exit_code = EX_USAGE_ERROR


class StudyUnavailable(UserError):
    """A study database cannot be opened or reached, or the study is not in it."""


class NoStudiesYet(StudyUnavailable):
    """The database is reachable and holds no studies yet (its creator may be at work): what a worker
    started beside the creator waits on, never an outage to retry."""


class DatabaseUnreachable(StudyUnavailable):
    """The study database (or its storage proxy) could not be reached: refused, timed out or lost, after
    the command's retry budget where it has one (lpstudy.db.outages). No mistake in the input (or
    none that can be told from an outage: a wrong host looks the same): exit status 75, and the
    command may be run again as it is. A StudyUnavailable, so that a reader shows it as one too."""

    exit_code = EX_TEMPFAIL
