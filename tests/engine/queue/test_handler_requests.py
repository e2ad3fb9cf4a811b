"""What a handler can ask of the queue engine beyond success or failure: a retry delay of
its own (``RetryAfter``), a postponement that burns no attempt (``Postpone``), and fields
added to its run (``ctx.annotate``), kept whatever the outcome. Every mode."""

from __future__ import annotations

import time

import pytest

from oqronkit import Engine, InvalidRecord, Postpone, RetryAfter
from oqronkit.clock import now_ms

from .conftest import running, wait_until
from .test_processing import runs_of


def test_retry_after_sets_the_next_attempts_delay_instead_of_the_backoff(engine: Engine):
    seen: list[int] = []

    def handler(ctx):
        seen.append(now_ms())
        if ctx.attempt == 1:
            raise RetryAfter(0.8, "server busy")
        return {"attempt": ctx.attempt}

    q = engine.queue("polite", handler=handler, retries=2, backoff=60)  # the backoff would wait a minute
    job = q.add({})
    with running(engine, poll_interval=0.05):
        wait_until(lambda: len(runs_of(engine, job.id)) == 2 and runs_of(engine, job.id)[1]["status"] == "completed")
    first, second = runs_of(engine, job.id)
    assert first["status"] == "failed" and first["error"]["type"] == "RetryAfter"
    assert first["error"]["message"] == "server busy"
    assert 750 <= seen[1] - seen[0] < 5_000
    assert second["attempts"] == 2


def test_retry_after_on_the_last_attempt_dead_letters(engine: Engine):
    def handler(ctx):
        raise RetryAfter(0.01, "busy")

    q = engine.queue("spent", handler=handler, retries=1)
    job = q.add({})
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.get("queue_dlq:spent", job.id) is not None)
    assert engine.durable.get("queue_dlq:spent", job.id).value["attempts"] == 2


def test_a_bad_retry_delay_fails_the_attempt_with_the_reason(engine: Engine):
    def handler(ctx):
        raise RetryAfter(float("nan"))

    q = engine.queue("nan", handler=handler, retries=0)
    job = q.add({})
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.get("queue_dlq:nan", job.id) is not None)
    [run] = runs_of(engine, job.id)
    assert "finite" in run["error"]["message"]


def test_postpone_puts_the_job_back_without_burning_an_attempt(engine: Engine):
    calls: list[int] = []

    def handler(ctx):
        calls.append(ctx.attempt)
        if len(calls) <= 3:
            raise Postpone(0.1, "breaker open")
        return {"attempt": ctx.attempt}

    q = engine.queue("held", handler=handler, retries=0)  # one attempt only: postponing must not spend it
    job = q.add({})
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.get("queue_job:held", job.id) is None and runs_of(engine, job.id))
    assert calls == [1, 1, 1, 1]
    [run] = runs_of(engine, job.id)  # a postponed attempt that was not written leaves no run
    assert run["status"] == "completed" and run["attempts"] == 1
    assert engine.durable.get("queue_dlq:held", job.id) is None


def test_a_postponed_job_waits_its_delay(engine: Engine):
    def handler(ctx):
        raise Postpone(3600, "rate limit spent")

    q = engine.queue("later", handler=handler)
    job = q.add({})
    with running(engine, poll_interval=0.05):
        wait_until(lambda: (r := engine.durable.get("queue_job:later", job.id)) is not None
                   and r.value["status"] == "delayed")
    value = engine.durable.get("queue_job:later", job.id).value
    assert value["attempts"] == 0 and value["errors"] == []
    assert value["runAt"] > now_ms() + 3_500_000
    assert runs_of(engine, job.id) == []


def test_annotated_fields_are_kept_on_failed_and_completed_runs(engine: Engine):
    def handler(ctx):
        ctx.annotate({"request": {"url": "http://x"}, "response": {"status": 500 if ctx.attempt == 1 else 200}})
        if ctx.attempt == 1:
            raise RuntimeError("server error")
        return {"ok": True}

    q = engine.queue("noted", handler=handler, retries=1, backoff=0.01)
    job = q.add({})
    with running(engine, poll_interval=0.05):
        wait_until(lambda: len(runs_of(engine, job.id)) == 2 and runs_of(engine, job.id)[1]["status"] == "completed")
    failed, completed = runs_of(engine, job.id)
    assert failed["status"] == "failed" and failed["response"] == {"status": 500}
    assert failed["request"] == {"url": "http://x"}
    assert completed["response"] == {"status": 200} and completed["output"] == {"ok": True}


@pytest.mark.parametrize("fields", [{"status": "completed"}, {"output": 1}, {"x": object()}, {"x": "a\x00b"}])
def test_annotate_refuses_a_runs_own_keys_and_unstorable_values(engine: Engine, fields):
    problems: list[str] = []

    def handler(ctx):
        try:
            ctx.annotate(fields)
        except InvalidRecord as exc:
            problems.append(str(exc))
        return None

    q = engine.queue("refused", handler=handler)
    job = q.add({})
    with running(engine, poll_interval=0.05):
        wait_until(lambda: runs_of(engine, job.id) and runs_of(engine, job.id)[0]["status"] == "completed")
    assert len(problems) == 1


def test_a_postponed_attempt_whose_run_was_written_closes_it_as_held(engine: Engine):
    calls: list[int] = []

    def handler(ctx):
        calls.append(ctx.attempt)
        if len(calls) == 1:
            time.sleep(1.2)  # long enough for the run to be written while it runs
            raise Postpone(0.05, "rate limit spent")
        return None

    q = engine.queue("slowheld", handler=handler, retries=0)
    job = q.add({})
    with running(engine, poll_interval=0.05):
        wait_until(lambda: any(r["status"] == "completed" for r in runs_of(engine, job.id)))
    statuses = sorted(r["status"] for r in runs_of(engine, job.id))
    assert statuses == ["completed", "held"] and calls == [1, 1]
    held = next(r for r in runs_of(engine, job.id) if r["status"] == "held")
    assert "attempt not counted: rate limit spent" in held["timeline"][-1]["reason"]
