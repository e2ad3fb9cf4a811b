"""Several write statements of the PostgreSQL store sent as one pipeline in one
transaction: one round trip for BEGIN, the statements and COMMIT."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.pq import TransactionStatus

from .statements import QUERIES


def pipelined(conn: psycopg.Connection[Any], parts: list[tuple[bytes, dict[str, Any]]]) -> None:
    """Several write statements sent as one pipeline inside one transaction: BEGIN,
    the statements and COMMIT cost one round trip instead of one each. That matters
    most in a busy worker, where every wait on the socket hands the GIL to another
    thread and getting it back can take longer than the statement did.

    BEGIN and COMMIT are plain statements of the pipeline: psycopg's ``transaction()``
    inside a pipeline syncs on its own at the end (a second round trip; 540 instead of
    180 us for two statements here). A failed statement makes the server skip the rest,
    COMMIT included, so the transaction is rolled back before re-raising. On a connection
    already in a transaction (an application's, lent) the statements join that one."""
    own = conn.info.transaction_status == TransactionStatus.IDLE
    try:
        with conn.pipeline():
            if own:
                conn.execute(QUERIES["begin"])
            for query, params in parts:
                conn.execute(query, params)
            if own:
                conn.execute(QUERIES["commit"])
    except BaseException:
        if own and not conn.closed and conn.info.transaction_status != TransactionStatus.IDLE:
            conn.rollback()
        raise
