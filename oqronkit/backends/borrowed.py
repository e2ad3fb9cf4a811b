"""A connection the application lends the engine for the length of one producer call.

While :func:`lending` is active (a ``queue.add`` inside a Django ``atomic`` block, see
:mod:`oqronkit.transactions`), every SQL plane on that database runs its statements on
the lent connection, inside the application's open transaction, instead of its own
pool: what the call writes commits or rolls back with the application's own rows.
Planes on any other database, and every other thread, keep their own connections.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_lent: ContextVar[tuple[str, Any] | None] = ContextVar("oqron_lent_connection", default=None)


@contextmanager
def lending(database_url: str, connection: Any) -> Iterator[None]:
    """Lend ``connection`` (a DB-API connection in an open transaction on the database
    of ``database_url``, the engine's URL for it) to the planes on that database."""
    token = _lent.set((database_url, connection))
    try:
        yield
    finally:
        _lent.reset(token)


def borrowed(database_url: str) -> Any | None:
    """The connection lent for ``database_url`` in this context, or None."""
    lent = _lent.get()
    return lent[1] if lent is not None and lent[0] == database_url else None
