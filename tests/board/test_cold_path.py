"""The board's cold path (one viewer, nothing shared): the overview's last hour from the
rollup's minute buckets shows what a count of the runs shows, and the queue depths the
leader keeps counted are taken when recent, dated, and never after an action."""

from __future__ import annotations

import re

from django.core.cache import cache
from django.urls import reverse

from oqronboard import overview
from oqronboard.last_hour import BUCKET_MS, BUCKETS, read_last_hour
from oqronkit.clock import now_ms
from oqronkit.history.rollup import rollup
from oqronkit.namespaces import METRICS_STATE
from oqronkit.queues.runs import finish_run
from oqronkit.services.drift import plane_drift
from oqronkit.services.kept_depths import keep_depths
from tests.board.seed import MINUTE, Board, error, put_runs, queue_control, run_value


def live_panel(board: Board) -> str:
    body = board.viewer.get(reverse("oqronboard:home"), {"panel": "live"}, HTTP_HX_REQUEST="true").content.decode()
    body = body.split('data-testid="db-health"')[0]  # the database's health: not the last hour's
    body = re.sub(r'<p class="muted small" data-testid="read-at">.*?</p>', "", body, flags=re.S)
    return re.sub(r"<time datetime=[^>]*>[^<]*</time>", "", body)  # when it was rendered


def waiting(body: str, queue: str) -> str:
    return body.split(f'data-testid="waiting-{queue}">')[1].split("<")[0]


def test_the_last_hour_from_the_rollups_minutes_shows_what_a_count_of_the_runs_shows(board: Board):
    now = now_ms()
    queue_control(board.plane, "emails")
    still = run_value("still", status="running", started=now - 10 * MINUTE, job_id="s1")
    put_runs(board.plane, [
        *(run_value(f"ok{i}", started=now - (i + 3) * MINUTE, job_id=f"j{i}") for i in range(6)),
        *(run_value(f"bad{i}", status="failed", started=now - 20 * MINUTE, job_id=f"b{i}", error=error())
          for i in range(2)),
        run_value("other", name="payments", status="failed", started=now - 15 * MINUTE, job_id="p1", error=error()),
        run_value("cron", name="nightly", module="cron", started=now - 12 * MINUTE),
        run_value("recent", started=now - 5_000, job_id="r1"),  # after the last rolled minute: counted
        still,
    ])
    counted = live_panel(board)
    assert "7 ok · 2 failed" in counted
    rollup(board.scope.engine.durable, now=now)
    first_bucket = now // BUCKET_MS - (BUCKETS - 1)
    assert read_last_hour(board.scope, first_bucket).rolled_until > now - 5 * MINUTE  # the buckets serve it
    assert live_panel(board) == counted
    finish_run(still, "completed")  # after its minute was rolled: counted as it is now
    put_runs(board.plane, [still])
    from_buckets = live_panel(board)
    assert "8 ok · 2 failed" in from_buckets
    assert re.search(r"running</a></dt><dd class=\"num\">", from_buckets) is None
    board.plane.delete(METRICS_STATE, "rollup")  # no watermark: every run of the hour counted
    assert read_last_hour(board.scope, first_bucket).rolled_until == first_bucket * BUCKET_MS
    assert live_panel(board) == from_buckets


def test_the_overview_takes_the_depths_the_leader_keeps_counted_and_counts_after_an_action(board: Board, settings):
    settings.OQRON_BOARD_CACHE_SECONDS = 30
    queue_control(board.plane, "emails")
    queue = board.scope.queue("emails")
    queue.add({"n": 1})
    assert waiting(live_panel(board), "emails") == "1"  # nothing kept yet: counted (and the leader asked)
    hot = board.scope.engine.hot
    assert keep_depths(hot) >= 1  # the leader's pass
    queue.add({"n": 2})
    cache.clear()  # a lone viewer's next poll: the figures viewers share have expired
    assert waiting(live_panel(board), "emails") == "1"  # the leader's count, dated
    cache.clear()
    read = overview.build(board.scope)
    kept_at = read.read_at
    assert kept_at <= now_ms() and read.queues[0].waiting == 1
    assert plane_drift(board.scope.engine, depths_age_ms=30_000).queues[0].ready == 1
    assert plane_drift(board.scope.engine).queues[0].ready == 2  # an API caller without a bound: counted
    assert board.operator.post(reverse("oqronboard:queue-pause", args=["emails"])).status_code in (200, 302)
    assert waiting(live_panel(board), "emails") == "2"  # an action: counted afresh, not the leader's older count
    keep_depths(hot)
    queue.add({"n": 3})
    cache.clear()
    assert waiting(live_panel(board), "emails") == "2"  # the leader's count after the action is taken again
    settings.OQRON_BOARD_CACHE_SECONDS = 0
    assert waiting(live_panel(board), "emails") == "3"  # nothing shared: every read counts
