"""lpstudy's own calls on its storage proxy: what a grid worker asks before every trial, answered
by the proxy with one SQL query instead of Optuna's read of every unfinished trial.

Optuna's gRPC client reads trials through a cache that fetches every unfinished trial again on each
read (GrpcClientCache), and a grid's waiting cells are unfinished trials: with 1,000 cells, each
claim (Optuna's pop), lease check and count moved about 500 trials from the database through the
proxy to the worker, 68 ms of the proxy's CPU a read, 85 % of all it did (docs/scale-workers.md).
`lpstudy storage-proxy` serves three more methods beside Optuna's, on the same port, as the same
SQL a worker straight on the database runs:

    ClaimWaitingTrial  {study_id} -> {trial_id | null}   lpstudy.db.waiting_trials.claim_waiting_trial_id
    CountTrials        {study_id, states} -> {count}      lpstudy.db.trial_states.count_trials
    RunningBeats       {study_id, key} -> {trials}        each RUNNING trial's id, number and last lease
                                                          beat (Unix s; its start where it has none)

Requests and answers are JSON. A proxy that lacks them (Optuna's own run_grpc_proxy_server, an
older lpstudy) answers UNIMPLEMENTED: the client then says None once and for all, and the worker
reads through Optuna as before.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa

from lpstudy.db.storage_protocol import sql_engine

if TYPE_CHECKING:
    import grpc
    from optuna.storages import BaseStorage

    from lpstudy.db.storage_protocol import Storage
    from lpstudy.db.outages import RetryPolicy

SERVICE = "lpstudy.StorageProxy"


def _encode(value: Any) -> bytes:
    return json.dumps(value).encode()


def _decode(data: bytes) -> Any:
    return json.loads(data)


# ----------------------------------------------------------------------------- the proxy's side


def running_beats(conn: sa.Connection, study_id: int, key: str) -> list[tuple[int, int, float | None]]:
    """(trial id, number, last beat) of the study's RUNNING trials: the system attribute key (Unix
    seconds) where written, else the trial's start, as lpstudy.db.liveness.last_beat reads it."""
    rows = conn.execute(sa.text(
        "SELECT t.trial_id, t.number, t.datetime_start, a.value_json FROM trials t "
        "LEFT JOIN trial_system_attributes a ON a.trial_id = t.trial_id AND a.key = :key "
        "WHERE t.study_id = :sid AND t.state = 'RUNNING'"), {"sid": study_id, "key": key})
    beats = []
    for trial_id, number, start, value_json in rows:
        if value_json is not None:
            last = float(json.loads(value_json))
        elif start is not None:  # naive local time, as Optuna writes it and FrozenTrial returns it
            last = (datetime.fromisoformat(start) if isinstance(start, str) else start).timestamp()
        else:
            last = None
        beats.append((int(trial_id), int(number), last))
    return beats


def add_proxy_calls(server: grpc.Server, storage: Storage, backend: BaseStorage) -> None:
    """Serve SERVICE's methods on server, from storage's SQL engine; trials are claimed through
    backend (the storage Optuna's methods on that server use)."""
    import grpc

    from lpstudy.db.trial_states import count_trials
    from lpstudy.db.waiting_trials import claim_waiting_trial_id

    def read(query: Callable[[sa.Connection], Any]) -> Any:
        def once() -> Any:
            with sql_engine(storage).connect() as conn:
                return query(conn)
        return storage.call(once)

    def claim(request: dict[str, Any]) -> dict[str, Any]:
        return {"trial_id": claim_waiting_trial_id(storage, backend, request["study_id"])}

    def count(request: dict[str, Any]) -> dict[str, Any]:
        states = tuple(request.get("states") or ()) or None
        return {"count": read(lambda conn: count_trials(conn, request["study_id"], states))}

    def beats(request: dict[str, Any]) -> dict[str, Any]:
        return {"trials": read(lambda conn: running_beats(conn, request["study_id"], request["key"]))}

    def method(answer: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
        def handle(request: dict[str, Any], context: grpc.ServicerContext) -> dict[str, Any]:
            return answer(request)
        return grpc.unary_unary_rpc_method_handler(handle, request_deserializer=_decode,
                                                   response_serializer=_encode)

    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, {
        "ClaimWaitingTrial": method(claim), "CountTrials": method(count), "RunningBeats": method(beats)}),))


# ----------------------------------------------------------------------------- the worker's side


class ProxyCalls:
    """A worker's client of SERVICE at host:port, on a channel of its own. Each method returns None
    when the proxy does not offer it; a call is retried while the proxy is unreachable, as every
    storage call is (retry: the storage's RetryPolicy)."""

    def __init__(self, host: str, port: int, retry: RetryPolicy | None = None) -> None:
        self.address = f"{host}:{port}"
        self.retry = retry
        self.offered = True
        self._channel: Any = None  # grpc's Channel, opened at the first call
        self._lock = threading.Lock()

    def _call(self, name: str, request: dict[str, Any]) -> dict[str, Any] | None:
        import grpc

        if not self.offered:
            return None
        with self._lock:
            if self._channel is None:
                self._channel = grpc.insecure_channel(self.address)
        call = self._channel.unary_unary(f"/{SERVICE}/{name}", request_serializer=_encode,
                                         response_deserializer=_decode)
        try:
            answer: dict[str, Any] | None = self.retry.call(call, request) if self.retry is not None else call(request)
            return answer
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.UNIMPLEMENTED:
                self.offered = False
                return None
            raise

    def close(self) -> None:
        with self._lock:
            if self._channel is not None:
                self._channel.close()
                self._channel = None

    def claim_waiting_trial(self, study_id: int) -> tuple[int | None] | None:
        """(the claimed trial's id, or None when no trial waits); None when not offered."""
        answer = self._call("ClaimWaitingTrial", {"study_id": study_id})
        return None if answer is None else (answer["trial_id"],)

    def count_trials(self, study_id: int, states: tuple[str, ...]) -> int | None:
        answer = self._call("CountTrials", {"study_id": study_id, "states": list(states)})
        return None if answer is None else int(answer["count"])

    def running_beats(self, study_id: int, key: str) -> list[tuple[int, int, float | None]] | None:
        answer = self._call("RunningBeats", {"study_id": study_id, "key": key})
        return None if answer is None else [tuple(row) for row in answer["trials"]]
