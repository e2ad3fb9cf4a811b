"""Operating queues: pause/resume, cancel, retry, promote, drain, and crash recovery."""

from __future__ import annotations

import threading
import time

import pytest

from oqronkit import BackendUnavailable, Engine, JobNotFound
from oqronkit.clock import now_ms
from oqronkit.services.rescuer import rescue_expired

from .conftest import fast_services, running, wait_until


def test_pause_is_persisted_and_stops_claiming_cluster_wide(engine: Engine):
    seen = []
    q = engine.queue("pausable", handler=lambda ctx: seen.append(ctx.data))
    q.pause()
    assert q.is_paused() and engine.durable.get("queue", "pausable").record_kind == "control"
    q.add({"n": 1})
    with running(engine) as process:
        time.sleep(1.5)
        assert seen == [] and "pausable" in process.paused
        q.resume()
        wait_until(lambda: seen == [{"n": 1}])
    assert not q.is_paused()


def test_cancel_a_waiting_job_dead_letters_it_as_cancelled_and_retry_brings_it_back(engine: Engine):
    seen = []
    q = engine.queue("emails", handler=lambda ctx: seen.append(ctx.job_id))
    job = q.add({})
    assert q.cancel(job.id) is True
    letter = engine.durable.get("queue_dlq:emails", job.id).value
    assert letter["deadReason"] == "cancelled" and letter["cancelRequested"] is True
    assert q.counts()["waiting"] == 0
    retried = q.retry(job.id)
    assert retried.status == "waiting" and retried.attempts == 0
    assert engine.durable.get("queue_dlq:emails", job.id) is None
    with running(engine):
        wait_until(lambda: seen == [job.id])
    assert q.cancel(job.id) is False  # finished


def test_cancel_an_active_job_sets_ctx_cancelled(engine: Engine):
    started = threading.Event()

    def long_job(ctx):
        started.set()
        while not ctx.cancelled:
            time.sleep(0.01)
        return "stopped early"

    q = engine.queue("long", handler=long_job)
    job = q.add({})
    with running(engine):
        assert started.wait(10)
        assert q.cancel(job.id) is True
        wait_until(lambda: engine.durable.get("queue_dlq:long", job.id) is not None)
    runs = [r.value for r in engine.durable.list("runs", limit=10).records if r.value.get("jobId") == job.id]
    assert [r["status"] for r in runs] == ["cancelled"]


def test_retry_unknown_dead_letter(engine: Engine):
    q = engine.queue("emails")
    try:
        q.retry("missing")
    except JobNotFound as exc:
        assert "missing" in str(exc)
    else:
        raise AssertionError("expected JobNotFound")


def test_promote_runs_a_delayed_job_now(engine: Engine):
    seen = []
    q = engine.queue("later", handler=lambda ctx: seen.append(ctx.job_id))
    job = q.add({}, delay=3600)
    assert q.promote(job.id) is True
    assert q.promote(job.id) is False
    with running(engine):
        wait_until(lambda: seen == [job.id])


def test_drain_removes_waiting_and_delayed(engine: Engine):
    q = engine.queue("drainme")
    q.add_bulk([{} for _ in range(5)] + [{"data": {}, "delay": 600}])
    assert q.drain() == 6
    assert q.counts() == {"waiting": 0, "delayed": 0, "active": 0, "dead": 0}
    assert engine.durable.count("queue_job:drainme") == 0


def test_list_and_get_jobs(engine: Engine):
    q = engine.queue("listing")
    jobs = q.add_bulk([{"i": i} for i in range(3)])
    page, cursor = q.list_jobs(status="waiting", limit=2)
    assert len(page) == 2 and cursor is not None
    rest, _ = q.list_jobs(status="waiting", cursor=cursor)
    assert {j.id for j in page + rest} == {j.id for j in jobs}
    assert q.get_job(jobs[0].id).data == {"i": 0}
    assert q.get_job("nope") is None


def claim_and_abandon(engine: Engine, queue: str, lease_ms: int = 200) -> None:
    """Act as a worker that claimed a job, marked it active, then died."""
    from oqronkit.durable import RecordWrite
    from oqronkit.queues.jobs import Job

    [lease] = engine.hot.claim(queue, worker_id="dead-worker", limit=1, lease_ms=lease_ms, now=now_ms())
    record = engine.durable.get(f"queue_job:{queue}", lease.job_id)
    job = Job.from_value(record.value)
    job.attempts += 1
    job.status, job.lease_token, job.worker_id, job.run_id = "active", lease.token, "dead-worker", "run-x"
    engine.durable.put_many([RecordWrite(job.namespace, job.id, job.to_value())])


def test_rescuer_returns_a_job_whose_lease_lapsed_counting_the_attempt(engine: Engine):
    q = engine.queue("crashy", backoff=0.01)
    job = q.add({})
    claim_and_abandon(engine, "crashy")
    time.sleep(0.3)
    assert rescue_expired(engine, ["crashy"]) == 1
    stored = engine.durable.get("queue_job:crashy", job.id).value
    assert stored["status"] == "delayed" and stored["attempts"] == 1 and stored["stalls"] == 1
    run = engine.durable.get("runs", "run-x").value
    assert run["status"] == "failed" and run["error"]["type"] == "Stalled"
    seen = []
    q.handler(lambda ctx: seen.append(ctx.attempt))
    with running(engine):
        wait_until(lambda: seen == [2])


def test_after_max_stalls_the_job_is_dead_lettered(engine: Engine):
    q = engine.queue("poison", backoff=0.01, max_stalls=2, retries=10)
    job = q.add({})
    for _ in range(2):
        wait_until(lambda: q.counts()["waiting"] + q.counts()["delayed"] == 1)
        time.sleep(0.05)
        claim_and_abandon(engine, "poison")
        time.sleep(0.3)
        rescue_expired(engine, ["poison"])
    letter = engine.durable.get("queue_dlq:poison", job.id).value
    assert "stalled 2 times" in letter["deadReason"]


def test_a_dead_letter_the_rescuer_cannot_write_leaves_the_job_in_its_queue(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
):
    """The rescuer removed the job first and wrote its dead letter after: an outage in
    between lost the job. Now the dead letter comes first and the job stays until it
    is written (an interrupted pass leaves it in both places, never in neither)."""
    q = engine.queue("poison", backoff=0.01, max_stalls=1)
    job = q.add({"n": 1})
    durable = engine.durable
    failures: list[str] = []

    def refuse_dead_letters(method: str) -> None:
        real = getattr(durable, method)

        def write(namespace, *args, **kwargs):
            if namespace.startswith("queue_dlq:") and not failures:
                failures.append(method)
                raise BackendUnavailable("durable plane down (test)")
            return real(namespace, *args, **kwargs)

        monkeypatch.setattr(durable, method, write)

    for method in ("put", "insert"):
        refuse_dead_letters(method)
    claim_and_abandon(engine, "poison")
    time.sleep(0.3)
    with pytest.raises(BackendUnavailable):
        rescue_expired(engine, ["poison"])
    assert failures
    stored = durable.get("queue_job:poison", job.id)
    assert stored is not None and stored.value["data"] == {"n": 1}
    assert durable.get("queue_dlq:poison", job.id) is None


def test_leader_rescues_automatically(engine: Engine):
    seen = []
    q = engine.queue("auto", backoff=0.01, handler=lambda ctx: seen.append(ctx.attempt))
    q.pause()
    job = q.add({})
    claim_and_abandon(engine, "auto")
    q.resume()
    with running(engine) as process:
        fast_services(process)
        try:
            wait_until(lambda: seen == [2], timeout=15)
        except AssertionError:
            stored = engine.durable.get("queue_job:auto", job.id)
            raise AssertionError(f"seen={seen} job={stored and stored.value} leader={process.services.is_leader} "
                                 f"depths={engine.hot.depths('auto', now_ms())}") from None


def test_graceful_stop_returns_unfinished_jobs_without_counting_the_attempt(engine: Engine):
    from oqronkit.worker import WorkerProcess

    started = threading.Event()

    def stubborn(ctx):
        started.set()
        time.sleep(1.5)

    q = engine.queue("stubborn", handler=stubborn)
    job = q.add({})
    process = WorkerProcess(engine, poll_interval=0.1, drain_timeout=0.2)
    thread = threading.Thread(target=process.run, daemon=True)
    thread.start()
    assert started.wait(10)
    process.request_stop()
    thread.join(20)
    stored = engine.durable.get("queue_job:stubborn", job.id).value
    assert stored["status"] == "waiting" and stored["attempts"] == 0
    assert q.counts()["waiting"] == 1


def test_a_worker_dying_before_its_active_state_was_written_still_counts_a_stall(engine: Engine):
    """The active state is written behind: a claim whose worker died before that write
    is still a stalled attempt, so a job that kills its worker cannot loop forever."""
    q = engine.queue("early-death", backoff=0.01, max_stalls=2, retries=10)
    job = q.add({})
    for expected_stalls in (1, 2):
        wait_until(lambda: q.counts()["waiting"] + q.counts()["delayed"] == 1)
        time.sleep(0.05)
        engine.hot.claim("early-death", worker_id="dies-at-once", limit=1, lease_ms=100, now=now_ms())
        time.sleep(0.2)
        rescue_expired(engine, ["early-death"])
        if expected_stalls == 1:
            stored = engine.durable.get("queue_job:early-death", job.id).value
            assert stored["attempts"] == 1 and stored["stalls"] == 1
    assert "stalled 2 times" in engine.durable.get("queue_dlq:early-death", job.id).value["deadReason"]


def test_a_draining_worker_lets_handlers_run_until_the_deadline_then_sets_cancelled(engine: Engine):
    """A stop lets running handlers finish: ``ctx.cancelled`` stays False while the drain
    waits and turns True at the drain deadline, when the job goes back uncounted (the docs'
    "Run workers in production", "Stop without losing work")."""
    from oqronkit.worker import WorkerProcess

    started, stop_requested = threading.Event(), threading.Event()
    during_drain: list[bool] = []
    cancelled_at: list[float] = []

    def patient(ctx):
        started.set()
        stop_requested.wait(10)
        time.sleep(0.2)
        during_drain.append(ctx.cancelled)
        deadline = time.monotonic() + 10
        while not ctx.cancelled and time.monotonic() < deadline:
            time.sleep(0.01)
        cancelled_at.append(time.monotonic())

    q = engine.queue("patient", handler=patient)
    job = q.add({})
    process = WorkerProcess(engine, poll_interval=0.1, drain_timeout=1.0)
    thread = threading.Thread(target=process.run, daemon=True)
    thread.start()
    assert started.wait(10)
    stopped_at = time.monotonic()
    process.request_stop()
    stop_requested.set()
    thread.join(20)
    wait_until(lambda: cancelled_at)
    assert during_drain == [False]
    assert cancelled_at[0] - stopped_at >= 0.9  # not before the drain deadline
    stored = engine.durable.get("queue_job:patient", job.id).value
    assert stored["status"] == "waiting" and stored["attempts"] == 0
