"""The one exception that means "the user asked for something that cannot be done".

The command line turns it into a single line on standard error and exit status 2.
Anything else that escapes is a bug and keeps its traceback.
"""


class UserError(Exception):
    """A mistake in the user's input: the message says what was wrong and what to do next."""


class StudyUnavailable(UserError):
    """A study database cannot be opened or reached, or the study is not in it."""


class NoStudiesYet(StudyUnavailable):
    """The database is reachable and holds no studies yet (its creator may be at work): what a worker
    started beside the creator waits on, never an outage to retry."""
