"""A single ``add`` from a view costs one Postgres round trip in postgres mode (the row
and its signal pipelined in one transaction, queues/one_trip.py) and in redis-postgres
mode one Postgres round trip plus one Redis command (issue 36, item 4). Counted, not
timed: every Postgres connection the engine opens writes libpq's protocol trace, whose
Sync and Query messages are the round trips; Redis commands are redis-py's sends."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
import redis.connection

from oqronkit.clock import now_ms
from tests.engine.queue.conftest import built_engine, wait_until

ADDS = 20


class RoundTrips:
    def __init__(self, monkeypatch: pytest.MonkeyPatch, trace: Path) -> None:
        self.trace = trace.open("w")
        self.sends = 0
        connect = psycopg.Connection.connect.__func__  # type: ignore[attr-defined]
        send = redis.connection.AbstractConnection.send_packed_command

        def traced(cls: Any, *args: Any, **kwargs: Any) -> Any:
            conn = connect(cls, *args, **kwargs)
            conn.pgconn.trace(self.trace.fileno())
            conn.pgconn.set_trace_flags(psycopg.pq.Trace.SUPPRESS_TIMESTAMPS | psycopg.pq.Trace.REGRESS_MODE)
            return conn

        def counted(conn: Any, command: Any, check_health: bool = True) -> None:
            self.sends += 1
            send(conn, command, check_health)

        monkeypatch.setattr(psycopg.Connection, "connect", classmethod(traced))
        monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counted)
        self.path = trace

    def postgres(self) -> int:
        """Round trips so far: the frontend's Sync (extended protocol) and Query (simple) messages."""
        self.trace.flush()
        fields = (line.split("\t") for line in self.path.read_text(errors="replace").splitlines())
        return sum(1 for f in fields if len(f) > 2 and f[0] == "F" and f[2] in ("Sync", "Query"))


@pytest.fixture
def trips(monkeypatch: pytest.MonkeyPatch) -> Iterator[RoundTrips]:
    with tempfile.TemporaryDirectory() as scratch:
        counter = RoundTrips(monkeypatch, Path(scratch) / "libpq.trace")
        yield counter
        counter.trace.close()


@pytest.mark.parametrize(("mode", "postgres_per_add", "redis_per_add"),
                         [("postgres", 1, 0), ("redis-postgres", 1, 1)])
def test_a_single_add_costs_one_postgres_round_trip_and_at_most_one_redis_command(
        mode, postgres_per_add, redis_per_add, trips, request, tmp_path, scope_names) -> None:
    with built_engine(mode, request, tmp_path, scope_names[0]) as engine:
        queue = engine.queue("trips", handler=lambda ctx: None)
        queue.add({"warm": True})  # the pools open, the schema is checked: not an add's cost
        before_pg, before_redis = trips.postgres(), trips.sends
        jobs = [queue.add({"n": n, "to": "someone@example.com"}) for n in range(ADDS)]
        pg, sent = trips.postgres() - before_pg, trips.sends - before_redis
        # every job stored and signalled: a worker would claim each of them
        assert {r.id for r in engine.durable.get_many(queue.namespace, [j.id for j in jobs])} == {j.id for j in jobs}
        wait_until(lambda: engine.hot.depths("trips", now_ms()).ready == ADDS + 1)
    assert pg <= ADDS * postgres_per_add + 1, f"{pg} Postgres round trips for {ADDS} adds"
    assert sent == ADDS * redis_per_add, f"{sent} Redis commands for {ADDS} adds"
