"""A corpus of bad input, as a careless or hostile user types it, over every command and every kind
of input: training fields out of range, study options and files, search spaces, storage URLs, paths,
study names, values of p, devices. Each case must end with exit status 2 and exactly one line on
standard error, with no traceback, no planted password in any output, and no new or changed file
in the working directory (which holds a real study database, a non-database file, a folder and
files that are not UTF-8). Run in this process (quick); a few as real subprocesses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lpstudy.training.bounds import FIELD_BOUNDS
from tests.study_helpers import cli, lp_env, lpstudy

SECRET = "Pl4nted-s3cret"
DB = "sqlite:///study.db"  # a real study database with the study "s"
REFUSED_PG = f"postgresql+psycopg://writer:{SECRET}@127.0.0.1:1/lpstudy"  # nothing listens on port 1

# -- the working directory every case runs in -------------------------------------------------------


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    from lpstudy.study.synthetic import write_synthetic_study

    work = tmp_path_factory.mktemp("bad-input")
    write_synthetic_study(f"sqlite:///{work / 'study.db'}", "s", n_trials=6, n_evals=3)
    (work / "notdb.db").write_text("this is not a database\n")
    (work / "afile").write_text("a plain file\n")
    (work / "adir").mkdir()
    (work / "latin1.yaml").write_bytes("preset: smoke\n# caf\xe9\n".encode("latin-1"))
    (work / "latin1.txt").write_bytes(("caf\xe9 " * 400).encode("latin-1"))
    (work / "list.yaml").write_text("- a\n- b\n")
    (work / "broken.yaml").write_text("preset: [smoke\n")
    return work


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else (-1, 0)
            for p in root.rglob("*")}


@pytest.fixture
def in_workdir(workdir, monkeypatch):
    monkeypatch.chdir(workdir)
    monkeypatch.delenv("LPSTUDY_STORAGE", raising=False)
    monkeypatch.setenv("LPSTUDY_STORAGE_RETRY_S", "0")

    def never(*args, **kwargs):
        raise AssertionError("a bad input reached the point of starting a server")

    monkeypatch.setattr(os, "execvpe", never)
    import optuna_dashboard

    monkeypatch.setattr(optuna_dashboard, "run_server", never)
    return workdir


def assert_one_line_refusal(code: int, out: str, err: str, prefix: str = "lpstudy: error: ") -> None:
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, f"exit {code}; stderr: {err[-2000:]}"
    assert len(lines) == 1 and lines[0].startswith(prefix), err[-2000:]
    assert "Traceback" not in err + out
    assert SECRET not in err + out
    assert "\x1b" not in err  # a name's terminal escapes are never echoed raw


# -- the cases, by kind ------------------------------------------------------------------------------

def _out_of_range(name: str) -> list[str]:
    """Values just outside a field's bound, far outside it, and not numbers at all."""
    bound = FIELD_BOUNDS[name]
    integer = name not in ("dropout", "gain_init", "lr", "min_lr_ratio", "weight_decay", "beta1", "beta2",
                           "grad_clip", "divergence_factor")
    below = bound.low if bound.low_open else bound.low - (1 if integer else 0.5)
    above = bound.high if bound.high_open else bound.high + 1
    fmt = (lambda v: str(int(v))) if integer else (lambda v: repr(float(v)))
    values = [fmt(below), fmt(above), "10^23", "abc"]
    if not integer:
        values += ["nan", "inf"]
    return values


FIELD_CASES = [(name, value) for name in FIELD_BOUNDS for value in _out_of_range(name)
               if not (name == "fold" and value == "1000")]  # fold 1000 of 10 folds is out of range anyway

# A --set of every field out of its range: `lpstudy train` (a run) and `lpstudy create` (a study's
# fixed value), and the same value as one end of a searched range.
TRAIN_FIELD = [("train", ["train", "--preset", "smoke", "--set", f"{n}={v}"]) for n, v in FIELD_CASES]
STRING_FIELDS = [("train", ["train", "--preset", "smoke", "--set", s]) for s in (
    "attention=sparse", "gain_per=token", "dtype=float8", "device=tpu", "device=cuda:x", "bias=maybe",
    "compile=2", "n_embd=99", "fold=10", "nosuchfield=1", "=3", "n_layer")]
CREATE_FIELD = [("create", ["create", "--study", "new", "--storage", "sqlite:///new.db", "--preset", "smoke",
                            "--set", f"{n}={v}"]) for n, v in FIELD_CASES[::2]]
LOW_HIGH = {"n_layer": "1:1000000000000", "n_embd": "16:100000", "max_steps": "10:100000000000",
            "lr": "1e-4:10", "dropout": "0:1.5", "beta1": "0.5:2", "beta2": "-0.5:0.9",
            "weight_decay": "-1:0.1", "min_lr_ratio": "0:2", "gain_init": "0.001:100000",
            "batch_size": "1:1000000", "eval_iters": "0:10", "warmup_steps": "0:100000000",
            "grad_clip": "-1:1", "seed": "0:10000000000", "n_head": "1:1000", "block_size": "1:64",
            "divergence_factor": "0.5:2", "threads": "0:100000", "p": "0.5:4", "fold": "0:20",
            "eval_interval": "0:10"}
SEARCH_RANGE = [("create", ["create", "--study", "new", "--storage", "sqlite:///new.db", "--preset", "smoke",
                            "--search", f"{n}={r}"]) for n, r in LOW_HIGH.items()]

# Study options and study files.
STUDY_OPTIONS = [("create", ["create", "--study", "new", "--storage", "sqlite:///new.db", *args]) for args in (
    ["--sampler", "nsgaii"], ["--pruner", "sometimes"], ["--preset", "huge"], ["--sampler-seed", "abc"],
    ["--sampler-seed", "-1"], ["--sampler-seed", "99999999999999"], ["--n-trials", "0"],
    ["--n-trials", "100000000000"], ["--heartbeat-interval", "0"], ["--heartbeat-interval", "100000000"],
    ["--grace-period", "5", "--heartbeat-interval", "10"], ["--max-retry", "-1"], ["--max-retry", "100000"],
    ["--loss-threshold", "-1"], ["--loss-threshold", "nan"], ["--loss-threshold", "1e9"],
    ["--n-startup-trials", "-3"], ["--folds", "1"], ["--folds", "5000"], ["--fold", "12"],
    ["--sampler", "grid"], ["--sampler", "grid", "--p", "1:4"],
    ["--sampler", "grid", "--search", "seed=" + ",".join(map(str, range(400))),
     "--search", "fold=" + ",".join(map(str, range(10))), "--p", ",".join(str(1 + i / 100) for i in range(300))],
    ["--set", "device=cpu"], ["--search", "lr=1e-4:1e-2:cubic"], ["--search", "lr=:"],
    ["--search", "lr=0:1e-2"], ["--search", "n_layer=1.5:3"], ["--search", "attention=0:1"],
    ["--search", "dropout=0.3:0.1"], ["--gain-init", "-4"], ["--lr", "0"], ["--lr", "2:3"])]
STUDY_FILES = {
    "sampler_seed": "space: {}\nsampler_seed: abc\n", "seed_float": "sampler_seed: 1.5\n",
    "heartbeat": "heartbeat_interval: -5\n", "n_trials": "n_trials: 'many'\n", "unknown": "spaces: {}\n",
    "space_list": "space: [1, 2]\n", "space_field": "space: {colour: 3}\n", "space_key": "space: {lr: {low: 1e-4, hi: 1}}\n",
    "space_range": "space: {n_layer: {low: 2, high: 1000000000000}}\n", "p_inf_high": "space: {p: {low: 1, high: inf}}\n",
    "step_log": "space: {lr: {low: 1e-4, high: 1e-2, step: 1e-4}}\n", "choices": "space: {n_layer: {choices: []}}\n",
    "fixed": "space: {beta1: 2}\n", "loss": "loss_threshold: [1]\n", "folds_searched": "space: {folds: [5, 10]}\n",
    "pruner": "pruner: 7\n", "value_extra": "space: {lr: {value: 1e-3, low: 1}}\n",
}
STUDY_FILE_CASES = [("create-file", name) for name in STUDY_FILES]
CONFIG_FILES = [("config", ["train", "--config", f]) for f in (
    "latin1.yaml", "list.yaml", "broken.yaml", "adir", "missing.yaml", "afile/x.yaml", "notdb.db")]
CONFIG_FILES += [("config", ["create", "--study", "new", "--storage", "sqlite:///new.db", "--config", f]) for f in (
    "latin1.yaml", "list.yaml", "broken.yaml", "adir", "missing.yaml", "afile/x.yaml")]

# Storage URLs × every command that takes one.
URLS = [
    f"postgresql+psycopg://writer:{SECRET}@db-host:abc/lpstudy",   # a port that is not a number
    f"postgresql+psycopg://writer:{SECRET}@db-host:99999999/lpstudy",
    f"postgresql+psycopg://wri@ter:{SECRET}@x@127.0.0.1:1/lpstudy",  # '@' in the user-info, refused port
    f"postgresql+psycopg://127.0.0.1:1/lpstudy?user=w&password={SECRET}",  # the password as a parameter
    REFUSED_PG,
    f"mysql+pymysql://u:{SECRET}@h:port/db",
    "sqlite:///", "sqlite://", "sqlite:///:memory:", "sqlite:///notdb.db", "sqlite:///adir",
    "sqlite:///afile/x.db", "journal://", "journal:///adir", "grpc://nohost", "grpc://h:0", "grpc://h:99999",
    f"ftp://u:{SECRET}@h/x", "not a url",
]
STORAGE_COMMANDS = [
    ["create", "--study", "s2"], ["worker", "--study", "s"], ["status", "--study", "s"],
    ["export", "--study", "s"], ["replicate", "--study", "r", "--preset", "smoke", "--p", "2", "--folds", "2"],
    ["report", "--study", "s", "-o", "r.html"], ["dashboard"], ["optuna-dashboard"], ["storage-proxy"],
]
_WRITERS = ("create", "replicate", "storage-proxy")
URL_CASES = [(cmd[0], [*cmd, "--storage", url]) for cmd in STORAGE_COMMANDS for url in URLS
             # a reader or worker on a journal folder or a refused proxy: covered by the writers
             if not (url.startswith("journal:///adir") and cmd[0] not in _WRITERS)]

# Paths × kinds: a folder where a file goes, a file where a folder goes, a path under a file, nothing.
PATH_CASES = [("paths", args) for args in (
    ["train", "--preset", "smoke", "--out", "afile"], ["train", "--preset", "smoke", "--out", "afile/run"],
    ["train", "--preset", "smoke", "--out", "notdb.db"], ["train", "--preset", "smoke", "--out", "a\x00b"],
    ["train", "--preset", "smoke", "--data", "adir"], ["train", "--preset", "smoke", "--data", "missing.txt"],
    ["train", "--preset", "smoke", "--data", "latin1.txt"], ["train", "--preset", "smoke", "--data", "afile/x"],
    ["train", "--preset", "smoke", "--data", "afile"],  # a file too short to be a corpus
    ["export", "--study", "s", "--storage", DB, "-o", "adir"],
    ["export", "--study", "s", "--storage", DB, "-o", "afile/best.yaml"],
    ["export", "--study", "s", "--storage", DB, "-o", "x" * 300 + ".yaml"],
    ["export", "--study", "s", "--storage", DB, "--format", "toml"],
    ["report", "--study", "s", "--storage", DB, "-o", "adir"],
    ["report", "--study", "s", "--storage", DB, "-o", "afile/report.html"],
    ["create", "--study", "new", "--storage", "sqlite:///afile/sub/new.db"],
    ["create", "--study", "new", "--storage", "journal:///afile/new.log"],
    ["replicate", "--study", "r", "--storage", "sqlite:///adir"],
    ["status", "--study", "s", "--storage", "sqlite:///storage/missing.db"],
    ["status", "--study", "s"],  # the default file is not there: status creates nothing
    ["worker", "--study", "s", "--storage", "sqlite:///missing/x.db"],
    ["worker", "--study", "s", "--storage", DB, "--data", "adir"],
    ["dashboard", "--storage", "sqlite:///missing.db"],
    ["dashboard", "--storage", DB, "--app-dir", "adir"],
)]

# Study names, in every command that takes one.
NAMES = ["a\nb", "a\x1b[31mred", "tab\there", "nul\x00", "x" * 129, "", "  ", " lead", "bidi\u202eevil",
         "zero\u200bwidth", "bell\x07"]
NAME_COMMANDS = [
    ["create", "--storage", "sqlite:///new.db"], ["worker", "--storage", DB], ["status", "--storage", DB],
    ["export", "--storage", DB], ["replicate", "--storage", "sqlite:///new.db", "--preset", "smoke"],
    ["report", "--storage", DB], ["dashboard", "--storage", DB],
]
NAME_CASES = [("names", [*cmd, "--study", name]) for cmd in NAME_COMMANDS for name in NAMES]

# p, devices, replicate's grid, numbers the option parser refuses.
P_VALUES = ["1e400", "0.5", "nan", "-inf", "abc", ""]
P_CASES = [("p", ["train", "--preset", "smoke", "--p", v]) for v in P_VALUES]
P_CASES += [("p", ["create", "--study", "new", "--storage", "sqlite:///new.db", "--p", v]) for v in P_VALUES]
P_CASES += [("p", ["replicate", "--study", "r", "--storage", "sqlite:///new.db", "--p", v]) for v in P_VALUES]
OTHER_CASES = [("other", args) for args in (
    ["replicate", "--study", "r", "--storage", "sqlite:///new.db", "--folds", "100000000"],
    ["replicate", "--study", "r", "--storage", "sqlite:///new.db", "--folds", "1"],
    ["replicate", "--study", "r", "--storage", "sqlite:///new.db", "--workers", "1", "--devices", "tpu"],
    ["replicate", "--study", "r", "--storage", "sqlite:///new.db", "--set", "p=2"],
    ["replicate", "--study", "r", "--storage", "sqlite:///new.db", "--set", "fold=1"],
    ["replicate", "--study", "r", "--storage", "sqlite:///new.db", "--preset", "smoke", "--set", "beta1=2"],
    ["replicate", "--study", "r", "--storage", "sqlite:///new.db", "--lr", "-1"],
    ["replicate", "--study", "r", "--storage", "sqlite:///new.db", "--workers", "-1"],
    ["worker", "--study", "s", "--storage", DB, "--devices", "tpu"],
    ["worker", "--study", "s", "--storage", DB, "--devices", ","],
    ["worker", "--study", "s", "--storage", DB, "--n-trials", "0"],
    ["worker", "--study", "s", "--storage", DB, "--timeout", "-1"],
    ["worker", "--study", "nope", "--storage", DB, "--devices", "cpu,cpu"],
    ["train", "--preset", "huge"], ["train", "--steps", "0"], ["train", "--steps", "ten"],
    ["train", "--set", "max_steps=100000000000000000000000"], ["train", "--lr", "inf"],
    ["train", "--fold", "10", "--folds", "10"], ["train", "--device", "tpu"], ["train", "--attention", "flash"],
    ["train", "--preset", "smoke", "--set", "n_layer=64", "--set", "n_embd=8192"],  # too large to allocate
    ["train", "--nosuchflag"], ["status"], ["export", "--study", "s", "--storage", DB, "--top", "0"],
    ["dashboard", "--storage", DB, "--port", "0"], ["dashboard", "--storage", DB, "--port", "http"],
    ["optuna-dashboard", "--storage", DB, "--port", "70000"],
    ["storage-proxy", "--storage", DB, "--threads", "0"], ["storage-proxy", "--storage", DB, "--port", "-1"],
    ["nosuchcommand"],
)]

CASES = (TRAIN_FIELD + STRING_FIELDS + CREATE_FIELD + SEARCH_RANGE + STUDY_OPTIONS + CONFIG_FILES + URL_CASES
         + PATH_CASES + NAME_CASES + P_CASES + OTHER_CASES)


def _id(case) -> str:
    kind, args = case
    return f"{kind}:{' '.join(args)[:60]!r}"


def test_the_corpus_is_large_and_covers_every_command():
    commands = {args[0] for _, args in CASES}
    assert len(CASES) + len(STUDY_FILE_CASES) + len(SYNTHETIC_CASES) >= 200
    assert {"train", "create", "worker", "status", "export", "replicate", "report", "dashboard",
            "optuna-dashboard", "storage-proxy"} <= commands


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_bad_input_is_one_line_and_exit_2_and_leaves_nothing(case, in_workdir, capsys):
    before = snapshot(in_workdir)
    code, out, err = cli(capsys, *case[1])
    assert_one_line_refusal(code, out, err)
    assert snapshot(in_workdir) == before


@pytest.mark.parametrize("name", list(STUDY_FILES))
def test_a_bad_study_file_is_one_line(name, in_workdir, capsys, tmp_path):
    study_file = tmp_path / f"{name}.yaml"
    study_file.write_text(STUDY_FILES[name])
    before = snapshot(in_workdir)
    code, out, err = cli(capsys, "create", "--study", "new", "--storage", "sqlite:///new.db", "--config",
                         str(study_file))
    assert_one_line_refusal(code, out, err)
    assert snapshot(in_workdir) == before


SYNTHETIC_CASES = [[], ["sqlite:///"], ["sqlite:///x.db", "--trials", "-1"], ["sqlite:///x.db", "--trials", "abc"],
                   ["sqlite:///x.db", "--evals", "0"], ["sqlite:///x.db", "--folds", "100000000"],
                   ["sqlite:///x.db", "--kind", "grid"], ["sqlite:///x.db", "--metrics", "csv"],
                   ["sqlite:///x.db", "--study", "a\nb"], ["sqlite:///x.db", "--seed", "-5"],
                   ["sqlite:///afile/x.db"], ["sqlite:///adir"], ["not a url"], [REFUSED_PG],
                   [f"postgresql+psycopg://u:{SECRET}@h:abc/db"], ["sqlite:///x.db", "--nosuch"]]


@pytest.mark.parametrize("argv", SYNTHETIC_CASES, ids=lambda a: repr(" ".join(a))[:60])
def test_the_synthetic_study_writer_refuses_bad_arguments_in_one_line(argv, in_workdir, capsys):
    from lpstudy.study.synthetic import main

    before = snapshot(in_workdir)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    assert_one_line_refusal(exited.value.code, out, err, prefix="python -m lpstudy.study.synthetic: error: ")
    assert snapshot(in_workdir) == before


# A few as a user runs them: a fresh interpreter, the real argv, the real exit status.
SUBPROCESS_CASES = [
    ["train", "--preset", "smoke", "--set", "beta1=2"],
    ["train", "--config", "latin1.yaml"],
    ["status", "--study", "s", "--storage", f"postgresql+psycopg://u:{SECRET}@h:abc/db"],
    ["create", "--study", "a\x1b]0;owned\x07", "--storage", "sqlite:///new.db"],
    ["replicate", "--study", "r", "--storage", "sqlite:///new.db", "--workers", "1", "--devices", "tpu"],
]


@pytest.mark.parametrize("argv", SUBPROCESS_CASES, ids=lambda a: repr(" ".join(a))[:60])
def test_bad_input_in_a_fresh_process(argv, workdir):
    before = snapshot(workdir)
    env = {k: v for k, v in lp_env().items() if k != "LPSTUDY_STORAGE"}
    done = lpstudy(*argv, cwd=workdir, env=env, timeout=120)
    assert_one_line_refusal(done.returncode, done.stdout, done.stderr)
    assert snapshot(workdir) == before


def test_a_failed_create_removes_the_database_and_folders_it_made(in_workdir, capsys, monkeypatch):
    import lpstudy.study.studies as studies

    def broken(study, spec):
        raise RuntimeError("the disk filled up")

    monkeypatch.setattr(studies, "enqueue_missing_cells", broken)
    before = snapshot(in_workdir)
    with pytest.raises(RuntimeError):
        cli(capsys, "create", "--study", "g", "--storage", "sqlite:///made/here/g.db", "--preset", "smoke",
            "--sampler", "grid", "--p", "1,2")
    assert snapshot(in_workdir) == before  # no made/, no made/here/g.db


def test_a_failed_create_in_an_existing_database_leaves_no_half_made_study(in_workdir, capsys, monkeypatch):
    import lpstudy.study.studies as studies
    from tests.study_helpers import open_study

    monkeypatch.setattr(studies, "enqueue_missing_cells", lambda study, spec: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        cli(capsys, "create", "--study", "half", "--storage", DB, "--preset", "smoke", "--sampler", "grid",
            "--p", "1,2")
    with pytest.raises(Exception, match="no study named 'half'"):
        open_study(DB, "half")


def test_a_failed_download_leaves_no_cache_folder(in_workdir, capsys, monkeypatch):
    monkeypatch.delenv("LPSTUDY_DATA", raising=False)
    monkeypatch.setenv("LPSTUDY_CACHE", str(in_workdir / "cache" / "lpstudy"))
    monkeypatch.setenv("LPSTUDY_DATA_URL", "http://127.0.0.1:1/input.txt")  # nothing listens there
    before = snapshot(in_workdir)
    code, out, err = cli(capsys, "train", "--preset", "smoke")
    assert_one_line_refusal(code, out, err)
    assert "download" in err and "--data" in err
    assert snapshot(in_workdir) == before  # no cache/ folder


def test_a_study_name_in_markdown_is_shown_as_text_in_the_dashboard(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from lpstudy.study.synthetic import write_synthetic_study

    name = "[click me](http://evil.example) **loud** :red[x]"
    url = f"sqlite:///{tmp_path / 'md.db'}"
    write_synthetic_study(url, name, n_trials=4, n_evals=3)
    monkeypatch.setenv("LPSTUDY_STORAGE", url)
    at = AppTest.from_file(str(Path(__file__).resolve().parents[1] / "app" / "dashboard.py"), default_timeout=60)
    at.run()
    assert not at.exception
    (caption,) = [c.value for c in at.caption if "Study" in c.value]
    # every markdown character of the name is escaped: it renders as the literal name, not a link
    assert r"\[click me\]\(http\:\/\/evil\.example\) \*\*loud\*\* \:red\[x\]" in caption
    assert "](http" not in caption and "**loud**" not in caption
