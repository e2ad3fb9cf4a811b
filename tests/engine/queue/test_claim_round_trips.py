"""A worker whose planes share a server (redis mode on a standalone server, postgres mode)
claims its jobs and reads their rows in one call (claim_and_read.lua; the hot plane's
claim joined to oqron_jobs), so a job added to an idle worker starts after one wake-up
and one round trip (issue 36, item 3): no plain claim and no separate read of the job
rows. Counted from the drivers' sends, not timed."""

from __future__ import annotations

import hashlib
import threading

import pytest
import redis.connection

from oqronkit.backends.redis.scripts import lua_source
from tests.engine.queue.conftest import built_engine, running, wait_until

JOBS = 10


def sha(script: str) -> bytes:
    return hashlib.sha1(lua_source(script).encode()).hexdigest().encode()


def one_at_a_time(mode: str, request, tmp_path, scope: str) -> None:
    """JOBS jobs added to an idle worker of ``mode``, each after the last one started."""
    started = threading.Semaphore(0)
    with built_engine(mode, request, tmp_path, scope) as engine:
        queue = engine.queue("trips", handler=lambda ctx: started.release())
        with running(engine, services=False, poll_interval=0.05):
            for n in range(JOBS):
                queue.add({"n": n})
                assert started.acquire(timeout=10), f"job {n} never started"
            wait_until(lambda: engine.durable.count("queue_job:trips") == 0)


def test_an_idle_redis_mode_worker_claims_and_reads_in_one_script(monkeypatch, request, tmp_path,
                                                                   scope_names) -> None:
    sent: list[bytes] = []
    send = redis.connection.AbstractConnection.send_packed_command

    def counted(conn, command, check_health: bool = True) -> None:
        sent.append(b"".join(command) if isinstance(command, list) else bytes(command))
        send(conn, command, check_health)

    monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counted)
    one_at_a_time("redis", request, tmp_path, scope_names[0])
    fused = sum(sha("claim_and_read.lua") in data for data in sent)
    plain = sum(sha("claim.lua") in data for data in sent)
    reads = sum(b"HMGET" in data and b"rows:jobs:queue_job:trips" in data for data in sent)
    assert fused >= JOBS and plain == 0 and reads == 0, (fused, plain, reads)


@pytest.mark.parametrize("mode", ["redis-postgres"])
def test_a_worker_whose_planes_are_two_servers_claims_then_reads(mode, monkeypatch, request, tmp_path,
                                                                 scope_names) -> None:
    """The other side of the condition: the rows live in Postgres, so the claim is the
    hot plane's own (claim.lua) and the read a second call."""
    calls: list[str] = []
    with built_engine(mode, request, tmp_path, scope_names[0]) as engine:
        get_many = engine.durable.get_many

        def reading(namespace, ids):
            calls.append(namespace)
            return get_many(namespace, ids)

        monkeypatch.setattr(engine.durable, "get_many", reading)
        queue = engine.queue("trips", handler=lambda ctx: None)
        queue.add({"n": 1})
        with running(engine, services=False, poll_interval=0.05):
            wait_until(lambda: engine.durable.count("queue_job:trips") == 0)
    assert "queue_job:trips" in calls


def test_an_idle_postgres_mode_worker_claims_and_reads_in_one_statement(monkeypatch, request, tmp_path,
                                                                         scope_names) -> None:
    """Postgres mode: the hot plane's claim joined to the jobs' rows (claim_read_statement),
    pipelined after the due jobs' promotion: no plain claim and no read of oqron_jobs after it."""
    import psycopg

    from oqronkit.backends.postgres.hot import QUERIES as HOT_QUERIES
    from oqronkit.backends.postgres.statements import claim_read_statement, statement

    sent: list[object] = []
    execute = psycopg.Connection.execute

    def counted(conn, query, params=None, **kwargs):
        sent.append(query)
        return execute(conn, query, params, **kwargs)

    monkeypatch.setattr(psycopg.Connection, "execute", counted)
    one_at_a_time("postgres", request, tmp_path, scope_names[0])
    fused = sent.count(claim_read_statement("jobs"))
    plain = sent.count(HOT_QUERIES["claim"])
    reads = sent.count(statement("get_many", "jobs"))
    assert fused >= JOBS and plain == 0 and reads == 0, (fused, plain, reads)
