"""Every private part of Optuna that lpstudy uses, checked against the installed Optuna, so that a
release that renames or changes one fails here, loudly, instead of quietly at run time
(pyproject pins optuna>=5.0,<6: the range whose private parts match these checks).

    Study._pop_waiting_trial_id        a grid worker pops without sampling
    Study._thread_local                the per-trial cache reset, as ask() does
    Study._storage, Study._study_id    claims, liveness, checkpoints, synthetic: the study's storage calls
    FrozenTrial._trial_id, Trial._trial_id, FrozenStudy._study_id
                                       the storage API takes ids; Optuna has no public accessor
                                       (each of these five read or set in lpstudy/db/optuna_private.py only)
    RDBStorage._get_stale_trial_ids, _create_new_trial, _set_trial_param, _get_trials,
    _get_best_trial_id                 db.outages wraps them in the retry policy (Optuna's cache calls
                                       them in place of the public methods)
    optuna.storages._grpc.server.make_server
                                       db.proxy_calls: Optuna's proxy server, lpstudy's calls added
    optuna.storages._cached_storage._CachedStorage (its _lock, _trial_id_to_study_id_and_number, _backend)
                                       db.optuna_storage.proxied_storage: the proxy's cache, which
                                       takes the parameters of a trial it has not read
    Optuna's tables, written           db.waiting_trials (cells enqueued in bulk) and
                                       db.trial_states.backdate_heartbeat (a heartbeat row): each
                                       checked against what Optuna itself writes and reads
"""

from __future__ import annotations

import ast
import inspect
import threading
from pathlib import Path

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.storages import BaseStorage, GrpcStorageProxy, RDBStorage
from optuna.trial import FrozenTrial, TrialState

from lpstudy.db.optuna_storage import open_storage
from lpstudy.db.outages import RDB_METHODS, STORAGE_METHODS, RetryingGrpcStorageProxy, RetryingRDBStorage, with_retries
from lpstudy.db.retries import RetryCallback
from lpstudy.study.claims import pop_waiting_trial

ROOT = Path(__file__).resolve().parents[1]
# The private attributes of Optuna's objects that lpstudy reads or calls, each checked below.
CHECKED_PRIVATE = {"_pop_waiting_trial_id", "_thread_local", "_storage", "_study_id", "_trial_id"}


def _params(fn) -> list[str]:
    return list(inspect.signature(fn).parameters)


@pytest.fixture
def opened(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path / 'p.db'}", create_tables=True)
    yield storage
    storage.close()


@pytest.fixture
def study(opened):
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(study_name="p", storage=opened.optuna)


PRIVATE_MODULE = ROOT / "lpstudy" / "db" / "optuna_private.py"


def private_reads(paths: list[Path]) -> dict[str, list[str]]:
    """{attribute: ['file:line', ...]} for each x._name read or set on anything but self/cls, outside
    lpstudy's own _lpstudy_ marks."""
    found: dict[str, list[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__")
                    and not node.attr.startswith("_lpstudy_") and ast.unparse(node.value) not in ("self", "cls")):
                found.setdefault(node.attr, []).append(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}:{node.lineno}")
    return found


def test_lpstudy_uses_no_private_optuna_attribute_that_is_not_checked_here():
    """A new private use (x._name on anything but self/cls, outside lpstudy's own _lpstudy_ marks)
    must come with its check in this file."""
    found = private_reads(sorted([*(ROOT / "lpstudy").rglob("*.py"), *(ROOT / "app").rglob("*.py")]))
    unchecked = {name: where[0] for name, where in found.items() if name not in CHECKED_PRIVATE}
    assert not unchecked, f"private attributes used without a check in tests/test_optuna_private.py: {unchecked}"


def test_optunas_private_attributes_are_reached_in_one_module_only():
    """lpstudy/db/optuna_private.py names each private attribute of Optuna's objects lpstudy uses;
    every other module calls it, so that a release that changes one is mended in one place."""
    paths = sorted(p for p in [*(ROOT / "lpstudy").rglob("*.py"), *(ROOT / "app").rglob("*.py")] if p != PRIVATE_MODULE)
    outside = {name: where for name, where in private_reads(paths).items() if name in CHECKED_PRIVATE}
    assert not outside, f"Optuna's private attributes outside lpstudy/db/optuna_private.py: {outside}"
    assert set(private_reads([PRIVATE_MODULE])) == CHECKED_PRIVATE


def test_the_private_read_check_finds_a_read_and_a_write(tmp_path):
    (tmp_path / "m.py").write_text("a = study._study_id\nstudy._storage = s\nb = self._x\nc = s._lpstudy_mark\n")
    assert {k: len(v) for k, v in private_reads([tmp_path / "m.py"]).items()} == {"_study_id": 1, "_storage": 1}


def test_optuna_is_pinned_below_its_next_major_and_the_installed_one_is_in_range():
    from packaging.requirements import Requirement

    text = (ROOT / "pyproject.toml").read_text()
    pin = Requirement(next(line.strip().strip('",') for line in text.splitlines() if line.strip().startswith('"optuna>')))
    major = int(optuna.__version__.split(".")[0])
    assert pin.specifier.contains(optuna.__version__)
    assert not pin.specifier.contains(f"{major + 1}.0.0") and not pin.specifier.contains("4.6.0")


# --- Study._pop_waiting_trial_id and Study._thread_local -------------------------------------------

def test_pop_waiting_trial_id_takes_nothing_and_returns_a_trial_id_or_none():
    signature = inspect.signature(optuna.Study._pop_waiting_trial_id)
    assert _params(optuna.Study._pop_waiting_trial_id) == ["self"]
    assert signature.return_annotation in ("int | None", int | None)


def test_pop_claims_each_waiting_trial_once_in_order_and_never_makes_one(tmp_path):
    """Optuna's pop, as a journal storage claims (a SQL storage takes one of the oldest instead)."""
    opened = open_storage(f"journal:///{tmp_path / 'p.log'}", create_tables=True)
    study = optuna.create_study(study_name="p", storage=opened.optuna)
    study.enqueue_trial({"x": 1.0})
    study.enqueue_trial({"x": 2.0})
    ids = [t._trial_id for t in study.get_trials(deepcopy=False)]
    first, second = pop_waiting_trial(study, opened), pop_waiting_trial(study, opened)
    assert [first._trial_id, second._trial_id] == ids  # the first enqueued first
    assert [t.state for t in study.get_trials(deepcopy=False)] == [TrialState.RUNNING, TrialState.RUNNING]
    assert pop_waiting_trial(study, opened) is None
    assert len(study.get_trials(deepcopy=False)) == 2  # nothing waits: no new trial (ask() would make one)


def test_pop_skips_a_trial_that_another_worker_finished_after_it_looked(study, monkeypatch):
    """The race two workers run on a grid: the list of WAITING trials is read, then another worker
    takes and finishes the first before this one claims it. Optuna's pop skips it (Optuna < 4.3
    raised UpdateFinishedTrialError here)."""
    study.enqueue_trial({"x": 1.0})
    study.enqueue_trial({"x": 2.0})
    storage = study._storage
    seen = storage.get_all_trials(study._study_id, deepcopy=True, states=(TrialState.WAITING,))
    storage.set_trial_state_values(seen[0]._trial_id, state=TrialState.RUNNING)
    storage.set_trial_state_values(seen[0]._trial_id, state=TrialState.COMPLETE, values=[0.5])
    monkeypatch.setattr(storage, "get_all_trials", lambda *args, **kwargs: seen)  # what it read before
    assert study._pop_waiting_trial_id() == seen[1]._trial_id


def test_pop_resets_the_studys_per_trial_cache_as_ask_does(study, opened):
    study.enqueue_trial({"x": 1.0})
    assert hasattr(type(study._thread_local), "cached_all_trials")
    study._thread_local.cached_all_trials = []  # a stale cache of the previous trial
    pop_waiting_trial(study, opened)
    assert study._thread_local.cached_all_trials is None
    study._thread_local.cached_all_trials = []
    study.ask()
    assert study._thread_local.cached_all_trials is None  # what ask() does, which the pop mirrors


# --- Optuna's schema, written by lpstudy: a grid's cells enqueued in bulk ----------------------------

def test_cells_enqueued_in_bulk_are_the_trials_optunas_enqueue_trial_makes(empty_url):
    """lpstudy.db.waiting_trials writes Optuna's rows itself: each trial must read back through
    Optuna as enqueue_trial's would (state, number, fixed parameters, nothing else), be popped and
    told as usual, and a trial Optuna creates afterwards gets the next number."""
    import sqlalchemy as sa

    from lpstudy.db.waiting_trials import enqueue_waiting_trials

    opened = open_storage(empty_url, create_tables=True)
    by_optuna = optuna.create_study(study_name="by-optuna", storage=opened.optuna)
    in_bulk = optuna.create_study(study_name="in-bulk", storage=opened.optuna)
    cells = [{"p": 1.0 + 0.5 * i, "fold": i % 3} for i in range(7)]
    by_optuna.enqueue_trial(cells[0])  # a trial before the bulk, as a resumed replicate has
    in_bulk.enqueue_trial(cells[0])
    for params in cells[1:]:
        by_optuna.enqueue_trial(params)
    with opened.engine.begin() as conn:
        assert enqueue_waiting_trials(conn, in_bulk._study_id, cells[1:]) == 6

    def seen(study):
        return [(t.number, t.state, t.params, t.system_attrs, t.user_attrs, t.values, t.intermediate_values,
                 t.datetime_start, t.datetime_complete) for t in opened.optuna.get_all_trials(study._study_id)]

    expected = [(i, TrialState.WAITING, {}, {"fixed_params": cells[i]}, {}, None, {}, None, None) for i in range(7)]
    assert seen(by_optuna) == expected
    assert seen(in_bulk) == expected
    trial = in_bulk.ask()  # Optuna's pop: the oldest waiting cell, its parameters fixed
    assert trial.number == 0 and trial.suggest_float("p", 0.0, 5.0) == cells[0]["p"]
    in_bulk.tell(trial, 1.0)
    with opened.engine.begin() as conn:  # a second bulk continues the numbers
        enqueue_waiting_trials(conn, in_bulk._study_id, [{"p": 9.0, "fold": 0}])
    opened.optuna.create_new_trial(in_bulk._study_id)  # and Optuna's own next trial after it
    assert [t.number for t in opened.optuna.get_all_trials(in_bulk._study_id)] == list(range(9))
    assert opened.optuna.get_all_trials(in_bulk._study_id)[7].system_attrs == {"fixed_params": {"p": 9.0, "fold": 0}}
    with opened.engine.connect() as conn:  # one fixed_params row per trial, no other attribute
        assert conn.execute(sa.text("SELECT count(*), count(DISTINCT trial_id) FROM trial_system_attributes a "
                                    "JOIN trials t USING (trial_id) WHERE t.study_id = :s"),
                            {"s": in_bulk._study_id}).one() == (8, 8)
    opened.engine.dispose()


# --- Study._storage, Study._study_id, the trial and study ids --------------------------------------

def test_a_backdated_heartbeat_is_one_optunas_stale_check_fails_and_a_live_beat_moves_on(empty_url):
    import sqlalchemy as sa

    from lpstudy.db.trial_states import backdate_heartbeat, unbeaten_trials

    opened = open_storage(empty_url, create_tables=True)
    opened.optuna.heartbeat_interval, opened.optuna.grace_period = 1, 5
    study = optuna.create_study(study_name="beats", storage=opened.optuna)
    dead, alive, beating = study.ask(), study.ask(), study.ask()
    opened.optuna.record_heartbeat(beating._trial_id)  # Optuna's own row
    with opened.engine.connect() as conn:
        assert unbeaten_trials(conn, study._study_id) == {dead._trial_id, alive._trial_id}
    with opened.engine.begin() as conn:
        assert backdate_heartbeat(conn, dead._trial_id, 6.0) and backdate_heartbeat(conn, alive._trial_id, 6.0)
        assert not backdate_heartbeat(conn, beating._trial_id, 6.0)  # it has a heartbeat: left as it is
    opened.optuna.record_heartbeat(alive._trial_id)  # its worker beats after all: now, not 6 s ago
    assert opened.optuna._get_stale_trial_ids(study._study_id) == [dead._trial_id]
    with opened.engine.connect() as conn:
        assert unbeaten_trials(conn, study._study_id) == set()
        assert conn.execute(sa.text("SELECT count(*), count(DISTINCT trial_id) FROM trial_heartbeats")).one() == (3, 3)
    opened.engine.dispose()


def test_a_study_keeps_its_storage_and_id_where_lpstudy_reads_them(tmp_path):
    opened = open_storage(f"sqlite:///{tmp_path / 'ids.db'}", create_tables=True)
    study = optuna.create_study(study_name="ids", storage=opened.optuna)
    assert isinstance(study._storage, BaseStorage)
    assert study._study_id == opened.optuna.get_study_id_from_name("ids")
    assert study._storage.get_study_name_from_id(study._study_id) == "ids"
    trial = study.ask()
    trial_id = opened.optuna.get_trial_id_from_study_id_trial_number(study._study_id, trial.number)
    assert trial._trial_id == trial_id
    frozen = study.get_trials(deepcopy=False)[0]
    assert isinstance(frozen, FrozenTrial) and frozen._trial_id == trial_id
    assert study._storage.get_trial(trial_id).number == trial.number
    frozen_study = opened.optuna.get_all_studies()[0]
    assert frozen_study._study_id == study._study_id
    opened.engine.dispose()


def test_a_study_reaches_its_storage_through_study_storage_only(tmp_path):
    """StudyStorage.for_grid_worker puts the RDB storage in place of the cache in front of it by setting
    Study._storage: Optuna must keep no other reference to the storage (on the study, its sampler or
    a trial), so that every call of the grid worker then goes straight to the database."""
    from lpstudy.study.replicate import replicate
    from lpstudy.study.studies import creating_storage
    from lpstudy.study.studies import load_study

    url = f"sqlite:///{tmp_path / 'direct.db'}"
    replicate(creating_storage(url), "direct", "smoke", [1.0, 2.0], 2)  # 4 cells
    opened = open_storage(url)
    study, _ = load_study(opened, "direct")
    cache = study._storage
    assert cache is not opened.optuna  # load_study's Optuna puts its cache in front of the RDB storage
    held = [name for name, value in vars(study).items() if value is cache]
    assert held == ["_storage"]
    study = opened.for_grid_worker(study)
    assert study._storage is opened.optuna

    def refuse(*args, **kwargs):
        raise AssertionError("the cache was called")

    for name in STORAGE_METHODS:
        if hasattr(cache, name):
            setattr(cache, name, refuse)
    trial = pop_waiting_trial(study, opened)
    assert trial is not None and trial.suggest_float("x", 0.0, 1.0) is not None
    trial.report(1.0, 1)
    study.tell(trial, 0.5)
    states = [t.state for t in study.get_trials(deepcopy=False)]
    assert sorted(states) == sorted([TrialState.COMPLETE] + [TrialState.WAITING] * 3)  # any of the cells
    opened.engine.dispose()


def test_make_server_takes_a_storage_host_port_and_pool_and_returns_an_unstarted_grpc_server(tmp_path):
    import grpc
    from optuna.storages import get_storage
    from optuna.storages._grpc.server import make_server

    assert _params(make_server) == ["storage", "host", "port", "thread_pool"]
    opened = open_storage(f"sqlite:///{tmp_path / 's.db'}", create_tables=True)
    server = make_server(get_storage(opened.optuna), "127.0.0.1", 0)
    assert isinstance(server, grpc.Server)
    server.add_generic_rpc_handlers(())  # lpstudy's calls go in before start
    server.stop(0)
    opened.engine.dispose()


def test_the_proxys_cache_takes_the_parameters_of_a_trial_it_never_read_where_optunas_refuses(tmp_path):
    """lpstudy's proxy claims a trial with SQL of its own, so Optuna's cache on the proxy has not
    read it; its set_trial_param then raises KeyError (it looks the trial's study up in what it read).
    proxied_storage's cache writes such a parameter straight on the RDB storage, which still checks
    it against the study's other trials."""
    from optuna.distributions import CategoricalDistribution
    from optuna.storages._cached_storage import _CachedStorage

    from lpstudy.db.kinds import storage_at
    from lpstudy.db.optuna_storage import proxied_storage

    url = f"sqlite:///{tmp_path / 'cache.db'}"
    opened, cache = proxied_storage(storage_at(url))
    assert isinstance(cache, _CachedStorage) and cache._backend is opened.optuna
    study_id = cache.create_new_study([optuna.study.StudyDirection.MINIMIZE], "cache")
    cache.get_all_trials(study_id)  # the cache has read the study: no trial yet
    trial_id = opened.optuna.create_new_trial(study_id)  # made beside the cache, as a claim is
    distribution = FloatDistribution(1.0, 4.0)
    with pytest.raises(KeyError):
        _CachedStorage(opened.optuna).set_trial_param(trial_id, "p", 2.0, distribution)
    cache.set_trial_param(trial_id, "p", 2.0, distribution)
    assert opened.optuna.get_trial(trial_id).params == {"p": 2.0}
    other = opened.optuna.create_new_trial(study_id)
    with pytest.raises(ValueError):  # the RDB storage's own check: p is a float range in this study
        cache.set_trial_param(other, "p", 0, CategoricalDistribution(["a"]))
    known = cache.create_new_trial(study_id)  # a trial the cache made: its own path, as before
    cache.set_trial_param(known, "p", 3.0, distribution)
    assert opened.optuna.get_trial(known).params == {"p": 3.0}
    opened.engine.dispose()


def test_frozen_trial_system_attrs_has_a_public_setter_that_changes_the_copy_only(study):
    """lpstudy.db.retries sets a copy's system attributes before Optuna's retry callback reads them."""
    assert isinstance(FrozenTrial.system_attrs, property) and FrozenTrial.system_attrs.fset is not None
    trial = study.ask()
    study._storage.set_trial_system_attr(trial._trial_id, "kept", 1)
    study.tell(trial, state=TrialState.FAIL)
    failed = study.get_trials()[0]
    assert RetryCallback(max_retry=None)(study, failed, interrupted=True) is True
    retry = study.get_trials()[-1]
    assert retry.state == TrialState.WAITING
    assert retry.system_attrs["kept"] == 1 and retry.system_attrs["lpstudy_interruptions"] == 1
    assert retry.system_attrs["failed_trial"] == failed.number and retry.system_attrs["retry_history"] == [0]
    assert "lpstudy_interruptions" not in study.get_trials()[0].system_attrs  # the failed trial is as it was


# --- the storage methods db.outages wraps ---------------------------------------------------------

PRIVATE_RDB = {
    "_get_stale_trial_ids": ["self", "study_id"],
    "_create_new_trial": ["self", "study_id", "template_trial"],
    "_set_trial_param": ["self", "trial_id", "param_name", "param_value_internal", "distribution",
                         "previous_distribution"],
    "_get_trials": ["self", "study_id", "states", "included_trial_ids", "trial_id_greater_than"],
    "_get_best_trial_id": ["self", "study_id", "direction"],
}
# What Optuna's cache asks its backend that is configuration held in memory, not a storage call.
CONFIGURATION = {"get_heartbeat_interval", "get_heartbeat_stale_trial_callback", "get_failed_trial_callback"}


@pytest.mark.parametrize("name", sorted(PRIVATE_RDB))
def test_each_private_rdb_method_lpstudy_retries_is_there_with_its_signature(name):
    assert _params(getattr(RDBStorage, name)) == PRIVATE_RDB[name]


def test_every_call_optunas_cache_makes_on_an_rdb_storage_is_retried():
    """optuna.load_study puts _CachedStorage in front of an RDBStorage: a worker's reads and asks go
    through the methods it calls, some of them private."""
    from optuna.storages import _cached_storage

    tree = ast.parse(inspect.getsource(_cached_storage))
    called = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)
              and ast.unparse(node.value) == "self._backend"}
    assert called, "Optuna's cache no longer calls self._backend: check how it reaches RDBStorage"
    assert called - CONFIGURATION <= set(RDB_METHODS), called - CONFIGURATION - set(RDB_METHODS)
    assert set(PRIVATE_RDB) <= set(RDB_METHODS)


def test_every_storage_call_of_optunas_interface_is_retried():
    abstract = {name for name, fn in vars(BaseStorage).items() if getattr(fn, "__isabstractmethod__", False)}
    assert abstract <= set(STORAGE_METHODS), abstract - set(STORAGE_METHODS)


@pytest.mark.parametrize("cls,base,names", [(RetryingRDBStorage, RDBStorage, RDB_METHODS),
                                            (RetryingGrpcStorageProxy, GrpcStorageProxy, STORAGE_METHODS)])
def test_each_listed_method_is_wrapped_around_optunas_own(cls, base, names):
    for name in names:
        assert getattr(cls, name).__wrapped__ is getattr(base, name), name


def test_a_method_optuna_no_longer_has_is_an_error_when_lpstudy_is_imported():
    with pytest.raises(ImportError) as failed:
        with_retries("get_trial", "_get_stale_trial_idz")(type("Storage", (RDBStorage,), {}))
    assert "has no _get_stale_trial_idz" in str(failed.value) and f"optuna {optuna.__version__}" in str(failed.value)


def _during_an_outage(postgres, call, down_s: float = 1.5):
    """call() while the database is down; it comes back down_s seconds later."""
    postgres.stop()
    back = threading.Timer(down_s, postgres.start)
    back.start()
    try:
        return call()
    finally:
        back.join()


@pytest.mark.slow
def test_a_loaded_study_rides_out_a_database_restart_through_optunas_cache(postgres, pg_url, capsys):
    """Each private method that Optuna's cache calls, reached first while PostgreSQL is down: retried
    until it is back (before, these raised OperationalError at once)."""
    opened = open_storage(pg_url, create_tables=True)
    optuna.create_study(study_name="r", storage=opened.optuna)
    study = optuna.load_study(study_name="r", storage=opened.optuna)
    cache, study_id = study._storage, study._study_id
    assert type(cache).__name__ == "_CachedStorage"  # what a worker's study reads through
    study.tell(study.ask(), 1.0)
    capsys.readouterr()

    assert [t.number for t in _during_an_outage(postgres, lambda: cache.get_all_trials(study_id))] == [0]
    # RDBStorage._create_new_trial tries 5 times itself, at most 2 s apart: an outage longer than that
    trial_id = _during_an_outage(postgres, lambda: cache.create_new_trial(study_id), down_s=10)
    _during_an_outage(postgres, lambda: cache.set_trial_param(trial_id, "x", 0.5, FloatDistribution(0.0, 1.0)))
    assert _during_an_outage(postgres, lambda: cache.get_best_trial(study_id)).number == 0
    assert opened.optuna.get_trial(trial_id).params == {"x": 0.5}
    said = capsys.readouterr().err
    assert said.count("unreachable") == 4 and said.count("storage back after") == 4  # each outage waited out
    opened.engine.dispose()
