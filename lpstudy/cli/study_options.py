"""A study's options on the command line, each declared once.

`StudyOptions` is what a search study's spec is made of (`create` and `search` take it whole, with
`TrialOptions`): its YAML, preset, search space, sampler and pruner. `spec()` turns the values given
into the spec (lpstudy.study.spec.build_spec): an option named after a training field
(lpstudy.training.fields) is an entry of the space, any other one a study option. Adding a study
option is one field here.

`TrialOptions` are how a study's trials run and are recovered; `replicate` takes them too, and
`compare` the single options it shares (--set, --search, --sampler-seed). Their own --p, --folds
and --preset say the protocol each runs (a grid of p values × K folds; arms × a tuning budget × K
folds) and are theirs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from lpstudy.cli.common import parse_assignments
from lpstudy.cli.option_groups import OptionGroup
from lpstudy.training.costs import presets_help

if TYPE_CHECKING:
    from lpstudy.study.spec import StudySpec

ConfigOpt = Annotated[Optional[Path], typer.Option(
    "--config", "-c", help="A study YAML (preset, space, sampler, ...), e.g. examples/search-smoke.yaml.")]
PresetOpt = Annotated[Optional[str], typer.Option(help=f"The YAML's, else cpu. {presets_help()}.")]
PSpaceOpt = Annotated[Optional[str], typer.Option("--p", help="p: a value, LOW:HIGH, LOW:HIGH,inf or A,B,C (default 1:4).")]
LrSpaceOpt = Annotated[Optional[str], typer.Option(help="Learning rate: a value, LOW:HIGH (log scale) or A,B (default 1e-4:1e-2).")]
GainSpaceOpt = Annotated[Optional[str], typer.Option(help="Initial gain: a value, LOW:HIGH (log scale) or A,B (default 2:64).")]
FoldOpt = Annotated[Optional[str], typer.Option(help="Validation fold (or A,B,C to search over folds).")]
FoldsOpt = Annotated[Optional[int], typer.Option(help="Number of folds K.")]
SeedOpt = Annotated[Optional[str], typer.Option(help="Training seed (or A,B,C).")]
SearchOpt = Annotated[Optional[list[str]], typer.Option(
    "--search", help="Search any field: --search n_layer=2,4 or --search dropout=0:0.3 (repeatable).")]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", help="Fix any field: --set max_steps=500 (repeatable).")]
SamplerOpt = Annotated[Optional[str], typer.Option(
    help="tpe (the default: chosen on the replay benchmark's suite, docs/search-cost.md), cmaes, random or grid.")]
PrunerOpt = Annotated[Optional[str], typer.Option(
    help="none (the default), sha (successive halving), median or hyperband. Spread trials are never pruned.")]
SpreadTrialsOpt = Annotated[Optional[int], typer.Option(
    help="The first trials, spread over the space by a Sobol sequence and never pruned (default 8; 0: none).", min=0)]
LossThresholdOpt = Annotated[Optional[float], typer.Option(help="Record the first step each run reaches this validation loss.")]
StartupTrialsOpt = Annotated[Optional[int], typer.Option(help="TPE's random trials before it models the space (default 10).", min=0)]
SamplerSeedOpt = Annotated[Optional[int], typer.Option(help="Seed of the sampler.")]

HeartbeatOpt = Annotated[Optional[int], typer.Option(
    help="Seconds between a running trial's heartbeats (SQL storages; default 10).", min=1)]
GraceOpt = Annotated[Optional[int], typer.Option(
    help="A running trial without heartbeat this long (s) is failed and retried (default 60).", min=1)]
RetryOpt = Annotated[Optional[int], typer.Option(
    help="How often a failed trial (dead or interrupted worker) is retried with its parameters (default 2).", min=0)]
CheckpointOpt = Annotated[Optional[int], typer.Option(
    help="Save a resumable checkpoint of each trial every this many evaluations (0: never; default 5).", min=0)]


@dataclass(frozen=True)
class TrialOptions(OptionGroup):
    """How a study's trials run and are recovered (None: the study's default)."""

    heartbeat_interval: HeartbeatOpt = None
    grace_period: GraceOpt = None
    max_retry: RetryOpt = None
    checkpoint_interval: CheckpointOpt = None

    def given(self) -> dict[str, Any]:
        """The options given, by name, as a study's spec takes them."""
        return {name: value for name, value in asdict(self).items() if value is not None}


@dataclass(frozen=True)
class StudyOptions(OptionGroup):
    """A search study's spec as flags, in --help's order (None: not given); how its trials run is
    TrialOptions."""

    config: ConfigOpt = None
    preset: PresetOpt = None
    p: PSpaceOpt = None
    lr: LrSpaceOpt = None
    gain_init: GainSpaceOpt = None
    fold: FoldOpt = None
    folds: FoldsOpt = None
    seed: SeedOpt = None
    search: SearchOpt = None
    set_: SetOpt = None
    sampler: SamplerOpt = None
    pruner: PrunerOpt = None
    spread_trials: SpreadTrialsOpt = None
    loss_threshold: LossThresholdOpt = None
    n_startup_trials: StartupTrialsOpt = None
    sampler_seed: SamplerSeedOpt = None

    def spec(self, **options: Any) -> StudySpec:
        """The study's spec: the YAML (--config), then --set, --search and the options named after a
        training field as entries of its space, then the other options and `options` (TrialOptions.given(),
        a command's own such as create's --n-trials), later ones winning; None is not given. Validated."""
        from lpstudy.study.spec import build_spec, read_study_file
        from lpstudy.training.fields import FIELDS

        file_data = read_study_file(self.config) if self.config is not None else {}
        entries: dict[str, Any] = {}
        entries.update(parse_assignments(self.set_, "--set"))
        entries.update(parse_assignments(self.search, "--search"))
        study_options: dict[str, Any] = {}
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name in ("config", "set_", "search") or value is None:
                continue
            (entries if field.name in FIELDS else study_options)[field.name] = value
        study_options.update({name: value for name, value in options.items() if value is not None})
        return build_spec(file_data, entries, study_options)
