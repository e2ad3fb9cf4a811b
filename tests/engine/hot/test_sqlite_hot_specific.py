"""What only the SQLite hot plane promises beyond the contract suite: several processes
sharing one file, wake-ups across connections, and its own safety details."""

from __future__ import annotations

import multiprocessing
import sqlite3
import threading
import time
from collections.abc import Iterator

import pytest

from oqronkit.backends.hot_types import Lease, Signal
from oqronkit.backends.sqlite_hot import SQLiteHotPlane
from oqronkit.backends.types import Scope
from oqronkit.errors import BackendUnavailable, ConfigurationError

NOW = 1_700_000_000_000
LEASE = 30_000
SPAWN = multiprocessing.get_context("spawn")


@pytest.fixture
def path(tmp_path) -> str:
    return str(tmp_path / "shared.sqlite3")


@pytest.fixture
def hot(path) -> Iterator[SQLiteHotPlane]:
    plane = SQLiteHotPlane(path)
    plane.ensure_ready()
    try:
        yield plane
    finally:
        plane.close()


@pytest.fixture
def scope(scope_names) -> Scope:
    return Scope(*scope_names)


# -- helpers run in spawned processes (module level, so they can be pickled) -----------


def _claim_everything(path: str, scope: Scope, start, out) -> None:
    plane = SQLiteHotPlane(path)
    plane.ensure_ready()
    start.wait(30)  # a barrier: both processes claim at the same moment
    got: list[tuple[str, int]] = []
    while batch := plane.claim(scope, "q", worker_id="proc", limit=3, lease_ms=LEASE, now=NOW):
        got.extend((lease.job_id, lease.token) for lease in batch)
        time.sleep(0.001)  # a moment of "work", so the two processes interleave
    plane.close()
    out.put(got)


def _wait_for_wake(path: str, scope: Scope, ready, out) -> None:
    plane = SQLiteHotPlane(path)
    plane.ensure_ready()
    ready.set()
    woke = plane.wait(scope, ["wake"], 5.0)
    out.put((woke, time.monotonic()))
    plane.close()


def _join(processes) -> None:
    for process in processes:
        process.join(30)
        assert process.exitcode == 0


# -- several processes -------------------------------------------------------------------


@pytest.mark.slow
def test_two_processes_never_claim_the_same_job(hot, path, scope):
    hot.signal(scope, "q", [Signal(f"j{i}") for i in range(200)], NOW)
    start, out = SPAWN.Barrier(2), SPAWN.Queue()
    processes = [SPAWN.Process(target=_claim_everything, args=(path, scope, start, out)) for _ in range(2)]
    for process in processes:
        process.start()
    results = [out.get(timeout=60) for _ in processes]
    _join(processes)
    claimed = [pair for got in results for pair in got]
    assert sorted(job_id for job_id, _token in claimed) == sorted(f"j{i}" for i in range(200))
    assert len({token for _job_id, token in claimed}) == 200  # fencing tokens are never shared
    assert all(got for got in results), "both processes should have claimed something"
    assert hot.depths(scope, "q", NOW).active == 200


@pytest.mark.slow
def test_wait_wakes_within_200ms_of_a_signal_from_another_process(hot, path, scope):
    ready, out = SPAWN.Event(), SPAWN.Queue()
    process = SPAWN.Process(target=_wait_for_wake, args=(path, scope, ready, out))
    process.start()
    assert ready.wait(30)
    time.sleep(0.3)  # let the child settle inside wait()
    signalled = time.monotonic()
    hot.signal(scope, "wake", [Signal("a")], NOW)
    woke, woke_at = out.get(timeout=30)
    _join([process])
    assert woke is True
    assert 0 <= woke_at - signalled < 0.2  # CLOCK_MONOTONIC is system-wide on one machine


# -- wake-ups inside one process -----------------------------------------------------------


def test_wait_wakes_at_once_on_a_signal_from_another_thread(hot, scope):
    woke: list[float] = []
    waiter = threading.Thread(target=lambda: woke.append(hot.wait(scope, ["wake"], 5.0) and time.monotonic()))
    waiter.start()
    time.sleep(0.1)
    signalled = time.monotonic()
    hot.signal(scope, "wake", [Signal("a")], NOW)
    waiter.join(5)
    assert woke and woke[0] - signalled < 0.05


def test_wait_sees_another_connection_and_ignores_other_queues(hot, path, scope):
    """A second plane on the same file shares no condition variable: only the
    cross-connection poll can wake the waiter, as for another process."""
    other = SQLiteHotPlane(path)
    try:
        other.signal(scope, "elsewhere", [Signal("x")], NOW)
        assert hot.wait(scope, ["wake"], 0.15) is False  # a commit, but not for these queues
        threading.Timer(0.1, other.signal, (scope, "wake", [Signal("a")], NOW)).start()
        started = time.monotonic()
        assert hot.wait(scope, ["wake"], 5.0) is True
        assert time.monotonic() - started < 0.5
    finally:
        other.close()


def test_wait_wakes_for_an_earlier_due_time_from_another_connection(hot, path, scope):
    """A worker sized its timeout from next_due; an earlier delayed job must wake it."""
    hot.signal(scope, "wake", [Signal("late", run_at=NOW + 60_000)], NOW)
    other = SQLiteHotPlane(path)
    try:
        threading.Timer(0.1, other.signal, (scope, "wake", [Signal("soon", run_at=NOW + 1_000)], NOW)).start()
        started = time.monotonic()
        assert hot.wait(scope, ["wake"], 5.0) is True
        assert time.monotonic() - started < 0.5
    finally:
        other.close()


def test_wait_returns_at_once_when_a_queue_is_ready(hot, scope):
    hot.signal(scope, "wake", [Signal("a")], NOW)
    started = time.monotonic()
    assert hot.wait(scope, ["idle", "wake"], 5.0) is True
    assert time.monotonic() - started < 0.05


# -- ordering and fencing details ----------------------------------------------------------


def test_a_job_that_becomes_due_queues_behind_jobs_already_ready(hot, scope):
    hot.signal(scope, "q", [Signal("delayed", run_at=NOW + 10), Signal("a")], NOW)
    hot.signal(scope, "q", [Signal("b")], NOW + 5)
    claimed = hot.claim(scope, "q", worker_id="w", limit=9, lease_ms=LEASE, now=NOW + 10)
    assert [lease.job_id for lease in claimed] == ["a", "b", "delayed"]


def test_a_recreated_lease_token_is_never_handed_out_again(hot, scope):
    [kept] = hot.extend(scope, "q", [Lease("ghost", 41, NOW)], lease_ms=LEASE, now=NOW)
    assert kept.token == 41
    hot.signal(scope, "q", [Signal("a")], NOW)
    [fresh] = hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    assert fresh.token > 41


def test_idle_claims_and_reads_do_not_wait_for_a_writer(path, scope):
    """An idle poller's claim is read-only, and WAL readers never block on the writer."""
    plane = SQLiteHotPlane(path, busy_timeout=2.0)
    plane.ensure_ready()
    blocker = sqlite3.connect(path, isolation_level=None)
    try:
        blocker.execute("BEGIN IMMEDIATE")
        started = time.monotonic()
        assert plane.claim(scope, "q", worker_id="w", limit=10, lease_ms=LEASE, now=NOW) == []
        assert plane.depths(scope, "q", NOW).ready == 0
        assert plane.wait(scope, ["q"], 0.05) is False
        assert time.monotonic() - started < 1.0
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
        plane.close()


# -- set-up and errors ---------------------------------------------------------------------


def test_hot_tables_live_beside_the_durable_tables(path, scope):
    from oqronkit.backends.sqlite import SQLiteDurableStore

    durable = SQLiteDurableStore(path)
    plane = SQLiteHotPlane(path)
    try:
        durable.ensure_schema()
        plane.ensure_ready()
        plane.ensure_ready()  # idempotent
        assert durable.has_table("oqron_jobs") and durable.has_table("oqron_hot_jobs")
        plane.signal(scope, "q", [Signal("a")], NOW)
        assert plane.present(scope, "q", ["a"]) == {"a"}
    finally:
        durable.close()
        plane.close()


def test_driver_errors_become_backend_unavailable(tmp_path, scope):
    missing = SQLiteHotPlane(str(tmp_path / "no-such-dir" / "hot.sqlite3"))
    with pytest.raises(BackendUnavailable):
        missing.ensure_ready()
    plane = SQLiteHotPlane(str(tmp_path / "hot.sqlite3"))
    with pytest.raises(BackendUnavailable):
        plane.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)  # no tables yet
    plane.close()
    with pytest.raises(BackendUnavailable):
        plane.depths(scope, "q", NOW)


def test_an_in_memory_path_is_refused():
    with pytest.raises(ConfigurationError):
        SQLiteHotPlane(":memory:")
