"""The Redis plane's rate-limit checks through redis-py's client: a limiter's bound check
and ``rate_hit`` count the same key, NOSCRIPT reloads and runs once, a lost or late reply is
never retried, a restart heals on the next check, replies saying the script did not run
are retried, the URL's user, password and database are used; and every key a check
touches is in one cluster slot. Faults run on throwaway servers."""

from __future__ import annotations

import threading
import time

import pytest
import redis
from redis.crc import key_slot

from oqronkit.backends.rate_types import RateRequest, Tier
from oqronkit.backends.redis import RedisHotPlane
from oqronkit.backends.redis.keys import rate_keys
from oqronkit.backends.types import Scope
from oqronkit.errors import BackendUnavailable
from tests.dedicated import dedicated_redis
from tests.services import drop_redis_project, require_redis

NOW = 1_700_000_000_000
TIERS = (Tier("fixed-window", 100, 60_000),)
SCOPE = Scope("redis-rates", "test")


def hit(plane: RedisHotPlane, key: str = "k", cost: int = 1, tiers: tuple[Tier, ...] = TIERS) -> int:
    """The remaining count after one check, through a limiter's bound check (its path)."""
    return plane.rate_checker(SCOPE, "lim", tiers, None)(key, cost, NOW).remaining


def plain_hit(plane: RedisHotPlane, key: str = "k", cost: int = 1) -> int:
    return plane.rate_hit(SCOPE, RateRequest("lim", key, cost, TIERS), NOW).remaining


@pytest.mark.parametrize(("name", "key"), [
    ("lim", "k"), ("lim", "{tag}k"), ("l{t}", "k"), ("lim", "a}b"), ("lim", "a}b{c}"), ("lim", "x{}y}"),
    ("lim", "{"), ("lim", "a{b"), ("}", "{}"), ("l", "}{x}"),
])
def test_a_key_s_logs_share_its_hash_s_slot(name, key):
    state, *logs = rate_keys(SCOPE, name, key, (1000, 60_000))
    assert {key_slot(state.encode())} == {key_slot(log.encode()) for log in logs}
    assert len({state, *logs}) == 3 and all(k.startswith("oqron:redis-rates:test:") for k in (state, *logs))
    if "}" not in key and "}" not in name:  # the name older releases gave it: bans and overrides stay
        assert state == f"oqron:redis-rates:test:rate:{len(name)}:{name}:{key}"


def test_a_bound_check_and_rate_hit_count_the_same_key():
    url = require_redis()
    plane = RedisHotPlane(url)
    try:
        plane.ensure_ready()
        assert [hit(plane, "same"), plain_hit(plane, "same"), hit(plane, "same", cost=3)] == [99, 98, 95]
        assert plain_hit(plane, "other", cost=2) == 98
        assert redis.Redis.from_url(url).hget("oqron:redis-rates:test:rate:3:lim:same", "fixed-window:60000")
    finally:
        plane.close()
        drop_redis_project(url, SCOPE.project)


def test_an_error_reply_fails_one_check_and_a_closed_plane_every_one():
    url = require_redis()
    plane = RedisHotPlane(url)
    try:
        plane.ensure_ready()
        assert hit(plane) == 99
        redis.Redis.from_url(url).set("oqron:redis-rates:test:rate:3:lim:bad", "a string")  # WRONGTYPE for HMGET
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
    exact = (Tier("sliding-window", 100, 60_000),)
    with dedicated_redis() as server:
        plane = RedisHotPlane(server.url)
        plane.ensure_ready()
        assert hit(plane) == 99 and hit(plane, tiers=exact) == 99
        redis.Redis.from_url(server.url).script_flush()
        assert hit(plane) == 98 and hit(plane, tiers=exact) == 98  # reloaded, run once
        assert hit(plane) == 97
        plane.close()


def test_a_restart_fails_the_checks_while_down_and_heals_on_the_next():
    with dedicated_redis() as server:
        plane = RedisHotPlane(server.url)
        plane.ensure_ready()
        assert hit(plane) == 99
        redis.Redis.from_url(server.url).client_kill_filter(_type="normal", skipme=True)  # an idle drop
        assert hit(plane) == 98  # noticed at checkout: reopened, nothing failed
        server.stop()
        with pytest.raises(BackendUnavailable, match=r"Error.*connecting|Connection reset|Broken pipe|closed"):
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
        # redis-py dropped that connection (Redis then discards the pending call; had it run,
        # it would count once). A cost of 5 tells a fresh answer (94, or 93) from the late one (98).
        assert hit(plane, cost=5) in (94, 93)
        plane.close()


def test_threads_share_the_client_and_each_check_counts_once():
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
        assert redis.Redis(port=server.port, db=2).exists("oqron:redis-rates:test:rate:3:lim:k")
        plane.close()
        wrong = RedisHotPlane(f"redis://lim:wrong@127.0.0.1:{server.port}/2")
        with pytest.raises(BackendUnavailable):
            hit(wrong)


def test_a_reply_saying_it_did_not_run_is_retried():
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
