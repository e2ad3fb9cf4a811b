"""Producing inside the application's own database transaction.

Where the durable plane keeps its tables in the application's database (the ``sqlite``,
``postgres`` and ``redis-postgres`` modes on a Django alias), ``queue.add`` inside an
open transaction writes the job through the application's connection, in that
transaction: it commits with the application's rows, is gone if they roll back, and no
worker sees it before the commit (Oban's and River's guarantee). A framework
integration installs a lookup on the engine (``engine.host_transaction``) that answers,
on each call, the application's open transaction on the engine's database, or None
outside one. ``oqronkit.contrib.django`` installs Django's.

A hot plane on that same database (``postgres``, ``sqlite``) signals in the transaction
too; one elsewhere (Redis) is signalled once the transaction commits, and the
reconciler signals any job a crash between the commit and the signal left unsignalled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any, Protocol

from .backends.borrowed import lending
from .planes import Planes


class HostTransaction(Protocol):
    """The application's open transaction on one database."""

    #: The engine URL of the database the transaction is on.
    database_url: str

    def joined(self) -> AbstractContextManager[Any]:
        """A savepoint of the transaction, yielding the DB-API connection to write through;
        an exception inside rolls back the savepoint alone."""

    def on_commit(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once the transaction commits (never if it rolls back)."""


TransactionLookup = Callable[[], HostTransaction | None]


_current: ContextVar[HostTransaction | None] = ContextVar("oqron_host_transaction", default=None)


def to_join(engine: Planes) -> HostTransaction | None:
    """The application's open transaction a producer call on ``engine`` joins: one on the
    database of the engine's durable plane, found by the lookup an integration installed
    (``engine.host_transaction``; an engine without one, a test's stand-in included, never
    joins), unless the call is already inside one."""
    lookup: TransactionLookup | None = getattr(engine, "host_transaction", None)
    if lookup is None or _current.get() is not None:
        return None
    transaction = lookup()
    if transaction is None or engine.durable.store.joins_database != transaction.database_url:
        return None
    return transaction


@contextmanager
def joining(engine: Planes, transaction: HostTransaction) -> Iterator[None]:
    """The planes of ``engine`` writing through ``transaction``'s connection, in a savepoint."""
    # Both planes open before anything is lent (the durable one is: to_join asked it): a
    # plane's first use creates its tables with a script that commits what it finds open.
    _ = engine.hot
    token = _current.set(transaction)
    try:
        with transaction.joined() as connection, lending(transaction.database_url, connection):
            yield
    finally:
        _current.reset(token)


def joined() -> bool:
    """Whether an add now runs inside an application transaction it joined."""
    return _current.get() is not None


def when_committed(callback: Callable[[], None]) -> None:
    """``callback()`` now, or, inside a producer call joined to the application's
    transaction, once that commits (never if it rolls back)."""
    transaction = _current.get()
    if transaction is None:
        callback()
    else:
        transaction.on_commit(callback)


def signal_when_committed(engine: Planes, callback: Callable[[], None]) -> None:
    """A hot-plane signal: now when the hot plane writes in the same transaction (or
    there is none), else once it commits, so no worker claims a job it may roll back."""
    transaction = _current.get()
    if transaction is None or engine.hot.plane.joins_database == transaction.database_url:
        callback()
    else:
        transaction.on_commit(callback)
