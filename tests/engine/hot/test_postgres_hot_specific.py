"""What only the Postgres hot plane has to prove: claims stay disjoint across
processes, a NOTIFY from another process wakes a waiter at once, the tables are
UNLOGGED with byte-order key columns, and errors name the server without its password. Ends with a throughput
print (not asserted) for claim + ack in batches."""

from __future__ import annotations

import threading
import time

import pytest

from oqronkit.backends.hot_types import Lease, Signal
from oqronkit.backends.postgres import PostgresHotPlane
from oqronkit.backends.types import Scope
from oqronkit.errors import BackendUnavailable

from .conftest import LEASE, NOW, SPAWN, assert_close_interrupts_a_wait, assert_two_processes_never_share_a_job


@pytest.fixture
def hot_backend_name() -> str:
    return "postgres"  # the folder's `hot` fixture, on this backend only


def _signal_later(url: str, names: tuple[str, str], ready, go, out) -> None:
    """Child process: once told, pause (the parent is waiting by then) and signal."""
    hot = PostgresHotPlane(url)
    scope = Scope(*names)
    hot.ensure_ready()
    hot.depths(scope, "wake", NOW)  # the pool is warm before the clock starts
    ready.set()
    go.wait(30)
    time.sleep(0.3)
    started = time.time()
    hot.signal(scope, "wake", [Signal("a")], NOW)
    out.put(started)
    hot.close()


@pytest.mark.slow
def test_two_processes_claiming_at_once_never_share_a_job(hot, pg_schema_url, scope_names):
    assert_two_processes_never_share_a_job(hot, PostgresHotPlane, pg_schema_url, scope_names)


@pytest.mark.slow
def test_wait_wakes_within_200ms_of_a_signal_from_another_process(hot, scope, pg_schema_url, scope_names):
    ready, go, out = SPAWN.Event(), SPAWN.Event(), SPAWN.Queue()
    child = SPAWN.Process(target=_signal_later, args=(pg_schema_url, scope_names, ready, go, out))
    child.start()
    try:
        assert ready.wait(60)
        hot.wait(scope, ["wake"], 0)  # LISTEN before the child's clock starts
        go.set()
        assert hot.wait(scope, ["wake"], 10.0) is True
        woke = time.time()
        signalled = out.get(timeout=10)
    finally:
        child.join(30)
    assert woke - signalled < 0.2, f"woke {woke - signalled:.3f}s after the signal"
    claimed = hot.claim(scope, "wake", worker_id="w", limit=5, lease_ms=LEASE, now=NOW)
    assert [lease.job_id for lease in claimed] == ["a"]


def test_a_second_waiting_thread_polls_and_wakes_too(hot, scope):
    woke: list[bool] = []

    def waiter() -> None:
        woke.append(hot.wait(scope, ["both"], 5.0))

    threads = [threading.Thread(target=waiter) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.2)
    started = time.monotonic()
    hot.signal(scope, "both", [Signal("a")], NOW)
    for t in threads:
        t.join()
    assert woke == [True, True] and time.monotonic() - started < 1.0


def test_close_interrupts_a_wait(pg_schema_url, scope):
    assert_close_interrupts_a_wait(PostgresHotPlane(pg_schema_url), scope)


def test_tokens_increase_across_queues_and_survive_a_lost_lease(hot, scope):
    hot.signal(scope, "a", [Signal("x")], NOW)
    hot.signal(scope, "b", [Signal("y")], NOW)
    [first] = hot.claim(scope, "a", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    [second] = hot.claim(scope, "b", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    assert second.token > first.token
    # A lease re-created by extend keeps its token; a stale duplicate is not renewed.
    kept = hot.extend(scope, "a", [first, Lease("x", first.token - 1, NOW)], lease_ms=LEASE, now=NOW + 1)
    assert kept == [Lease("x", first.token, NOW + 1 + LEASE)]


def test_hot_tables_are_unlogged_with_byte_order_keys(hot, pg_schema_url):
    # COLLATE "C" on the key columns: cheaper comparisons on every claim, ack and
    # renewal, whatever the database's collation.
    import psycopg

    with psycopg.connect(pg_schema_url) as conn:
        rows = conn.execute(
            "SELECT c.relname, c.relpersistence, a.attname, co.collname FROM pg_class c "
            "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 "
            "LEFT JOIN pg_collation co ON co.oid = a.attcollation "
            "WHERE c.relname LIKE 'oqron_hot_%' AND c.relkind = 'r' "
            "AND c.relnamespace = current_schema()::regnamespace"
        ).fetchall()
    keys = {"oqron_hot_jobs": ("queue", "job_id"), "oqron_hot_locks": ("name",),
            "oqron_hot_counters": ("name",), "oqron_hot_kv": ("grp", "key"), "oqron_hot_rates": ("name", "key"),
            "oqron_hot_qlimits": ("queue",), "oqron_hot_heads": ("queue",)}
    assert {name for name, *_ in rows} == set(keys) | {"oqron_hot_epoch"}  # the epoch: one row, no key text
    assert {persistence for _, persistence, *_ in rows} == {"u"}
    assert sorted((t, column) for t, _, column, collation in rows if collation == "C") == sorted(
        (t, column) for t, rest in keys.items() for column in ("project", "environment", *rest))


def test_unreachable_server_is_backend_unavailable_without_the_password(scope):
    plane = PostgresHotPlane("postgresql://oqron:s3cret@127.0.0.1:1/none", connect_timeout=1.0)
    with pytest.raises(BackendUnavailable) as caught:
        plane.depths(scope, "q", NOW)
    assert "s3cret" not in str(caught.value) and "127.0.0.1:1" in str(caught.value)
    plane.close()


@pytest.mark.slow
def test_claim_and_ack_throughput(hot, scope, capsys):
    total, batch = 5_000, 50
    for start in range(0, total, 1_000):
        hot.signal(scope, "bench", [Signal(f"j{i}") for i in range(start, start + 1_000)], NOW)
    done = 0
    started = time.perf_counter()
    while leases := hot.claim(scope, "bench", worker_id="w", limit=batch, lease_ms=LEASE, now=NOW):
        done += len(hot.ack(scope, "bench", leases))
    elapsed = time.perf_counter() - started
    assert done == total
    with capsys.disabled():  # the figure is the point of this test: always show it
        print(f"\npostgres hot plane: claim+ack {total} jobs in batches of {batch}: "
              f"{total / elapsed:,.0f} jobs/s ({elapsed * 1000 / (total / batch):.2f} ms per batch)")


def test_acks_and_renewals_of_the_same_leases_at_once_never_deadlock(pg_schema_url, scope):
    # The finisher acks completed jobs while the heartbeat renews the same leases on
    # another connection. Both must lock the rows in one order (job id): a deadlock
    # costs one of them Postgres's deadlock_timeout (1 s) and then an error.
    renewer, acker = PostgresHotPlane(pg_schema_url), PostgresHotPlane(pg_schema_url)
    errors: list[BaseException] = []
    try:
        acker.ensure_ready()
        for round_ in range(12):
            queue = f"dl{round_}"
            ids = [f"job-{n:04d}" for n in range(400)]
            acker.signal(scope, queue, [Signal(i, 0, None, False) for i in ids], NOW)
            leases = acker.claim(scope, queue, worker_id="w", limit=400, lease_ms=LEASE, now=NOW)
            assert len(leases) == 400
            go = threading.Barrier(2)

            def renew(leases: list[Lease] = leases, queue: str = queue, go: threading.Barrier = go) -> None:
                go.wait()
                try:
                    for step in range(1, 4):  # each renewal moves every row in the lease index
                        renewer.extend(scope, queue, leases[::-1], lease_ms=LEASE + step, now=NOW + step)
                except BaseException as exc:  # reported below
                    errors.append(exc)

            thread = threading.Thread(target=renew)
            thread.start()
            go.wait()
            try:
                acked = set()
                for part in range(4):  # in slices, newest lease first, as a finisher's batches come
                    acked |= acker.ack(scope, queue, leases[part::4][::-1])
            except BaseException as exc:  # reported below
                errors.append(exc)
            thread.join()
            assert not errors, errors
            assert len(acked) == 400
    finally:
        renewer.close()
        acker.close()


def test_ensure_ready_restores_a_missing_rate_function(hot, pg_schema_url, scope):
    # A new oqron_rate_hit_vN on a database whose tables all exist must still be created.
    import psycopg

    from oqronkit.backends.rate_types import RateRequest, Tier

    with psycopg.connect(pg_schema_url, autocommit=True) as conn:
        conn.execute("DROP FUNCTION oqron_rate_hit_v4")
    hot.ensure_ready()
    request = RateRequest("lim", "k", 1, (Tier("gcra", 1, 1000),))
    assert hot.rate_hit(scope, request, NOW).allowed and not hot.rate_hit(scope, request, NOW).allowed
