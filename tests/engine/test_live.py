"""oqronkit.live against every hot plane: what the worker and the scheduler publish is
what the board reads back, entries lapse by their TTL, and a malformed entry reads as
nothing live rather than an error."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from oqronkit import live
from oqronkit.hot import HotPlaneFacade
from oqronkit.queues.runs import new_run
from tests.engine.hot.conftest import HOT_BACKENDS, NOW, make_hot


@pytest.fixture(params=HOT_BACKENDS)
def hot(request: pytest.FixtureRequest, tmp_path, scope_names) -> Iterator[HotPlaneFacade]:
    plane = make_hot(request.param, request, tmp_path)
    plane.ensure_ready()
    try:
        yield HotPlaneFacade(plane, project=scope_names[0], environment=scope_names[1])
    finally:
        plane.close()


def a_run(*, job_id: str | None = "job-1", logs: int = 0) -> dict:
    run = new_run(name="emails", module="worker" if job_id else "cron", trigger="queue", input={"n": 1},
                  attempts=1, app="p", environment="test", worker_id="w-1", job_id=job_id, started_at=NOW)
    run.update(progressPercent=40, progressLabel="loading",
               logs=[{"level": "info", "msg": f"line {i}", "ts": NOW + i} for i in range(logs)])
    return run


def test_a_running_run_round_trips(hot: HotPlaneFacade):
    job_run, cron_run = a_run(logs=25), a_run(job_id=None)
    published = [live.live_run(job_run), live.live_run(cron_run)]
    live.publish_runs(hot, published, ttl_ms=live.RUN_TTL_MS, now=NOW)

    got = live.read_run(hot, job_run["id"], now=NOW + 1)
    assert got == published[0]
    assert got["jobId"] == "job-1" and got["workerId"] == "w-1" and got["module"] == "worker"
    assert got["progressPercent"] == 40 and got["progressLabel"] == "loading" and got["startedAt"] == NOW
    assert [line["msg"] for line in got["logs"]] == [f"line {i}" for i in range(5, 25)]  # the newest 20
    assert "jobId" not in live.read_run(hot, cron_run["id"], now=NOW + 1)
    assert live.live_runs(hot, now=NOW + 1) == sorted(published, key=lambda r: r["id"])
    assert live.live_run_ids(hot, [job_run["id"], "gone"], now=NOW + 1) == {job_run["id"]}

    live.forget_runs(hot, [job_run["id"]])
    assert live.read_run(hot, job_run["id"], now=NOW + 1) is None
    assert [r["id"] for r in live.live_runs(hot, now=NOW + 1)] == [cron_run["id"]]


def test_runs_lapse_by_their_ttl(hot: HotPlaneFacade):
    worker_run, leader_run = a_run(), a_run(job_id=None)
    live.publish_runs(hot, [live.live_run(worker_run)], ttl_ms=live.RUN_TTL_MS, now=NOW)
    live.publish_runs(hot, [live.live_run(leader_run)], ttl_ms=live.LEADER_RUN_TTL_MS, now=NOW)
    later = NOW + live.LEADER_RUN_TTL_MS
    assert live.read_run(hot, leader_run["id"], now=later - 1) is not None
    assert live.read_run(hot, leader_run["id"], now=later) is None
    assert live.live_run_ids(hot, [worker_run["id"], leader_run["id"]], now=later) == {worker_run["id"]}
    assert live.live_runs(hot, now=NOW + live.RUN_TTL_MS) == []


def test_malformed_entries_read_as_nothing_live(hot: HotPlaneFacade):
    hot.kv_set(live.RUNS_GROUP, {"not-json": "{oops", "a-list": "[1, 2]", "empty": "{}"}, ttl_ms=1_000, now=NOW)
    hot.kv_set(live.WORKERS_GROUP, {"w-bad": "nope", "w-num": "7", "w-ok": '{"pid": 1}'}, ttl_ms=1_000, now=NOW)
    assert live.read_run(hot, "not-json", now=NOW) is None
    assert live.read_run(hot, "a-list", now=NOW) is None
    assert live.read_run(hot, "empty", now=NOW) == {}
    assert live.live_runs(hot, now=NOW) == [{}]
    # A malformed entry is still refreshed by someone: the scheduler's recovery leaves its run alone.
    assert live.live_run_ids(hot, ["not-json", "missing"], now=NOW) == {"not-json"}
    assert live.live_workers(hot, now=NOW) == [{"pid": 1, "id": "w-ok"}]


def test_the_worker_registry(hot: HotPlaneFacade):
    info: live.WorkerInfo = {"id": "w-2", "host": "h", "pid": 2, "queues": {"emails": 5}, "inflight": 0,
                             "startedAt": NOW, "lastClaimAt": None, "hotOk": True, "stats": {}, "heartbeatAt": NOW,
                             "paused": []}
    live.publish_worker(hot, info, now=NOW)
    live.publish_worker(hot, {"id": "w-1", "pid": 1}, ttl_ms=1_000, now=NOW)
    assert live.live_workers(hot, now=NOW + 999) == [{"id": "w-1", "pid": 1}, info]
    assert live.live_workers(hot, now=NOW + 1_000) == [info]  # w-1 missed its heartbeats
    assert live.live_workers(hot, now=NOW + live.WORKER_TTL_MS) == []
    live.publish_worker(hot, info, now=NOW)
    live.forget_worker(hot, "w-2")
    assert live.live_workers(hot, now=NOW + 1_000) == []


def test_cancel_requests(hot: HotPlaneFacade):
    live.request_cancel(hot, "job-1", "by operator", now=NOW)
    live.request_cancel(hot, "job-2", "cancelled", now=NOW)
    assert live.cancel_requests(hot, ["job-1", "job-3"], now=NOW + 1) == {"job-1": "by operator"}
    assert live.cancel_requests(hot, [], now=NOW) == {}
    live.forget_cancels(hot, ["job-1"])
    assert live.cancel_requests(hot, ["job-1", "job-2"], now=NOW + 1) == {"job-2": "cancelled"}
    assert live.cancel_requests(hot, ["job-2"], now=NOW + live.CANCEL_TTL_MS) == {}


def test_each_group_is_its_own():
    assert len({live.RUNS_GROUP, live.WORKERS_GROUP, live.CANCEL_GROUP}) == 3
