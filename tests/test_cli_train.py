"""`lpstudy train` as a user runs it."""

import json
import os
import subprocess
import sys
import warnings

import pytest
import yaml

from tests.study_helpers import cli


def lpstudy(*args, env=None, cwd=None):
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "lpstudy", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd, timeout=300)


def in_process(capsys, *args) -> subprocess.CompletedProcess:
    """The command line run in this process (no new interpreter: a refusal takes milliseconds, not
    the seconds of importing torch); its exit status and output as a subprocess's, a warning it
    raises written to its standard error as Python's default filters would show it in a process of
    its own. That a fresh process refuses the same way, with the real exit status, no traceback and
    no warning from its imports, is tests/test_bad_input.py::test_bad_input_in_a_fresh_process (a
    `train` field among its cases)."""
    hidden = (DeprecationWarning, PendingDeprecationWarning, ImportWarning, ResourceWarning)
    with warnings.catch_warnings(record=True) as raised:
        warnings.simplefilter("always")
        code, out, err = cli(capsys, *args)
    err += "".join(warnings.formatwarning(w.message, w.category, w.filename, w.lineno)
                   for w in raised if not issubclass(w.category, hidden))
    return subprocess.CompletedProcess(list(args), code, out, err)


def assert_one_line_error(result, *fragments):
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("lpstudy: error:")
    for fragment in fragments:
        assert fragment in lines[0]


@pytest.mark.slow
def test_json_output_is_one_object_on_stdout_and_out_dir_is_complete(tmp_path):
    out = tmp_path / "run"
    r = lpstudy("train", "--preset", "smoke", "--p", "3.5", "--lr", "3e-3", "--gain-init", "8",
                "--fold", "2", "--folds", "5", "--steps", "50", "--json", "--out", str(out))
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)  # nothing else on stdout
    assert r.stdout.count("\n") == 1
    assert result["config"]["p"] == 3.5 and result["config"]["gain_init"] == 8.0
    assert result["config"]["fold"] == 2 and result["config"]["folds"] == 5 and result["steps"] == 50
    assert result["final_val_loss"] < 4.0 and result["best_val_loss"] <= result["final_val_loss"]
    assert "val" in r.stderr  # progress and summary go to stderr
    assert {p.name for p in out.iterdir()} == {"checkpoint.pt", "config.yaml", "metrics.jsonl", "summary.json"}
    history = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [h["step"] for h in history] == [0, 25, 50]
    saved = yaml.safe_load((out / "config.yaml").read_text())
    assert saved["preset"] == "smoke" and saved["p"] == 3.5 and saved["max_steps"] == 50


@pytest.mark.slow
def test_config_file_reproduces_the_run(tmp_path):
    first = lpstudy("train", "--preset", "smoke", "--p", "inf", "--steps", "30", "--set", "eval_interval=15",
                    "--json", "--out", str(tmp_path / "a"))
    assert first.returncode == 0, first.stderr
    again = lpstudy("train", "--config", str(tmp_path / "a" / "config.yaml"), "--json")
    assert again.returncode == 0, again.stderr
    a, b = json.loads(first.stdout), json.loads(again.stdout)
    assert b["config"]["p"] == "inf"
    assert b["final_val_loss"] == a["final_val_loss"]


@pytest.mark.parametrize("args,fragments", [
    (["--p", "0.5"], ["p must be", "0.5"]),
    (["--p", "nan"], ["p must be"]),
    (["--p", "three"], ["p must be", "three"]),
    (["--preset", "huge"], ["unknown preset", "smoke"]),
    (["--set", "n_layers=3"], ["unknown training field", "n_layers"]),
    (["--lr", "-1"], ["lr must be"]),
    (["--data", "/nonexistent/input.txt"], ["/nonexistent/input.txt", "does not exist"]),
    (["--fold", "10", "--folds", "10"], ["fold must be"]),
])
def test_bad_input_is_one_clear_line_and_status_2(args, fragments, capsys):
    assert_one_line_error(in_process(capsys, "train", "--preset", "smoke", *args), *fragments)


def test_malformed_yaml_is_one_clear_line(tmp_path, capsys):
    bad = tmp_path / "best.yaml"
    bad.write_text("preset: smoke\np: [3.5\n")
    assert_one_line_error(in_process(capsys, "train", "--config", str(bad)), "not valid YAML", "best.yaml")
    unknown = tmp_path / "typo.yaml"
    unknown.write_text("preset: smoke\nlearning_rate: 0.1\n")
    assert_one_line_error(in_process(capsys, "train", "--config", str(unknown)), "learning_rate")


@pytest.mark.slow
def test_wrong_checksum_is_refused(tmp_path):
    wrong = tmp_path / "mirror.txt"
    wrong.write_text("To be or not to be\n" * 500)
    env = {"LPSTUDY_DATA": "", "LPSTUDY_CACHE": str(tmp_path / "cache"), "LPSTUDY_DATA_URL": wrong.as_uri()}
    assert_one_line_error(lpstudy("train", "--preset", "smoke", env=env), "SHA-256", "--data")
    assert not (tmp_path / "cache").exists()


def test_unknown_option_is_a_usage_error_with_status_2():
    r = lpstudy("train", "--learning-rate", "1")
    assert r.returncode == 2 and "Traceback" not in r.stderr and "--learning-rate" in r.stderr


def test_python_dash_m_and_help():
    r = lpstudy("--help")
    assert r.returncode == 0 and "train" in r.stdout
