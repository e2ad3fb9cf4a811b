"""The Postgres hot plane after a crash: a new connection notices that the UNLOGGED tables
were emptied (the epoch row is gone), and a claim that meets a dead pooled connection is
tried once more on a new one instead of failing (issue 38, items 3 and 4). The crash
itself (``pg_ctl stop -m immediate``) is in tests/processes/test_recovery.py."""

from __future__ import annotations

import time

import psycopg
import pytest

from oqronkit.backends.hot_types import Signal
from oqronkit.backends.postgres import PostgresHotPlane, pool
from oqronkit.backends.types import Scope

from ...services import require_postgres, unique_name, with_search_path
from .conftest import LEASE, NOW


def _backend_pid(plane: PostgresHotPlane) -> int:
    with plane._pool.connection() as conn:
        return int(conn.info.backend_pid)


def _terminate(url: str, pid: int) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    time.sleep(0.1)  # the backend is gone before the plane's next call


def test_a_new_connection_after_the_tables_were_emptied_counts_a_reset(pg_schema_url, scope_names):
    plane = PostgresHotPlane(pg_schema_url, min_size=1, max_size=1)
    other = PostgresHotPlane(pg_schema_url, min_size=1, max_size=1)
    try:
        plane.ensure_ready()
        other.ensure_ready()
        assert plane.resets == 0 and other.resets == 0
        assert plane.epoch is not None and plane.epoch == other.epoch
        # What crash recovery does to every UNLOGGED table, then the dead connections.
        with psycopg.connect(pg_schema_url, autocommit=True) as conn:
            conn.execute("TRUNCATE oqron_hot_epoch")
        for one in (plane, other):
            _terminate(pg_schema_url, _backend_pid(one))
        scope = Scope(*scope_names)
        plane.depths(scope, "q", NOW)  # a call on a new connection: it writes a new epoch
        other.depths(scope, "q", NOW)  # and this process finds another epoch than it knew
        assert plane.resets == 1 and other.resets == 1
        assert plane.epoch == other.epoch
        _terminate(pg_schema_url, _backend_pid(plane))
        plane.depths(scope, "q", NOW)  # a reconnection alone is no reset
        assert plane.resets == 1
    finally:
        plane.close()
        other.close()


def test_a_claim_on_a_dead_pooled_connection_is_tried_once_more_on_a_new_one(pg_schema_url, scope_names,
                                                                            monkeypatch: pytest.MonkeyPatch):
    plane = PostgresHotPlane(pg_schema_url, min_size=1, max_size=1)
    scope = Scope(*scope_names)
    try:
        plane.ensure_ready()
        plane.signal(scope, "dead-conn", [Signal("a"), Signal("b")], NOW)
        # A connection whose death the checkout cannot see (a crash's reset socket reads
        # as nothing to read until it is used).
        monkeypatch.setattr(pool, "_has_input", lambda conn: False)
        _terminate(pg_schema_url, _backend_pid(plane))
        started = time.monotonic()
        first = plane.claim(scope, "dead-conn", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
        assert time.monotonic() - started < 0.5
        assert [lease.job_id for lease in first] == ["a"]
        # Fencing holds: the retry took one lease, the job is not handed out again.
        second = plane.claim(scope, "dead-conn", worker_id="w", limit=5, lease_ms=LEASE, now=NOW)
        assert [lease.job_id for lease in second] == ["b"]
        assert second[0].token > first[0].token
        assert plane.ack(scope, "dead-conn", first + second) == {"a", "b"}
    finally:
        plane.close()


def test_a_schema_another_process_just_made_is_no_reset():
    # Another process ran the schema script and has not read its epoch yet: this one
    # finds every table there and must not take the missing epoch row for a crash's loss.
    from oqronkit.backends.postgres.hot import SCHEMA

    base = require_postgres()
    schema = unique_name("oqron_epoch")
    url = with_search_path(base, schema)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')  # schema name is ours, not user input
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(SCHEMA)
        plane = PostgresHotPlane(url, min_size=1, max_size=1)
        try:
            plane.ensure_ready()
            assert plane.resets == 0 and plane.epoch is not None
        finally:
            plane.close()
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
