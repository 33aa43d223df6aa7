"""A corpus of bad input, as a careless or hostile user types it, over every command and every kind
of input: training fields out of range, study options and files, search spaces, storage URLs, paths,
study names, values of p, devices. Each case must end with exit status 2 (75 for a database that
cannot be reached: an outage, not a mistake, lpstudy.errors) and exactly one line on standard error that names its own problem (a fragment per case: the field, the value or the rule),
with no traceback, no planted password in any output, and no new or changed file in the working
directory (which holds a real study database, a non-database file, a folder and files that are not
UTF-8). Run in this process (quick); a few as real subprocesses."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from lpstudy.training.bounds import FIELD_BOUNDS
from lpstudy.training.fields import FIELDS
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


def assert_one_line_refusal(code: int, out: str, err: str, expected: tuple[str, ...],
                            prefix: str = "lpstudy: error: ", status: int = 2) -> None:
    """Exit status `status` (2), one line on standard error that starts with prefix and holds every fragment of
    `expected` (the field, the value or the rule the case is about), no traceback, no secret. A case
    that fails early for another reason (a missing option) fails here: its line names another problem."""
    assert expected and all(len(fragment) >= 3 for fragment in expected), f"a case must name its problem: {expected!r}"
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == status, f"exit {code}; stderr: {err[-2000:]}"
    assert len(lines) == 1 and lines[0].startswith(prefix), err[-2000:]
    missing = [fragment for fragment in expected if fragment not in lines[0]]
    assert not missing, f"the refusal does not name {missing!r}: {lines[0]}"
    assert "Traceback" not in err + out
    assert SECRET not in err + out
    assert "\x1b" not in err  # a name's terminal escapes are never echoed raw


# -- the cases, by kind: (kind, argv, the fragments its one line must hold) --------------------------
#
# Each fragment was read off the code that makes the message (lpstudy/training/bounds.py
# problems_of, config.py coerce_field and TrainConfig, design/space.py, design/spec.py, db/urls.py,
# names.py, paths.py, values.py check_p, typer's option checks), so that a case that stops at another
# check than the one it is named for fails.

# read off the fields' one declaration, so that a new integer field (repeat) gets integer cases
INT_FIELDS = tuple(name for name, field in FIELDS.items() if field.type is int)


def _out_of_range(name: str) -> list[str]:
    """Values just outside a field's bound, far outside it, and not numbers at all."""
    bound = FIELD_BOUNDS[name]
    integer = name in INT_FIELDS
    below = bound.low if bound.low_open else bound.low - (1 if integer else 0.5)
    above = bound.high if bound.high_open else bound.high + 1
    fmt = (lambda v: str(int(v))) if integer else (lambda v: repr(float(v)))
    values = [fmt(below), fmt(above), "10^23", "abc"]
    if not integer:
        values += ["nan", "inf"]
    return values


def _field_problem(name: str, value: str) -> tuple[str, ...]:
    """'NAME must be in [LOW, HIGH], got VALUE' (bounds.problems_of, on the parsed number) or 'NAME
    must be int|float|a number or 'matched', got 'TEXT'' (config.coerce_field, on text that is no number)."""
    try:
        number = int(value) if name in INT_FIELDS else float(value)
    except ValueError:
        return f"{name} must be ", f"got {value!r}"
    return f"{name} must be in ", f"got {number!r}"


FIELD_CASES = [(name, value) for name in FIELD_BOUNDS for value in _out_of_range(name)
               if not (name == "fold" and value == "1000")]  # fold 1000 of 10 folds is out of range anyway

# A --set of every field out of its range: `lpstudy train` (a run) and `lpstudy create` (a study's
# fixed value), and the same value as one end of a searched range.
TRAIN_FIELD = [("train", ["train", "--preset", "smoke", "--set", f"{n}={v}"], _field_problem(n, v))
               for n, v in FIELD_CASES]
STRING_FIELDS = [("train", ["train", "--preset", "smoke", "--set", s], expected) for s, expected in (
    ("attention=sparse", ("attention must be 'lp' or 'baseline', got 'sparse'",)),
    ("gain_per=token", ("gain_per must be 'layer' or 'head', got 'token'",)),
    ("dtype=float8", ("dtype must be 'auto', 'float32' or 'bfloat16', got 'float8'",)),
    ("device=tpu", ("unknown device 'tpu'",)),
    ("device=cuda:x", ("unknown device 'cuda:x'",)),
    ("bias=maybe", ("bias must be bool, got 'maybe'",)),
    ("compile=2", ("compile must be bool, got '2'",)),
    ("n_embd=99", ("n_embd (99) must be a multiple of n_head (2)",)),
    ("fold=10", ("fold must be in 0..9 for 10 folds, got 10",)),
    ("nosuchfield=1", ("unknown training field 'nosuchfield'",)),
    ("=3", ("--set takes FIELD=VALUE, got '=3'",)),
    ("n_layer", ("--set takes FIELD=VALUE, got 'n_layer'",)),
)]
NEW = ["--study", "new", "--storage", "sqlite:///new.db"]
CREATE_FIELD = [("create", ["create", *NEW, "--preset", "smoke", "--set", f"{n}={v}"], _field_problem(n, v))
                for n, v in FIELD_CASES[::2]]
# field: (LOW:HIGH with one end outside the field's bound, that end as space.SearchSpace.validate names it)
SEARCH_RANGES = {
    "n_layer": ("1:1000000000000", "n_layer = 1000000000000"), "n_embd": ("16:100000", "n_embd = 100000"),
    "max_steps": ("10:100000000000", "max_steps = 100000000000"), "lr": ("1e-4:10", "lr = 10"),
    "dropout": ("0:1.5", "dropout = 1.5"), "beta1": ("0.5:2", "beta1 = 2"), "beta2": ("-0.5:0.9", "beta2 = -0.5"),
    "weight_decay": ("-1:0.1", "weight_decay = -1"), "min_lr_ratio": ("0:2", "min_lr_ratio = 2"),
    "gain_init": ("0.001:100000", "gain_init = 100000"), "batch_size": ("1:1000000", "batch_size = 1000000"),
    "eval_iters": ("0:10", "eval_iters = 0"), "warmup_steps": ("0:100000000", "warmup_steps = 100000000"),
    "grad_clip": ("-1:1", "grad_clip = -1"), "seed": ("0:10000000000", "seed = 10000000000"),
    "n_head": ("1:1000", "n_head = 1000"), "block_size": ("1:64", "block_size = 1"),
    "divergence_factor": ("0.5:2", "divergence_factor = 0.5"), "threads": ("0:100000", "threads = 100000"),
    "fold": ("0:20", "fold = 20"), "eval_interval": ("0:10", "eval_interval = 0"),
}
SEARCH_RANGE = [("create", ["create", *NEW, "--preset", "smoke", "--search", f"{n}={r}"],
                 (f"{end} in the space gives an invalid run", f"{n} must be"))
                for n, (r, end) in SEARCH_RANGES.items()]
SEARCH_RANGE += [("create", ["create", *NEW, "--preset", "smoke", "--search", "p=0.5:4"],
                  ("p must be a number ≥ 1", "got 0.5"))]  # p's ends are checked as p, before the space

# Study options and study files.
STUDY_OPTIONS = [("create", ["create", *NEW, *args], expected) for args, expected in (
    (["--sampler", "nsgaii"], ("unknown sampler 'nsgaii'",)),
    (["--pruner", "sometimes"], ("unknown pruner 'sometimes'",)),
    (["--preset", "huge"], ("unknown preset 'huge'",)),
    (["--sampler-seed", "abc"], ("'--sampler-seed'", "valid integer")),
    (["--sampler-seed", "-1"], ("'--sampler-seed'", "greater than or equal to 0")),
    (["--sampler-seed", "99999999999999"], ("sampler_seed must be an integer in", "got 99999999999999")),
    (["--n-trials", "0"], ("'--n-trials'", "greater than or equal to 1")),
    (["--n-trials", "100000000000"], ("n_trials must be an integer in [1, 10000000], got 100000000000",)),
    (["--heartbeat-interval", "0"], ("'--heartbeat-interval'", "greater than or equal to 1")),
    (["--heartbeat-interval", "100000000"], ("heartbeat_interval must be an integer in [1, 86400]",)),
    (["--grace-period", "5", "--heartbeat-interval", "10"],
     ("grace_period (5 s) must be longer than heartbeat_interval (10 s)",)),
    (["--max-retry", "-1"], ("'--max-retry'", "greater than or equal to 0")),
    (["--max-retry", "100000"], ("max_retry must be an integer in [0, 1000], got 100000",)),
    (["--loss-threshold", "-1"], ("loss_threshold must be in (0, 1000] nats, got -1.0",)),
    (["--loss-threshold", "nan"], ("loss_threshold must be in (0, 1000] nats, got nan",)),
    (["--loss-threshold", "1e9"], ("loss_threshold must be in (0, 1000] nats, got 1000000000.0",)),
    (["--n-startup-trials", "-3"], ("'--n-startup-trials'", "greater than or equal to 0")),
    (["--folds", "1"], ("folds must be in [2, 1000], got 1",)),
    (["--folds", "5000"], ("folds must be in [2, 1000], got 5000",)),
    (["--fold", "12"], ("fold must be in 0..9 for 10 folds, got 12",)),
    (["--sampler", "grid"], ("a grid needs at least one field with a list of choices",)),
    (["--sampler", "grid", "--p", "1:4"], ("a grid needs a list of choices for every searched field", "p is a range")),
    (["--sampler", "grid", "--search", "seed=" + ",".join(map(str, range(400))),
      "--search", "fold=" + ",".join(map(str, range(10))), "--p", ",".join(str(1 + i / 100) for i in range(300))],
     ("the grid has 1,200,000 cells", "at most 100,000")),
    (["--set", "device=cpu"], ("device is chosen by each worker",)),
    (["--search", "lr=1e-4:1e-2:cubic"], ("lr: a range is LOW:HIGH or LOW:HIGH:log, got '1e-4:1e-2:cubic'",)),
    (["--search", "lr=:"], ("lr: a range is LOW:HIGH or LOW:HIGH:log, got ':'",)),
    (["--search", "lr=0:1e-2"], ("lr: a log-scale range needs low > 0, got 0",)),
    (["--search", "n_layer=1.5:3"], ("n_layer is an integer field: low must be an integer, got 1.5",)),
    (["--search", "attention=0:1"], ("attention is a str field", "not a range")),
    (["--search", "dropout=0.3:0.1"], ("dropout: low (0.3) is above high (0.1)",)),
    (["--gain-init", "-4"], ("gain_init must be in [0, 10000], got -4.0",)),
    (["--lr", "0"], ("lr must be in (0, 1], got 0.0",)),
    (["--lr", "2:3"], ("lr = 2 in the space gives an invalid run",)),
)]
STUDY_FILES = {  # name: (the study file, the fragments its refusal must hold)
    "sampler_seed": ("space: {}\nsampler_seed: abc\n", ("sampler_seed must be an integer", "got 'abc'")),
    "seed_float": ("sampler_seed: 1.5\n", ("sampler_seed must be an integer", "got 1.5")),
    "heartbeat": ("heartbeat_interval: -5\n", ("heartbeat_interval must be an integer in [1, 86400], got -5",)),
    "n_trials": ("n_trials: 'many'\n", ("n_trials must be an integer", "got 'many'")),
    "unknown": ("spaces: {}\n", ("unknown key(s) spaces",)),
    "space_list": ("space: [1, 2]\n", ("space must be a mapping of field: entry",)),
    "space_field": ("space: {colour: 3}\n", ("unknown field 'colour' in the search space",)),
    "space_key": ("space: {lr: {low: 1e-4, hi: 1}}\n", ("lr: unknown key(s) hi",)),
    "space_range": ("space: {n_layer: {low: 2, high: 1000000000000}}\n",
                    ("n_layer = 1000000000000 in the space gives an invalid run",)),
    "p_inf_high": ("space: {p: {low: 1, high: inf}}\n", ("p: a range's high must be finite",)),
    "step_log": ("space: {lr: {low: 1e-4, high: 1e-2, step: 1e-4}}\n", ("lr: a range cannot have both log and step",)),
    "choices": ("space: {n_layer: {choices: []}}\n", ("n_layer: choices must be a non-empty list",)),
    "fixed": ("space: {beta1: 2}\n", ("beta1 must be in [0, 1), got 2.0",)),
    "loss": ("loss_threshold: [1]\n", ("loss_threshold must be a number, got [1]",)),
    "folds_searched": ("space: {folds: [5, 10]}\n", ("folds must be one fixed number",)),
    "pruner": ("pruner: 7\n", ("unknown pruner '7'",)),
    "value_extra": ("space: {lr: {value: 1e-3, low: 1}}\n", ("lr: a fixed value takes no other keys",)),
}
STUDY_FILE_CASES = [("create-file", name) for name in STUDY_FILES]
_CONFIG_PROBLEMS = {  # file: what files.read_yaml_mapping says of it (after "config file"/"study file")
    "latin1.yaml": "{what} latin1.yaml is not UTF-8 text", "list.yaml": "{what} list.yaml must hold a mapping",
    "broken.yaml": "{what} broken.yaml is not valid YAML (line 2", "adir": "cannot read {what} adir",
    "missing.yaml": "{what} missing.yaml does not exist", "afile/x.yaml": "cannot read {what} afile/x.yaml",
    "notdb.db": "{what} notdb.db must hold a mapping",
}
CONFIG_FILES = [("config", ["train", "--config", f], (_CONFIG_PROBLEMS[f].format(what="config file"),))
                for f in ("latin1.yaml", "list.yaml", "broken.yaml", "adir", "missing.yaml", "afile/x.yaml", "notdb.db")]
CONFIG_FILES += [("config", ["create", *NEW, "--config", f], (_CONFIG_PROBLEMS[f].format(what="study file"),))
                 for f in ("latin1.yaml", "list.yaml", "broken.yaml", "adir", "missing.yaml", "afile/x.yaml")]

# Storage URLs × every command that takes one.
URLS = [
    f"postgresql+psycopg://writer:{SECRET}@db-host:abc/lpstudy",   # a port that is not a number
    f"postgresql+psycopg://writer:{SECRET}@db-host:99999999/lpstudy",
    f"postgresql+psycopg://wri@ter:{SECRET}@x@127.0.0.1:1/lpstudy",  # unencoded @ in the user-info
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
_WRITERS = ("create", "replicate", "storage-proxy")  # they create the database file (db/urls.prepare_to_create)
_READERS = ("status", "export", "report", "dashboard")  # they read through the storage's read-only engine
_WAITERS = ("create", "replicate", "worker")  # they wait for an unreachable database (here for 0 s)
# Nothing answers there as PostgreSQL: no mistake in the input that lpstudy can tell, exit status 75.
UNREACHABLE = (URLS[3], REFUSED_PG)


def _url_problem(command: str, url: str) -> tuple[str, ...]:
    """What db/urls.py, db/kinds and db/optuna_storage.py say of a URL, for this command."""
    cannot_open = "cannot read the study database at" if command in _READERS else "cannot open the study database"
    cannot_reach = "could not be reached: it stayed unreachable for 0 s" if command in _WAITERS else cannot_open
    by_url = {
        URLS[0]: ("writer:***@db-host:abc", "the port must be a number in 1..65535"),
        URLS[1]: ("port 99999999 is not in 1..65535",),
        # refused before connecting (db/urls.check_user_info): the driver would take "x@127..." for the host
        URLS[2]: ("storage URL 'postgresql+psycopg://wri@ter:***@127.0.0.1:1/lpstudy' has an '@' in its user name",
                  "percent-encode it as %40"),
        URLS[3]: (cannot_reach, "?user=w&password=***"),
        REFUSED_PG: (cannot_reach, "writer:***@127.0.0.1:1/lpstudy"),
        URLS[5]: ("mysql+pymysql://u:***@h:port/db", "the port must be a number"),
        "sqlite:///": ("'sqlite:///' names no file",), "sqlite://": ("'sqlite://' names no file",),
        "sqlite:///:memory:": ("'sqlite:///:memory:' names no file",),
        "sqlite:///notdb.db": ((cannot_open, "sqlite:///notdb.db", "file is not a database") if command in _WRITERS
                               else ("notdb.db is not a SQLite database",)),
        "sqlite:///adir": ("the storage sqlite:///adir names a folder (adir)",),
        "sqlite:///afile/x.db": (("cannot create afile/x.db: afile is a file, not a folder",) if command in _WRITERS
                                 else ("no study database at afile/x.db",)),
        "journal://": ("journal URL 'journal://' names no file",),
        "journal:///adir": (("the storage proxy serves a SQL database, not journal storage",)
                            if command == "storage-proxy" else ("the storage journal:///adir names a folder (adir)",)),
        "grpc://nohost": ("'grpc://nohost' must be grpc://HOST:PORT",), "grpc://h:0": ("'grpc://h:0' must be grpc://HOST:PORT",),
        "grpc://h:99999": ("'grpc://h:99999' must be grpc://HOST:PORT",),
        URLS[-2]: ("storage URL 'ftp://u:***@h/x' is not one of",), "not a url": ("storage URL 'not a url' is not one of",),
    }
    return by_url[url]


URL_CASES = [(cmd[0], [*cmd, "--storage", url], _url_problem(cmd[0], url)) for cmd in STORAGE_COMMANDS for url in URLS
             # a reader or worker on a journal folder or a refused proxy: covered by the writers
             if not (url.startswith("journal:///adir") and cmd[0] not in _WRITERS)]

# Paths × kinds: a folder where a file goes, a file where a folder goes, a path under a file, nothing.
PATH_CASES = [("paths", args, expected) for args, expected in (
    (["train", "--preset", "smoke", "--out", "afile"], ("--out afile is a file, not a folder",)),
    (["train", "--preset", "smoke", "--out", "afile/run"], ("--out afile/run:", "afile is a file, not a folder")),
    (["train", "--preset", "smoke", "--out", "notdb.db"], ("--out notdb.db is a file, not a folder",)),
    (["train", "--preset", "smoke", "--out", "a\x00b"], ("'--out'", "null byte")),
    (["train", "--preset", "smoke", "--data", "adir"], ("data file adir is a folder, not a file",)),
    (["train", "--preset", "smoke", "--data", "missing.txt"], ("data file missing.txt does not exist",)),
    (["train", "--preset", "smoke", "--data", "latin1.txt"], ("latin1.txt is not UTF-8 text",)),
    (["train", "--preset", "smoke", "--data", "afile/x"], ("data file afile/x does not exist",)),
    (["train", "--preset", "smoke", "--data", "afile"], ("afile holds 13 characters", "at least 1000")),
    (["export", "--study", "s", "--storage", DB, "-o", "adir"], ("--output adir is a folder; give a file name",)),
    (["export", "--study", "s", "--storage", DB, "-o", "afile/best.yaml"],
     ("--output afile/best.yaml:", "afile is a file, not a folder")),
    (["export", "--study", "s", "--storage", DB, "-o", "x" * 300 + ".yaml"],
     ("the name is longer than a file name can be",)),
    (["export", "--study", "s", "--storage", DB, "--format", "toml"], ("unknown format 'toml'",)),
    (["report", "--study", "s", "--storage", DB, "-o", "adir"], ("--output adir is a folder; give a file name",)),
    (["report", "--study", "s", "--storage", DB, "-o", "afile/report.html"],
     ("--output afile/report.html:", "afile is a file, not a folder")),
    (["create", "--study", "new", "--storage", "sqlite:///afile/sub/new.db"],
     ("cannot create afile/sub/new.db: afile is a file, not a folder",)),
    (["create", "--study", "new", "--storage", "journal:///afile/new.log"],
     ("cannot create afile/new.log: afile is a file, not a folder",)),
    (["replicate", "--study", "r", "--preset", "smoke", "--storage", "sqlite:///adir"],
     ("the storage sqlite:///adir names a folder (adir)",)),
    (["status", "--study", "s", "--storage", "sqlite:///storage/missing.db"],
     ("no study database at storage/missing.db",)),
    (["status", "--study", "s"], ("no study database at storage/lpstudy.db",)),  # the default: status creates nothing
    (["status", "--study", "s", "--storage", "sqlite://storage/lpstudy.db"],
     ("'sqlite://storage/lpstudy.db' has two slashes: a SQLite file takes three (sqlite:///storage/lpstudy.db)",)),
    (["report", "--study", "s", "--storage", DB, "--threshold", "nan"], ("--threshold must be in (0, 1000] nats, got nan",)),
    (["report", "--study", "s", "--storage", DB, "--threshold", "0"], ("--threshold must be in (0, 1000] nats, got 0.0",)),
    (["worker", "--study", "s", "--storage", "sqlite:///missing/x.db"], ("no study database at missing/x.db",)),
    (["worker", "--study", "s", "--storage", DB, "--data", "adir"], ("data file adir (from --data) is a folder, not a file",)),
    (["dashboard", "--storage", "sqlite:///missing.db"], ("no study database at missing.db",)),
    (["dashboard", "--storage", DB, "--app-dir", "adir"], ("cannot find the dashboard (app/dashboard.py)",)),
)]

# Study names, in every command that takes one (names.check_study_name).
NAMES = {"a\nb": "holds U+000A", "a\x1b[31mred": "holds U+001B", "tab\there": "holds U+0009",
         "nul\x00": "holds U+0000", "x" * 129: "at most 128 characters, got 129", "": "got an empty one",
         "  ": "got an empty one", " lead": "must not start or end with a space", "bidi\u202eevil": "holds U+202E",
         "zero\u200bwidth": "holds U+200B", "bell\x07": "holds U+0007"}
NAME_COMMANDS = [
    ["create", "--storage", "sqlite:///new.db"], ["worker", "--storage", DB], ["status", "--storage", DB],
    ["export", "--storage", DB], ["replicate", "--storage", "sqlite:///new.db", "--preset", "smoke"],
    ["report", "--storage", DB], ["dashboard", "--storage", DB],
]
NAME_CASES = [("names", [*cmd, "--study", name], ("a study name must", problem))
              for cmd in NAME_COMMANDS for name, problem in NAMES.items()]


# p, devices, replicate's grid, numbers the option parser refuses.
def _p_problem(command: str, value: str) -> tuple[str, ...]:
    """What values.check_p says of a typed p (replicate.replicate_spec of an empty list)."""
    if value == "":
        return ("give at least one p value",) if command == "replicate" else ("p must be a number ≥ 1", "got ''")
    return {
        "1e400": ("p = 1e400 overflows a float; write 'inf'",),
        "0.5": ("p must be a number ≥ 1", "got 0.5"), "nan": ("p must be a number ≥ 1", "got nan"),
        "-inf": ("p must be a number ≥ 1", "got -inf"),
        "abc": ("p must be a number ≥ 1 or 'inf'", "got 'abc'"),
    }[value]


P_VALUES = ["1e400", "0.5", "nan", "-inf", "abc", ""]
P_COMMANDS = [["train", "--preset", "smoke"], ["create", *NEW],
              ["replicate", "--study", "r", "--storage", "sqlite:///new.db", "--preset", "smoke"]]
P_CASES = [("p", [*cmd, "--p", v], _p_problem(cmd[0], v)) for cmd in P_COMMANDS for v in P_VALUES]
REPLICATE = ["replicate", "--study", "r", "--storage", "sqlite:///new.db", "--preset", "smoke"]
WORKER = ["worker", "--study", "s", "--storage", DB]
OTHER_CASES = [("other", args, expected) for args, expected in (
    ([*REPLICATE, "--folds", "100000000"], ("--folds must be an integer in [2, 1000], got 100000000",)),
    ([*REPLICATE, "--folds", "1"], ("'--folds'", "greater than or equal to 2")),
    ([*REPLICATE, "--workers", "1", "--devices", "tpu"], ("unknown device 'tpu' in --devices",)),
    ([*REPLICATE, "--set", "p=2"], ("p is set by the replicate grid", "do not --set it")),
    ([*REPLICATE, "--set", "fold=1"], ("fold is set by the replicate grid", "do not --set it")),
    ([*REPLICATE, "--set", "beta1=2"], ("beta1 must be in [0, 1), got 2.0",)),
    ([*REPLICATE, "--lr", "-1"], ("lr must be in (0, 1], got -1.0",)),
    ([*REPLICATE, "--workers", "-1"], ("'--workers'", "greater than or equal to 0")),
    (["replicate", "--study", "r", "--storage", "sqlite:///new.db"], ("Missing option '--preset'",)),
    ([*WORKER, "--devices", "tpu"], ("unknown device 'tpu' in --devices",)),
    ([*WORKER, "--devices", ","], ("--devices needs auto, cpu, or a list",)),
    ([*WORKER, "--n-trials", "0"], ("'--n-trials'", "greater than or equal to 1")),
    ([*WORKER, "--timeout", "-1"], ("'--timeout'", "greater than or equal to 0")),
    (["worker", "--study", "nope", "--storage", DB, "--devices", "cpu,cpu"], ("no study named 'nope'",)),
    (["train", "--preset", "huge"], ("unknown preset 'huge'",)),
    (["train", "--steps", "0"], ("max_steps must be in [1, 10^7], got 0",)),
    (["train", "--steps", "ten"], ("'--steps'", "valid integer")),
    (["train", "--set", "max_steps=100000000000000000000000"],
     ("max_steps must be in [1, 10^7], got 100000000000000000000000",)),
    (["train", "--lr", "inf"], ("lr must be in (0, 1], got inf",)),
    (["train", "--fold", "10", "--folds", "10"], ("fold must be in 0..9 for 10 folds, got 10",)),
    (["train", "--device", "tpu"], ("unknown device 'tpu'",)),
    (["train", "--attention", "flash"], ("attention must be 'lp' or 'baseline', got 'flash'",)),
    (["train", "--preset", "smoke", "--set", "n_layer=64", "--set", "n_embd=8192"],  # too large to allocate
     ("this model needs about", "64 layers × 8192 dimensions", "make it smaller")),
    (["train", "--nosuchflag"], ("No such option: --nosuchflag",)),
    (["status"], ("Missing option '--study'",)),
    (["export", "--study", "s", "--storage", DB, "--top", "0"], ("'--top'", "greater than or equal to 1")),
    (["dashboard", "--storage", DB, "--port", "0"], ("'--port'", "greater than or equal to 1")),
    (["dashboard", "--storage", DB, "--port", "http"], ("'--port'", "valid integer")),
    (["optuna-dashboard", "--storage", DB, "--port", "70000"], ("'--port'", "less than or equal to 65535")),
    (["storage-proxy", "--storage", DB, "--threads", "0"], ("'--threads'", "greater than or equal to 1")),
    (["storage-proxy", "--storage", DB, "--port", "-1"], ("'--port'", "greater than or equal to 1")),
    (["nosuchcommand"], ("No such command 'nosuchcommand'",)),
)]

CASES = (TRAIN_FIELD + STRING_FIELDS + CREATE_FIELD + SEARCH_RANGE + STUDY_OPTIONS + CONFIG_FILES + URL_CASES
         + PATH_CASES + NAME_CASES + P_CASES + OTHER_CASES)


def _id(case) -> str:
    kind, args, _ = case
    return f"{kind}:{' '.join(args)[:60]!r}"


def in_tiers(cases: list) -> list:
    """The cases as test parameters: the first of each kind for each command stands for the others in
    the fast tier; the others run in the slow tier."""
    seen: set[tuple[str, str]] = set()
    params = []
    for case in cases:
        key = (case[0], case[1][0])
        params.append(pytest.param(case, id=_id(case), marks=pytest.mark.slow if key in seen else ()))
        seen.add(key)
    return params


def test_the_corpus_is_large_and_covers_every_command():
    commands = {args[0] for _, args, _ in CASES}
    assert len(CASES) + len(STUDY_FILE_CASES) + len(SYNTHETIC_CASES) >= 200
    assert {"train", "create", "worker", "status", "export", "replicate", "report", "dashboard",
            "optuna-dashboard", "storage-proxy"} <= commands


def test_every_case_names_its_own_problem():
    """A missing required option is a case of its own, never the reason another case is refused."""
    for kind, args, expected in CASES:
        assert expected and all(isinstance(f, str) and len(f) >= 3 for f in expected), (args, expected)
        if args[0] == "replicate" and not any("Missing option" in f for f in expected):
            assert "--preset" in args, args  # replicate has no default preset


@pytest.mark.parametrize("case", in_tiers(CASES))
def test_bad_input_is_one_line_and_exit_2_and_leaves_nothing(case, in_workdir, capsys):
    _, args, expected = case
    before = snapshot(in_workdir)
    code, out, err = cli(capsys, *args)
    assert_one_line_refusal(code, out, err, expected, status=75 if "--storage" in args and
                            args[args.index("--storage") + 1] in UNREACHABLE else 2)
    assert snapshot(in_workdir) == before


@pytest.mark.parametrize("name", list(STUDY_FILES))
def test_a_bad_study_file_is_one_line(name, in_workdir, capsys, tmp_path):
    text, expected = STUDY_FILES[name]
    study_file = tmp_path / f"{name}.yaml"
    study_file.write_text(text)
    before = snapshot(in_workdir)
    code, out, err = cli(capsys, "create", "--study", "new", "--storage", "sqlite:///new.db", "--config",
                         str(study_file))
    assert_one_line_refusal(code, out, err, expected)
    assert snapshot(in_workdir) == before


# (argv of `python -m lpstudy.study.synthetic`, the fragments its refusal must hold: the option and
# its rule in typer's words, lpstudy's for the URL and the study name)
SYNTHETIC_CASES = [
    ([], ("Missing argument 'storage'",)),
    (["sqlite:///"], ("'sqlite:///' names no file",)),
    (["sqlite:///x.db", "--trials", "-1"], ("'--trials'", "greater than or equal to 1")),
    (["sqlite:///x.db", "--trials", "abc"], ("'--trials'", "valid integer")),
    (["sqlite:///x.db", "--evals", "0"], ("'--evals'", "greater than or equal to 1")),
    (["sqlite:///x.db", "--folds", "100000000"], ("'--folds'", "less than or equal to 1000")),
    (["sqlite:///x.db", "--kind", "grid"], ("'--kind'", "'grid' is not one of 'search', 'replicate'")),
    (["sqlite:///x.db", "--metrics", "csv"], ("'--metrics'", "'csv' is not one of 'table', 'attrs', 'both'")),
    (["sqlite:///x.db", "--study", "a\nb"], ("a study name must", "holds U+000A")),
    (["sqlite:///x.db", "--seed", "-5"], ("'--seed'", "greater than or equal to 0")),
    (["sqlite:///afile/x.db"], ("cannot create afile/x.db: afile is a file, not a folder",)),
    (["sqlite:///adir"], ("the storage sqlite:///adir names a folder (adir)",)),
    (["not a url"], ("storage URL 'not a url' is not one of",)),
    ([REFUSED_PG], ("cannot open the study database", "writer:***@127.0.0.1:1/lpstudy")),
    ([f"postgresql+psycopg://u:{SECRET}@h:abc/db"], ("u:***@h:abc", "the port must be a number")),
    (["sqlite:///x.db", "--nosuch"], ("No such option: --nosuch",)),
]


@pytest.mark.parametrize("argv, expected", SYNTHETIC_CASES, ids=[repr(" ".join(a))[:60] for a, _ in SYNTHETIC_CASES])
def test_the_synthetic_study_writer_refuses_bad_arguments_in_one_line(argv, expected, in_workdir, capsys):
    from lpstudy.study.synthetic import main

    before = snapshot(in_workdir)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exited:
        main(argv)
    out, err = capsys.readouterr()
    assert_one_line_refusal(exited.value.code, out, err, expected, prefix="python -m lpstudy.study.synthetic: error: ")
    assert snapshot(in_workdir) == before


# A few as a user runs them: a fresh interpreter, the real argv, the real exit status.
SUBPROCESS_CASES = [
    (["train", "--preset", "smoke", "--set", "beta1=2"], ("beta1 must be in [0, 1), got 2.0",)),
    (["train", "--config", "latin1.yaml"], ("config file latin1.yaml is not UTF-8 text",)),
    (["status", "--study", "s", "--storage", f"postgresql+psycopg://u:{SECRET}@h:abc/db"],
     ("the port must be a number in 1..65535",)),
    (["create", "--study", "a\x1b]0;owned\x07", "--storage", "sqlite:///new.db"], ("holds U+0007, U+001B",)),
    ([*REPLICATE, "--workers", "1", "--devices", "tpu"], ("unknown device 'tpu' in --devices",)),
]


@pytest.mark.slow
@pytest.mark.parametrize("argv, expected", SUBPROCESS_CASES, ids=[repr(" ".join(a))[:60] for a, _ in SUBPROCESS_CASES])
def test_bad_input_in_a_fresh_process(argv, expected, workdir):
    before = snapshot(workdir)
    env = {k: v for k, v in lp_env().items() if k != "LPSTUDY_STORAGE"}
    done = lpstudy(*argv, cwd=workdir, env=env, timeout=120)
    assert_one_line_refusal(done.returncode, done.stdout, done.stderr, expected)
    assert snapshot(workdir) == before


def test_a_failed_create_removes_the_database_and_folders_it_made(in_workdir, capsys, monkeypatch):
    import lpstudy.study.studies as studies

    def broken(study, spec, storage):
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

    monkeypatch.setattr(studies, "enqueue_missing_cells", lambda study, spec, storage: 1 / 0)
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
    assert_one_line_refusal(code, out, err, ("download", "--data"))
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
