"""What the parts a storage composes or hands out (its liveness, its calls on a storage proxy, its
bulk enqueuing) see of the storage they serve: its URL, Optuna's storage, its engine, its retried
calls. A protocol, so that those parts never import the storage class that imports them
(tests/test_house.py: no import cycle in lpstudy/db, not even for a type)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from optuna.storages import BaseStorage
    from sqlalchemy.engine import Engine

T = TypeVar("T")


class Storage(Protocol):
    url: str

    @property
    def display_url(self) -> str: ...

    @property
    def optuna(self) -> BaseStorage: ...

    @property
    def engine(self) -> Engine | None: ...

    @property
    def proxy_calls(self) -> Any: ...

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T: ...


def sql_engine(storage: Storage) -> Engine:
    """The SQL engine of a storage whose part runs only on the SQL kinds (its heartbeats, its claim of
    a waiting trial, its proxy's queries): a storage without one is a caller's bug, not a user's."""
    engine = storage.engine
    if engine is None:
        raise TypeError(f"{storage.display_url} has no SQL engine")
    return engine
