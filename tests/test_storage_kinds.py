"""Each kind of storage answers for its URLs (lpstudy.db.kinds), and no module outside that package
asks which kind a URL is. Expected values are written out here by hand: what each URL form means
(docs/storages.md and docs/exactly-once.md)."""

from __future__ import annotations

import ast
import fcntl
import hashlib
import re
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
import sqlalchemy as sa
from optuna.storages import JournalStorage, RDBStorage

from lpstudy.db import kinds
from lpstudy.db.kinds import KINDS, URL_FORMS, storage_at
from lpstudy.db.kinds.base import StudyStorage
from lpstudy.db.locking import LockAcrossProcesses
from lpstudy.db.asking import ask_lock_name
from lpstudy.db.locking import lock_file
from lpstudy.db.optuna_storage import open_storage
from lpstudy.errors import StudyUnavailable, UserError
from lpstudy.study.checkpoints import artifact_location
from lpstudy.db.kinds import open_reader

ROOT = Path(__file__).resolve().parents[1]
KIND_NAMES = {"sqlite", "postgresql", "mysql", "journal", "grpc"}
PG = "postgresql+psycopg://writer:s3cret@db.example:5432/lpstudy"
MYSQL = "mysql+pymysql://writer:s3cret@db.example/lpstudy"


# --- no module outside lpstudy/db/kinds asks for a storage kind -----------------------------------

def _python_files():
    for folder in (ROOT / "lpstudy", ROOT / "app"):
        for path in sorted(folder.rglob("*.py")):
            if ROOT / "lpstudy" / "db" / "kinds" not in path.parents:
                yield path


def _names_a_kind(node: ast.AST) -> bool:
    """A string literal naming a storage kind, or a tuple/list/set of them."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value.lower() in KIND_NAMES
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_kind(e) for e in node.elts)
    return False


def test_the_issue_grep_finds_storage_kinds_asked_only_inside_the_package():
    done = subprocess.run(["grep", "-rnE", r"kind ==|kind in \(|storage_kind\(|is_sql\(", "lpstudy", "app"],
                          capture_output=True, text=True, cwd=ROOT)
    outside = [line for line in done.stdout.splitlines() if not line.startswith("lpstudy/db/kinds/")]
    asked = [line for line in outside
             if re.search(r"storage_kind\(|is_sql\(", line)
             or re.search(r"""['"](%s)['"]""" % "|".join(KIND_NAMES), line, re.IGNORECASE)]
    # what may be left compares other kinds: a study's (search, replicate), a path's (file, folder)
    assert not asked, "storage kinds asked outside lpstudy/db/kinds:\n" + "\n".join(asked)


def test_no_module_outside_the_package_compares_a_storage_kind_or_tests_a_storage_class():
    found = []
    for path in _python_files():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            where = f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"
            if isinstance(node, ast.Compare) and any(_names_a_kind(c) for c in [node.left, *node.comparators]):
                found.append(f"{where} compares with a storage kind's name")
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "isinstance"
                    and any(n in ast.unparse(node.args[1]) for n in ("RDBStorage", "JournalStorage", "GrpcStorage"))):
                found.append(f"{where} tests the class of Optuna's storage")
            if isinstance(node, ast.Attribute) and node.attr in ("is_sql", "supports_heartbeat", "supports_lock",
                                                                 "storage_kind"):
                found.append(f"{where} asks {node.attr}")
            if isinstance(node, ast.Attribute) and node.attr == "name" and ast.unparse(node.value).endswith("dialect"):
                found.append(f"{where} asks the SQL dialect's name")
    assert not found, "\n".join(found)


def test_a_new_kind_is_one_module_with_one_class(monkeypatch, tmp_path):
    """docs/code.md: adding a kind is one module of the kinds' package holding one StudyStorage class
    with a name (the kinds' list finds it, kinds_in). Nothing else is told: a worker's questions (a
    study made, a trial asked within the target, its liveness, an evaluation written) and the read
    side's frames answer through what StudyStorage gives. Here a package of one such module, a kind
    of Optuna's in-memory storages, and a shared base without a name, which is no kind."""
    import sys

    from optuna.trial import TrialState

    from lpstudy.db.kinds import kinds_in
    from lpstudy.db.liveness import Lease
    from lpstudy.results.reading.frames import load_study
    from lpstudy.study.claims import ask_within_target
    from lpstudy.design.spec import build_spec
    from lpstudy.study.studies import create_study
    from lpstudy.training.metrics import MetricRecord

    package = tmp_path / "more_kinds"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "shared.py").write_text("from lpstudy.db.kinds.base import StudyStorage\n\n\n"
                                       "class SharedBase(StudyStorage):\n    pass\n")
    (package / "memory.py").write_text(
        "from optuna.storages import InMemoryStorage\n\nfrom more_kinds.shared import SharedBase\n\n\n"
        "class MemoryStorage(SharedBase):\n    name, url_form = 'memory', 'memory://NAME'\n    held = {}\n\n"
        "    def _open_optuna(self, create_tables):\n"
        "        return self.held.setdefault(self.url, InMemoryStorage())\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "more_kinds", raising=False)
    found = kinds_in("more_kinds")
    assert [kind.__name__ for kind in found] == ["MemoryStorage"]
    monkeypatch.setattr(kinds, "KINDS", (*KINDS, *found))
    assert type(storage_at("memory://a")).__name__ == "MemoryStorage"
    assert storage_at("sqlite:///a.db").name == "sqlite"
    assert [kind.name for kind in KINDS] == ["sqlite", "postgresql", "journal", "grpc", "mysql"]

    storage = open_storage("memory://a", create_tables=True)
    spec = build_spec({"preset": "smoke", "sampler": "random", "pruner": "none", "n_trials": 1})
    study, created = create_study(storage, "s", spec)
    trial = ask_within_target(study, spec, storage)
    assert created and trial.number == 0
    assert isinstance(storage.liveness(10, 60, 1), Lease)
    storage.write_evaluation("s", trial._trial_id, 0, MetricRecord(10, 2.5, 2.25, 1e-3, 1.0, 1.0, *[float("nan")] * 3,
                                                                   1.0, 100.0, 1.0))
    trial.report(2.25, 10)
    study.tell(trial, 2.25)
    assert ask_within_target(study, spec, storage) is None  # the target of one trial is reached
    with open_reader("memory://a") as reader:
        data = load_study(reader, "s")
    assert list(data.trials["state"]) == ["COMPLETE"] and list(data.trials["value"]) == [2.25]
    assert list(data.curves["train_loss"]) == [2.5] and list(data.curves["val_loss"]) == [2.25]
    assert storage.trial_state(study, trial._trial_id) == TrialState.COMPLETE
    storage.close()


def test_telling_a_kind_imports_neither_optuna_nor_a_driver():
    """The command line checks a URL before it opens anything (`lpstudy --help` and a refused URL
    stay quick): only opening a storage loads Optuna."""
    script = ("import sys; from lpstudy.db.kinds import KINDS, storage_at; "
              "[storage_at(u) for u in ('sqlite:///a.db', 'journal:///a.log', 'grpc://h:1', %r, %r)]; "
              "print(sorted(m for m in ('optuna', 'psycopg', 'grpc') if m in sys.modules))" % (PG, MYSQL))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --- the URL rules ---------------------------------------------------------------------------------

@pytest.mark.parametrize("url,name", [
    ("sqlite:///storage/lpstudy.db", "sqlite"), ("sqlite:////srv/a.db", "sqlite"),
    (PG, "postgresql"), ("postgresql://u@h/db", "postgresql"), (MYSQL, "mysql"),
    ("journal:///j/a.log", "journal"), ("JOURNAL:////srv/a.log", "journal"),
    ("grpc://proxy:13000", "grpc"), ("GRPC://[::1]:13000", "grpc"),
])
def test_each_url_form_is_told_its_kind(url, name):
    assert storage_at(url).name == name


@pytest.mark.parametrize("url,fragment", [
    ("http://h/x", "is not one of sqlite:///FILE, postgresql+psycopg://USER:PASSWORD@HOST/DB, journal:///FILE "
                   "or grpc://HOST:PORT"),
    ("SQLITE:///a.db", "is not one of"),  # SQLAlchemy's dialect names are lower case
    ("postgres://u@h/db", "is not one of"),  # SQLAlchemy 2 dropped the postgres:// alias
    ("storage/lpstudy.db", "is not one of"),
    ("postgresql://u@h:5x32/db", "the port must be a number in 1..65535"),
    ("postgresql://u@h:0/db", "port 0 is not in 1..65535"),
    ("postgresql://u@h:65536/db", "port 65536 is not in 1..65535"),
    ("sqlite://", "names no file (an in-memory database is lost when the command ends)"),
    ("sqlite:///:memory:", "names no file"),
    ("sqlite:///file::memory:?cache=shared", "names no file"),
    ("journal://", "journal URL 'journal://' names no file; use journal:///RELATIVE/PATH"),
    ("journal:///", "names no file"),
    ("grpc://proxy", "gRPC storage URL 'grpc://proxy' must be grpc://HOST:PORT"),
    ("grpc://:13000", "must be grpc://HOST:PORT"),
    ("grpc://proxy:0", "must be grpc://HOST:PORT"),
])
def test_an_unusable_url_is_one_line_that_names_the_rule(url, fragment):
    with pytest.raises(UserError) as refused:
        storage_at(url)
    assert fragment in str(refused.value) and "\n" not in str(refused.value)


def test_the_list_of_forms_is_the_four_advertised_ones():
    assert URL_FORMS == ("sqlite:///FILE, postgresql+psycopg://USER:PASSWORD@HOST/DB, journal:///FILE "
                         "or grpc://HOST:PORT")


def test_a_password_never_shows_in_a_refusal():
    with pytest.raises(UserError) as refused:
        storage_at("postgresql://writer:s3cret@h:99999/db")
    assert "s3cret" not in str(refused.value) and "writer:***@h" in str(refused.value)


def test_local_files_read_as_sqlite_reads_its_urls(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert storage_at("sqlite:///storage/a.db").local_file() == Path("storage/a.db")
    assert storage_at("sqlite:////srv/a.db").local_file() == Path("/srv/a.db")
    assert storage_at("journal:///j/a.log").local_file() == Path("j/a.log")
    assert storage_at("journal:////srv/a.log").local_file() == Path("/srv/a.log")
    # journal:///ABSOLUTE: absolute when that file exists, or when creating it where only the absolute
    # folder exists; else relative, as SQLite would read it
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    url = f"journal://{outside / 'a.log'}"  # three slashes, then an absolute path
    journal = storage_at(url)
    assert journal.local_file() == Path(str(outside / "a.log")[1:])
    assert journal.local_file(creating=True) == outside / "a.log"
    (outside / "a.log").write_text("")
    assert journal.local_file() == outside / "a.log"
    for url in (PG, MYSQL, "grpc://proxy:13000"):
        assert storage_at(url).local_file() is None


def test_the_read_only_url_is_sqlites_mode_ro_and_the_server_urls_as_they_are(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert storage_at("sqlite:///s/a.db").readonly_url() == \
        f"sqlite:///file:{tmp_path / 's' / 'a.db'}?mode=ro&uri=true"
    for url in (PG, MYSQL, "journal:///a.log", "grpc://proxy:13000"):
        assert storage_at(url).readonly_url() == url


def test_a_file_that_is_missing_a_folder_or_not_sqlite_is_named(tmp_path):
    def message(url):
        return storage_at(url).missing_file_message()

    assert "no study database at" in message(f"sqlite:///{tmp_path / 'none.db'}")
    assert "no study database at" in message(f"journal:///{tmp_path / 'none.log'}")
    assert message(f"sqlite:///{tmp_path}") == \
        f"the storage sqlite:///{tmp_path} names a folder ({tmp_path}), not a database file"
    (tmp_path / "notes.txt").write_text("hello")
    assert message(f"sqlite:///{tmp_path / 'notes.txt'}") == \
        f"{tmp_path / 'notes.txt'} is not a SQLite database; check --storage / LPSTUDY_STORAGE"
    assert message(f"journal:///{tmp_path / 'notes.txt'}") is None  # any file may be a journal
    (tmp_path / "empty.db").write_bytes(b"")
    assert message(f"sqlite:///{tmp_path / 'empty.db'}") is None  # an empty file is an empty database
    for url in (PG, MYSQL, "grpc://proxy:13000"):
        assert message(url) is None  # a server: asked when it is opened


def test_preparing_to_create_makes_the_folder_and_says_which_it_made(tmp_path):
    url = f"sqlite:///{tmp_path / 'a' / 'b' / 'c.db'}"
    assert storage_at(url).prepare_to_create() == tmp_path / "a"
    assert (tmp_path / "a" / "b").is_dir()
    assert storage_at(url).prepare_to_create() is None  # there already
    (tmp_path / "file").write_text("")
    url = f"journal:///{tmp_path / 'file' / 'x.log'}"
    with pytest.raises(UserError, match="is a file, not a folder"):
        storage_at(url).prepare_to_create()
    assert storage_at(PG).prepare_to_create() is None


# --- engines and opening ---------------------------------------------------------------------------

def test_engine_options_per_kind():
    assert storage_at("sqlite:///a.db").engine_options() == \
        {"pool_pre_ping": True, "connect_args": {"timeout": 60}}
    assert storage_at(PG).engine_options() == {"pool_pre_ping": True, "connect_args": {"connect_timeout": 5}}
    assert storage_at(PG).engine_options(readonly=True) == {
        "pool_pre_ping": True,
        "connect_args": {"connect_timeout": 5, "options": "-c default_transaction_read_only=on -c jit=off"}}
    assert storage_at(MYSQL).engine_options() == {
        "pool_pre_ping": True, "connect_args": {"connect_timeout": 5}, "pool_recycle": 3600}
    for url in ("journal:///a.log", "grpc://proxy:13000"):
        assert storage_at(url).engine is None  # no SQL: nothing opened to say so


def test_a_sqlite_writer_engine_begins_immediate_and_a_reader_cannot_write(tmp_path):
    url = f"sqlite:///{tmp_path / 'e.db'}"
    writer = storage_at(url).make_engine()
    statements = []
    sa.event.listen(writer, "before_cursor_execute", lambda *a: statements.append(a[2]))
    with writer.begin() as conn:
        conn.execute(sa.text("CREATE TABLE t (x INTEGER)"))
    assert statements[0] == "BEGIN IMMEDIATE"  # the write lock from the first statement on
    writer.dispose()
    reader = storage_at(url).make_engine(readonly=True, check=True)
    with pytest.raises(sa.exc.OperationalError, match="readonly"):
        with reader.begin() as conn:
            conn.execute(sa.text("INSERT INTO t VALUES (1)"))
    reader.dispose()


def test_open_storage_is_the_urls_one_object_and_opens_what_its_kind_says(tmp_path):
    sqlite = open_storage(f"sqlite:///{tmp_path / 'a.db'}", create_tables=True)
    assert sqlite.name == "sqlite" and sqlite.url == f"sqlite:///{tmp_path / 'a.db'}"
    assert isinstance(sqlite.optuna, RDBStorage) and sqlite.engine is sqlite.optuna.engine
    optuna_storage, engine = sqlite.optuna, sqlite.engine
    assert sa.inspect(sqlite.engine).has_table("lpstudy_metrics") and sqlite.studies() == []
    assert sqlite.optuna is optuna_storage and sqlite.engine is engine  # opened once, kept through the reads
    journal = open_storage(f"journal:///{tmp_path / 'a.log'}", create_tables=True)
    assert journal.name == "journal" and isinstance(journal.optuna, JournalStorage) and journal.engine is None
    with pytest.raises(StudyUnavailable, match="no study database at"):
        open_storage(f"journal:///{tmp_path / 'none.log'}")
    sqlite.engine.dispose()


@pytest.mark.slow
def test_a_grpc_url_without_a_proxy_is_one_line():
    with pytest.raises(UserError, match=r"no storage proxy answers at grpc://127.0.0.1:9 within 5 s"):
        open_storage("grpc://127.0.0.1:9")


# --- liveness, curves, checkpoints ------------------------------------------------------------------

@pytest.mark.parametrize("url,liveness", [
    ("sqlite:///a.db", "OptunaHeartbeats"), (PG, "OptunaHeartbeats"), (MYSQL, "OptunaHeartbeats"),
    ("journal:///a.log", "Lease"), ("grpc://proxy:13000", "Lease"),
])
def test_each_kind_returns_how_it_notices_a_dead_worker(url, liveness):
    """Optuna's heartbeats where a worker reaches the SQL database, lpstudy's lease elsewhere; the
    grace period twice the interval unless given."""
    from types import SimpleNamespace

    storage = storage_at(url)
    storage._optuna = SimpleNamespace()  # Optuna's storage stood in for: nothing is reached
    made = storage.liveness(10, 60, 2)
    assert type(made).__name__ == liveness and (made.interval_s, made.grace_period_s, made.max_retry) == (10, 60, 2)
    assert made.storage is storage
    assert storage.liveness(10, None, 2).grace_period_s == 20


def test_optunas_heartbeats_are_set_on_sql_and_the_lease_beats_elsewhere(tmp_path):
    from lpstudy.values import LEASE_ATTR

    sqlite = open_storage(f"sqlite:///{tmp_path / 'a.db'}", create_tables=True)
    heartbeats = sqlite.liveness(10, None, 2)
    assert (sqlite.optuna.heartbeat_interval, sqlite.optuna.grace_period) == (10, 20)  # twice the interval
    assert heartbeats.note == ""
    journal = open_storage(f"journal:///{tmp_path / 'a.log'}", create_tables=True)
    lease = journal.liveness(10, 60, 2)
    assert lease.note == " · heartbeats by lease (trial system attribute)"
    study = optuna.create_study(storage=journal.optuna, study_name="beats")
    trial = study.ask()
    lease.beat(trial._trial_id)
    assert isinstance(journal.optuna.get_trial(trial._trial_id).system_attrs[LEASE_ATTR], float)
    sqlite.close()


@pytest.mark.parametrize("name", ["a.log", "a.db"])
def test_a_synthetic_study_keeps_every_curve_where_its_storage_keeps_them(tmp_path, name):
    """The synthetic writer writes a worker's curves through the storage (the metrics table, or a
    journal's system attributes): every evaluation keeps its training loss and gain. Before, it wrote
    them only where it had an engine, and a journal study held the validation loss alone (Optuna's
    intermediate values: 0 of 317 rows with a training loss)."""
    from lpstudy.results.reading.frames import load_study
    from lpstudy.study.synthetic import write_synthetic_study

    url = f"{'journal' if name.endswith('.log') else 'sqlite'}:///{tmp_path / name}"
    written = write_synthetic_study(url, "syn", n_trials=6, n_evals=4, states=False)
    assert written.counts["COMPLETE"] + written.counts["PRUNED"] == 6
    with open_reader(url) as reader:
        curves = load_study(reader, "syn").curves
    assert len(curves) >= 6 * 2  # every run evaluated at least twice (a pruned one stops half-way)
    assert curves["train_loss"].notna().all() and curves["val_loss"].notna().all(), curves
    assert curves["gain_mean"].notna().all(), curves


def test_checkpoints_go_beside_a_file_and_nowhere_by_default_on_a_server(tmp_path, monkeypatch):
    monkeypatch.delenv("LPSTUDY_ARTIFACTS", raising=False)
    def at(url, location=None):
        return artifact_location(storage_at(url), location)

    assert at("sqlite:///s/a.db") == "s/a.db.artifacts"
    assert at("journal:///s/a.log") == "s/a.log.artifacts"
    assert at(PG) is None and at("grpc://proxy:13000") is None
    assert at(PG, "s3://bucket") == "s3://bucket"
    monkeypatch.setenv("LPSTUDY_ARTIFACTS", str(tmp_path / "shared"))
    assert at("sqlite:///s/a.db") == str(tmp_path / "shared")


# --- locks -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("url,locks", [
    ("sqlite:///a.db", True), ("journal:///a.log", True), (PG, True),
    (MYSQL, False), ("grpc://proxy:13000", False),
])
def test_which_kinds_lock(url, locks):
    assert isinstance(storage_at(url).locking, LockAcrossProcesses) is locks


def _taken(path: Path) -> bool:
    """Whether another open file description holds an exclusive flock on path."""
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


@pytest.mark.parametrize("name", ["db.sqlite", "j.log"])
def test_a_file_kind_locks_a_file_beside_it(tmp_path, name):
    url = f"{'sqlite' if name.endswith('sqlite') else 'journal'}:///{tmp_path / 'sub' / name}"
    create = tmp_path / "sub" / f"{name}.lpstudy-lock"
    ask = tmp_path / "sub" / f"{name}.lpstudy-lock-{hashlib.sha256(b'lpstudy:ask:s').hexdigest()[:12]}"
    assert lock_file(tmp_path / "sub" / name) == create
    assert lock_file(tmp_path / "sub" / name, ask_lock_name("s")) == ask
    storage = storage_at(url)
    with storage.lock():  # makes the folder first
        assert _taken(create)
    assert not create.exists()  # removed as it is released: no lpstudy-lock file stays beside the database
    with storage.lock(ask_lock_name("s")):
        assert _taken(ask) and not create.exists()
    assert sorted(p.name for p in (tmp_path / "sub").iterdir() if "lpstudy-lock" in p.name) == []


def test_a_lock_file_removed_on_release_still_lets_one_holder_in_at_a_time(tmp_path):
    """Threads (each its own open file, as processes are) take the lock 30 times each: never two
    inside at once, though each release removes the file that others wait on."""
    import threading
    import time

    storage = storage_at(f"sqlite:///{tmp_path / 'db.sqlite'}")
    inside, overlaps, done = [0], [0], []

    def take() -> None:
        for _ in range(30):
            with storage.lock("race"):
                inside[0] += 1
                if inside[0] > 1:
                    overlaps[0] += 1
                time.sleep(0.0005)
                inside[0] -= 1
        done.append(1)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(done) == 4 and overlaps[0] == 0
    assert not any("lpstudy-lock" in p.name for p in tmp_path.iterdir())


def test_postgresql_holds_an_advisory_lock(pg_url):
    key = int.from_bytes(hashlib.sha256(b"lpstudy:create").digest()[:8], "big", signed=True)
    probe = sa.create_engine(pg_url, poolclass=sa.pool.NullPool)

    def try_lock() -> bool:
        with probe.connect() as conn:
            got = conn.execute(sa.text("SELECT pg_try_advisory_lock(:k)"), {"k": key}).scalar()
            if got:
                conn.execute(sa.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
            return bool(got)

    with storage_at(pg_url).lock():
        assert not try_lock()
    assert try_lock()
    probe.dispose()


def test_a_kind_without_a_lock_holds_nothing(monkeypatch):
    """MySQL and the gRPC proxy hold no lock across processes: the block runs (nested too: nothing
    waits), and nothing is reached for it, neither a database nor a server."""
    import socket

    reached = []
    monkeypatch.setattr(sa, "create_engine", lambda *a, **k: reached.append("engine"))
    monkeypatch.setattr(socket, "create_connection", lambda *a, **k: reached.append("socket"))
    for url in (MYSQL, "grpc://proxy:13000"):
        storage = storage_at(url)
        ran = False
        with storage.lock(), storage.lock():
            ran = True
        assert ran and not isinstance(storage.locking, LockAcrossProcesses)
    assert reached == []


# --- what a worker asks of a storage, answered alike by every kind --------------------------------

@pytest.fixture
def grpc_proxy_url(tmp_path):
    """lpstudy's storage proxy, in this process, in front of a SQLite file."""
    from lpstudy.db.optuna_storage import make_proxy_server
    from tests.pgserver import free_port

    port = free_port()
    server = make_proxy_server(storage_at(f"sqlite:///{tmp_path / 'behind.db'}"), "127.0.0.1", port, threads=4)
    server.start()
    yield f"grpc://127.0.0.1:{port}"
    server.stop(0).wait()


def _storage_of_kind(kind: str, tmp_path, request):
    """A writer's storage of that kind. MySQL has no server here: its kind (what it answers: SQL
    queries, no lock) on a SQLite database, the one part that differs, the dialect, aside."""
    from lpstudy.db.kinds.mysql import MySQLStorage

    class MySQLOnSQLite(MySQLStorage):
        def engine_options(self, readonly=False):  # the dialect's options aside
            return {"pool_pre_ping": True}

    if kind == "mysql":
        url = f"sqlite:///{tmp_path / 'a.db'}"
        return MySQLOnSQLite(url).open(create_tables=True), url
    url = {"sqlite": lambda: f"sqlite:///{tmp_path / 'a.db'}", "journal": lambda: f"journal:///{tmp_path / 'a.log'}",
           "grpc": lambda: request.getfixturevalue("grpc_proxy_url"),
           "postgresql": lambda: request.getfixturevalue("pg_url")}[kind]()
    return open_storage(url, create_tables=True), url


@pytest.mark.parametrize("kind, locks", [
    ("sqlite", True), ("journal", True), ("mysql", False),
    pytest.param("grpc", False, marks=pytest.mark.slow),
    pytest.param("postgresql", True, marks=pytest.mark.postgres)])
def test_every_kind_answers_a_workers_questions_alike(kind, locks, tmp_path, request):
    """The storage object answers the claim, the counts, a trial's state, where an evaluation goes
    and whether its lock holds, each kind its own way (one SQL query, one call on lpstudy's proxy, or
    Optuna's API): a grid of 6 cells is enqueued once, each cell claimed by one caller, an evaluation
    read back from the storage's reader. Expected values by hand: 6 cells, 6 claims, then none; a
    lock across processes on SQLite, the journal and PostgreSQL, none through the proxy or on MySQL."""
    from optuna.trial import TrialState

    from lpstudy.results.reading.frames import load_study
    from lpstudy.study.claims import pop_waiting_trial
    from lpstudy.design.spec import replicate_spec
    from lpstudy.study.studies import create_study, enqueue_missing_cells
    from lpstudy.training.metrics import MetricRecord

    storage, url = _storage_of_kind(kind, tmp_path, request)
    assert storage.name == kind
    spec = replicate_spec("smoke", [1.0, 2.0, float("inf")], 2, {"max_steps": "20"})
    study, created = create_study(storage, "grid", spec)
    assert created and storage.count_trials(study, (TrialState.WAITING,)) == 0
    assert enqueue_missing_cells(study, spec, storage) == 6  # the storage enqueues them
    assert storage.count_trials(study, (TrialState.WAITING,)) == 6
    assert enqueue_missing_cells(study, spec, storage) == 0  # every cell is there once
    study = storage.for_grid_worker(study)
    claimed = [pop_waiting_trial(study, storage) for _ in range(7)]
    assert claimed[-1] is None and len({t._trial_id for t in claimed[:-1]}) == 6
    assert storage.count_trials(study, (TrialState.RUNNING,)) == 6
    assert storage.count_trials(study, (TrialState.WAITING,)) == 0
    first = claimed[0]
    assert storage.trial_state(study, first._trial_id) == TrialState.RUNNING
    storage.liveness(10, 60, 2).beat(first._trial_id)  # Optuna's heartbeat, or lpstudy's lease: still RUNNING
    assert storage.trial_state(study, first._trial_id) == TrialState.RUNNING
    nan = float("nan")
    storage.prepare_curves()
    storage.write_evaluation("grid", first._trial_id, first.number,
                             MetricRecord(10, 2.5, 2.25, 1e-3, 1.0, 1.0, nan, nan, nan, 1.0, 100.0, 1.0))
    study.tell(first, 2.25)
    assert storage.trial_state(study, first._trial_id) == TrialState.COMPLETE
    with storage.lock("a test"):  # SQLite and the journal: a file lock; PostgreSQL: an advisory lock
        assert isinstance(storage.locking, LockAcrossProcesses) is locks
    curves = load_study(open_reader(url), "grid").curves
    row = curves[curves["trial_id"] == first._trial_id]
    assert list(row["step"]) == [10] and list(row["val_loss"]) == [2.25] and list(row["train_loss"]) == [2.5]
