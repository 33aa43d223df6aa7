"""The options several commands share are declared once (lpstudy.cli.study_options, storage_option,
local_workers) and every command that takes them takes them as declared: the same flags, help,
type and default. A study option reaches the spec; the storage is named again as it was given."""

from __future__ import annotations

from dataclasses import fields

import pytest
import typer

from lpstudy.cli.local_workers import LocalWorkers
from lpstudy.cli.option_groups import option_groups
from lpstudy.cli.storage_option import StorageChoice
from lpstudy.cli.study_options import SamplerSeedOpt, SearchOpt, SetOpt, StudyOptions, TrialOptions
from tests.study_helpers import cli


def _options(command) -> dict[str, dict]:
    """A click command's options by their first flag: what a user sees of each."""
    return {p.opts[0]: {"flags": sorted(p.opts + p.secondary_opts), "help": p.help,
                        "type": str(p.type_descriptor.annotation), "range": (p.min, p.max),
                        "default": p.default, "required": p.required, "multiple": p.multiple}
            for p in command.params if p.opts[0].startswith("-") and p.opts[0] != "--help"}


def _commands() -> dict:
    from lpstudy.cli import _register_commands, app

    _register_commands()
    return typer.main.get_command(app).commands


def _declared(command) -> dict[str, dict]:
    """The options of a command that takes only what is declared (the groups, the single options)."""
    lone = typer.Typer(add_completion=False)
    lone.command()(option_groups(command))
    return _options(typer.main.get_command(lone))


def _study(*, spec: StudyOptions) -> None: ...
def _trials(*, trials: TrialOptions) -> None: ...
def _storage(*, storage: StorageChoice) -> None: ...
def _local(*, local: LocalWorkers) -> None: ...
def _single(set_: SetOpt = None, search: SearchOpt = None, sampler_seed: SamplerSeedOpt = None) -> None: ...


STUDY, TRIALS, STORAGE, LOCAL, SINGLE = map(_declared, (_study, _trials, _storage, _local, _single))

# What each command takes as declared.
SHARED = {
    "create": {**STUDY, **TRIALS, **STORAGE},
    "search": {**STUDY, **TRIALS, **STORAGE},
    "replicate": {**TRIALS, **STORAGE, **LOCAL, "--set": SINGLE["--set"]},
    "compare": {**STORAGE, **LOCAL, **SINGLE},
}
# A flag of create's that another command gives a meaning of its own: search's --n-trials is the
# trials to run now (create's: a target), its --study has a default (lp-search); replicate's and compare's --preset is required (a grid or a
# comparison runs many trials), their --p and --folds say their protocol (the p values of a grid,
# the arms; the K of their folds), replicate's --lr, --gain-init and --seed are fixed values or a sweep.
OWN_MEANING = {
    "search": {"--n-trials", "--study"},
    "compare": {"--preset", "--p", "--folds"},
    "replicate": {"--preset", "--p", "--folds", "--lr", "--gain-init", "--seed"},
}


def test_the_declared_groups_are_not_empty_and_name_every_field():
    assert set(STUDY) >= {"--config", "--preset", "--p", "--lr", "--gain-init", "--fold", "--folds", "--seed",
                          "--search", "--set", "--sampler", "--pruner", "--loss-threshold", "--n-startup-trials",
                          "--sampler-seed"}
    assert len(STUDY) == len(fields(StudyOptions)) and len(TRIALS) == len(fields(TrialOptions)) == 4
    assert set(STORAGE) == {"--storage", "--storage-file"} and set(LOCAL) == {"--workers", "--devices", "--data"}
    assert STUDY["--config"]["flags"] == ["--config", "-c"] and STUDY["--set"]["multiple"]


@pytest.mark.parametrize("name", sorted(SHARED))
def test_each_command_takes_the_shared_options_as_declared(name):
    options = _options(_commands()[name])
    for flag, declared in SHARED[name].items():
        assert flag in options, (name, flag)
        assert options[flag] == declared, (name, flag)


@pytest.mark.parametrize("name", sorted(OWN_MEANING))
def test_no_option_of_create_is_restated_by_another_command(name):
    commands = _commands()
    create, other = _options(commands["create"]), _options(commands[name])
    restated = {flag for flag in set(create) & set(other) if create[flag] != other[flag]}
    assert restated == OWN_MEANING[name], name


def test_every_command_that_opens_a_study_takes_the_storage_as_declared():
    for name, command in _commands().items():
        options = _options(command)
        if "--storage" in options or "--storage-file" in options:
            assert {flag: options[flag] for flag in STORAGE if flag in options} == STORAGE, name


# A value for each study option, and what the spec says of it (read off the spec, not its builder).
GIVEN = {
    "preset": ("smoke", lambda s: s.preset == "smoke"),
    "p": ("1:2", lambda s: "p ∈ [1, 2]" in s.space.describe()),
    "lr": ("0.003", lambda s: "lr=0.003" in s.space.describe()),
    "gain_init": ("3:9", lambda s: "gain_init ∈ [3, 9] log" in s.space.describe()),
    "fold": ("2", lambda s: "fold=2" in s.space.describe()),
    "folds": (6, lambda s: "folds=6" in s.space.describe()),
    "seed": ("1,2", lambda s: "seed ∈ {1, 2}" in s.space.describe()),
    "search": (["n_layer=2,4"], lambda s: "n_layer ∈ {2, 4}" in s.space.describe()),
    "set_": (["max_steps=40"], lambda s: "max_steps=40" in s.space.describe()),
    "sampler": ("random", lambda s: s.sampler == "random"),
    "pruner": ("median", lambda s: s.pruner == "median"),
    "loss_threshold": (2.25, lambda s: s.loss_threshold == 2.25),
    "n_startup_trials": (3, lambda s: s.n_startup_trials == 3),
    "spread_trials": (2, lambda s: s.spread_trials == 2),
    "race": (1, lambda s: s.race == 1),
    "race_folds": (3, lambda s: s.race_folds == 3),
    "race_reserve": (0.1, lambda s: s.race_reserve == 0.1),
    "sampler_seed": (11, lambda s: s.sampler_seed == 11),
}


def test_every_study_option_given_reaches_the_spec(tmp_path):
    """A study option that is declared but dropped on its way to the spec fails here: each field of
    StudyOptions (a new one too: GIVEN must say what it does) shows in the spec it builds."""
    assert set(GIVEN) == {f.name for f in fields(StudyOptions)} - {"config"}
    for name, (value, shown) in GIVEN.items():
        assert not shown(StudyOptions().spec()), name  # not the default already
        assert shown(StudyOptions(**{name: value}).spec()), name
    config = tmp_path / "study.yaml"
    config.write_text("preset: smoke\nspace:\n  n_head: 2,4\n")
    spec = StudyOptions(config=config, p="1.5").spec()
    assert spec.preset == "smoke" and "n_head ∈ {2, 4}" in spec.space.describe() and "p=1.5" in spec.space.describe()


def test_trial_options_and_a_commands_own_reach_the_spec():
    trials = TrialOptions(heartbeat_interval=7, grace_period=70, max_retry=1, checkpoint_interval=0)
    assert trials.given() == {"heartbeat_interval": 7, "grace_period": 70, "max_retry": 1, "checkpoint_interval": 0}
    spec = StudyOptions().spec(n_trials=9, **trials.given())
    assert (spec.n_trials, spec.heartbeat_interval, spec.grace_period, spec.max_retry, spec.checkpoint_interval) == (
        9, 7, 70, 1, 0)
    assert TrialOptions(max_retry=0).given() == {"max_retry": 0}  # 0 is given, None is not


def test_a_later_source_wins_over_an_earlier_one():
    spec = StudyOptions(set_=["p=3"], search=["p=1:2"], p="1.5").spec()
    assert "p=1.5" in spec.space.describe()
    spec = StudyOptions(set_=["lr=0.002"], search=["lr=0.001:0.01"]).spec()
    assert "lr ∈ [0.001, 0.01] log" in spec.space.describe()


def test_the_storage_is_named_again_as_it_was_given(tmp_path, monkeypatch):
    monkeypatch.delenv("LPSTUDY_STORAGE", raising=False)
    monkeypatch.delenv("LPSTUDY_STORAGE_FILE", raising=False)
    url_file = tmp_path / "my url.txt"
    url_file.write_text(f"sqlite:///{tmp_path / 'study.db'}\n")
    assert StorageChoice(storage_file=str(url_file)).url() == f"sqlite:///{tmp_path / 'study.db'}"
    assert StorageChoice(storage="sqlite:///a.db", storage_file=str(url_file)).url() == "sqlite:///a.db"
    assert StorageChoice().hint == "" and StorageChoice(storage="postgresql://u:pw@h/db").hint == " --storage URL"
    assert StorageChoice(storage_file=str(url_file)).hint == f" --storage-file '{url_file}'"


def test_create_and_replicate_tell_the_next_command_the_storage_file_they_were_given(tmp_path, capsys):
    url_file = tmp_path / "url.txt"
    url_file.write_text(f"sqlite:///{tmp_path / 'study.db'}\n")
    code, _, err = cli(capsys, "create", "--study", "s", "--storage-file", str(url_file), "--preset", "smoke")
    assert code == 0, err
    assert f"start workers: lpstudy worker --study s --storage-file {url_file}\n" in err
    code, _, err = cli(capsys, "replicate", "--study", "r", "--storage-file", str(url_file), "--preset", "smoke",
                       "--p", "1,2", "--folds", "2")
    assert code == 0, err
    assert (f"start workers anywhere: lpstudy worker --study r --storage-file {url_file}; "
            f"then: lpstudy status --study r --storage-file {url_file}") in err
    code, _, err = cli(capsys, "create", "--study", "t", "--storage", f"sqlite:///{tmp_path / 'study.db'}",
                       "--preset", "smoke")
    assert code == 0 and "start workers: lpstudy worker --study t --storage URL\n" in err, err


def test_the_dashboard_reads_its_storage_after_streamlits_double_dash(tmp_path, monkeypatch):
    """`streamlit run app/dashboard.py -- --storage URL` (or --storage-file FILE); without them the
    environment `lpstudy dashboard` sets; Streamlit's own arguments are left alone."""
    from common import storage_from_environment  # app/common.py, on the path by conftest

    from lpstudy.errors import UserError

    monkeypatch.setenv("LPSTUDY_STORAGE", "sqlite:///from-env.db")
    url_file = tmp_path / "url.txt"
    url_file.write_text("sqlite:///from-file.db\n")
    assert storage_from_environment(["--storage", "sqlite:///a.db", "--other", "x"]) == "sqlite:///a.db"
    assert storage_from_environment(["--storage=sqlite:///b.db"]) == "sqlite:///b.db"
    assert storage_from_environment(["--storage-file", str(url_file)]) == "sqlite:///from-file.db"
    assert storage_from_environment(["--stor", "sqlite:///c.db"]) == "sqlite:///from-env.db"  # no abbreviations
    assert storage_from_environment([]) == "sqlite:///from-env.db"
    with pytest.raises(UserError, match="--storage: expected one argument"):
        storage_from_environment(["--storage"])


def test_every_study_option_is_declared_once_and_reaches_the_spec_the_file_and_the_flags():
    """lpstudy.design.options is the one declaration: each option is a field of the spec with its
    default, a key of a study YAML, stored by to_plain, checked against its bounds, and (unless a
    command's own) a flag whose help says its default."""
    from dataclasses import fields as dataclass_fields

    from lpstudy.errors import UserError
    from lpstudy.design.options import OPTIONS
    from lpstudy.design.spec import STUDY_FILE_KEYS, StudySpec, build_spec

    spec_fields = {f.name: f.default for f in dataclass_fields(StudySpec)}
    plain = build_spec().to_plain()
    flags = {**STUDY, **TRIALS}
    for option in OPTIONS.values():
        assert spec_fields[option.name] == option.default and option.name in STUDY_FILE_KEYS
        assert (option.name in plain) != option.written_when_set  # an option added later: written only when set
        flag = "--" + option.name.replace("_", "-")
        if option.flag:
            assert flag in flags and option.help in flags[flag]["help"], option.name
            if option.default is not None:
                assert f"(default {option.default})" in flags[flag]["help"], option.name
        if option.bound is not None and option.type is int:
            with pytest.raises(UserError, match=f"{option.name} must be an integer in"):
                build_spec({option.name: int(option.bound[1]) + 1})
    assert set(STUDY) - {"--config", "--p", "--lr", "--gain-init", "--fold", "--folds", "--seed", "--search", "--set"} == {
        "--" + o.name.replace("_", "-") for o in OPTIONS.values() if o.flag == "study"}
    assert set(TRIALS) == {"--" + o.name.replace("_", "-") for o in OPTIONS.values() if o.flag == "trial"}
