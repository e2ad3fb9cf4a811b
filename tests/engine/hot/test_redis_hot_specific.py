"""What only the Redis hot plane has to prove: its key layout (scope prefix, one hash slot
per queue), the eviction-policy check, scripts surviving SCRIPT FLUSH and a restart,
BackendUnavailable while the server is down and recovery after, claims disjoint across
processes, and cross-process wake-ups within milliseconds. Ends with throughput and
latency prints (not asserted beyond generous bounds).

Tests that change server state (CONFIG SET, SCRIPT FLUSH, SHUTDOWN) run against a
dedicated redis-server started on a free port in a temporary directory, never against
the shared one; tests on the shared server delete only their own project's keys.
"""

from __future__ import annotations

import logging
import shutil
import socket
import statistics
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.crc import key_slot
from redis.retry import Retry

from oqronkit.backends.claim_limits import ClaimLimits
from oqronkit.backends.hot_types import Lease, Signal
from oqronkit.backends.redis import RedisHotPlane
from oqronkit.backends.redis.hot import SIGNAL_BATCH
from oqronkit.backends.types import Scope
from oqronkit.errors import BackendUnavailable, ConfigurationError
from tests.services import require_redis

from .conftest import LEASE, NOW, SPAWN, assert_close_interrupts_a_wait, assert_two_processes_never_share_a_job


@pytest.fixture
def redis_url() -> str:
    return require_redis()


@pytest.fixture
def hot_backend_name() -> str:
    return "redis"  # the folder's `hot` fixture (this test's keys dropped after), on this backend only


class DedicatedRedis:
    """A private redis-server on a free port (no persistence), started and stopped by
    pid, so a test may reconfigure, flush or kill it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        subprocess.run(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "yes", "--dir", str(self.directory), "--pidfile", str(self.directory / "redis.pid"),
             "--logfile", str(self.directory / "redis.log")],
            check=True, timeout=30,
        )
        deadline = time.monotonic() + 10
        while True:
            try:
                with self.client() as client:
                    client.ping()
                return
            except redis.ConnectionError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.02)

    def stop(self) -> None:
        pid_file = self.directory / "redis.pid"
        if not pid_file.exists():
            return
        pid = int(pid_file.read_text().strip())
        try:
            with self.client() as client:
                client.shutdown(nosave=True)
        except redis.RedisError:
            pass  # the reply to SHUTDOWN is a dropped connection
        deadline = time.monotonic() + 10
        while _running(pid) and time.monotonic() < deadline:
            time.sleep(0.02)
        pid_file.unlink(missing_ok=True)

    def client(self) -> redis.Redis:
        # No retries: redis-py's default would retry SHUTDOWN's dropped connection for seconds.
        return redis.Redis(host="127.0.0.1", port=self.port, decode_responses=True, socket_connect_timeout=2,
                           retry=Retry(NoBackoff(), 0))


def _running(pid: int) -> bool:
    """Whether the process is alive (a daemonized server that exited stays a zombie
    until init reaps it, which may take seconds)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


@pytest.fixture
def dedicated(tmp_path) -> Iterator[DedicatedRedis]:
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = DedicatedRedis(tmp_path)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def claim_ids(hot, scope, queue="q", limit=100, now=NOW) -> list[str]:
    return [lease.job_id for lease in hot.claim(scope, queue, worker_id="w", limit=limit, lease_ms=LEASE, now=now)]


# -- key layout ---------------------------------------------------------------------------


def test_every_key_has_the_scope_prefix_and_a_queue_lives_in_one_slot(hot, scope, redis_url):
    hot.signal(scope, "mail", [Signal("a"), Signal("b", priority=3), Signal("c", run_at=NOW + 5_000)], NOW)
    # A limited claim, cut short: the rate's start log and the held-back counts join the queue's slot.
    held = hot.claim_limited(scope, "mail", worker_id="w", limit=2, lease_ms=LEASE, now=NOW,
                             limits=ClaimLimits(rate=(1, 1_000)))
    assert len(held.leases) == 1 and held.held
    hot.signal(scope, "other", [Signal("x")], NOW)
    hot.acquire_lock(scope, "leader", "n1", ttl_ms=1_000, now=NOW)
    hot.incr(scope, "done")
    hot.incr(scope, "failed")
    hot.kv_set(scope, "workers", {"w1": "{}"}, ttl_ms=1_000, now=NOW)
    prefix = f"oqron:{scope.project}:{scope.environment}:"
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:
        keys = set(client.scan_iter(match=f"oqron:{scope.project}:*"))
    assert keys and all(key.startswith(prefix) for key in keys)
    tag = f"{{{scope.project}:{scope.environment}:mail}}"
    mail = {key for key in keys if tag in key}
    assert {key.removeprefix(prefix + tag + ":") for key in mail} == {
        "ready", "delayed", "meta", "leases", "expiry", "seq", "token", "starts", "held"}
    assert len({key_slot(key.encode()) for key in mail}) == 1
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:  # the limits' state expires by itself
        assert all(client.pttl(prefix + tag + ":" + part) > 0 for part in ("starts", "held"))
    counters = [key for key in keys if ":counter:" in key]
    assert len(counters) == 2 and len({key_slot(key.encode()) for key in counters}) == 1
    kv = [key for key in keys if ":kv:" in key]
    assert len(kv) == 2 and len({key_slot(key.encode()) for key in kv}) == 1


def test_queue_names_with_braces_still_keep_their_keys_together(hot, scope, redis_url):
    for queue in ("a}b", "{x}", "a}:ready"):
        hot.signal(scope, queue, [Signal("j", run_at=NOW + 10)], NOW)
        hot.signal(scope, queue, [Signal("k")], NOW)
        assert claim_ids(hot, scope, queue=queue) == ["k"]
    with redis.Redis.from_url(redis_url, decode_responses=True) as client:
        keys = list(client.scan_iter(match=f"oqron:{scope.project}:*"))
    by_queue: dict[str, set[int]] = {}
    for key in keys:
        for queue in ("a}b", "{x}", "a}:ready"):
            if f":{{{scope.project}:{scope.environment}:{queue}}}:" in key:
                by_queue.setdefault(queue, set()).add(key_slot(key.encode()))
    assert all(len(slots) == 1 for slots in by_queue.values()) and len(by_queue) == 3
    for queue in ("a}b", "{x}", "a}:ready"):  # no queue sees another's jobs
        assert hot.depths(scope, queue, NOW).active == 1


def test_scores_keep_priority_and_order_exact_at_the_extremes(hot, scope):
    hot.signal(scope, "q", [Signal("low", priority=-1000), Signal("high", priority=1000),
                            Signal("l1", priority=-1000, lifo=True), Signal("l2", priority=-1000, lifo=True)], NOW)
    hot.signal(scope, "q", [Signal(f"h{i}", priority=1000) for i in range(3)], NOW)
    assert claim_ids(hot, scope) == ["high", "h0", "h1", "h2", "l2", "l1", "low"]
    with pytest.raises(ValueError):
        hot.signal(scope, "q", [Signal("bad", priority=1001)], NOW)


# -- eviction policy ------------------------------------------------------------------------


def test_eviction_policy_must_be_noeviction(dedicated, caplog):
    with dedicated.client() as client:
        client.config_set("maxmemory-policy", "allkeys-lru")
    plane = RedisHotPlane(dedicated.url)
    with pytest.raises(ConfigurationError) as caught:
        plane.ensure_ready()
    message = str(caught.value)
    assert "allkeys-lru" in message and "noeviction" in message and "ALLOW_REDIS_EVICTION" in message
    plane.close()

    allowed = RedisHotPlane(dedicated.url, check_eviction=False)
    with caplog.at_level(logging.WARNING, logger="oqronkit.backends.redis.connection"):
        allowed.ensure_ready()
    assert any("ALLOW_REDIS_EVICTION" in r.getMessage() for r in caplog.records)
    allowed.close()

    with dedicated.client() as client:
        client.config_set("maxmemory-policy", "noeviction")
    fine = RedisHotPlane(dedicated.url)
    fine.ensure_ready()
    fine.close()


def test_a_redis_without_config_is_accepted_with_a_warning(dedicated, caplog):
    # As on managed services: CONFIG is refused (here by an ACL), the policy unknowable.
    with dedicated.client() as client:
        client.config_set("maxmemory-policy", "allkeys-lru")
        client.acl_setuser("app", enabled=True, nopass=True, commands=["+@all", "-config"], keys=["*"],
                           channels=["*"])
    plane = RedisHotPlane(f"redis://app@127.0.0.1:{dedicated.port}/0")
    with caplog.at_level(logging.WARNING, logger="oqronkit.backends.redis.connection"):
        plane.ensure_ready()
    assert any("maxmemory-policy" in r.getMessage() for r in caplog.records)
    scope = Scope("acl", "test")
    plane.signal(scope, "q", [Signal("a")], NOW)
    assert claim_ids(plane, scope) == ["a"]
    plane.close()


def test_a_user_without_channel_access_is_refused_at_start(dedicated):
    with dedicated.client() as client:
        client.acl_setuser("nochan", enabled=True, nopass=True, commands=["+@all"], keys=["*"], reset_channels=True)
    plane = RedisHotPlane(f"redis://nochan@127.0.0.1:{dedicated.port}/0")
    with pytest.raises(ConfigurationError, match="oqron:"):
        plane.ensure_ready()
    plane.close()


# -- scripts, outages and restarts ----------------------------------------------------------


def test_scripts_are_reloaded_after_script_flush(dedicated):
    plane = RedisHotPlane(dedicated.url)
    plane.ensure_ready()
    scope = Scope("flush", "test")
    plane.signal(scope, "q", [Signal("a"), Signal("b")], NOW)
    with dedicated.client() as client:
        client.script_flush()
    [lease] = plane.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    with dedicated.client() as client:
        client.script_flush()
    assert plane.ack(scope, "q", [lease]) == {"a"}
    assert plane.kv_all(scope, "g", NOW) == {}
    with dedicated.client() as client:
        client.script_flush()
    # A batch bigger than one script call travels pipelined, and reloads too.
    plane.signal(scope, "q", [Signal(f"c{i:05d}") for i in range(SIGNAL_BATCH + 1)], NOW)
    assert claim_ids(plane, scope, limit=3) == ["b", "c00000", "c00001"]
    assert plane.depths(scope, "q", NOW).ready == SIGNAL_BATCH - 1
    plane.close()


def test_down_server_is_backend_unavailable_and_the_plane_recovers(dedicated):
    plane = RedisHotPlane(dedicated.url, read_retries=1)
    plane.ensure_ready()
    scope = Scope("restart", "test")
    plane.signal(scope, "q", [Signal("a"), Signal("b")], NOW)
    [held] = plane.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    assert plane.wait(scope, ["q"], 0.05) is True  # the wake-up listener is running

    dedicated.stop()
    for call in (
        lambda: plane.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW),
        lambda: plane.depths(scope, "q", NOW),
        lambda: plane.signal(scope, "q", [Signal("c")], NOW),
        lambda: plane.incr(scope, "n"),
        lambda: plane.wait(scope, ["q", "new-queue"], 1.0),
    ):
        started = time.monotonic()
        with pytest.raises(BackendUnavailable) as caught:
            call()
        assert time.monotonic() - started < 5.0
        assert f"127.0.0.1:{dedicated.port}" in str(caught.value)

    dedicated.start()  # empty: no data, no scripts
    # A live worker keeps its job: the lease is re-created under its token, and that
    # token is never handed out again.
    [kept] = plane.extend(scope, "q", [held], lease_ms=LEASE, now=NOW + 1)
    assert kept.token == held.token
    plane.signal(scope, "q", [Signal("b")], NOW)  # the reconciler re-signals
    [fresh] = plane.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    assert fresh.job_id == "b" and fresh.token > held.token
    assert plane.ack(scope, "q", [kept, fresh]) == {"a", "b"}

    # Wake-ups work again once the listener has resubscribed (it retries on its own).
    other = RedisHotPlane(dedicated.url)
    deadline = time.monotonic() + 10
    woke = False
    while not woke and time.monotonic() < deadline:
        timer = threading.Timer(0.1, lambda: other.signal(scope, "w", [Signal(f"s{time.monotonic()}")], NOW))
        timer.start()
        started = time.monotonic()
        woke = plane.wait(scope, ["w"], 2.0) and time.monotonic() - started < 1.0
        timer.join()
        claim_ids(plane, scope, queue="w")
    assert woke
    other.close()
    plane.close()


def test_unreachable_server_is_backend_unavailable_without_the_password(scope):
    plane = RedisHotPlane("redis://:s3cret@127.0.0.1:1/0", connect_timeout=1.0, read_retries=0)
    with pytest.raises(BackendUnavailable) as caught:
        plane.depths(scope, "q", NOW)
    assert "s3cret" not in str(caught.value) and "127.0.0.1:1" in str(caught.value)
    plane.close()


def test_close_interrupts_a_wait(redis_url, scope):
    assert_close_interrupts_a_wait(RedisHotPlane(redis_url), scope)


def test_every_waiter_on_a_queue_wakes(hot, scope, redis_url):
    """A PUBLISH reaches every waiting process (here: planes), not just one of them."""
    others = [RedisHotPlane(redis_url) for _ in range(2)]
    woke: list[tuple[bool, float]] = []
    lock = threading.Lock()

    def waiter(plane: RedisHotPlane) -> None:
        result = plane.wait(scope, ["both"], 5.0)
        with lock:
            woke.append((result, time.monotonic()))

    threads = [threading.Thread(target=waiter, args=(p,)) for p in [hot, *others] for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(0.3)
    started = time.monotonic()
    hot.signal(scope, "both", [Signal("a")], NOW)
    for t in threads:
        t.join()
    assert len(woke) == 6 and all(result for result, _at in woke)
    assert max(at for _r, at in woke) - started < 0.5
    for plane in others:
        plane.close()


def test_a_retry_due_sooner_wakes_a_waiter_to_replan(hot, scope):
    hot.signal(scope, "q", [Signal("later", run_at=NOW + 60_000), Signal("a")], NOW)
    [lease] = hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    timer = threading.Timer(0.2, lambda: hot.release(scope, "q", lease, Signal("a", run_at=NOW + 1_000), NOW))
    timer.start()
    started = time.monotonic()
    assert hot.wait(scope, ["q"], 5.0) is True
    assert time.monotonic() - started < 2.0
    timer.join()
    assert hot.next_due(scope, "q") == NOW + 1_000


# -- several processes ----------------------------------------------------------------------


def _signal_on_cue(url: str, names: tuple[str, str], rounds: int, ready, go, out) -> None:
    """Child process: each round, once told, pause (the parent is waiting by then),
    then signal and report when it did."""
    hot = RedisHotPlane(url)
    scope = Scope(*names)
    hot.ensure_ready()
    hot.depths(scope, "wake", NOW)  # the pool is warm before the clock starts
    for n in range(rounds):
        ready.set()
        go.wait(30)
        go.clear()
        time.sleep(0.02)
        started = time.time()
        hot.signal(scope, "wake", [Signal(f"j{n}")], NOW)
        out.put(started)
    hot.close()


@pytest.mark.slow
def test_two_processes_claiming_at_once_never_share_a_job(hot, redis_url, scope_names):
    assert_two_processes_never_share_a_job(hot, RedisHotPlane, redis_url, scope_names)


@pytest.mark.slow
def test_wait_wakes_within_50ms_of_a_signal_from_another_process(hot, scope, redis_url, scope_names, capsys):
    rounds = 50
    ready, go, out = SPAWN.Event(), SPAWN.Event(), SPAWN.Queue()
    child = SPAWN.Process(target=_signal_on_cue, args=(redis_url, scope_names, rounds, ready, go, out))
    child.start()
    delays: list[float] = []
    try:
        hot.wait(scope, ["wake"], 0.05)  # subscribed before the first round
        for _ in range(rounds):
            assert ready.wait(60)
            ready.clear()
            go.set()
            assert hot.wait(scope, ["wake"], 10.0) is True
            woke = time.time()
            delays.append(woke - out.get(timeout=10))
            assert len(claim_ids(hot, scope, queue="wake")) == 1
    finally:
        child.join(30)
    delays.sort()
    p50, p99 = statistics.median(delays), delays[int(len(delays) * 0.99) - 1]
    with capsys.disabled():
        print(f"\nredis hot plane: signal -> wait() wake-up across processes over {rounds} rounds: "
              f"p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms, max {delays[-1] * 1000:.2f} ms")
    assert p50 < 0.05, f"woke {p50 * 1000:.1f} ms after the signal (median)"


@pytest.mark.slow
def test_signal_claim_ack_throughput(hot, scope, capsys):
    total, batch = 20_000, 50
    started = time.perf_counter()
    for start in range(0, total, batch):
        hot.signal(scope, "bench", [Signal(f"j{i}") for i in range(start, start + batch)], NOW)
        leases = hot.claim(scope, "bench", worker_id="w", limit=batch, lease_ms=LEASE, now=NOW)
        assert len(hot.ack(scope, "bench", leases)) == batch
    elapsed = time.perf_counter() - started
    assert hot.depths(scope, "bench", NOW) == hot.depths(scope, "empty", NOW)
    with capsys.disabled():  # the figure is the point of this test: always show it
        print(f"\nredis hot plane: signal+claim+ack {total} jobs in batches of {batch}: "
              f"{total / elapsed:,.0f} jobs/s ({elapsed * 1000 / (total / batch):.2f} ms per batch)")


def test_lease_fields_survive_the_round_trip(hot, scope):
    hot.signal(scope, "q", [Signal("a")], NOW)
    [lease] = hot.claim(scope, "q", worker_id="w", limit=1, lease_ms=LEASE, now=NOW)
    [expired] = hot.take_expired(scope, "q", now=NOW + LEASE, limit=5)
    assert expired == Lease("a", lease.token, NOW + LEASE)
