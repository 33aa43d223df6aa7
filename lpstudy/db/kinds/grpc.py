"""grpc://HOST:PORT: Optuna's storage proxy (`lpstudy storage-proxy`) in front of a database, so
that thousands of workers share its one pool of connections.

Locks: none (create studies on the database behind the proxy). Liveness: lpstudy's lease (Optuna's
heartbeats need a direct SQL connection). Curves: the trials' system attributes. Checkpoints: no
default store (--artifacts). Every call is retried while the proxy is unreachable.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from functools import cached_property

from lpstudy.db import optuna_private
from lpstudy.db.kinds.base import CONNECT_TIMEOUT_S, StudyStorage
from lpstudy.db.urls import redact
from lpstudy.errors import DatabaseUnreachable, UserError

if TYPE_CHECKING:
    import optuna
    from optuna.storages import GrpcStorageProxy
    from optuna.trial import TrialState

    from lpstudy.db.proxy_calls import ProxyCalls


def grpc_address(url: str) -> tuple[str, int]:
    """(host, port) of a grpc://HOST:PORT URL; UserError unless both are there, or with a user or
    password (the proxy authenticates no one: the database's password stays with the proxy)."""
    rest = url.split("://", 1)[1].rstrip("/")
    if "@" in rest:
        raise UserError(f"gRPC storage URL {redact(url)!r} must be grpc://HOST:PORT, without a user or "
                        "password: the storage proxy asks for none (the database's stays with "
                        "`lpstudy storage-proxy`)")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise UserError(f"gRPC storage URL {redact(url)!r} must be grpc://HOST:PORT")
    return host, int(port)


class GrpcStorage(StudyStorage):
    name = "grpc"
    url_form = "grpc://HOST:PORT"
    listed = 4

    def validate(self) -> None:
        grpc_address(self.url)

    def _open_optuna(self, create_tables: bool) -> GrpcStorageProxy:
        import warnings

        from optuna.exceptions import ExperimentalWarning

        from lpstudy.db.outages import RetryingGrpcStorageProxy, attach

        host, port = grpc_address(self.url)
        try:
            with warnings.catch_warnings():  # Optuna's ExperimentalWarning: the proxy is lpstudy's choice
                warnings.simplefilter("ignore", ExperimentalWarning)
                proxy = RetryingGrpcStorageProxy(host=host, port=port)
            proxy.wait_server_ready(timeout=CONNECT_TIMEOUT_S)
        except ImportError:
            raise UserError("gRPC storage needs grpcio: pip install 'lpstudy[grpc]'") from None
        except ConnectionError:
            raise DatabaseUnreachable(f"no storage proxy answers at {self.display_url} within {CONNECT_TIMEOUT_S} s; "
                            "start one with `lpstudy storage-proxy` or check --storage") from None
        attach(proxy, self.retry)
        return proxy

    @cached_property
    def proxy_calls(self) -> ProxyCalls:
        """lpstudy's own calls on the proxy, made on first use."""
        from lpstudy.db.proxy_calls import ProxyCalls

        return ProxyCalls(*grpc_address(self.url), retry=self.retry)

    # lpstudy's proxy answers a claim and a count in one query on its side (lpstudy.db.proxy_calls);
    # another proxy (Optuna's own) does not know these calls: then Optuna's API, as for every kind.

    def claim_waiting(self, study: optuna.Study) -> int | None:
        claimed = self.proxy_calls.claim_waiting_trial(optuna_private.study_id(study))
        return claimed[0] if claimed is not None else super().claim_waiting(study)

    def count_trials(self, study: optuna.Study, states: tuple[TrialState, ...]) -> int:
        n = self.proxy_calls.count_trials(optuna_private.study_id(study), tuple(s.name for s in states))
        return n if n is not None else super().count_trials(study, states)

    def _release(self) -> None:
        """The proxy client's channel and lpstudy's own calls' channel, closed (where opened)."""
        if self._optuna is not None:
            cast("GrpcStorageProxy", self._optuna).close()
        if "proxy_calls" in self.__dict__:
            self.proxy_calls.close()
