"""A study's options on the command line, made from their one declaration.

`StudyOptions` is what a search study's spec is made of (`create` and `search` take it whole, with
`TrialOptions`): its YAML (--config), the entries of its space (--p, --lr, --gain-init, --fold,
--folds, --seed: the training fields a search varies, with their default ranges; --search, --set:
any field), and the study options declared in lpstudy.design.options with `flag="study"`, each with
its declared help and default. `TrialOptions` are the options declared there with `flag="trial"`:
how a study's trials run and are recovered; `replicate` takes them too, and `compare` the single
options it shares (--set, --search, --sampler-seed). Their own --p, --folds and --preset say the
protocol each runs (a grid of p values × K folds; arms × a tuning budget × K folds) and are theirs.
Adding a study option is one line in lpstudy.design.options; nothing here.

`given()` is the values a user gave (None: not given), by the flag they were given as, so that a
study that exists can be continued from its name alone and a flag that would change it refused by
the flag's own name (lpstudy.study.studies.continue_spec).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields, make_dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Optional

import typer

from lpstudy.cli.common import parse_assignments
from lpstudy.cli.option_groups import OptionGroup
from lpstudy.errors import UserError
from lpstudy.design.options import OPTIONS, StudyOption
from lpstudy.design.space import DEFAULT_SPACE
from lpstudy.training.costs import presets_help
from lpstudy.training.fields import FIELDS

if TYPE_CHECKING:
    from lpstudy.design.spec import StudySpec


def flag_of(name: str) -> str:
    """The command-line flag of an option or field: set_ → --set, gain_init → --gain-init."""
    return "--" + name.rstrip("_").replace("_", "-")


def _default_text(option: StudyOption) -> str:
    if option.name == "preset":
        return f" (default {option.default}). {presets_help()}."
    return f" (default {option.default})." if option.default is not None else "."


def _declared(option: StudyOption) -> Any:
    """A study option's typer option: its declared help and default."""
    minimum = int(option.bound[0]) if option.type is int and option.bound else None
    return Annotated[Optional[option.type], typer.Option(flag_of(option.name), help=option.help + _default_text(option),
                                                         min=minimum)]


def _range_text(name: str) -> str:
    entry = DEFAULT_SPACE.get(name)
    return f"default {entry['low']:g}:{entry['high']:g}" if entry else f"default: the preset's, {FIELDS[name].default}"


def _space_flag(name: str, what: str, forms: str) -> Any:
    """A flag for one entry of the space, with its default range from the field's declaration."""
    return Annotated[Optional[str], typer.Option(flag_of(name), help=f"{what}: {forms} ({_range_text(name)}).")]


ConfigOpt = Annotated[Optional[Path], typer.Option(
    "--config", "-c", help="A study YAML (preset, space, sampler, ...), e.g. examples/search-smoke.yaml.")]
PSpaceOpt = _space_flag("p", "p", "a value, LOW:HIGH, LOW:HIGH,inf or A,B,C")
LrSpaceOpt = _space_flag("lr", "Learning rate", "a value, LOW:HIGH (log scale) or A,B")
GainSpaceOpt = _space_flag("gain_init", "Initial gain", "a value, LOW:HIGH (log scale) or A,B")
FoldOpt = _space_flag("fold", "Validation fold", "a value, or A,B,C to search over folds")
FoldsOpt = Annotated[Optional[int], typer.Option(
    help=f"Number of folds K (default: the preset's, {FIELDS['folds'].default}).")]
SeedOpt = _space_flag("seed", "Training seed", "a value or A,B,C")
SearchOpt = Annotated[Optional[list[str]], typer.Option(
    "--search", help="Search any field: --search n_layer=2,4 or --search dropout=0:0.3 (repeatable).")]
SetOpt = Annotated[Optional[list[str]], typer.Option("--set", help="Fix any field: --set max_steps=500 (repeatable).")]
SamplerSeedOpt = _declared(OPTIONS["sampler_seed"])
HeartbeatOpt = _declared(OPTIONS["heartbeat_interval"])
RepeatsOpt = _declared(OPTIONS["repeats"])  # replicate's and compare's own
SeedsOpt = _declared(OPTIONS["seeds"])  # likewise
GraceOpt = _declared(OPTIONS["grace_period"])
RetryOpt = _declared(OPTIONS["max_retry"])

# The flags of StudyOptions that are entries of the space, by their field's name.
SPACE_FLAGS = {"p": PSpaceOpt, "lr": LrSpaceOpt, "gain_init": GainSpaceOpt, "fold": FoldOpt, "folds": FoldsOpt,
               "seed": SeedOpt}


def _group(name: str, doc: str, declared: list[tuple[str, Any]], base: type) -> type:
    return make_dataclass(name, [(field, kind, None) for field, kind in declared], bases=(base, OptionGroup),
                          frozen=True, namespace={"__doc__": doc, "__module__": __name__})


class _Trials:
    if TYPE_CHECKING:  # the dataclass _group makes of it, with the fields the commands read by name
        __dataclass_fields__: ClassVar[dict[str, Any]]
        heartbeat_interval: int | None
        grace_period: int | None
        max_retry: int | None

    def given(self) -> dict[str, Any]:
        """The options given, by name, as a study's spec takes them."""
        return {name: value for name, value in asdict(self).items() if value is not None}


if TYPE_CHECKING:  # a type checker reads the groups as their bases, which declare what the commands read
    TrialOptions = _Trials
else:
    TrialOptions = _group("TrialOptions", "How a study's trials run and are recovered (None: the study's default).",
                          [(o.name, _declared(o)) for o in OPTIONS.values() if o.flag == "trial"], _Trials)


class _Study:
    if TYPE_CHECKING:  # the dataclass _group makes of it, with the fields this class reads by name
        __dataclass_fields__: ClassVar[dict[str, Any]]
        config: Path | None
        set_: list[str] | None
        search: list[str] | None

    def given(self, **options: Any) -> list[tuple[str, str, Any]]:
        """What the user gave, in order (a later one wins), each as (how they gave it: "--preset cpu",
        "--set max_steps=40", "preset: smoke in FILE"; the spec's key: an option's name or
        "space.FIELD"; the value); `options` are a command's own (TrialOptions.given(), --n-trials)."""
        from lpstudy.design.spec import SPACE_SHORTCUTS, read_study_file

        out: list[tuple[str, str, Any]] = []
        if self.config is not None:
            data = read_study_file(self.config)
            for key, value in (data.pop("space", None) or {}).items():
                out.append((f"space: {key}: {value} in {self.config}", f"space.{key}", value))
            for key, value in data.items():
                target = f"space.{key}" if key in SPACE_SHORTCUTS else key
                out.append((f"{key}: {value} in {self.config}", target, value))
        for flag, assignments in (("--set", self.set_), ("--search", self.search)):
            for key, value in parse_assignments(assignments, flag).items():
                out.append((f"{flag} {key}={value}", f"space.{key}", value))
        for field in fields(self):
            value = getattr(self, field.name)
            if field.name in ("config", "set_", "search") or value is None:
                continue
            out.append((f"{flag_of(field.name)} {value}", f"space.{field.name}" if field.name in FIELDS else field.name,
                        value))
        out += [(f"{flag_of(name)} {value}", name, value) for name, value in options.items() if value is not None]
        return out

    def spec(self, base: StudySpec | None = None, **options: Any) -> StudySpec:
        """The study's spec: the YAML (--config), then --set, --search and the options named after a
        training field as entries of its space, then the other options and `options` (TrialOptions.given(),
        a command's own such as create's --n-trials), later ones winning; None is not given. Validated.
        With `base` (a stored spec), what is not given is the base's."""
        return _built(self.given(**options), base)

    def spec_for(self, name: str, stored: StudySpec | None, **options: Any) -> StudySpec:
        """The spec of study `name`: a new study's from what was given; a study that exists (`stored`)
        as it is stored, where what was given does not change it. A flag that would change it is
        refused in one line that names the flag, the stored value and the new one, and says how to
        continue the study or make a new one."""
        from lpstudy.study.studies import same_spec

        if stored is None:
            return self.spec(**options)
        given = self.given(**options)
        if same_spec(_built(given, stored), stored):
            return stored
        changes = []
        for shown, key, value in given:
            one = _built([(shown, key, value)], stored)
            if not same_spec(one, stored):
                before, after = _describe(stored, key), _describe(one, key)
                changes.append(f"{shown} would change {before} to {after}")
        flags = "these" if len(changes) > 1 else "it"
        raise UserError(f"study {name!r} already exists with another spec: {'; '.join(changes) or 'the values given change it'}. "
                        f"Leave {flags} out to continue the study as it is, or give a new --study NAME to make a new study")


def _built(given: list[tuple[str, str, Any]], base: StudySpec | None) -> StudySpec:
    from lpstudy.design.spec import build_spec

    entries = {key.removeprefix("space."): value for _, key, value in given if key.startswith("space.")}
    study_options = {key: value for _, key, value in given if not key.startswith("space.")}
    spec = build_spec({}, entries, study_options, base=base)
    raced = [shown for shown, key, _ in given if key == "race_folds"]
    if raced and spec.race > 0 and spec.race_folds > spec.folds:  # a default above K is K: one given is a mistake
        raise UserError(f"{raced[-1]} is more than the study's {spec.folds} folds: a configuration is raced on at most "
                        f"its K folds; give --race-folds {spec.folds} or fewer, or more --folds")
    return spec


def _describe(spec: StudySpec, key: str) -> str:
    """A spec's value for a key as a user reads it: 'preset smoke', 'p ∈ [1, 4]', 'max_steps from the preset'."""
    if key.startswith("space."):
        entry = spec.space.get(key.removeprefix("space."))
        return entry.describe() if entry is not None else f"{key.removeprefix('space.')} from the preset"
    value = getattr(spec, key)
    return f"{key} {'(none)' if value is None else value}"


if TYPE_CHECKING:
    StudyOptions = _Study
else:
    StudyOptions = _group(
        "StudyOptions", "A search study's spec as flags, in --help's order (None: not given); how its trials run is "
        "TrialOptions.",
        [("config", ConfigOpt), ("preset", _declared(OPTIONS["preset"])), *SPACE_FLAGS.items(), ("search", SearchOpt),
         ("set_", SetOpt), *((o.name, _declared(o)) for o in OPTIONS.values() if o.flag == "study" and o.name != "preset")],
        _Study)
