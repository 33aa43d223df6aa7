"""A study's notes and its trials' notes, where optuna-dashboard keeps them (its `save_note` and
`get_note`: Markdown in the study's system attributes), so that `lpstudy note`, optuna-dashboard and
lpstudy's own Home and Trials pages show the same notes. The pages only read them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from lpstudy.errors import UserError

if TYPE_CHECKING:
    from lpstudy.db.trial_reader import TrialReader

# optuna-dashboard's key of a trial's note version, whose trial id says which trials have a note
TRIAL_NOTE_KEY = re.compile(r"^dashboard:(\d+):note_ver$")
NEEDS = "notes need optuna-dashboard (pip install 'lpstudy[dashboard]'), where they are kept"


@dataclass(frozen=True)
class Notes:
    """The study's note ("" when none) and its trials' notes by trial number (Markdown)."""

    study: str = ""
    trials: dict[int, str] = field(default_factory=dict)


def note_api():
    """optuna-dashboard's get_note and save_note; UserError in one line where it is not installed."""
    try:
        from optuna_dashboard import get_note, save_note
    except ImportError:
        raise UserError(NEEDS) from None
    return get_note, save_note


def study_notes(reader: TrialReader, study_name: str) -> Notes:
    """The notes of the study NAME, read through Optuna's storage with optuna-dashboard's get_note;
    StudyUnavailable where there is no such study."""
    import optuna
    from optuna.trial import Trial

    from lpstudy.db.trial_reader import reading

    get_note, _ = note_api()
    # no note written (optuna-dashboard versions each note: dashboard:[trial id:]note_ver): Optuna's
    # storage, an engine of its own, is not opened for nothing; no such study: said in one line
    if not reader.read(study_name, lambda tables: tables.study_system_keys("dashboard:%note_ver")):
        return Notes()
    frozen, _ = reader.optuna_study(study_name, trial_ids=[])
    with reading(reader.url):
        study = optuna.load_study(study_name=study_name, storage=reader.optuna)
        ids = [int(m.group(1)) for key in frozen.system_attrs if (m := TRIAL_NOTE_KEY.match(key))]
        trials = {}
        for trial_id in ids:
            number = reader.optuna.get_trial_number_from_id(trial_id)
            body = get_note(Trial(study, trial_id))
            if body.strip():
                trials[number] = body
        return Notes(get_note(study), dict(sorted(trials.items())))
