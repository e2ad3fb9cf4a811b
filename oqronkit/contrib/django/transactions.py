"""An ``add`` inside ``transaction.atomic()`` joins the application's transaction.

:func:`transaction_lookup` makes the lookup the integration installs on its engine
(:mod:`oqronkit.transactions`): inside an atomic block on the engine's alias, a producer
writes its job through that alias's connection, in a savepoint of the block, so the job
commits with the application's rows or never exists; a hot plane elsewhere (Redis) is
signalled by ``transaction.on_commit``. Outside one (autocommit), the engine's own pool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from django.db import connections, transaction


class DjangoTransaction:
    """The open atomic block of one alias, as the engine's :class:`HostTransaction`."""

    def __init__(self, alias: str, database_url: str) -> None:
        self.alias = alias
        self.database_url = database_url

    @contextmanager
    def joined(self) -> Iterator[Any]:
        # A nested atomic block: a savepoint Django itself tracks, which also makes sure
        # the outer transaction has begun before the engine writes through the connection.
        with transaction.atomic(using=self.alias):
            yield connections[self.alias].connection

    def on_commit(self, callback: Callable[[], None]) -> None:
        # robust: a failed signal is logged by Django and never fails the commit that came first.
        transaction.on_commit(callback, using=self.alias, robust=True)


def transaction_lookup(alias: str, database_url: str) -> Callable[[], DjangoTransaction | None]:
    """The lookup of the atomic block open on ``alias`` (the engine's, whose database has
    the engine URL ``database_url``) in the calling thread."""

    def open_transaction() -> DjangoTransaction | None:
        return DjangoTransaction(alias, database_url) if connections[alias].in_atomic_block else None

    return open_transaction
