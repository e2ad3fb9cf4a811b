"""The claim's floor of each queue in the Postgres hot plane (postgres/heads.py, issue 38):
claims read from it instead of the queue's head, so a held xmin horizon's dead index
entries behind it are never met again; a job made ready below it, by a higher
priority, LIFO, a delayed job coming due, a retry or a promotion, is claimed next, and a
job still being signalled when the floor would move keeps it from moving past it."""

from __future__ import annotations

import json

import psycopg
import pytest

from oqronkit.backends.hot_types import Lease, Signal
from oqronkit.backends.postgres import PostgresHotPlane, heads
from oqronkit.backends.postgres.hot import QUERIES, channel_for
from oqronkit.backends.types import Scope

from .conftest import LEASE, NOW
from .test_postgres_horizon_upkeep import own_database  # noqa: F401 (a fixture)

Q = "q"


@pytest.fixture
def hot_backend_name() -> str:
    return "postgres"  # the folder's `hot` fixture, on this backend only


@pytest.fixture(autouse=True)
def raise_every_claim(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(heads, "RAISE_EVERY", 0.0)


def floor(url: str, scope: Scope, queue: str = Q) -> tuple[int, int] | None:
    with psycopg.connect(url) as conn:
        row = conn.execute("SELECT lo_rank, lo_ord FROM oqron_hot_heads WHERE project = %s AND environment = %s"
                           " AND queue = %s", (scope.project, scope.environment, queue)).fetchone()
    return None if row is None else (row[0], row[1])


def claim(hot: PostgresHotPlane, scope: Scope, limit: int, now: int = NOW) -> list[str]:
    return [lease.job_id for lease in hot.claim(scope, Q, worker_id="w", limit=limit, lease_ms=LEASE, now=now)]


def raised(hot: PostgresHotPlane, scope: Scope, url: str, jobs: int = 200) -> list[str]:
    """Signal ``jobs`` FIFO jobs, claim most of them: the floor moves to the first one left."""
    hot.signal(scope, Q, [Signal(f"f{i:04d}") for i in range(jobs)], NOW)
    taken = claim(hot, scope, jobs - 10)
    assert taken == [f"f{i:04d}" for i in range(jobs - 10)]
    assert floor(url, scope) is not None
    return [f"f{i:04d}" for i in range(jobs - 10, jobs)]


def test_the_floor_moves_to_the_first_ready_job_and_claims_go_on_in_order(hot, scope, pg_schema_url):
    left = raised(hot, scope, pg_schema_url)
    with psycopg.connect(pg_schema_url) as conn:
        first = conn.execute("SELECT -priority, ord FROM oqron_hot_jobs WHERE project = %s AND job_id = %s",
                             (scope.project, left[0])).fetchone()
    assert floor(pg_schema_url, scope) == first
    assert claim(hot, scope, 100) == left


@pytest.mark.parametrize("made_ready", ["higher priority", "lifo", "due", "retry", "promote", "lifo retry"])
def test_a_job_made_ready_below_the_floor_is_claimed_next(hot, scope, pg_schema_url, made_ready):
    left = raised(hot, scope, pg_schema_url)
    before = floor(pg_schema_url, scope)
    if made_ready == "higher priority":
        hot.signal(scope, Q, [Signal("x", priority=5)], NOW)
    elif made_ready == "lifo":
        hot.signal(scope, Q, [Signal("x", lifo=True)], NOW)
    elif made_ready == "due":  # delayed before the floor moved, due now: promoted by the claim itself
        hot.signal(scope, "other", [Signal("unused")], NOW)
        hot.signal(scope, Q, [Signal("x", priority=3, run_at=NOW + 1_000)], NOW)
    elif made_ready == "promote":
        hot.signal(scope, Q, [Signal("x", priority=3, run_at=NOW + 60_000)], NOW)
        assert hot.promote(scope, Q, "x", NOW)
    else:  # a retry: a claimed job put back ahead of the others
        hot.signal(scope, Q, [Signal("x")], NOW)
        more = hot.claim(scope, Q, worker_id="w", limit=len(left) + 1, lease_ms=LEASE, now=NOW)
        lease = next(lease for lease in more if lease.job_id == "x")
        hot.release(scope, Q, lease, Signal("x", priority=0 if made_ready == "lifo retry" else 2,
                                            lifo=made_ready == "lifo retry"), NOW)
        hot.release(scope, Q, next(lease for lease in more if lease.job_id == left[0]), Signal(left[0]), NOW)
        left = [*left[1:], left[0]]
        assert [lease.job_id for lease in more if lease.job_id not in ("x", left[-1])] == left[:-1]
        left = [left[-1]]
    if made_ready in ("higher priority", "lifo", "promote"):  # lowered by the statement itself
        assert floor(pg_schema_url, scope) < before
    assert claim(hot, scope, 1, now=NOW + 1_000) == ["x"]
    assert claim(hot, scope, 100, now=NOW + 1_000) == left


def test_with_no_job_left_the_floor_stays_at_the_last_claimed_and_later_jobs_are_found(hot, scope, pg_schema_url):
    hot.signal(scope, Q, [Signal(f"f{i:04d}") for i in range(100)], NOW)
    assert len(claim(hot, scope, 100)) == 100
    assert floor(pg_schema_url, scope) is not None
    hot.signal(scope, Q, [Signal("low", priority=-1), Signal("same"), Signal("high", priority=1)], NOW)
    assert claim(hot, scope, 10) == ["high", "same", "low"]


def test_a_signal_in_flight_keeps_the_floor_from_passing_its_job(hot, scope, pg_schema_url):
    hot.signal(scope, Q, [Signal("first")], NOW)
    writer = psycopg.connect(pg_schema_url)  # a signal still uncommitted (an application's transaction)
    try:
        params = {"project": scope.project, "environment": scope.environment, "queue": Q, "now": NOW,
                  "channel": channel_for(scope, Q), "ids": ["slow"], "priorities": [0], "run_ats": [None],
                  "lifos": [False]}
        writer.execute(QUERIES["signal"], params)  # its ord comes before the jobs signalled next
        hot.signal(scope, Q, [Signal(f"f{i:04d}") for i in range(200)], NOW)
        assert claim(hot, scope, 150)[0] == "first"
        assert floor(pg_schema_url, scope) is None  # the raise found the queue's lock shared, and waited
        writer.commit()
    finally:
        writer.close()
    assert "slow" in claim(hot, scope, 100)


def test_a_held_horizon_s_dead_entries_before_the_floor_are_not_read(own_database, scope_names):  # noqa: F811
    hot = PostgresHotPlane(own_database)
    scope = Scope(*scope_names)
    holder = psycopg.connect(own_database, application_name="oqron-test-horizon")
    try:
        hot.ensure_ready()
        holder.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        holder.execute("SELECT txid_current()")
        for batch in range(20):  # claimed 4 at a time, like workers, each claim leaving dead entries
            hot.signal(scope, Q, [Signal(f"b{batch:02d}-{i:03d}") for i in range(100)], NOW)
            for _ in range(25):
                leases = hot.claim(scope, Q, worker_id="w", limit=4, lease_ms=LEASE, now=NOW)
                assert len(hot.ack(scope, Q, leases)) == 4
        hot.signal(scope, Q, [Signal("last")], NOW)
        with psycopg.connect(own_database) as conn:
            keys = (scope.project, scope.environment, Q)
            from_floor = _buffers(conn, "SELECT 1 FROM oqron_hot_jobs WHERE project = %s AND environment = %s"
                                  " AND queue = %s AND token IS NULL AND run_at IS NULL AND (-(priority::bigint), ord)"
                                  " >= (SELECT lo_rank, lo_ord FROM oqron_hot_heads WHERE project = %s"
                                  " AND environment = %s AND queue = %s) ORDER BY -(priority::bigint), ord LIMIT 1",
                                  keys + keys)
            from_head = _buffers(conn, "SELECT 1 FROM oqron_hot_jobs WHERE project = %s AND environment = %s"
                                 " AND queue = %s AND token IS NULL AND run_at IS NULL ORDER BY -(priority::bigint),"
                                 " ord LIMIT 1", keys)
        assert from_head > 40 and from_floor < 15, (from_floor, from_head)
        assert claim(hot, scope, 4) == ["last"]
    finally:
        holder.close()
        hot.close()


def _buffers(conn: psycopg.Connection, statement: str, params: tuple[str, ...]) -> int:
    [(plan,)] = conn.execute("EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + statement, params).fetchall()
    plan = plan if isinstance(plan, list) else json.loads(plan)
    top = plan[0]["Plan"]
    return int(top["Shared Hit Blocks"]) + int(top["Shared Read Blocks"])


def test_leases_unpack_as_before(hot, scope):
    hot.signal(scope, Q, [Signal("a")], NOW)
    [lease] = hot.claim(scope, Q, worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    assert isinstance(lease, Lease) and lease.job_id == "a"
