"""An application's psycopg connection, lent to a Postgres plane for one operation.

The application's connection keeps its own adapters and cursor class (Django reads
``jsonb`` as text and binds client-side); each cursor made here gets the engine's own
instead (JSON decoded by :func:`oqronkit.codec.decode_json`, the array dumpers), so a
store's statements behave exactly as on its pool. The operation runs in a savepoint of
the application's transaction: a failed statement rolls back the operation alone,
never the application's work, and no statement here may end that transaction.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

import psycopg
from psycopg.types.json import set_json_loads

from ...codec import decode_json
from ...errors import BackendUnavailable
from . import arrays


class LentConnection:
    """What the Postgres planes call on a connection, over the application's one."""

    def __init__(self, connection: psycopg.Connection[Any]) -> None:
        self._connection = connection

    @property
    def info(self) -> Any:
        return self._connection.info

    @property
    def closed(self) -> bool:
        return self._connection.closed

    def cursor(self) -> psycopg.Cursor[Any]:
        cursor: psycopg.Cursor[Any] = psycopg.Cursor(self._connection)
        arrays.register(cursor)
        set_json_loads(decode_json, cursor)
        return cursor

    def execute(self, query: Any, params: Any = None) -> psycopg.Cursor[Any]:
        return self.cursor().execute(query, params)

    def pipeline(self) -> AbstractContextManager[Any]:
        return self._connection.pipeline()

    def transaction(self) -> AbstractContextManager[Any]:
        return self._connection.transaction()  # a savepoint: the application's transaction is open

    def rollback(self) -> None:
        raise BackendUnavailable("An operation on the application's connection cannot roll back its transaction.")


@contextmanager
def lent_connection(connection: psycopg.Connection[Any]) -> Iterator[psycopg.Connection[Any]]:
    """``connection`` for one operation, in a savepoint of its open transaction."""
    with connection.transaction():
        # Typed as a connection: it offers every method the planes call on one.
        yield LentConnection(connection)  # type: ignore[misc]
