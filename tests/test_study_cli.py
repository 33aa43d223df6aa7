"""The study commands as a user meets them: mistakes get one line and exit status 2; a study runs on
SQLite, a journal file and a gRPC proxy; diverged runs are results; pruning stops a run; status
says where a search and a replicate stand."""

from __future__ import annotations

import json
import math
import socket
import subprocess
import sys

import optuna
import pytest
from optuna.trial import TrialState

from tests.study_helpers import TINY, best_by_hand, cli, lp_env, lpstudy, metrics_steps, trials_of, wait_for
from tests.pgserver import free_port

UNREACHABLE = "postgresql+psycopg://writer:s3cret@127.0.0.1:1/lp"  # nothing listens on port 1


def _one_line_error(code: int, out: str, err: str, status: int = 2) -> str:
    assert code == status, (code, out, err)
    assert err.startswith("lpstudy: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "s3cret" not in err + out
    return err


@pytest.mark.parametrize("command", [["create"], ["worker", "--devices", "cpu"], ["status"], ["export"],
                                     ["replicate", "--preset", "smoke"]])
def test_an_unreachable_database_is_one_line_without_the_password(command, capsys, monkeypatch):
    """Exit status 75 (EX_TEMPFAIL): an outage, not a mistake; create, replicate and worker wait for the
    retry budget first (0 s here: tests/test_storage_outage_exit.py waits)."""
    monkeypatch.setenv("LPSTUDY_STORAGE", UNREACHABLE)  # the URL from the environment, as in a deployment
    monkeypatch.setenv("LPSTUDY_STORAGE_RETRY_S", "0")
    err = _one_line_error(*cli(capsys, command[0], "--study", "s", *command[1:]), status=75)
    assert "127.0.0.1:1" in err and "writer:***@" in err and "Connection refused" in err


@pytest.mark.slow
@pytest.mark.timeout(300)  # only stops the test if the command hangs: the behaviour is asserted below
@pytest.mark.parametrize("command", [["status"], ["create"], ["worker", "--devices", "cpu"]])
def test_a_server_that_never_answers_is_given_up_on_in_one_line(command):
    """A host that accepts the connection and then says nothing (a firewall, a hung server): the
    driver's connect timeout ends the wait, and the command says so in one line, rather than hanging."""
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(16)  # the kernel completes the handshake; nobody ever answers
        url = f"postgresql+psycopg://writer:s3cret@127.0.0.1:{silent.getsockname()[1]}/lp"
        done = lpstudy(command[0], "--study", "s", *command[1:], "--storage", url, timeout=240,
                       env=lp_env(LPSTUDY_STORAGE_RETRY_S="0"))  # one try: the driver's timeout is the wait
    err = _one_line_error(done.returncode, done.stdout, done.stderr, status=75)
    assert "connection timeout expired" in err and "writer:***@127.0.0.1" in err


def test_a_malformed_study_yaml_is_one_line(sqlite_url, tmp_path, capsys):
    broken = tmp_path / "study.yaml"
    broken.write_text("preset: smoke\nspace:\n  p: [1, 2\n")
    err = _one_line_error(*cli(capsys, "create", "--study", "s", "--storage", sqlite_url, "--config", str(broken)))
    assert "is not valid YAML (line" in err
    broken.write_text("preset: smoke\nlearning_rate: 0.001\n")
    err = _one_line_error(*cli(capsys, "create", "--study", "s", "--storage", sqlite_url, "--config", str(broken)))
    assert "unknown key(s) learning_rate" in err and "training fields go under space:" in err
    broken.write_text("- p\n- lr\n")
    err = _one_line_error(*cli(capsys, "create", "--study", "s", "--storage", sqlite_url, "--config", str(broken)))
    assert "must hold a mapping" in err
    err = _one_line_error(*cli(capsys, "create", "--study", "s", "--storage", sqlite_url,
                               "--config", str(tmp_path / "missing.yaml")))
    assert "does not exist" in err


@pytest.mark.parametrize("flags, message", [
    (["--p", "0.5:4"], "p ≥ 1"),
    (["--lr", "1e-2:1e-4"], "lr: low (0.01) is above high (0.0001); swap them"),
    (["--search", "n_layerz=2,4"], "unknown field 'n_layerz'"),
    (["--set", "fold=10"], "fold must be in 0..9"),
    (["--sampler", "grid", "--p", "1:4"], "a grid needs a list of choices for every searched field"),
])
def test_a_space_that_cannot_be_sampled_is_refused_at_create(flags, message, tmp_path, capsys):
    database = tmp_path / "never.db"
    err = _one_line_error(*cli(capsys, "create", "--study", "s", "--storage", f"sqlite:///{database}", *flags))
    assert message in err
    assert not database.exists()  # refused before anything was written


def test_a_study_yaml_with_flags_creates_once_and_refuses_a_different_spec(sqlite_url, tmp_path, capsys):
    spec = tmp_path / "study.yaml"
    spec.write_text("preset: smoke\nsampler: random\npruner: none\nfolds: 5\n"
                    "space:\n  p: {low: 1, high: 4, inf: true}\n  lr: 1e-3\n  n_layer: [1, 2]\n")
    code, _, err = cli(capsys, "create", "--study", "y", "--storage", sqlite_url, "--config", str(spec),
                       "--gain-init", "4:16")
    assert code == 0 and "created" in err and "p ∈ [1, 4] ∪ {∞}" in err and "gain_init ∈ [4, 16] log" in err
    code, _, err = cli(capsys, "create", "--study", "y", "--storage", sqlite_url, "--config", str(spec),
                       "--gain-init", "4:16")
    assert code == 0 and "exists already, unchanged" in err
    # the study file alone (without --gain-init): the study as it is stored, continued
    code, _, err = cli(capsys, "create", "--study", "y", "--storage", sqlite_url, "--config", str(spec))
    assert code == 0 and "exists already, unchanged" in err and "gain_init ∈ [4, 16] log" in err
    # a flag that changes it: refused in one line naming the user's own flag, both values and the way out
    err = _one_line_error(*cli(capsys, "create", "--study", "y", "--storage", sqlite_url, "--config", str(spec),
                               "--gain-init", "2:64", "--sampler", "random"))
    assert err == ("lpstudy: error: study 'y' already exists with another spec: --gain-init 2:64 would change "
                   "gain_init ∈ [4, 16] log to gain_init ∈ [2, 64] log. Leave it out to continue the study as it is, "
                   "or give a new --study NAME to make a new study\n")
    study = optuna.load_study(study_name="y", storage=sqlite_url)
    stored = study.user_attrs["lpstudy"]
    assert study.user_attrs["kind"] == "search" and study.user_attrs["preset"] == "smoke"
    assert {"kind", "preset", "folds", "space", "sampler", "pruner", "loss_threshold"} <= set(stored)
    assert stored["folds"] == 5 and stored["space"]["p"] == {"type": "range", "low": 1.0, "high": 4.0,
                                                             "log": False, "inf": True}
    assert study.direction == optuna.study.StudyDirection.MINIMIZE


@pytest.mark.slow
def test_a_worker_for_a_study_that_does_not_exist_is_one_line(sqlite_url, tmp_path, capsys):
    code, _, err = cli(capsys, "create", "--study", "other", "--storage", sqlite_url, "--preset", "smoke")
    assert code == 0, err
    done = lpstudy("worker", "--study", "nope", "--storage", sqlite_url)  # a real process, as docker runs it
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "no study named 'nope'" in done.stderr and "studies there: other" in done.stderr
    assert "lpstudy search --study nope" in done.stderr
    err = _one_line_error(*cli(capsys, "worker", "--study", "s", "--storage", f"sqlite:///{tmp_path / 'no.db'}"))
    assert "no study database at" in err


def test_a_mistyped_study_name_gets_the_closest_names_not_an_offer_to_create_it(sqlite_url, capsys):
    for name in ("lp-search", "lp-replicate", "other"):
        code, _, err = cli(capsys, "create", "--study", name, "--storage", sqlite_url, "--preset", "smoke")
        assert code == 0, err
    for command in ("status", "worker", "export"):
        err = _one_line_error(*cli(capsys, command, "--study", "lp-serach", "--storage", sqlite_url))
        assert "no study named 'lp-serach'" in err and "did you mean 'lp-search'?" in err, (command, err)
        assert "lpstudy create" not in err, (command, err)


def test_a_diverged_run_completes_with_the_uniform_guess_loss(sqlite_url, corpus, capsys):
    code, _, err = cli(capsys, "create", "--study", "d", "--storage", sqlite_url, "--preset", "smoke", *TINY,
                       "--p", "2", "--lr", "1", "--gain-init", "64", "--set", "grad_clip=0", "--set", "warmup_steps=0")
    assert code == 0, err
    code, _, err = cli(capsys, "worker", "--study", "d", "--storage", sqlite_url, "--devices", "cpu",
                       "--n-trials", "1", "--no-progress")
    assert code == 0, err
    (trial,) = trials_of(sqlite_url, "d")
    assert trial.state == TrialState.COMPLETE and trial.user_attrs["diverged"] is True
    assert trial.value == pytest.approx(math.log(corpus.vocab_size))
    assert trial.user_attrs["diverged_step"] > 0 and trial.user_attrs["steps"] < 30
    assert "(diverged)" in err
    assert metrics_steps(sqlite_url, "d")[trial._trial_id][0] == 0


def test_a_pruned_run_stops_at_the_evaluation_that_pruned_it(sqlite_url, capsys, monkeypatch):
    import lpstudy.study.studies

    code, _, err = cli(capsys, "create", "--study", "pr", "--storage", sqlite_url, "--preset", "smoke", *TINY,
                       "--spread-trials", "0")  # a spread trial is never pruned
    assert code == 0, err
    # a pruner that prunes every run at its second evaluation: what matters here is the wiring
    monkeypatch.setattr(lpstudy.study.studies, "make_pruner",
                        lambda spec: optuna.pruners.ThresholdPruner(upper=0.0, n_warmup_steps=10))
    code, _, err = cli(capsys, "worker", "--study", "pr", "--storage", sqlite_url, "--devices", "cpu",
                       "--n-trials", "1", "--no-progress")
    assert code == 0, err
    (trial,) = trials_of(sqlite_url, "pr")
    assert trial.state == TrialState.PRUNED and trial.user_attrs["pruned"] is True
    assert sorted(trial.intermediate_values) == [0, 10] and trial.user_attrs["steps"] == 10
    assert metrics_steps(sqlite_url, "pr")[trial._trial_id] == [0, 10]


@pytest.mark.slow
def test_status_of_a_search_shows_counts_best_and_time_left(sqlite_url, capsys):
    cli(capsys, "create", "--study", "st", "--storage", sqlite_url, "--preset", "smoke", *TINY,
        "--sampler", "random", "--n-trials", "3", "--pruner", "none", "--spread-trials", "0")
    code, _, err = cli(capsys, "worker", "--study", "st", "--storage", sqlite_url, "--devices", "cpu",
                       "--n-trials", "2", "--no-progress")
    assert code == 0, err
    best = best_by_hand(trials_of(sqlite_url, "st"))  # the search's race: its leader on two folds
    code, out, _ = cli(capsys, "status", "--study", "st", "--storage", sqlite_url)
    assert code == 0
    assert "2 complete (0 diverged)" in out and "0 running" in out
    assert f"trial {best.number} · p=" in out and f"its tuning fold {best.user_attrs['fold']}: {best.value:.4f}" in out
    assert "time left  about" in out and "1 trial(s) to the target of 3" in out
    code, out, _ = cli(capsys, "status", "--study", "st", "--storage", sqlite_url, "--json")
    status = json.loads(out)
    assert status["counts"]["COMPLETE"] == 2 and status["best"]["number"] == best.number
    assert status["time_left"]["seconds"] > 0
    # the study's target: a worker stops by itself once it is reached
    code, _, err = cli(capsys, "worker", "--study", "st", "--storage", sqlite_url, "--devices", "cpu",
                       "--no-progress")
    assert code == 0 and "reached its target of 3" in err
    assert len(trials_of(sqlite_url, "st")) == 3


@pytest.mark.slow
def test_status_of_a_replicate_prints_the_table_per_p_and_the_verdicts(sqlite_url, capsys):
    code, _, err = cli(capsys, "replicate", "--study", "rep", "--storage", sqlite_url, "--preset", "smoke",
                       "--p", "1,2", "--folds", "2", *TINY, "--workers", "0")
    assert code == 0, err
    code, _, err = cli(capsys, "worker", "--study", "rep", "--storage", sqlite_url, "--devices", "cpu",
                       "--no-progress")
    assert code == 0 and "no grid cell left" in err
    code, out, _ = cli(capsys, "status", "--study", "rep", "--storage", sqlite_url)
    assert code == 0
    assert "grid     4/4 cells done" in out and "final validation loss per p" in out
    assert "Verdicts against the reference" in out
    code, out, _ = cli(capsys, "status", "--study", "rep", "--storage", sqlite_url, "--json")
    status = json.loads(out)
    assert [(r["p"], r["n"]) for r in status["per_p"]] == [(1.0, 2), (2.0, 2)]
    (arm,) = status["verdicts"]["arms"]
    assert arm["p"] == 1.0 and arm["n_folds"] == 2
    losses = {(t.params["p"], t.params["fold"]): t.value for t in trials_of(sqlite_url, "rep")}
    expected = ((losses[1.0, 0] - losses[2.0, 0]) + (losses[1.0, 1] - losses[2.0, 1])) / 2
    assert arm["diff"] == pytest.approx(expected)


@pytest.mark.slow
def test_a_study_on_a_journal_file_keeps_its_curves_in_trial_attributes(tmp_path, capsys):
    url = f"journal:///{tmp_path / 'study.log'}"
    code, _, err = cli(capsys, "create", "--study", "j", "--storage", url, "--preset", "smoke", *TINY,
                       "--sampler", "random", "--spread-trials", "0", "--race", "0")  # one trial, no race after it
    assert code == 0, err
    code, _, err = cli(capsys, "worker", "--study", "j", "--storage", url, "--devices", "cpu", "--n-trials", "1",
                       "--no-progress")
    assert code == 0 and "heartbeats by lease" in err, err  # lpstudy's own heartbeats (lpstudy.db.liveness.Lease)
    assert (tmp_path / "study.log").is_file()
    (trial,) = trials_of(url, "j")
    assert trial.state == TrialState.COMPLETE and "lpstudy_heartbeat" in trial.system_attrs
    records = {k: v for k, v in trial.system_attrs.items() if k.startswith("lpstudy_metrics:")}
    assert sorted(records) == [f"lpstudy_metrics:{s:08d}" for s in (0, 10, 20, 30)]
    assert records["lpstudy_metrics:00000030"]["val_loss"] == pytest.approx(trial.value)
    assert records["lpstudy_metrics:00000000"]["grad_norm"] is None  # NaN stored as None
    code, out, _ = cli(capsys, "status", "--study", "j", "--storage", url)
    assert code == 0 and "1 complete" in out



@pytest.mark.slow
def test_workers_work_through_the_grpc_storage_proxy(sqlite_url, capsys):
    port = free_port()
    proxy = subprocess.Popen([sys.executable, "-m", "lpstudy", "storage-proxy", "--storage", sqlite_url,
                              "--port", str(port)], env=lp_env(), stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        def listening():
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    return True
            except OSError:
                return False

        wait_for(listening, timeout=60, what="the storage proxy")
        url = f"grpc://127.0.0.1:{port}"
        code, _, err = cli(capsys, "replicate", "--study", "g", "--storage", url, "--preset", "smoke",
                           "--p", "2", "--folds", "2", *TINY)
        assert code == 0, err
        code, _, err = cli(capsys, "worker", "--study", "g", "--storage", url, "--devices", "cpu", "--no-progress")
        assert code == 0 and "no grid cell left" in err, err
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)
    trials = trials_of(sqlite_url, "g")  # the database behind the proxy
    assert sorted(t.params["fold"] for t in trials if t.state == TrialState.COMPLETE) == [0, 1]
    for t in trials:
        assert sorted(k for k in t.system_attrs if k.startswith("lpstudy_metrics:")) == [
            f"lpstudy_metrics:{s:08d}" for s in (0, 10, 20, 30)]
