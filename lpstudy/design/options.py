"""Every option of a study, declared once: its type, default, bounds, the words it takes, one line of
help, and where a user gives it.

From these declarations alone: the study's spec (lpstudy.design.spec.StudySpec) has the option as a
field with its default, stores it (`to_plain`) and checks it (`validate`: the bounds and the words),
a study YAML takes it as a key (`STUDY_FILE_KEYS`), and the command line has its flag with this help
and default (lpstudy.cli.study_options: `StudyOptions` for `flag="study"`, `TrialOptions` for
`flag="trial"`). Adding a study option is one `StudyOption(...)` line in OPTIONS (and the code that
reads `spec.NAME`). The fields of a training run a study fixes or searches are not study options:
they are entries of its space (lpstudy.training.fields). Plain Python (no Optuna, no torch).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from lpstudy.errors import UserError

# The samplers and pruners a study takes (lpstudy.study.studies makes them). The defaults are the
# method chosen on the replay benchmark's suite of grids (docs/search-cost.md: the highest worst-grid
# share of seeds within ε among the methods with a spread phase): TPE without a pruner after 8 spread
# trials. Pruning paid little there once the spread phase ran, and on a grid where p's effect shows
# late (the matched gain, 800 steps) every pruner lost the best configuration in most seeds.
# Since issue 45 the suite ranks on what the user gets (the returned configuration's loss over all
# folds): the default races its 2 leaders on more folds (race, race_folds; lpstudy.design.intensify).
# The samplers that draw a search's configurations (the replay benchmark measures each, beside a few of
# Optuna's: lpstudy.results.replay.methods), then "grid", which draws none: a grid's cells are enqueued
# once each and workers only pop them. The one catalogue of the samplers a study takes.
SEARCH_SAMPLERS = ("tpe", "cmaes", "random")
SAMPLERS = (*SEARCH_SAMPLERS, "grid")
# The pruners a study takes, simplest first: where two methods do alike, the replay's suite chooses the
# simpler (lpstudy.results.replay.suite). The one catalogue of them.
PRUNERS = ("none", "median", "sha", "hyperband")


@dataclass(frozen=True)
class StudyOption:
    """One option of a study's spec."""

    name: str
    type: type  # int, float or str
    default: Any  # None: unset (an optional option)
    help: str  # one line, without the default (the command line adds it)
    bound: tuple[float, float] | None = None  # low ≤ value ≤ high (low < value where low_open)
    low_open: bool = False
    words: tuple[str, ...] = ()  # a text option: the values it takes
    unit: str = ""  # after the bounds in a message: " nats"
    flag: str = "study"  # which command-line group has its flag: "study", "trial", or "" (a command's own)
    # an option added after studies were made: their stored spec lacks it, so the spec writes it only where it
    # differs from its default, and an older study's spec keeps its form and SHA-256 (spec_sha256)
    written_when_set: bool = False

    @property
    def optional(self) -> bool:
        return self.default is None

    @property
    def bounds(self) -> tuple[float, float]:
        """(low, high) of a bounded option; TypeError for one without bounds (a programming error)."""
        if self.bound is None:
            raise TypeError(f"option {self.name} has no bounds")
        return self.bound

    def describe_bound(self) -> str:
        low, high = (int(b) if float(b).is_integer() else b for b in self.bounds)
        return f"{'(' if self.low_open else '['}{low}, {high}]{self.unit}"

    def checked(self, value: Any) -> Any:
        """value as the spec holds it, or UserError saying what is wrong with it (one line)."""
        if value is None and self.optional:
            return None
        if self.words:
            text = str(value).strip().lower()
            if text not in self.words:
                raise UserError(f"unknown {self.name} {text!r}; choose one of: {', '.join(self.words)}")
            return text
        if self.type is int:
            if isinstance(value, bool) or not isinstance(value, int) or not self.within(value):
                raise UserError(f"{self.name} must be an integer in {self.describe_bound()}, got {value!r}")
            return value
        if self.type is float:
            try:
                number = float(value)
            except (TypeError, ValueError):
                raise UserError(f"{self.name} must be a number, got {value!r}") from None
            if isinstance(value, bool) or not self.within(number):  # NaN is within nothing
                raise UserError(f"{self.name} must be in {self.describe_bound()}, got {value!r}")
            return number
        return str(value)

    def within(self, value: float) -> bool:
        if self.bound is None:
            return True
        low, high = self.bound
        if not math.isfinite(value):
            return False
        return (value > low if self.low_open else value >= low) and value <= high


def _options(*declared: StudyOption) -> dict[str, StudyOption]:
    return {o.name: o for o in declared}


# In --help's order. The preset's words are checked by the presets themselves (get_preset).
OPTIONS: dict[str, StudyOption] = _options(
    StudyOption("preset", str, "cpu", "The preset every trial starts from (a study YAML's `preset:` too)"),
    StudyOption("sampler", str, "tpe", "tpe (chosen on the replay benchmark's suite, docs/search-cost.md), "
                "cmaes, random or grid", words=SAMPLERS),
    StudyOption("pruner", str, "none", "none, median, sha (successive halving) or hyperband; spread trials "
                "are never pruned", words=PRUNERS),
    StudyOption("spread_trials", int, 8, "The first trials, spread over the space by a Sobol sequence and "
                "never pruned (0: none); search --workers W makes a new study's W where W is over 8; for workers "
                "started by hand, give their number", bound=(0, 4096)),
    StudyOption("race", int, 2, "The leading configurations raced on more folds before one is returned as the "
                "best (SMAC's intensification; 0: the tuning fold's best, measured on 1 fold)", bound=(0, 100)),
    StudyOption("race_folds", int, 5, "The folds a raced configuration is measured on at most (the tuning fold "
                "among them)", bound=(2, 1000)),
    # issue 54: measured by the replay at 1, 8, 32 and 128 workers (docs/search-cost.md, "Many workers")
    StudyOption("race_reserve", float, 0.2, "The last share of the trials a run has (--n-trials, or the study's "
                "target) kept for races: past it a worker takes only a leader's next fold, waits while trials run, "
                "and stops when none does (0: none)", bound=(0, 0.9), written_when_set=True),
    StudyOption("loss_threshold", float, None, "Record the first step each run reaches this validation loss "
                "(nats)", bound=(0, 1000), low_open=True, unit=" nats"),
    StudyOption("n_startup_trials", int, 10, "TPE's random trials before it models the space", bound=(0, 10**6)),
    StudyOption("sampler_seed", int, None, "Seed of the sampler (each trial draws from a stream of its own, "
                "whichever worker takes it)", bound=(0, 2**32 - 1)),
    # a target: workers stop once this many trials COMPLETE or PRUNED (create's --n-trials; search's
    # --n-trials is how many to run now)
    StudyOption("n_trials", int, None, "A target: workers stop once the study has this many finished trials",
                bound=(1, 10**7), flag=""),
    # replicate and compare: the K-fold CV repeated over new partitions and seeds (cells p × repeat × fold)
    StudyOption("repeats", int, 1, "Repeat the K-fold cross-validation this many times, each over a new "
                "partition of the text and new training seeds (R × K runs per arm)", bound=(1, 100), flag="",
                written_when_set=True),
    # replicate and compare: every (arm, fold[, repeat]) cell trained with S seeds (cells p × seed × repeat × fold):
    # the seeds' mean is the cell's loss, their spread the training noise, apart from the partition's
    StudyOption("seeds", int, 1, "Train every (arm, fold) cell with this many training seeds: their mean is the "
                "cell's loss and their spread measures training noise apart from the partition's (S × R × K runs "
                "per arm)", bound=(1, 100), flag="", written_when_set=True),
    StudyOption("heartbeat_interval", int, 10, "Seconds between a running trial's heartbeats (SQL storages)",
                bound=(1, 86_400), flag="trial"),
    StudyOption("grace_period", int, 60, "A running trial without heartbeat this long (s) is failed and retried",
                bound=(1, 7 * 86_400), flag="trial"),
    StudyOption("max_retry", int, 2, "How often a failed trial (dead or interrupted worker) is retried with "
                "its parameters", bound=(0, 1000), flag="trial"),
    StudyOption("checkpoint_interval", int, 5, "Save a resumable checkpoint of each trial every this many "
                "evaluations (0: never)", bound=(0, 10**6), flag="trial"),
)


# -- StudySpec's option fields as a reader sees them ------------------------------------------------

OPTIONS_STUB = "lpstudy/design/spec_fields.py"  # under the repository root


def options_stub() -> str:
    """The text of lpstudy/design/spec_fields.py: StudySpec's option fields (their names, types and
    defaults, in OPTIONS' order, each with its help) written out for a reader and a type checker, as
    TrainConfig's are (lpstudy.declared). OPTIONS stays their one declaration: `python -m
    lpstudy.design.options` writes the file again, and tests/test_types.py fails where the two differ.
    Keyword-only: StudySpec's own `space`, without a default, comes first."""
    from lpstudy.declared import Written, class_text, type_text

    doc = ["StudySpec's option fields as a reader and a type checker see them. Generated from",
           "lpstudy/design/options.py (OPTIONS, their one declaration) by `python -m lpstudy.design.options`:",
           "never edit it by hand; tests/test_types.py fails where it and OPTIONS differ. StudySpec",
           "(lpstudy/design/spec.py) takes its option fields from OPTIONS when it is made; a type checker",
           "reads them here."]
    return class_text(doc, [], "@dataclass(kw_only=True)", "DeclaredOptions",
                      (Written(o.name, type_text(o.type | None if o.optional else o.type), repr(o.default), o.help)
                       for o in OPTIONS.values()))


if __name__ == "__main__":
    from lpstudy.declared import write

    print(f"wrote {write(OPTIONS_STUB, options_stub())}")
