"""Queue depths the leader keeps counted (oqronkit.services.kept_depths), on every hot
plane: what a reader takes equals a count of the plane at the time it was counted,
through adds, claims, acks, retries, dead letters and deletes; stale, partial or
pre-action figures are never taken, and a plane emptied under them (a Redis flush, a
hot-table reset) is counted afresh."""

from __future__ import annotations

import pytest

from oqronkit.backends.hot_types import Signal
from oqronkit.hot import HotPlaneFacade
from oqronkit.services.kept_depths import KEPT_TTL_MS, WANTED_MS, forget_kept, keep_depths, read_depths

NOW = 1_700_000_000_000
LEASE = 30_000
BOUND = 2_000
QUEUES = ["q", "r", "empty"]


@pytest.fixture
def facade(hot, scope) -> HotPlaneFacade:
    return HotPlaneFacade(hot, project=scope.project, environment=scope.environment)


def counted(facade: HotPlaneFacade, now: int) -> dict[str, tuple[int, int, int]]:
    return {q: (d.ready, d.delayed, d.active) for q, d in facade.depths_many(QUEUES, now).items()}


def kept(facade: HotPlaneFacade, now: int) -> dict[str, tuple[int, int, int]]:
    """A board polls at ``now`` (renewing its request), the leader counts, and a reader a
    moment later takes its figures."""
    read_depths(facade, QUEUES, now=now, max_age_ms=BOUND)
    assert keep_depths(facade, now=now) == len(QUEUES)
    read = read_depths(facade, QUEUES, now=now + 500, max_age_ms=BOUND)
    assert read.kept and read.at == now
    return {q: (d.ready, d.delayed, d.active) for q, d in read.depths.items()}


def test_kept_depths_equal_a_count_through_a_jobs_life(facade):
    first = read_depths(facade, QUEUES, now=NOW, max_age_ms=BOUND)
    assert not first.kept and first.at == NOW  # nothing kept yet: counted, and the leader asked
    assert kept(facade, NOW) == counted(facade, NOW) == {q: (0, 0, 0) for q in QUEUES}
    facade.signal("q", [Signal("a"), Signal("b"), Signal("c"), Signal("later", run_at=NOW + 60_000)], NOW)
    facade.signal("r", [Signal("x")], NOW)
    assert kept(facade, NOW + 1) == counted(facade, NOW + 1) == {"q": (3, 1, 0), "r": (1, 0, 0), "empty": (0, 0, 0)}
    leases = facade.claim("q", worker_id="w", limit=2, lease_ms=LEASE, now=NOW + 2)
    assert kept(facade, NOW + 3) == counted(facade, NOW + 3)
    assert kept(facade, NOW + 3)["q"] == (1, 1, 2)
    facade.ack("q", leases[:1])  # completed, or dead-lettered: the hot plane forgets it either way
    facade.release("q", leases[1], Signal(leases[1].job_id, run_at=NOW + 10_000), NOW + 4)  # a retry, backed off
    assert kept(facade, NOW + 5) == counted(facade, NOW + 5) == {"q": (1, 2, 0), "r": (1, 0, 0), "empty": (0, 0, 0)}
    facade.remove("r", ["x"])  # deleted by an operator
    assert kept(facade, NOW + 6) == counted(facade, NOW + 6)
    assert kept(facade, NOW + 60_000) == counted(facade, NOW + 60_000)  # delayed jobs come due: ready
    assert kept(facade, NOW + 60_000)["q"] == (3, 0, 0)


def test_stale_partial_or_pre_action_figures_are_counted_afresh(facade):
    read_depths(facade, ["q"], now=NOW, max_age_ms=BOUND)  # asks for q only
    keep_depths(facade, now=NOW)
    facade.signal("q", [Signal("a")], NOW + 1)
    assert read_depths(facade, ["q"], now=NOW + BOUND, max_age_ms=BOUND).kept
    late = read_depths(facade, ["q"], now=NOW + BOUND + 1, max_age_ms=BOUND)
    assert not late.kept and late.depths["q"].ready == 1  # older than the bound: counted
    partial = read_depths(facade, ["q", "r"], now=NOW + 2, max_age_ms=BOUND)
    assert not partial.kept  # r was never kept: counted; from now on the leader keeps both
    assert keep_depths(facade, now=NOW + 3) == 2
    assert read_depths(facade, ["q", "r"], now=NOW + 4, max_age_ms=BOUND).kept
    forget_kept(facade, now=NOW + 5)  # an operator acted after the leader counted
    after = read_depths(facade, ["q", "r"], now=NOW + 6, max_age_ms=BOUND)
    assert not after.kept and after.at == NOW + 6
    keep_depths(facade, now=NOW + 7)
    assert read_depths(facade, ["q", "r"], now=NOW + 8, max_age_ms=BOUND).kept


def test_nobody_asks_nobody_counts(facade):
    assert keep_depths(facade, now=NOW) == 0
    assert not read_depths(facade, ["q"], now=NOW, max_age_ms=0).kept  # bound 0: always counted, never asks
    assert keep_depths(facade, now=NOW) == 0
    read_depths(facade, ["q"], now=NOW, max_age_ms=BOUND)
    assert keep_depths(facade, now=NOW + WANTED_MS - 1) == 1
    assert keep_depths(facade, now=NOW + WANTED_MS) == 0  # the request lapsed


def test_figures_of_another_scope_are_not_taken(hot, scope, facade):
    other = HotPlaneFacade(hot, project=scope.project, environment=scope.environment + "-other")
    read_depths(other, ["q"], now=NOW, max_age_ms=BOUND)
    other.signal("q", [Signal("elsewhere")], NOW)
    keep_depths(other, now=NOW)
    mine = read_depths(facade, ["q"], now=NOW + 1, max_age_ms=BOUND)
    assert not mine.kept and mine.depths["q"].ready == 0


def test_a_plane_emptied_under_kept_figures_is_counted_afresh(hot_backend_name, hot, scope, facade, request):
    """A Redis flush, or a Postgres crash emptying the unlogged hot tables: the kept
    figures go with the jobs, and the next read counts what is there."""
    if hot_backend_name == "redis":
        from tests.services import drop_redis_project, require_redis

        empty = lambda: drop_redis_project(require_redis(), scope.project)  # noqa: E731
    elif hot_backend_name == "postgres":
        import psycopg

        url = request.getfixturevalue("pg_schema_url")
        empty = lambda: psycopg.connect(url, autocommit=True).execute(  # noqa: E731
            "TRUNCATE oqron_hot_jobs, oqron_hot_kv")
    elif hot_backend_name == "redis-cluster":
        from tests.redis_cluster import drop_cluster_project

        cluster = request.getfixturevalue("redis_cluster")
        empty = lambda: drop_cluster_project(cluster, scope.project)  # noqa: E731
    else:
        pytest.skip("memory and SQLite planes are not flushed apart from their process or file")
    now = NOW
    facade.signal("q", [Signal("a"), Signal("b")], now)
    read_depths(facade, QUEUES, now=now, max_age_ms=KEPT_TTL_MS)
    keep_depths(facade, now=now)
    assert read_depths(facade, QUEUES, now=now + 1, max_age_ms=KEPT_TTL_MS).depths["q"].ready == 2
    empty()
    read = read_depths(facade, QUEUES, now=now + 2, max_age_ms=KEPT_TTL_MS)
    assert not read.kept and read.depths["q"].ready == 0


def test_a_reader_that_does_not_ask_takes_kept_figures_but_never_starts_the_counting(facade):
    """A metrics scrape (``ask=False``): counted itself while no board asked, the leader
    still idle after it; the figures a board has kept counted once one asks."""
    facade.signal("q", [Signal("a")], NOW)
    alone = read_depths(facade, QUEUES, now=NOW, max_age_ms=BOUND, ask=False)
    assert not alone.kept and alone.depths["q"].ready == 1
    assert keep_depths(facade, now=NOW) == 0  # nobody asked: the leader counts nothing
    read_depths(facade, QUEUES, now=NOW, max_age_ms=BOUND)  # a board asks
    assert keep_depths(facade, now=NOW) == len(QUEUES)
    taken = read_depths(facade, QUEUES, now=NOW + 500, max_age_ms=BOUND, ask=False)
    assert taken.kept and taken.at == NOW and taken.depths["q"].ready == 1
    # Past what the board asked for: the leader stops, the scrape's reads did not renew it.
    for at in range(NOW + 1_000, NOW + WANTED_MS + 1_000, 5_000):
        read_depths(facade, QUEUES, now=at, max_age_ms=BOUND, ask=False)
    assert keep_depths(facade, now=NOW + WANTED_MS + 1_000) == 0
