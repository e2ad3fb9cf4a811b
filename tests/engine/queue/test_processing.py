"""Workers: runs, retries, dead letters, timeouts, ordering, concurrency, async."""

from __future__ import annotations

import asyncio
import copy
import datetime
import threading
import time

import pytest

from oqronkit import Engine
from oqronkit.live import live_runs
from oqronkit.queues.backoff import Backoff, make_backoff

from .conftest import running, wait_until

RUN_KEYS = {
    "id", "name", "module", "status", "trigger", "input", "output", "attempts", "progressPercent", "logs",
    "timeline", "error", "app", "environment", "workerId", "startedAt", "endedAt", "durationMs",
}


def runs_of(engine: Engine, job_id: str) -> list[dict]:
    page = engine.durable.list("runs", order="started", limit=100)
    return sorted((r.value for r in page.records if r.value.get("jobId") == job_id), key=lambda r: r["attempts"])


def test_a_completed_job_leaves_oqron_jobs_and_one_run_record(engine: Engine):
    q = engine.queue("emails", handler=lambda ctx: {"sent": ctx.data["to"]})
    job = q.add({"to": "a@x.com"})
    with running(engine):
        wait_until(lambda: engine.durable.get("queue_job:emails", job.id) is None)
        wait_until(lambda: runs_of(engine, job.id) and runs_of(engine, job.id)[0]["status"] == "completed")
    [run] = runs_of(engine, job.id)
    assert set(run) >= RUN_KEYS
    assert run["module"] == "queue" and run["name"] == "emails" and run["trigger"] == "queue"
    assert run["input"] == {"to": "a@x.com"} and run["output"] == {"sent": "a@x.com"}
    assert run["attempts"] == 1 and run["progressPercent"] == 100 and run["error"] is None
    assert run["app"] == engine.config.project and run["environment"] == engine.config.environment
    assert run["endedAt"] >= run["startedAt"] and run["durationMs"] == run["endedAt"] - run["startedAt"]
    assert [t["to"] for t in run["timeline"]] == ["running", "completed"]
    assert engine.durable.get("runs", run["id"]).record_kind == "run"


def test_failures_retry_then_dead_letter_with_every_attempt(engine: Engine):
    dead = []

    def boom(ctx):
        raise RuntimeError(f"boom {ctx.attempt}")

    q = engine.queue("flaky", handler=boom, retries=2, backoff=0.01, on_dead=lambda job, err: dead.append(job.id))
    job = q.add({"x": 1})
    with running(engine):
        wait_until(lambda: engine.durable.get("queue_dlq:flaky", job.id) is not None)
        wait_until(lambda: len(runs_of(engine, job.id)) == 3 and dead)
    letter = engine.durable.get("queue_dlq:flaky", job.id)
    assert letter.record_kind == "dlq"
    assert letter.value["status"] == "dead" and letter.value["attempts"] == 3
    assert letter.value["lastError"]["message"] == "boom 3"
    assert [e["message"] for e in letter.value["errors"]] == ["boom 1", "boom 2", "boom 3"]
    assert engine.durable.get("queue_job:flaky", job.id) is None
    assert [r["status"] for r in runs_of(engine, job.id)] == ["failed"] * 3
    assert runs_of(engine, job.id)[0]["error"]["type"] == "RuntimeError"
    assert "Traceback" in runs_of(engine, job.id)[0]["error"]["traceback"]
    assert dead == [job.id]


def test_a_job_that_fails_once_completes_on_retry(engine: Engine):
    q = engine.queue("flaky", retries=3, backoff=0.01)

    @q.handler
    def handler(ctx):
        if ctx.attempt == 1:
            raise ValueError("first time fails")
        return {"attempt": ctx.attempt}

    job = q.add({})
    with running(engine):
        wait_until(lambda: [r["status"] for r in runs_of(engine, job.id)] == ["failed", "completed"])
    assert engine.durable.get("queue_job:flaky", job.id) is None


def test_discard_fails_now_without_retries(engine: Engine):
    q = engine.queue("strict", handler=lambda ctx: ctx.discard("bad address"), retries=5)
    job = q.add({})
    with running(engine):
        wait_until(lambda: engine.durable.get("queue_dlq:strict", job.id) is not None)
    letter = engine.durable.get("queue_dlq:strict", job.id).value
    assert letter["attempts"] == 1 and "bad address" in letter["deadReason"]


def test_timeout_is_a_retryable_failure_that_counts_an_attempt(engine: Engine):
    def slow(ctx):
        while not ctx.cancelled:
            time.sleep(0.01)

    q = engine.queue("slow", handler=slow, timeout=0.2, retries=1, backoff=0.01)
    job = q.add({})
    with running(engine):
        wait_until(lambda: engine.durable.get("queue_dlq:slow", job.id) is not None)
    runs = runs_of(engine, job.id)
    assert [r["error"]["type"] for r in runs] == ["Timeout", "Timeout"]


def test_a_handler_that_returns_as_soon_as_it_is_told_still_times_out(engine: Engine, monkeypatch):
    """The heartbeat told the handler before settling the timeout: a handler returning at
    once then won with "cancelled", and the job was dead-lettered with a retry unused."""
    from oqronkit.worker.inflight import Inflight

    told = Inflight.request_cancel

    def slow_to_settle(self, reason):
        told(self, reason)
        time.sleep(0.3)  # the handler notices and returns meanwhile

    monkeypatch.setattr(Inflight, "request_cancel", slow_to_settle)

    def polite(ctx):
        while not ctx.cancelled:
            time.sleep(0.001)

    q = engine.queue("polite", handler=polite, timeout=0.2, retries=1, backoff=0.01)
    job = q.add({})
    with running(engine):
        wait_until(lambda: engine.durable.get("queue_dlq:polite", job.id) is not None)
    runs = runs_of(engine, job.id)
    assert [(r["status"], r["error"]["type"]) for r in runs] == [("failed", "Timeout"), ("failed", "Timeout")]


def test_async_handlers_run_and_time_out(engine: Engine):
    async def fine(ctx):
        await asyncio.sleep(0.01)
        return {"n": ctx.data["n"] * 2}

    async def hangs(ctx):
        await asyncio.sleep(60)

    q = engine.queue("async", handler=fine)
    h = engine.queue("hang", handler=hangs, timeout=0.2, retries=0)
    job = q.add({"n": 21})
    stuck = h.add({})
    with running(engine):
        wait_until(lambda: runs_of(engine, job.id) and runs_of(engine, job.id)[0]["status"] == "completed")
        wait_until(lambda: engine.durable.get("queue_dlq:hang", stuck.id) is not None)
    assert runs_of(engine, job.id)[0]["output"] == {"n": 42}


def test_priority_then_fifo_order(engine: Engine):
    order = []
    q = engine.queue("ordered", handler=lambda ctx: order.append(ctx.data), concurrency=1)
    q.add_bulk([{"data": "low", "priority": -1}, "a", "b", {"data": "high", "priority": 10}, "c"])
    with running(engine):
        wait_until(lambda: len(order) == 5)
    assert order == ["high", "a", "b", "c", "low"]


def test_lifo_strategy(engine: Engine):
    order = []
    q = engine.queue("stack", handler=lambda ctx: order.append(ctx.data), concurrency=1, strategy="lifo")
    q.add_bulk(["a", "b", "c"])
    with running(engine):
        wait_until(lambda: len(order) == 3)
    assert order == ["c", "b", "a"]


def test_concurrency_is_honoured_exactly(engine: Engine):
    active, peak, lock = [0], [0], threading.Lock()

    def work(ctx):
        with lock:
            active[0] += 1
            peak[0] = max(peak[0], active[0])
        time.sleep(0.05)
        with lock:
            active[0] -= 1

    q = engine.queue("limited", handler=work, concurrency=3)
    q.add_bulk([{} for _ in range(15)])
    with running(engine):
        wait_until(lambda: engine.durable.count("queue_job:limited") == 0, timeout=20)
    assert peak[0] == 3


def test_throttle_limits_dispatches_per_window(engine: Engine):
    stamps = []
    q = engine.queue("throttled", handler=lambda ctx: stamps.append(time.monotonic()), throttle=(5, 0.5))
    q.add_bulk([{} for _ in range(10)])
    with running(engine):
        wait_until(lambda: len(stamps) == 10, timeout=20)
    assert stamps[-1] - stamps[0] >= 0.4


def test_progress_and_logs_reach_the_run_and_stay_bounded(engine: Engine):
    q = engine.queue("reports")

    @q.handler
    def report(ctx):
        for i in range(300):
            ctx.log("info", f"line {i}")
        ctx.progress(50, "half")
        return "ok"

    job = q.add({})
    with running(engine):
        wait_until(lambda: runs_of(engine, job.id) and runs_of(engine, job.id)[0]["status"] == "completed")
    run = runs_of(engine, job.id)[0]
    assert len(run["logs"]) == engine.config.run_log_limit == 200
    assert run["logs"][-1]["msg"] == "line 299" and run["logs"][0]["level"] == "info"


def test_a_run_written_while_running_is_completed_in_place(engine: Engine, mode: str,
                                                          monkeypatch: pytest.MonkeyPatch):
    # The finisher writes a busy run behind (progress, logs) while it runs; its final
    # write must then replace that row as an upsert, not try the first-write INSERT
    # (on Postgres a wrong guess is caught, but costs the batch a second round).
    retried = []
    if mode in ("postgres", "redis-postgres"):
        from oqronkit.backends.postgres import store as store_module

        real_writes = store_module._writes

        def spy(rows, *, trust_new):
            if not trust_new:
                retried.append(len(rows))
            return real_writes(rows, trust_new=trust_new)

        monkeypatch.setattr(store_module, "_writes", spy)
    release = threading.Event()
    q = engine.queue("long")

    @q.handler
    def long(ctx):
        ctx.progress(30, "started")
        release.wait(10)
        return "done"

    job = q.add({})
    with running(engine):
        wait_until(lambda: runs_of(engine, job.id) and runs_of(engine, job.id)[0]["progressPercent"] == 30)
        assert runs_of(engine, job.id)[0]["status"] == "running"
        release.set()
        wait_until(lambda: runs_of(engine, job.id)[0]["status"] == "completed")
    runs = runs_of(engine, job.id)
    assert len(runs) == 1 and runs[0]["output"] == "done" and runs[0]["progressPercent"] == 100
    assert engine.durable.get(f"queue_job:{q.name}", job.id) is None
    assert retried == []


def test_a_short_run_is_written_once_when_it_ends(engine: Engine, monkeypatch: pytest.MonkeyPatch):
    # The finisher writes running runs behind every half second, but only those that
    # have run for a while: a run that ends sooner is written once, as a new row.
    written = []
    real_apply = engine.durable.apply

    def spy(*, puts=(), deletes=()):
        puts = list(puts)
        written.extend(w for w in puts if w.namespace == "runs")
        return real_apply(puts=puts, deletes=deletes)

    monkeypatch.setattr(engine.durable, "apply", spy)
    real_release = engine.durable.apply_and_release  # postgres mode settles completions with it

    def spy_release(*, puts, **rest):
        puts = list(puts)
        written.extend(w for w in puts if w.namespace == "runs")
        return real_release(puts=puts, **rest)

    monkeypatch.setattr(engine.durable, "apply_and_release", spy_release)
    q = engine.queue("short", concurrency=1, handler=lambda ctx: time.sleep(0.2))
    jobs = [q.add({"n": n}) for n in range(8)]  # 1.6 s of work, one at a time: flushes come mid-run
    with running(engine):
        wait_until(lambda: all(runs_of(engine, j.id) and runs_of(engine, j.id)[0]["status"] == "completed"
                               for j in jobs))
    run_ids = sorted(runs_of(engine, j.id)[0]["id"] for j in jobs)
    assert sorted(w.id for w in written) == run_ids
    assert all(w.new and w.value["status"] == "completed" for w in written)


def test_live_overlay_shows_progress_while_running(engine: Engine):
    release = threading.Event()

    def slow(ctx):
        ctx.progress(40, "loading")
        release.wait(10)

    q = engine.queue("live", handler=slow)
    q.add({})
    with running(engine):
        def overlay_at_40():
            return any(v["progressPercent"] == 40 for v in live_runs(engine.hot))

        wait_until(overlay_at_40)
        release.set()


def test_non_json_return_value_fails_the_attempt(engine: Engine):
    q = engine.queue("weird", handler=lambda ctx: object(), retries=0)
    job = q.add({})
    with running(engine):
        wait_until(lambda: engine.durable.get("queue_dlq:weird", job.id) is not None)
    assert "JSON" in engine.durable.get("queue_dlq:weird", job.id).value["lastError"]["message"]


def test_a_too_deeply_nested_return_value_fails_the_attempt(engine: Engine):
    """It used to escape the check as RecursionError: the slot thread died and the job
    stayed running for good."""

    def nested(ctx):
        value: list = []
        for _ in range(100_000):
            value = [value]
        return value

    q = engine.queue("nested", handler=nested, retries=0)
    job = q.add({})
    with running(engine):
        wait_until(lambda: engine.durable.get("queue_dlq:nested", job.id) is not None)
    assert "nesting too deep" in engine.durable.get("queue_dlq:nested", job.id).value["lastError"]["message"]


def test_what_a_handler_does_to_its_data_stays_out_of_the_run_and_the_retry(engine: Engine):
    """ctx.data is the handler's own copy. A datetime put there used to reach the run's
    input snapshot, and the run, with every other run and job deletion of its batch,
    was held for a retry that could never succeed."""
    seen = []

    def meddle(ctx):
        seen.append(copy.deepcopy(ctx.data))
        ctx.data["when"] = datetime.datetime.now()
        ctx.data["tags"].append("touched")
        if ctx.attempt == 1 and ctx.data["n"] == 0:
            raise RuntimeError("once more")

    q = engine.queue("meddle", handler=meddle, retries=1, backoff=0)
    jobs = q.add_bulk([{"n": n, "tags": ["a"]} for n in range(3)])
    with running(engine):
        wait_until(lambda: engine.durable.count("queue_job:meddle") == 0
                   and sum(len(runs_of(engine, j.id)) for j in jobs) == 4)
    for job in jobs:
        for run in runs_of(engine, job.id):
            assert run["input"] == {"n": job.data["n"], "tags": ["a"]}
    # The retry got the payload as it was added, not as the first attempt left it.
    assert sorted(s["n"] for s in seen) == [0, 0, 1, 2]
    assert all(s["tags"] == ["a"] and "when" not in s for s in seen)


def test_a_run_too_large_to_store_is_stored_without_its_output(engine: Engine):
    """A 2 MB return value is JSON, but its run is over the record size limit. The run
    used to be held for retry with its whole batch, for good: the jobs stayed active
    and no later run of the worker was stored."""
    q = engine.queue("bulky", handler=lambda ctx: "x" * 2_000_000 if ctx.data["n"] == 1 else ctx.data["n"])
    jobs = q.add_bulk([{"n": n} for n in range(3)])
    with running(engine):
        wait_until(lambda: engine.durable.count("queue_job:bulky") == 0
                   and all(runs_of(engine, j.id) for j in jobs))
        later = q.add({"n": 3})
        wait_until(lambda: runs_of(engine, later.id))
    runs = {job.data["n"]: runs_of(engine, job.id)[0] for job in [*jobs, later]}
    assert all(run["status"] == "completed" for run in runs.values())
    assert [runs[n]["output"] for n in (0, 2, 3)] == [0, 2, 3]
    assert runs[1]["output"] is None and runs[1]["input"] == {"n": 1}
    note = runs[1]["logs"][-1]
    assert note["level"] == "warning" and "left out: output" in note["msg"] and "limit" in note["msg"]
    assert q.counts()["active"] == 0


def test_spawn_child_carries_the_correlation_id(engine: Engine):
    children = engine.queue("children", handler=lambda ctx: ctx.correlation_id)
    parent = engine.queue("parents", handler=lambda ctx: ctx.spawn_child("children", {"from": ctx.job_id}).id)
    job = parent.add({}, correlation_id="order-9")
    with running(engine):
        wait_until(lambda: engine.durable.count("queue_job:children") == 0
                   and engine.durable.count("queue_job:parents") == 0
                   and len(engine.durable.list("runs", limit=10).records) >= 2)
    runs = [r.value for r in engine.durable.list("runs", limit=10).records]
    child_run = next(r for r in runs if r["name"] == "children")
    assert child_run["output"] == "order-9" and child_run["input"] == {"from": job.id}
    assert children.counts()["waiting"] == 0


def test_scopes_are_isolated(engine: Engine):
    from oqronkit import Registry

    other_config = engine.config.with_scope(project=engine.config.project, environment="production")
    other = Engine(other_config, registry=Registry())
    try:
        seen = []
        engine.queue("shared", handler=lambda ctx: seen.append(ctx.data))
        other.queue("shared").add({"from": "production"})
        engine.get_queue("shared").add({"from": "test"})
        with running(engine):
            wait_until(lambda: seen == [{"from": "test"}])
            time.sleep(0.3)
        assert seen == [{"from": "test"}]
        assert other.get_queue("shared").counts()["waiting"] == 1
    finally:
        other.close()


def test_backoff_defaults_exponential_from_2s_with_jitter_capped_at_60s():
    backoff = Backoff()
    for attempt, expected in [(1, 2_000), (2, 4_000), (3, 8_000), (6, 60_000), (10, 60_000)]:
        samples = [backoff.delay_ms(attempt) for _ in range(200)]
        assert min(samples) >= expected * 0.8 - 1 and max(samples) <= expected * 1.2 + 1
        assert max(samples) - min(samples) > expected * 0.1  # jitter is applied


def test_fixed_and_custom_backoff():
    assert make_backoff(5).delay_ms(3) == 5_000
    assert make_backoff({"type": "fixed", "delay": 1, "jitter": 0}).delay_ms(7) == 1_000
    custom = make_backoff(lambda attempt: attempt * 0.5)
    assert custom.delay_ms(4) == 2_000
    assert Backoff.from_value(custom.to_value()).delay_ms(2) == 1_000


def test_a_fixed_or_custom_backoff_longer_than_a_minute_is_not_capped():
    """A number is the delay, a function's answer is the delay: the 60 s cap is the default
    exponential's (a dict's ``max``), not theirs."""
    assert make_backoff(300).delay_ms(1) == 300_000
    assert make_backoff(datetime.timedelta(hours=2)).delay_ms(5) == 7_200_000

    def five_minutes_then_an_hour(attempt):
        return 300 if attempt == 1 else 3600

    custom = make_backoff(five_minutes_then_an_hour)
    assert (custom.delay_ms(1), custom.delay_ms(2)) == (300_000, 3_600_000)
    assert Backoff.from_value(custom.to_value()).delay_ms(2) == 3_600_000   # as a stored job reads it
    assert make_backoff(lambda attempt: float("nan")).delay_ms(1) == 60_000    # a bad answer: the default cap


@pytest.mark.parametrize("spec", ["soon", {"type": "fixed", "jitter": 3}])
def test_bad_backoff_specs(spec):
    from oqronkit import InvalidJob

    with pytest.raises(InvalidJob):
        make_backoff(spec)


def test_dead_letters_carry_an_error_fingerprint_that_groups_similar_failures(engine: Engine):
    from oqronkit.queues.jobs import error_fingerprint, normalise_message

    assert normalise_message("user 42 not found in 'shop-7'") == "user <n> not found in <str>"
    assert error_fingerprint("KeyError", "user 42") == error_fingerprint("KeyError", "user 7")
    assert error_fingerprint("KeyError", "user 42") != error_fingerprint("ValueError", "user 42")

    def fail(ctx):
        raise LookupError(f"order {ctx.data['n']} missing")

    q = engine.queue("fp", handler=fail, retries=0)
    jobs = q.add_bulk([{"n": 1}, {"n": 2}])
    with running(engine):
        wait_until(lambda: engine.durable.count("queue_dlq:fp") == 2)
    prints = {engine.durable.get("queue_dlq:fp", j.id).value["errorFingerprint"] for j in jobs}
    assert len(prints) == 1 and None not in prints
