"""The upkeep that VACUUMs the Postgres hot tables as soon as a transaction holding the
xmin horizon ends (issue 38, item 1): nothing while it is held (a VACUUM then removes
nothing), at once after, and nothing again until the next hold."""

from __future__ import annotations

import time
from collections.abc import Iterator
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

from oqronkit.backends.hot_types import Signal
from oqronkit.backends.postgres import PostgresHotPlane, upkeep
from oqronkit.backends.types import Scope
from tests.services import require_postgres, unique_name

from .conftest import LEASE, NOW

JOBS = 1_500


@pytest.fixture
def own_database() -> Iterator[str]:
    """A database of this test's own: the horizon counts only its sessions, so another
    test's transaction elsewhere on the server cannot hold it."""
    base = require_postgres()
    name = unique_name("oqron_horizon")
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # our generated name
    try:
        yield urlunsplit(urlsplit(base)._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{name}" WITH (FORCE)')


def dead_rows(url: str) -> int:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT n_dead_tup FROM pg_stat_user_tables WHERE relid = 'oqron_hot_jobs'::regclass")
        return int(row.fetchone()[0])


def test_the_hot_tables_are_vacuumed_once_the_horizon_is_released(own_database, scope_names,
                                                                 monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(upkeep, "HELD_AFTER_S", 0.5)
    plane = PostgresHotPlane(own_database)
    scope = Scope(*scope_names)
    holder = psycopg.connect(own_database, application_name="oqron-test-horizon")
    try:
        plane.ensure_ready()
        assert plane.after_horizon() == []  # nothing held, nothing done
        holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT txid_current()")
        time.sleep(0.6)
        plane.signal(scope, "held", [Signal(f"j{i:05d}") for i in range(JOBS)], NOW)
        leases = plane.claim(scope, "held", worker_id="w", limit=JOBS, lease_ms=LEASE, now=NOW)
        assert len(plane.ack(scope, "held", leases)) == JOBS
        time.sleep(1.2)  # backends report their table statistics about once a second
        assert plane.after_horizon() == []  # held: a VACUUM now would remove nothing
        assert dead_rows(own_database) >= JOBS
        holder.rollback()
        assert plane.after_horizon() == ["vacuum oqron_hot_jobs (horizon released)"]
        assert dead_rows(own_database) < JOBS
        assert plane.after_horizon() == []  # once per hold
    finally:
        holder.close()
        plane.close()
