"""mysql+DRIVER://USER:PASSWORD@HOST/DB: accepted as Optuna accepts it, not advertised.

What it shares with the other SQL kinds is in `sql`; what is its own is a connect timeout and the
recycling of connections that MySQL's wait_timeout would close. No lock across processes (create
studies from one place), Optuna's heartbeats, curves in the metrics table, no default checkpoint
store.
"""

from __future__ import annotations

from typing import Any

from lpstudy.db.kinds.base import CONNECT_TIMEOUT_S
from lpstudy.db.kinds.sql import SqlStorage

MYSQL_RECYCLE_S = 3600  # well below MySQL's default wait_timeout of 8 hours


class MySQLStorage(SqlStorage):
    name = "mysql"

    def engine_options(self, readonly: bool = False) -> dict[str, Any]:
        return {**super().engine_options(readonly), "connect_args": {"connect_timeout": CONNECT_TIMEOUT_S},
                "pool_recycle": MYSQL_RECYCLE_S}

