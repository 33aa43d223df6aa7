"""`lpstudy studies` lists every study a database holds, and `lpstudy delete-study NAME` deletes one
with every row lpstudy wrote for it (the metrics table's too), asking for the name again unless
--yes and refusing while trials run unless --force: on SQLite and a journal file here, on
PostgreSQL in the slow tier."""

from __future__ import annotations

import json

import pytest
import sqlalchemy as sa

from lpstudy.study.synthetic import write_synthetic_study
from tests.study_helpers import cli


def _metric_rows(url: str, name: str) -> int:
    engine = sa.create_engine(url)
    try:
        with engine.connect() as conn:
            return conn.execute(sa.text("SELECT count(*) FROM lpstudy_metrics WHERE study_name = :n"), {"n": name}).scalar()
    finally:
        engine.dispose()


def _two_studies(url: str, metrics: str) -> None:
    write_synthetic_study(url, "keep", n_trials=6, n_evals=3, seed=1, metrics=metrics, states=False)
    write_synthetic_study(url, "busy", n_trials=12, n_evals=3, seed=2, metrics=metrics)  # newest trials RUNNING


def _listed(capsys, url: str) -> dict[str, dict]:
    code, out, err = cli(capsys, "studies", "--storage", url, "--json")
    assert code == 0, err
    return {row["study"]: row for row in json.loads(out)}


def _lists_and_deletes(capsys, url: str, sql: bool) -> None:
    _two_studies(url, "table" if sql else "attrs")
    rows = _listed(capsys, url)
    assert set(rows) == {"keep", "busy"}
    assert rows["keep"]["counts"]["COMPLETE"] + rows["keep"]["counts"]["PRUNED"] + rows["keep"]["counts"]["FAIL"] == 6
    assert rows["busy"]["counts"]["RUNNING"] >= 1 and rows["keep"]["kind"] == "search"
    assert rows["keep"]["best"] is not None and rows["keep"]["last_activity"]
    code, out, err = cli(capsys, "studies", "--storage", url)
    assert code == 0 and out.splitlines()[0].split()[:3] == ["study", "kind", "preset"] and "busy" in out, err
    if sql:
        assert _metric_rows(url, "busy") > 0
    # no --yes and no name piped again: refused, nothing deleted
    code, _, err = cli(capsys, "delete-study", "busy", "--storage", url)
    assert code == 2 and err == ("lpstudy: error: '' is not 'busy'; nothing deleted (give the name again on standard "
                                 "input, or --yes to delete without asking)\n"), err
    # trials running: refused unless --force
    code, _, err = cli(capsys, "delete-study", "busy", "--storage", url, "--yes")
    running = rows["busy"]["counts"]["RUNNING"]
    assert code == 2 and err.startswith(f"lpstudy: error: study 'busy' has {running} running trial(s); stop its workers "
                                        "first (or, if they are gone, give --force)"), err
    assert set(_listed(capsys, url)) == {"keep", "busy"}
    code, _, err = cli(capsys, "delete-study", "busy", "--storage", url, "--yes", "--force")
    assert code == 0 and f"deleted study 'busy' from {url}: {rows['busy']['trials']} trial(s)" in err, err
    assert set(_listed(capsys, url)) == {"keep"}
    if sql:
        assert _metric_rows(url, "busy") == 0 and _metric_rows(url, "keep") > 0
    code, _, err = cli(capsys, "delete-study", "bussy", "--storage", url, "--yes")
    assert code == 2 and "no study named 'bussy'" in err and "did you mean 'keep'" not in err, err


def test_studies_are_listed_and_one_is_deleted_with_its_curves_on_sqlite(tmp_path, capsys):
    _lists_and_deletes(capsys, f"sqlite:///{tmp_path / 'study.db'}", sql=True)


def test_studies_are_listed_and_one_is_deleted_on_a_journal_file(tmp_path, capsys):
    _lists_and_deletes(capsys, f"journal:///{tmp_path / 'study.journal'}", sql=False)


@pytest.mark.postgres
def test_studies_are_listed_and_one_is_deleted_with_its_curves_on_postgresql(pg_url, capsys):
    _lists_and_deletes(capsys, pg_url, sql=True)


def test_delete_study_asks_for_the_name_again_on_a_terminal(tmp_path, capsys, monkeypatch):
    import sys

    url = f"sqlite:///{tmp_path / 'study.db'}"
    write_synthetic_study(url, "keep", n_trials=4, n_evals=3, seed=1, states=False)
    monkeypatch.setattr(sys.stdin, "isatty", lambda: True, raising=False)
    monkeypatch.setattr("typer.prompt", lambda *a, **k: "kep")
    code, _, err = cli(capsys, "delete-study", "keep", "--storage", url)
    assert code == 2 and "lpstudy: error: 'kep' is not 'keep'; nothing deleted" in err, err
    monkeypatch.setattr("typer.prompt", lambda *a, **k: "keep")
    code, _, err = cli(capsys, "delete-study", "keep", "--storage", url)
    assert code == 0 and "deleted study 'keep'" in err, err
    assert _listed(capsys, url) == {}


def test_deleting_a_study_removes_its_checkpoints_from_the_default_artifact_folder(tmp_path, capsys, monkeypatch):
    """The checkpoints of a study's unfinished trials (FILE.artifacts next to a SQLite file) go with
    it; another study's stay. Before, they stayed behind in the folder for ever."""
    import io

    import optuna
    from optuna.artifacts import FileSystemArtifactStore

    from lpstudy.study.checkpoints import ARTIFACTS_ENV, CHECKPOINT_ATTR

    monkeypatch.delenv(ARTIFACTS_ENV, raising=False)
    url = f"sqlite:///{tmp_path / 'study.db'}"
    folder = tmp_path / "study.db.artifacts"  # the default store of a SQLite file (docs: checkpoints)
    folder.mkdir()
    store = FileSystemArtifactStore(str(folder))
    for name in ("gone", "kept"):
        study = optuna.create_study(study_name=name, storage=url)
        trial = study.ask()
        store.write(f"ckpt-{name}", io.BytesIO(b"a checkpoint"))
        study._storage.set_trial_system_attr(trial._trial_id, CHECKPOINT_ATTR, {"artifact_id": f"ckpt-{name}", "step": 5})
    code, _, err = cli(capsys, "delete-study", "gone", "--storage", url, "--yes", "--force")
    assert code == 0 and "1 trial(s), 0 row(s) of curves, 1 checkpoint(s)" in err, err
    assert sorted(p.name for p in folder.iterdir()) == ["ckpt-kept"]


def test_delete_study_takes_the_name_as_every_command_does_and_piped(tmp_path, capsys, monkeypatch):
    """`delete-study --study NAME` as every other command names a study, the positional NAME still,
    and the name confirmed through a pipe (echo NAME | lpstudy delete-study NAME) as on a terminal."""
    import io
    import sys

    url = f"sqlite:///{tmp_path / 'study.db'}"
    for name in ("a", "b", "c"):
        write_synthetic_study(url, name, n_trials=3, n_evals=2, seed=1, states=False)
    code, _, err = cli(capsys, "delete-study", "--study", "a", "--storage", url, "--yes")
    assert code == 0 and "deleted study 'a'" in err, err
    code, _, err = cli(capsys, "delete-study", "b", "--storage", url, "--yes")
    assert code == 0 and "deleted study 'b'" in err, err
    monkeypatch.setattr(sys, "stdin", io.StringIO("c\n"))
    code, _, err = cli(capsys, "delete-study", "-s", "c", "--storage", url)
    assert code == 0 and "deleted study 'c'" in err, err
    assert _listed(capsys, url) == {}
    code, _, err = cli(capsys, "delete-study", "x", "--study", "y", "--storage", url, "--yes")
    assert code == 2 and err.count("\n") == 1, err


def test_a_comparison_is_listed_through_its_arms_and_deleted_with_them(tmp_path, capsys):
    """A comparison's own study holds no trials: `studies` counts its arms' trials and their best,
    and `delete-study` removes its arms' studies with it, saying how many trials went."""
    from tests.staged_studies import write_staged_compare

    url = f"sqlite:///{tmp_path / 'study.db'}"
    write_staged_compare(url, "cmp", {"p=2": [3.0, 3.1, 3.2], "p=3": [2.9, 3.0]}, 3, [2, 3], 0.005)
    write_synthetic_study(url, "other", n_trials=3, n_evals=2, seed=1, states=False)
    rows = _listed(capsys, url)
    arms = [name for name in rows if name.startswith("cmp:")]
    assert len(arms) == 4  # each arm's tuning and folds studies
    assert rows["cmp"]["trials"] == sum(rows[a]["trials"] for a in arms) == 2 * 2 + 3 + 2
    assert rows["cmp"]["counts"]["COMPLETE"] == 9
    # its best: the arm with the lowest mean over the most folds (p=2: 3.0, 3.1, 3.2), not its lowest single
    # run (p=3's 2.9), nor an arm with a fold still to run (p=3: 2 of 3)
    assert rows["cmp"]["best"] == pytest.approx(3.1) and rows["cmp"]["best_folds"] == 3
    code, _, err = cli(capsys, "delete-study", "--study", "cmp", "--storage", url, "--yes")
    assert code == 0 and "deleted study 'cmp' and its 4 arm studies" in err and ": 9 trial(s)" in err, err
    assert set(_listed(capsys, url)) == {"other"}
