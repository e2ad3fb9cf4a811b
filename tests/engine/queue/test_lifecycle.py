"""Lifecycle signals, gates and pause policies, in every mode: each event fires once per
event (enqueue, start, retry, complete, fail, dead, stall, cancel), a raising callback
breaks nothing, a condition's skip is recorded on the run, before_run can fail an
attempt, and on_pause holds, skips or rejects."""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter

import pytest

from oqronkit import Engine, QueuePaused, lifecycle
from oqronkit.clock import now_ms
from oqronkit.services.rescuer import rescue_expired
from tests.engine.queue.conftest import running, wait_until


class Recorder:
    """Every event seen, as (event, job id), from any thread."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def __call__(self, event: lifecycle.Event) -> None:
        with self._lock:
            self.seen.append((event.name, event.job_id))

    def of(self, job_id: str) -> Counter[str]:
        with self._lock:
            return Counter(name for name, seen_id in self.seen if seen_id == job_id)


def runs_of(engine: Engine, job_id: str) -> list[dict]:
    page = engine.durable.list("runs", order="started", limit=100)
    return sorted((r.value for r in page.records if r.value.get("jobId") == job_id), key=lambda r: r["startedAt"])


def test_each_event_fires_once_and_a_raising_callback_breaks_nothing(engine: Engine, caplog):
    on_queue, on_engine = Recorder(), Recorder()
    started_running = threading.Event()

    def handler(ctx):
        kind = ctx.data["kind"]
        if kind == "flaky" and ctx.attempt == 1:
            raise RuntimeError("first try")
        if kind == "doomed":
            raise RuntimeError("always")
        if kind == "slow":
            started_running.set()
            deadline = time.monotonic() + 10
            while not ctx.cancelled and time.monotonic() < deadline:
                time.sleep(0.02)
        return {"kind": kind}

    def explode(event):
        raise ValueError(f"callback bug on {event.name}")

    q = engine.queue("signals", handler=handler, retries=1, backoff=0.01, concurrency=4,
                     on={event: on_queue for event in lifecycle.EVENTS},
                     on_dead=lambda job, error: on_queue(lifecycle.Event("legacy-dead", job.queue, job)))
    for event in lifecycle.EVENTS:
        engine.on(event, on_engine)
        q.on(event, explode)  # after the recorder: it must not stop later callbacks either
    engine.on("completed", explode)
    ok, flaky = q.add({"kind": "ok"}), q.add({"kind": "flaky"})
    doomed, slow = q.add({"kind": "doomed"}), q.add({"kind": "slow"})
    waiting = q.add({"kind": "ok"}, delay=3600)
    assert q.cancel(waiting.id)  # not claimed: fires in this thread, before cancel returns
    assert on_queue.of(waiting.id) == Counter(enqueued=1, cancelled=1)
    with caplog.at_level(logging.ERROR, logger="oqronkit.lifecycle"), running(engine):
        assert started_running.wait(10)
        q.cancel(slow.id)
        wait_until(lambda: on_queue.of(slow.id)["cancelled"] and on_queue.of(doomed.id)["dead"]
                   and on_queue.of(flaky.id)["completed"] and on_queue.of(ok.id)["completed"])
    expected = {
        ok.id: Counter(enqueued=1, started=1, completed=1),
        flaky.id: Counter(enqueued=1, started=2, failed=1, retried=1, completed=1),
        doomed.id: Counter(enqueued=1, started=2, failed=2, retried=1, dead=1),
        slow.id: Counter(enqueued=1, started=1, cancelled=1),
        waiting.id: Counter(enqueued=1, cancelled=1),
    }
    for job_id, counts in expected.items():
        assert on_engine.of(job_id) == counts, job_id
        legacy = Counter({"legacy-dead": 1}) if job_id == doomed.id else Counter()
        assert on_queue.of(job_id) == counts + legacy, job_id
    assert engine.durable.get("queue_job:signals", ok.id) is None  # processing went on
    failures = [r for r in caplog.records if r.getMessage().startswith(("completed callback", "dead callback"))]
    assert failures and all("signals/" in r.getMessage() for r in failures)


def test_a_lapsed_lease_fires_stalled_then_retried_or_dead_in_the_rescuers_process(engine: Engine):
    seen = Recorder()
    engine.on("stalled", seen)
    engine.on("retried", seen)
    engine.on("dead", seen)
    q = engine.queue("stalls", backoff=0.01, max_stalls=2, retries=5)
    job = q.add({})
    for expected in (Counter(stalled=1, retried=1), Counter(stalled=2, retried=1, dead=1)):
        wait_until(lambda: engine.hot.claim("stalls", worker_id="gone", limit=1, lease_ms=100, now=now_ms()))
        time.sleep(0.15)
        assert rescue_expired(engine, ["stalls"]) == 1
        assert lifecycle.drain(5)
        assert seen.of(job.id) == expected
    assert engine.durable.get("queue_dlq:stalls", job.id) is not None


def test_condition_skips_with_the_reason_on_the_run_and_before_run_can_fail_an_attempt(engine: Engine):
    seen = Recorder()

    def condition(ctx):
        return "not today" if ctx.data.get("skip") else True

    def before_run(ctx):
        if ctx.data.get("fail_first") and ctx.attempt == 1:
            raise RuntimeError("not ready")

    q = engine.queue("gated", handler=lambda ctx: "ran", retries=1, backoff=0.01, condition=condition,
                     before_run=before_run, on={"cancelled": seen, "completed": seen, "failed": seen})
    skipped, ready = q.add({"skip": True}), q.add({"fail_first": True})
    with running(engine):
        wait_until(lambda: seen.of(skipped.id)["cancelled"] and seen.of(ready.id)["completed"])
    [run] = runs_of(engine, skipped.id)
    assert run["status"] == "cancelled" and run["timeline"][-1]["reason"] == "skipped: not today"
    assert engine.durable.get("queue_job:gated", skipped.id) is None
    assert engine.durable.get("queue_dlq:gated", skipped.id) is None  # skipped is not dead
    first, second = runs_of(engine, ready.id)
    assert first["status"] == "failed" and first["error"]["message"] == "not ready"
    assert second["status"] == "completed" and second["output"] == "ran"
    assert seen.of(ready.id) == Counter(failed=1, completed=1) and seen.of(skipped.id) == Counter(cancelled=1)


def test_pause_policies_hold_skip_and_reject(engine: Engine):
    seen = Recorder()
    held = engine.queue("p-hold")
    skipping = engine.queue("p-skip", on={"cancelled": seen, "enqueued": seen}, on_pause="skip")
    rejecting = engine.queue("p-reject", on_pause="reject")
    for q in (held, skipping, rejecting):
        q.pause()
    job = held.add({"n": 1})
    assert engine.durable.get("queue_job:p-hold", job.id).value["status"] == "waiting"
    assert runs_of(engine, job.id) == []  # a held job has no run until it starts
    with pytest.raises(QueuePaused, match="paused"):
        rejecting.add({"n": 2})
    with pytest.raises(QueuePaused):
        rejecting.add_bulk([1, 2])
    assert rejecting.list_jobs()[0] == []
    [gone, gone2] = skipping.add_bulk([{"n": 3}, {"n": 4}])
    assert gone.status == "dead" and gone.dead_reason.startswith("skipped: queue paused")
    assert skipping.list_jobs()[0] == [] and skipping.list_jobs(dead=True)[0] == []
    [run] = runs_of(engine, gone.id)
    assert run["status"] == "cancelled" and run["input"] == {"n": 3} and "queue paused" in run["timeline"][-1]["reason"]
    assert seen.of(gone.id) == Counter(cancelled=1) and seen.of(gone2.id) == Counter(cancelled=1)
    for q in (skipping, rejecting):
        q.resume()
    assert skipping.add({"n": 5}).status == "waiting" and rejecting.add({"n": 6}).status == "waiting"


def test_a_blocked_callback_stalls_neither_claiming_nor_settling(scope_names):
    """Memory mode is enough: the hand-off to the signals thread is the same in every mode."""
    from oqronkit import OqronConfig, Registry

    engine = Engine(OqronConfig(mode="memory", database_url=None, project=scope_names[0]), registry=Registry())
    release, calls = threading.Event(), Recorder()

    def blocked(event):
        calls(event)
        release.wait(10)

    q = engine.queue("blocked", handler=lambda ctx: None, on={"completed": blocked})
    q.add_bulk([{"i": i} for i in range(20)])
    try:
        with running(engine, services=False):
            wait_until(lambda: not q.list_jobs()[0])  # every job completed and deleted
            assert len(calls.seen) <= 1  # the first callback still blocks the rest
            release.set()
        assert lifecycle.drain(5) and len(calls.seen) == 20
    finally:
        release.set()
        engine.close()


def test_windowed_adds_fire_enqueued_once_and_a_skipped_add_opens_no_window(engine: Engine):
    seen = Recorder()
    q = engine.queue("windows", on={"enqueued": seen, "cancelled": seen}, on_pause="skip")
    first = q.add({"x": 1}, unique_for=60, unique_key="k")
    assert q.add({"x": 2}, unique_for=60, unique_key="k").id == first.id
    debounced = q.add({"x": 3}, debounce=60, unique_key="d")
    assert q.add({"x": 4}, debounce=60, unique_key="d").id == debounced.id
    assert seen.of(first.id) == Counter(enqueued=1) and seen.of(debounced.id) == Counter(enqueued=1)
    q.pause()
    skipped = q.add({"x": 5}, unique_for=60, unique_key="k2")
    assert skipped.status == "dead" and seen.of(skipped.id) == Counter(cancelled=1)
    q.resume()
    fresh = q.add({"x": 6}, unique_for=60, unique_key="k2")
    assert fresh.id != skipped.id and seen.of(fresh.id) == Counter(enqueued=1)
