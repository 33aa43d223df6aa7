"""A worker waits for its study, and with the study file, for the spec its creator succeeded with.

`lpstudy worker --study NAME --config study.yaml --wait-for-spec-s 600` starts training only once
the study NAME exists and carries the SHA-256 of that file's spec (SPEC_SHA256_ATTR), which
`lpstudy create` writes last, once it has succeeded (lpstudy.study.studies.open_and_create). So a
worker started beside its creator never runs another spec: not the old spec of a study whose creator
was refused a changed one under the same name, not a study whose grid is still being enqueued.

What it ends with:
- the study is there with that spec: the storage, opened, and the worker starts;
- the stored spec differs from the file's: at once, one line naming the fields that differ, exit 2;
- the study, its spec or the creator's mark did not appear within the wait: one line saying what
  was missing, exit 2 (a creator that failed, a wrong --study or --storage: nothing to wait out);
- the database could not be reached: the retry budget (LPSTUDY_STORAGE_RETRY_S), then exit 75
  (lpstudy.db.outages), whatever the wait.

Without --config the worker waits only for the study and its spec. --wait-for-spec-s 0 (the
default) looks once, as `lpstudy worker` always has: an interactive worker on a mistyped name stops at
once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable

from lpstudy.db.optuna_storage import StudyStorage, quiet_optuna
from lpstudy.errors import NoStudiesYet, UserError
from lpstudy.design.spec import StudySpec
from lpstudy.study.studies import load_spec, spec_differences, spec_sha256
from lpstudy.values import SPEC_SHA256_ATTR

# Between two looks at a study that is not there yet (jittered: hundreds of workers wait at once).
LOOK_EVERY_S = 5.0


class SpecDiffers(UserError):
    """The study's stored spec is not the one this worker was given: it does not start."""


def wait_for_study(storage: StudyStorage, name: str, expected: StudySpec | None, wait_s: float,
                   expected_from: str = "--config", say: Callable[[str], None] | None = None) -> StudyStorage:
    """The storage, opened once the study `name` is ready (see the module): SpecDiffers at once
    when its spec is not `expected`; UserError when it is not ready after wait_s seconds;
    DatabaseUnreachable (exit 75) when the database cannot be reached within the retry budget."""
    deadline = time.monotonic() + max(0.0, wait_s)
    said = False
    quiet_optuna()
    while True:
        try:
            storage.open(wait=True)  # unreachable: retried, then StorageUnavailable (75)
            missing = _not_ready(storage, name, expected, expected_from)
        except NoStudiesYet as exc:  # an empty database: its creator has not made the tables yet
            missing = str(exc)
        if missing is None:
            return storage
        storage.close()  # opened again at the next look
        left = deadline - time.monotonic()
        if left <= 0:
            if wait_s <= 0:
                raise UserError(missing)
            raise UserError(f"{missing} (waited {wait_s:g} s, --wait-for-spec-s: did `lpstudy create` succeed?)")
        if say is not None and not said:
            say(f"waiting up to {wait_s:g} s for study {name!r}: {missing}")
            said = True
        time.sleep(min(left, random.uniform(0.5, 1.0) * LOOK_EVERY_S))


def _not_ready(storage: StudyStorage, name: str, expected: StudySpec | None, expected_from: str) -> str | None:
    """What is still missing for a worker to start on the study (None: nothing); SpecDiffers when the
    stored spec is another one."""
    from lpstudy.study.compare import load_plan

    if load_plan(storage, name) is not None:  # a comparison: its arms' specs are its plan's
        if expected is not None:
            raise UserError(f"study {name!r} is a comparison (`lpstudy compare`): its workers take no "
                            f"{expected_from}; start them with --study only")
        return None
    try:
        stored = load_spec(storage, name)  # no such study, or not its spec yet: one line that says so
    except UserError as exc:
        return str(exc)
    if expected is None:
        return None
    stored_plain, expected_plain = stored.to_plain(), expected.to_plain()
    if spec_sha256(stored_plain) != spec_sha256(expected_plain):  # as `create` compares them
        raise SpecDiffers(
            f"study {name!r} in {storage.display_url} holds another spec than {expected_from}: "
            f"{spec_differences(stored_plain, expected_plain)}; the worker does not start on it. Give the "
            "workers the study file its creator succeeded with, or create this one under another --study name")
    study_id = storage.optuna.get_study_id_from_name(name)
    mark = storage.optuna.get_study_system_attrs(study_id).get(SPEC_SHA256_ATTR)
    if mark is None:
        return (f"study {name!r} in {storage.display_url} holds the spec of {expected_from} but not yet its "
                f"creator's mark of success ({SPEC_SHA256_ATTR}, written last by `lpstudy create`; a study "
                "made by an older lpstudy gets it when `lpstudy create` runs again with the same file)")
    if mark != spec_sha256(expected_plain):
        raise SpecDiffers(f"study {name!r} in {storage.display_url} was marked ready for another spec "
                          f"({SPEC_SHA256_ATTR} {mark[:12]}..., {expected_from} {spec_sha256(expected_plain)[:12]}...); "
                          "the worker does not start on it")
    return None
