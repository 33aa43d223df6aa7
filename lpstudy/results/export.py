"""The best configuration out of a study, as the run file `lpstudy train --config` reads.

A run file holds the preset, every field the trial changed from it (p, lr, gain_init, fold, folds
and seed always), and a `source` mapping: the study, the trial's number, its value, its final
validation loss and whether it diverged. Retraining from it on CPU gives the stored validation loss
again (same seed, same software). With top_k > 1 the file holds `study:` and `runs:`, a list of
such run files, best first (feed one of them to `lpstudy train`).

A search's best is the configuration it returns (lpstudy.study.races.search_best: its leading
configurations raced on more folds, the lowest mean loss over the most folds), and its run file's
`source` says on how many folds that configuration was measured (`folds_measured`), their mean
(`mean_over_folds`) with a 95 % t interval corrected for the training text the folds share (`interval`;
none on one fold; lpstudy.intervals) and `chosen_as`: "best"
only when it was measured on more than one fold; a configuration seen on its tuning fold alone is
exported as "leading on 1 fold", never as the best.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import yaml

from lpstudy.errors import UserError
from lpstudy.files import atomic_write_text
from lpstudy.names import shell_quoted
from lpstudy.results.reading.measured import search_chosen
from lpstudy.design.spec import StudySpec
from lpstudy.training.config import resolve_config, write_run_file
from lpstudy.values import RUN_FILE_ALWAYS as ALWAYS
from lpstudy.values import SPEC_ATTR

if TYPE_CHECKING:
    from lpstudy.db.study_queries import StudyTables
    from lpstudy.db.trial_reader import TrialReader

FORMATS = ("yaml", "json")


def trial_overrides(trial, spec) -> dict[str, Any]:
    """The fields in which the trial's run differed from its preset (what the worker stored),
    falling back to the space's fixed values and the trial's attributes for older trials."""
    attrs = trial.user_attrs
    stored = attrs.get("overrides")
    if isinstance(stored, dict):
        return dict(stored)
    overrides = dict(spec.space.fixed)
    overrides.update({k: v for k, v in trial.params.items() if k in ALWAYS or k in spec.space})
    for name in ALWAYS:
        if attrs.get(name) is not None:
            overrides[name] = attrs[name]
    overrides.pop("device", None)
    return overrides


def run_file_text(trial, spec, study_name: str, fmt: str = "yaml", measured: dict[str, Any] | None = None) -> str:
    """One trial as a run file (text); `measured`: how well the configuration it stands for is
    known (measured_fields), for a search's chosen configuration."""
    cfg = resolve_config(spec.preset, trial_overrides(trial, spec))
    attrs = trial.user_attrs
    final = attrs.get("final_val_loss")
    source = {"study": study_name, "trial": trial.number, "value": trial.value,
              "final_val_loss": final if final is not None else None,
              "diverged": bool(attrs.get("diverged", False))}
    if measured is not None:
        source.update(measured)
    if attrs.get("version"):
        source["lpstudy_version"] = attrs["version"]
    return write_run_file(None, spec.preset, cfg, source=source, fmt=fmt)


@dataclass(frozen=True)
class StoredTrial:
    """What a run file needs of a trial, read with SQL (Optuna's FrozenTrial has the same fields)."""

    number: int
    value: float
    params: dict[str, Any]
    user_attrs: dict[str, Any]


def chosen_trials(reader: TrialReader, study_name: str, top_k: int) -> tuple[StudySpec, list]:
    """The study's spec and its best top_k trials (lpstudy.design.best's rule, ranked by a query:
    lpstudy.db.study_queries.ranked_trial_ids), their user attributes read with them; where a chosen
    trial is from before workers stored their `overrides`, or the study has no spec, the chosen
    trials are read again through Optuna's API (their parameters need Optuna's distributions)."""
    from lpstudy.study.studies import spec_of

    def read(tables: StudyTables):
        _, attrs = tables.header()
        ranked = tables.ranked_trial_ids(top_k)
        stored = tables.user_attributes_of([tid for tid, _, _ in ranked])
        trials = [StoredTrial(number, value, {}, stored[tid]) for tid, number, value in ranked]
        return attrs.get(SPEC_ATTR), [tid for tid, _, _ in ranked], trials

    plain, ids, trials = reader.read(study_name, read)
    if isinstance(plain, dict) and all(isinstance(t.user_attrs.get("overrides"), dict) for t in trials):
        return StudySpec.from_plain(plain), trials
    frozen, trials = reader.optuna_study(study_name, trial_ids=ids)
    return spec_of(study_name, frozen.user_attrs), trials


def search_choice(reader: TrialReader, study_name: str, top_k: int = 1
                  ) -> tuple[StudySpec, list, dict[str, Any] | None] | None:
    """A search study's spec, the trials to export (the configuration it returns first, on its
    tuning fold, then the other configurations' best trials, one a configuration) and how well the
    first is known (measured_fields; None before any trial counts); None for a grid study or a study
    without a spec. Read from its tables (measured.search_chosen, as every reader of the best is)."""
    def read(tables: StudyTables):
        _, attrs = tables.header()
        plain = attrs.get(SPEC_ATTR)
        if not isinstance(plain, dict):
            return None
        spec = StudySpec.from_plain(plain)
        if spec.is_grid:
            return None
        chosen = search_chosen(tables, "search", spec)
        if chosen is None:
            return spec, [], None, []
        picked = [(chosen.trial_id, chosen.number, chosen.value)]
        if top_k > 1:  # the other configurations' best trials, by value: never a race's run of one
            ranked = tables.ranked_trial_ids(top_k + len(chosen.race_ids))
            picked += [r for r in ranked if r[0] not in chosen.race_ids and r[0] != chosen.trial_id][:top_k - 1]
        stored = tables.user_attributes_of([tid for tid, _, _ in picked])
        trials = [StoredTrial(number, value, {}, stored[tid]) for tid, number, value in picked]
        return spec, trials, chosen.measured, [tid for tid, _, _ in picked]

    found = reader.read(study_name, read)
    if found is None:
        return None
    spec, trials, measured, ids = found
    if trials and not all(isinstance(t.user_attrs.get("overrides"), dict) for t in trials):
        from lpstudy.study.studies import spec_of

        frozen, trials = reader.optuna_study(study_name, trial_ids=ids)  # before workers stored `overrides`
        spec = spec_of(study_name, frozen.user_attrs)
    return spec, trials, measured


def arm_choice(reader: TrialReader, study_name: str) -> tuple[str, int, dict[str, Any]] | None:
    """A replicate's, a grid's or a comparison's choice (lpstudy.results.reading.measured.StudyBest: the arm with
    the lowest mean final loss over its folds, its verdict from the engine): the study that holds its
    run, the run's trial number there and the run file's `source` fields (chosen_as "arm"); None for a
    search that samples, or before any fold run finished. The run is its trial id."""
    from lpstudy.results.answers import answered_by_verdicts, has_verdicts
    from lpstudy.results.reading.measured import study_best
    from lpstudy.results.reading.compare import verdict_data
    from lpstudy.results.status import study_verdicts

    data = verdict_data(reader, study_name, curves=False)
    if not answered_by_verdicts(data.info) or data.info.spec is None:
        return None
    best = study_best(data, study_verdicts(data) if has_verdicts(data) else None)
    if best is None:
        return None
    if data.info.kind == "compare":  # its run lives in the arm's replicate study, under its number there
        return str(best.row["study"]), int(best.row["trial_id"]), best.source_fields()
    return study_name, int(best.row["trial_id"]), best.source_fields()


def arm_trial(reader: TrialReader, study_name: str, trial_id: int) -> list:
    """The arm's run (its trial id in the study) as a run file needs it, in a list: its user attributes
    read by a query, or through Optuna's API for a trial from before workers stored `overrides`."""
    def read(tables: StudyTables):
        number, value = next((n, v) for tid, n, v in tables.ranked_trial_ids(None) if tid == trial_id)
        return StoredTrial(number, value, {}, tables.user_attributes_of([trial_id])[trial_id])

    trial = reader.read(study_name, read)
    if isinstance(trial.user_attrs.get("overrides"), dict):
        return [trial]
    _, trials = reader.optuna_study(study_name, trial_ids=[trial_id])
    return list(trials)


def export_text(reader: TrialReader, study_name: str, top_k: int = 1, fmt: str = "yaml") -> str:
    """The best trial as a run file (top_k=1), or the top K as {study, runs: [...]}, in YAML or
    JSON. A search's best is the configuration it returns (search_choice; its run file says on how
    many folds it was measured); a grid's, lpstudy.design.best's lowest value. Both ranked from the
    study's tables, only the chosen trials' attributes read (on a SQL database without opening
    Optuna's storage). UserError when the study has no such trial (or does not exist)."""
    fmt = (fmt or "yaml").lower()
    if fmt not in FORMATS:
        raise UserError(f"unknown format {fmt!r}; choose yaml or json")
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise UserError(f"--top must be a positive integer, got {top_k!r}")
    from lpstudy.results.reading.compare import exported_arm

    _, attrs = reader.read(study_name, lambda tables: tables.header())
    compared = None
    if attrs.get("kind") == "compare":  # a comparison's trials are its arms': the lowest arm's run
        compared = study_name
        arm = arm_choice(reader, study_name)
        study_name = arm[0] if arm else exported_arm(reader, study_name)[0]  # before any fold: the best tuning
    else:
        arm = arm_choice(reader, study_name)
    searched = None if arm else search_choice(reader, study_name, top_k)
    measured = None
    if arm is not None:  # a replicate's, a grid's, a comparison's: the arm with the lowest mean over its folds
        study_name, trial_id, measured = arm
        spec, done = chosen_trials(reader, study_name, top_k)
        first = arm_trial(reader, study_name, trial_id)
        done = first + [t for t in done if t.number != first[0].number][:top_k - 1]
        if compared:
            measured = {"comparison": compared, **measured}
    elif searched is not None:
        spec, done, measured = searched
    else:
        spec, done = chosen_trials(reader, study_name, top_k)
    if not done:
        raise UserError(f"study {study_name!r} has no completed trial that did not diverge yet; run "
                        f"`lpstudy worker --study {shell_quoted(study_name)}` and export when `lpstudy status --study "
                        f"{shell_quoted(study_name)}` shows a best trial")
    if top_k == 1:
        return run_file_text(done[0], spec, study_name, fmt, measured)
    runs = [yaml.safe_load(run_file_text(t, spec, study_name, "yaml", measured if i == 0 else None))
            for i, t in enumerate(done[:top_k])]
    body = {"study": study_name, "runs": runs}
    if fmt == "json":
        return json.dumps(body, indent=2) + "\n"
    return yaml.safe_dump(body, sort_keys=False)


def train_command(run_file_name: str) -> str:
    """The command that retrains an exported run file."""
    return f"lpstudy train --config {shlex.quote(str(run_file_name))}"


def write_export(path, text: str) -> None:
    """Write the export atomically (a temporary file renamed into place)."""
    atomic_write_text(path, text)
