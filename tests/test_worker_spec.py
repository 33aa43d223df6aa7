"""Workers start only on the spec their creator succeeded with (`lpstudy worker --config FILE`,
lpstudy.study.spec_wait), against a real PostgreSQL: a spec the creator did not write is refused in
one line naming what differs; a worker started before its creator waits for the creator's mark
(lpstudy_spec_sha256) and then trains; one that never sees it stops at its deadline."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys

import pytest
import sqlalchemy as sa

from tests.study_helpers import lp_env, lpstudy, open_study, trials_of, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

STUDY = """preset: smoke
n_trials: 1
space:
  p: "1:{high}"
  max_steps: 30
  eval_interval: 10
  eval_iters: 2
"""


def study_file(tmp_path, high: int):
    path = tmp_path / f"study-{high}.yaml"
    path.write_text(STUDY.format(high=high))
    return str(path)


def test_a_worker_refuses_a_spec_its_creator_did_not_write(pg_url, tmp_path):
    old, new = study_file(tmp_path, 4), study_file(tmp_path, 3)
    assert lpstudy("create", "--study", "s", "--config", old, "--storage", pg_url).returncode == 0
    # the spec changed under the same name: the creator is refused (its Job fails) ...
    refused = lpstudy("create", "--study", "s", "--config", new, "--storage", pg_url)
    assert refused.returncode == 2 and "already exists" in refused.stderr and "with another spec" in refused.stderr
    # ... and the workers given the new study file do not run the old spec, however long they would wait
    done = lpstudy("worker", "--study", "s", "--config", new, "--wait-for-spec-s", "600", "--devices", "cpu",
                   "--storage", pg_url)
    assert done.returncode == 2
    assert done.stderr == (f"lpstudy: error: study 's' in {pg_url} holds another spec than --config {new}: "
                           "space.p.high stored 4.0, new 3.0; the worker does not start on it. Give the workers "
                           "the study file its creator succeeded with, or create this one under another "
                           "--study name\n")
    assert [t for t in trials_of(pg_url, "s") if t.state.name != "WAITING"] == []  # nothing ran (spread trials wait)


def test_a_worker_started_before_its_creator_waits_for_it_then_trains(pg_url, tmp_path):
    spec = study_file(tmp_path, 4)
    log = tmp_path / "worker.log"
    with open(log, "w") as out:
        worker = subprocess.Popen([sys.executable, "-m", "lpstudy", "worker", "--study", "s", "--config", spec,
                                   "--wait-for-spec-s", "300", "--devices", "cpu", "--no-progress", "--storage",
                                   pg_url], stdout=out, stderr=subprocess.STDOUT, env=lp_env())
    try:
        wait_for(lambda: "waiting up to 300 s for study 's'" in log.read_text() or worker.poll() is not None,
                 timeout=180, what="the worker's wait")
        assert worker.poll() is None, log.read_text()
        assert "holds no studies yet" in log.read_text()  # an empty database: the creator has not begun
        assert lpstudy("create", "--study", "s", "--config", spec, "--storage", pg_url).returncode == 0
        assert worker.wait(timeout=240) == 0, log.read_text()
    finally:
        if worker.poll() is None:
            worker.kill()
    assert [t.state.name for t in trials_of(pg_url, "s")] == ["COMPLETE"]
    assert "stopped: the study reached its target of 1 trials" in log.read_text()


def test_a_study_its_creator_did_not_mark_is_waited_for_until_the_deadline(pg_url, tmp_path):
    spec = study_file(tmp_path, 4)
    assert lpstudy("create", "--study", "s", "--config", spec, "--storage", pg_url).returncode == 0
    study, stored = open_study(pg_url, "s")
    mark = study._storage.get_study_system_attrs(study._study_id)["lpstudy_spec_sha256"]
    # the SHA-256 of the spec as stored, its keys sorted (written out here, not lpstudy's function)
    assert mark == hashlib.sha256(json.dumps(stored.to_plain(), sort_keys=True, default=str).encode()).hexdigest()
    engine = sa.create_engine(pg_url)
    with engine.begin() as conn:  # a creator that stopped before its last step (or an older lpstudy's study)
        conn.execute(sa.text("DELETE FROM study_system_attributes WHERE key = 'lpstudy_spec_sha256'"))
    engine.dispose()
    done = lpstudy("worker", "--study", "s", "--config", spec, "--wait-for-spec-s", "3", "--devices", "cpu",
                   "--storage", pg_url)
    assert done.returncode == 2
    last = done.stderr.splitlines()[-1]
    assert last == (f"lpstudy: error: study 's' in {pg_url} holds the spec of --config {spec} but not yet its "
                    "creator's mark of success (lpstudy_spec_sha256, written last by `lpstudy create`; a study "
                    "made by an older lpstudy gets it when `lpstudy create` runs again with the same file) "
                    "(waited 3 s, --wait-for-spec-s: did `lpstudy create` succeed?)")
    assert [t for t in trials_of(pg_url, "s") if t.state.name != "WAITING"] == []  # nothing ran
    # the creator run again with the same file writes the mark: the study is the same, unchanged
    again = lpstudy("create", "--study", "s", "--config", spec, "--storage", pg_url)
    assert again.returncode == 0 and "exists already, unchanged" in again.stderr
    study, _ = open_study(pg_url, "s")
    assert study._storage.get_study_system_attrs(study._study_id)["lpstudy_spec_sha256"] == mark


def test_a_worker_on_a_study_that_never_appears_stops_at_its_deadline(pg_url, tmp_path):
    done = lpstudy("worker", "--study", "s", "--config", study_file(tmp_path, 4), "--wait-for-spec-s", "2",
                   "--devices", "cpu", "--storage", pg_url)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        f"lpstudy: error: the database {pg_url} holds no studies yet; create one first (`lpstudy create` or "
        "`lpstudy replicate`) or check --storage / LPSTUDY_STORAGE (waited 2 s, --wait-for-spec-s: did "
        "`lpstudy create` succeed?)")
