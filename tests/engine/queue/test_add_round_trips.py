"""A single ``add`` from a view costs one Postgres round trip in postgres mode (the row
and its signal pipelined in one transaction, queues/one_trip.py), in redis-postgres
mode one Postgres round trip plus one Redis command, and in redis mode one Redis command
(the row and its signal in one script; issue 36, item 4). Counted, not
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
                         [("postgres", 1, 0), ("redis-postgres", 1, 1), ("redis", 0, 1)])
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


def test_a_taken_id_on_the_one_script_path_writes_and_signals_nothing(request, tmp_path, scope_names) -> None:
    """redis mode: insert_and_signal.lua signals only a row it inserted; a taken id (a
    fresh random id never is, but the script must not trust that) leaves the existing
    row as it was, signals nothing and raises."""
    from oqronkit.backends.hot_types import Signal
    from oqronkit.durable import RecordWrite
    from oqronkit.errors import DuplicateRecord

    with built_engine("redis", request, tmp_path, scope_names[0]) as engine:
        queue = engine.queue("taken", handler=lambda ctx: None)
        held = queue.add({"n": 1}, delay=3600)  # delayed: a wrongly sent signal would make it ready
        durable = engine.durable
        twin = RecordWrite(held.namespace, held.id, {**held.to_value(), "data": {"n": 2}}, new=True)
        fresh = RecordWrite(held.namespace, "fresh-one", {**held.to_value(), "id": "fresh-one"}, new=True)
        with pytest.raises(DuplicateRecord):
            durable.store.insert_and_signal(durable.scope, durable.encode_all([fresh, twin]), "taken",
                                            [Signal(held.id, 0, None, False), Signal("fresh-one", 0, None, False)],
                                            now_ms())
        stored = durable.get_many(queue.namespace, [held.id, "fresh-one"])
        assert [(r.id, r.value["data"]) for r in stored] == [(held.id, {"n": 1})]  # the batch undone
        depths = engine.hot.depths("taken", now_ms())
        assert (depths.ready, depths.delayed) == (0, 1)


def _wake_ups(engine: Any, queue: str) -> Any:
    """A subscriber on ``queue``'s wake-up channel (redis mode), subscribed before it returns."""
    from oqronkit.backends.redis.keys import queue_keys

    listener = redis.Redis.from_url(engine.config.redis_url or "").pubsub(ignore_subscribe_messages=True)
    listener.subscribe(queue_keys(engine.durable.scope, queue).channel)
    listener.get_message(timeout=1.0)  # the subscribe confirmation
    return listener


def _published(listener: Any) -> int:
    """Wake-ups received so far (each publish is delivered before the script's reply)."""
    count = 0
    while listener.get_message(timeout=0.2) is not None:
        count += 1
    return count


def test_the_one_script_insert_indexes_and_signals_ready_and_delayed_rows(request, tmp_path, scope_names) -> None:
    """insert_and_signal.lua names every key from two prefixes and signals rows it just
    inserted without membership reads: a ready and a delayed row of one call are both
    stored with their indexes (status listing, namespace registry), each in its set,
    and the wake-up goes out."""
    from oqronkit.backends.hot_types import Signal
    from oqronkit.durable import RecordWrite
    from oqronkit.queues.enqueue import build_job

    with built_engine("redis", request, tmp_path, scope_names[0]) as engine:
        queue = engine.queue("mixed", handler=lambda ctx: None)
        now = now_ms()
        ready, later = build_job(queue, {"n": 1}), build_job(queue, {"n": 2}, run_at=now + 3_600_000)
        durable = engine.durable
        rows = durable.encode_all([RecordWrite(j.namespace, j.id, j.to_value(), new=True) for j in (ready, later)])
        listener = _wake_ups(engine, "mixed")
        try:
            signals = [Signal(ready.id, 0, None, False), Signal(later.id, 0, later.run_at, False)]
            durable.store.insert_and_signal(durable.scope, rows, "mixed", signals, now)
            assert _published(listener) == 1
        finally:
            listener.close()
        depths = engine.hot.depths("mixed", now)
        assert (depths.ready, depths.delayed) == (1, 1)
        assert [r.id for r in durable.list(queue.namespace, status="waiting").records] == [ready.id]
        assert [r.id for r in durable.list(queue.namespace, status="delayed").records] == [later.id]
        assert durable.count_by_namespace("job") == {queue.namespace: 2}
        assert [lease.job_id for lease in engine.hot.claim("mixed", worker_id="w", limit=5, lease_ms=30_000,
                                                             now=now)] == [ready.id]


def test_a_delayed_signal_wakes_only_when_it_moves_the_earliest_due_time_earlier(request, tmp_path,
                                                                                   scope_names) -> None:
    """signal_lib.lua reads the delayed set's earliest due time only when no job became
    ready: a ready job always wakes the workers, a delayed one only when it is due before
    every job already waiting there (a waiter sized its sleep from that time)."""
    from oqronkit.backends.hot_types import Signal

    with built_engine("redis", request, tmp_path, scope_names[0]) as engine:
        now = now_ms()
        listener = _wake_ups(engine, "due")
        try:
            sent = []
            for signals in ([Signal("d1", 0, now + 20_000)], [Signal("d2", 0, now + 30_000)],
                            [Signal("d3", 0, now + 10_000)], [Signal("r1"), Signal("d4", 0, now + 40_000)],
                            [Signal("d1", 0, now + 5_000)]):  # d1 is delayed already: left as it is
                engine.hot.signal("due", signals, now)
                sent.append(_published(listener))
        finally:
            listener.close()
        assert sent == [1, 0, 1, 1, 0]
        depths = engine.hot.depths("due", now)
        assert (depths.ready, depths.delayed) == (1, 4)
