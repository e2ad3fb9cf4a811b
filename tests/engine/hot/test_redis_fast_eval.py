"""The rate limiter's lean Redis path (backends/redis/fast_eval.py): which URLs take it,
and that it keeps the normal path's rules: NOSCRIPT reloads and runs once, a lost or
late reply is never retried (and never misread by the next check), a restart heals on
the next check, a forked child opens its own socket. Faults run on throwaway servers."""

from __future__ import annotations

import os
import socket
import struct
import sys
import threading
import time
import warnings

import pytest
import redis

from oqronkit.backends.rate_types import RateRequest, Tier
from oqronkit.backends.redis import RedisHotPlane
from oqronkit.backends.redis.fast_eval import _set_timeout
from oqronkit.backends.types import Scope
from oqronkit.errors import BackendUnavailable
from tests.dedicated import dedicated_redis
from tests.services import drop_redis_project, require_redis

NOW = 1_700_000_000_000
TIERS = (Tier("fixed-window", 100, 60_000),)
SCOPE = Scope("fast-eval", "test")


def hit(plane: RedisHotPlane, key: str = "k", cost: int = 1) -> int:
    """The remaining count after one check, through a limiter's bound check (its path)."""
    check = plane.rate_checker(SCOPE, "lim", TIERS, None)
    assert check is not None
    return check(key, cost, NOW).remaining


def plain_hit(plane: RedisHotPlane, key: str = "k", cost: int = 1) -> int:
    return plane.rate_hit(SCOPE, RateRequest("lim", key, cost, TIERS), NOW).remaining


@pytest.mark.parametrize("url", [
    "rediss://127.0.0.1:6379/0", "unix:///tmp/redis.sock", "redis://127.0.0.1:6379/0?client_name=x",
])
def test_tls_unix_sockets_and_unknown_options_keep_redis_py(url):
    plane = RedisHotPlane(url)
    assert plane._fast_rate is None
    assert plane.rate_checker(SCOPE, "lim", TIERS, None) is None  # the facade then calls rate_hit


def test_a_bound_check_and_rate_hit_count_the_same_key():
    url = require_redis()
    plane = RedisHotPlane(url)
    try:
        plane.ensure_ready()
        assert [hit(plane, "same"), plain_hit(plane, "same"), hit(plane, "same", cost=3)] == [99, 98, 95]
        assert plain_hit(plane, "other", cost=2) == 98
        assert redis.Redis.from_url(url).hget("oqron:fast-eval:test:rate:3:lim:same", "fixed-window:60000")
    finally:
        plane.close()
        drop_redis_project(url, SCOPE.project)


def test_a_plain_url_takes_the_lean_path_and_an_error_reply_keeps_the_connection():
    url = require_redis()
    plane = RedisHotPlane(url)
    try:
        plane.ensure_ready()
        assert plane._fast_rate is not None
        assert hit(plane) == 99
        redis.Redis.from_url(url).set("oqron:fast-eval:test:rate:3:lim:bad", "a string")  # WRONGTYPE for HGET
        with pytest.raises(BackendUnavailable, match="WRONGTYPE"):
            hit(plane, "bad")
        assert hit(plane) == 98
        plane.close()
        with pytest.raises(BackendUnavailable, match="closed"):
            hit(plane)
    finally:
        plane.close()
        drop_redis_project(url, SCOPE.project)


def test_noscript_after_script_flush_loads_and_counts_once():
    with dedicated_redis() as server:
        plane = RedisHotPlane(server.url)
        plane.ensure_ready()
        assert hit(plane) == 99
        redis.Redis.from_url(server.url).script_flush()
        assert hit(plane) == 98  # reloaded, run once
        assert hit(plane) == 97
        plane.close()


def test_a_restart_fails_the_checks_while_down_and_heals_on_the_next():
    with dedicated_redis() as server:
        plane = RedisHotPlane(server.url)
        plane.ensure_ready()
        assert hit(plane) == 99
        redis.Redis.from_url(server.url).client_kill_filter(_type="normal", skipme=True)  # an idle drop
        assert hit(plane) == 98  # noticed before sending: reopened, nothing failed
        server.stop()
        # Refused at the reconnect, or reset if the old socket's close is still in flight.
        with pytest.raises(BackendUnavailable, match=r"Error connecting|Connection reset|Broken pipe"):
            hit(plane)
        server.start()  # empty again (no persistence), scripts gone too
        assert hit(plane) == 99
        plane.close()


def test_a_late_reply_is_not_retried_nor_read_as_the_next_answer():
    with dedicated_redis() as server:
        plane = RedisHotPlane(server.url, socket_timeout=0.2)
        plane.ensure_ready()
        assert hit(plane) == 99
        redis.Redis.from_url(server.url).client_pause(700, all=True)
        started = time.monotonic()
        with pytest.raises(BackendUnavailable, match="Timeout"):
            hit(plane)
        assert time.monotonic() - started < 0.6
        time.sleep(0.8)
        # Its connection was dropped (Redis then discards the pending call; had it run, it
        # would count once). A cost of 5 tells a fresh answer (94, or 93) from the late one (98).
        assert hit(plane, cost=5) in (94, 93)
        plane.close()


def test_a_forked_child_opens_its_own_connection():
    url = require_redis()
    plane = RedisHotPlane(url)
    try:
        plane.ensure_ready()
        assert hit(plane, "f") == 99
        fast = plane._fast_rate
        assert fast is not None
        inherited = fast._local.conn.sock
        read, write = os.pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # other tests' threads: nothing of theirs runs here
            pid = os.fork()
        if pid == 0:  # the child: one check, then report whether it used a new socket
            code = 1
            try:
                remaining = hit(plane, "f")
                fresh = fast._local.conn.sock is not inherited
                os.write(write, f"{remaining}:{int(fresh)}".encode())
                code = 0
            finally:
                os._exit(code)
        os.close(write)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
        assert os.read(read, 100).decode() == "98:1"
        os.close(read)
        assert fast._local.conn.sock is inherited  # the parent's stream was left alone
        assert hit(plane, "f") == 97
    finally:
        plane.close()
        drop_redis_project(url, SCOPE.project)


def test_threads_each_use_their_own_connection():
    url = require_redis()
    plane = RedisHotPlane(url)
    try:
        plane.ensure_ready()
        seen: list[int] = []

        def run() -> None:
            for _ in range(20):
                seen.append(hit(plane, "t"))

        threads = [threading.Thread(target=run) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(seen) == list(range(20, 100))  # 80 checks, each counted once
        assert plane._fast_rate is not None and len(plane._fast_rate._open) <= 1  # ended threads closed theirs
    finally:
        plane.close()
        drop_redis_project(url, SCOPE.project)


def test_the_url_s_user_password_and_database_are_used():
    with dedicated_redis() as server:
        admin = redis.Redis.from_url(server.url)
        admin.acl_setuser("lim", enabled=True, passwords=["+s3cret"], keys=["*"], channels=["*"], commands=["+@all"])
        plane = RedisHotPlane(f"redis://lim:s3cret@127.0.0.1:{server.port}/2")
        plane.ensure_ready()
        assert hit(plane) == 99
        assert redis.Redis(port=server.port, db=2).exists("oqron:fast-eval:test:rate:3:lim:k")
        plane.close()
        wrong = RedisHotPlane(f"redis://lim:wrong@127.0.0.1:{server.port}/2")
        with pytest.raises(BackendUnavailable):
            hit(wrong)


def test_a_reply_saying_it_did_not_run_is_retried_as_on_redis_py_s_path():
    with dedicated_redis() as server:
        plane = RedisHotPlane(server.url)
        plane.ensure_ready()
        admin = redis.Redis.from_url(server.url)
        admin.replicaof("127.0.0.1", "1")  # a read-only replica of nothing: READONLY until promoted
        promote = threading.Timer(0.15, lambda: admin.replicaof("NO", "ONE"))
        promote.start()
        assert hit(plane) == 99  # READONLY, backoff, READONLY..., then run once
        promote.join()
        admin.replicaof("127.0.0.1", "1")
        with pytest.raises(BackendUnavailable, match="read only"):
            hit(plane)  # every retry refused
        admin.replicaof("NO", "ONE")
        assert hit(plane) == 98
        plane.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the kernel's timeouts are used on Linux only")
@pytest.mark.parametrize(("timeout", "expected"), [(0.2, (0, 200_000)), (1.5, (1, 500_000)), (1e-9, None)])
def test_the_socket_timeout_is_kept_by_the_kernel_and_never_rounds_to_never(timeout, expected):
    left, right = socket.socketpair()
    with left, right:
        _set_timeout(left, timeout)
        assert left.gettimeout() is None  # blocking: no poll before each send and receive
        packed = left.getsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.calcsize("ll"))
        kept = struct.unpack("ll", packed)
        assert kept == expected if expected else kept != (0, 0)  # the kernel rounds 1 us up to a tick
        assert left.getsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.calcsize("ll")) == packed
        if timeout < 1:
            started = time.monotonic()
            with pytest.raises(BlockingIOError):
                left.recv(10)  # nothing comes: the kernel's timeout ends the wait
            assert time.monotonic() - started < 0.5
