"""Batch handlers (issue 26): full batches, max_wait, group_by, partial and whole-batch
failure, the drain and the definition record, in every mode."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import defaultdict

import pytest

from oqronkit import Batch, ConfigurationError, Engine, RetryAfter
from oqronkit.namespaces import QUEUE

from .conftest import fast_services, running, wait_until


def all_runs(engine: Engine) -> dict[str, list[dict]]:
    """Runs by job id, oldest attempt first."""
    grouped: dict[str, list[dict]] = defaultdict(list)
    for record in engine.durable.list("runs", order="started", limit=1000).records:
        grouped[record.value["jobId"]].append(record.value)
    for runs in grouped.values():
        runs.sort(key=lambda r: r["attempts"])
    return grouped


def settled(engine: Engine, queue: str, ids: list[str], statuses: dict[str, list[str]]) -> bool:
    """Every job's runs have the given statuses (default: one completed) and it left oqron_jobs."""
    runs = all_runs(engine)
    return engine.durable.count(f"queue_job:{queue}") == 0 and all(
        [r["status"] for r in runs.get(i, [])] == statuses.get(i, ["completed"]) for i in ids)


def test_full_batches_one_call_each_with_a_run_per_job(engine: Engine):
    calls: list[list[str]] = []

    def handle(jobs):
        calls.append([ctx.job_id for ctx in jobs])
        jobs[0].log("info", "first of its batch")
        return [{"double": ctx.data["i"] * 2} for ctx in jobs]

    q = engine.queue("bulk", handler=handle, concurrency=1, batch=Batch(size=10, max_wait=5))
    ids = [j.id for j in q.add_bulk([{"i": i} for i in range(30)])]
    started = time.monotonic()
    with running(engine):
        wait_until(lambda: settled(engine, "bulk", ids, {}), timeout=4)
    assert time.monotonic() - started < 4  # full batches never wait for max_wait (5 s)
    assert [len(c) for c in calls] == [10, 10, 10]
    assert sorted(i for c in calls for i in c) == sorted(ids)
    runs = all_runs(engine)
    for n, job_id in enumerate(ids):
        [run] = runs[job_id]
        assert run["output"] == {"double": n * 2} and run["input"] == {"i": n} and run["attempts"] == 1
        assert run["batch"]["size"] == 10
    assert len({runs[i][0]["batch"]["id"] for i in ids}) == 3
    assert runs[calls[0][0]][0]["logs"][0]["msg"] == "first of its batch"
    record = engine.durable.get(QUEUE, "bulk")
    assert record.value["batch"] == {"size": 10, "maxWait": 5, "groupBy": None}


def test_max_wait_flushes_a_partial_batch(engine: Engine):
    calls: list[tuple[float, int]] = []
    q = engine.queue("partial", batch=Batch(size=100, max_wait=0.4),
                     handler=lambda jobs: calls.append((time.monotonic(), len(jobs))))
    ids = [j.id for j in q.add_bulk([{"i": i} for i in range(7)])]
    started = time.monotonic()
    with running(engine):
        wait_until(lambda: settled(engine, "partial", ids, {}), timeout=5)
    assert [n for _, n in calls] == [7]
    assert 0.4 <= calls[0][0] - started < 2.5


def test_group_by_never_mixes_keys_in_one_call(engine: Engine):
    seen: list[set] = []
    lock = threading.Lock()

    def handle(jobs):
        with lock:
            seen.append({(ctx.data["tenant"], ctx.data["n"] % 2) for ctx in jobs})

    async def handle_async(jobs):  # an async def batch handler runs in its slot thread
        await asyncio.sleep(0)
        handle(jobs)

    def parity(data):
        if data["n"] == 19:
            raise KeyError("no parity for 19")
        return data["n"] % 2

    by_field = engine.queue("tenants", handler=handle, concurrency=2,
                            batch=Batch(size=4, max_wait=0.1, group_by="tenant"))
    items = [{"tenant": t, "n": 0} for t in "abc" for _ in range(6)]
    ids = [j.id for j in by_field.add_bulk(items)]
    by_fn = engine.queue("parity", handler=handle_async, retries=0, batch=Batch(size=50, max_wait=0.1,
                                                                                group_by=parity))
    ids_fn = [j.id for j in by_fn.add_bulk([{"tenant": "z", "n": n} for n in range(20)])]
    with running(engine):
        wait_until(lambda: settled(engine, "tenants", ids, {})
                   and settled(engine, "parity", ids_fn, {ids_fn[19]: ["failed"]}), timeout=5)
    assert all(len(keys) == 1 for keys in seen)
    assert sum(1 for keys in seen if next(iter(keys))[0] == "z") == 2  # one call per parity
    assert len(seen) >= 8  # per tenant 6 jobs in calls of at most 4; one call per parity
    assert all_runs(engine)[ids_fn[19]][0]["error"]["message"] == "'no parity for 19'"
    record = engine.durable.get(QUEUE, "parity").value["batch"]
    assert record["groupBy"].endswith("parity")


def test_partial_failure_retries_and_dead_letters_only_the_failed_jobs(engine: Engine):
    calls: list[list[str]] = []

    def handle(jobs):
        calls.append([ctx.job_id for ctx in jobs])
        results: dict[str, object] = {}
        for ctx in jobs:
            if ctx.data["kind"] == "fail":
                ctx.fail(ValueError(f"bad item {ctx.data['i']}"))
            elif ctx.data["kind"] == "returned":
                results[ctx.job_id] = RetryAfter(0.01, "later")
            else:
                results[ctx.job_id] = {"ok": ctx.data["i"]}
        return results

    q = engine.queue("mixed", handler=handle, retries=1, backoff=0.01, batch=Batch(size=20, max_wait=0.1))
    kinds = ["ok"] * 8 + ["fail", "returned"]
    jobs = q.add_bulk([{"kind": k, "i": i} for i, k in enumerate(kinds)])
    ids = [j.id for j in jobs]
    bad, returned = ids[8], ids[9]
    with running(engine):
        wait_until(lambda: settled(engine, "mixed", ids,
                                   {bad: ["failed", "failed"], returned: ["failed", "failed"]}), timeout=6)
    for job_id in (bad, returned):
        letter = engine.durable.get("queue_dlq:mixed", job_id)
        assert letter is not None and letter.value["attempts"] == 2
    assert engine.durable.get("queue_dlq:mixed", bad).value["lastError"]["message"] == "bad item 8"
    runs = all_runs(engine)
    assert runs[bad][0]["error"]["type"] == "ValueError"
    assert runs[returned][0]["error"]["type"] == "RetryAfter"
    assert all(runs[i][0]["output"] == {"ok": n} for n, i in enumerate(ids[:8]))
    assert set(calls[0]) == set(ids)
    assert all(set(c) <= {bad, returned} for c in calls[1:])  # the retries ran without the completed jobs


def test_a_handler_exception_fails_the_whole_batch_each_job_on_its_own_policy(engine: Engine):
    def handle(jobs):
        if any(ctx.attempt == 1 for ctx in jobs):
            raise RuntimeError("the bulk API was down")
        return None

    q = engine.queue("whole", handler=handle, retries=2, backoff=0.01, batch=Batch(size=10, max_wait=0.1))
    once = q.add({"x": 1}, attempts=1)  # no retry left: dead-lettered at once
    ids = [j.id for j in q.add_bulk([{"i": i} for i in range(5)])]
    with running(engine):
        wait_until(lambda: settled(engine, "whole", [*ids, once.id],
                                   {**{i: ["failed", "completed"] for i in ids}, once.id: ["failed"]}), timeout=6)
    runs = all_runs(engine)
    assert all(runs[i][0]["error"]["message"] == "the bulk API was down" for i in ids)
    assert engine.durable.get("queue_dlq:whole", once.id) is not None


def test_a_bad_return_value_fails_the_batch_with_the_reason(engine: Engine):
    q = engine.queue("shape", handler=lambda jobs: [1], retries=0, batch=Batch(size=3, max_wait=0.1))
    ids = [j.id for j in q.add_bulk([{"i": i} for i in range(3)])]
    with running(engine):
        wait_until(lambda: settled(engine, "shape", ids, {i: ["failed"] for i in ids}), timeout=5)
    error = all_runs(engine)[ids[0]][0]["error"]
    assert error["type"] == "TypeError" and "one entry per job (3)" in error["message"]


def test_the_drain_returns_a_filling_batch_uncounted(engine: Engine):
    q = engine.queue("filling", handler=lambda jobs: None, batch=Batch(size=100, max_wait=60))
    ids = [j.id for j in q.add_bulk([{"i": i} for i in range(5)])]
    with running(engine) as worker:
        wait_until(lambda: len(worker.buffers["filling"].inflight) == 5, timeout=5)
    stored = [engine.durable.get("queue_job:filling", i).value for i in ids]
    assert all(s["status"] == "waiting" and s["attempts"] == 0 for s in stored)
    assert not all_runs(engine)


@pytest.mark.parametrize("drain", [5.0, 0.2])
def test_the_drain_finishes_a_running_batch_or_returns_it_uncounted(engine: Engine, drain: float):
    def handle(jobs):
        deadline = time.monotonic() + 0.6
        while time.monotonic() < deadline and not jobs[0].cancelled:
            time.sleep(0.02)

    q = engine.queue("draining", handler=handle, batch=Batch(size=4, max_wait=0.05))
    ids = [j.id for j in q.add_bulk([{"i": i} for i in range(4)])]
    with running(engine, drain_timeout=drain) as worker:
        wait_until(lambda: worker.buffers["draining"].calls == 1, timeout=5)
    if drain > 1:  # the batch finished within the drain
        wait_until(lambda: settled(engine, "draining", ids, {}), timeout=5)
    else:  # interrupted at the deadline: back in the queue, the attempt not counted
        stored = [engine.durable.get("queue_job:draining", i).value for i in ids]
        assert all(s["status"] == "waiting" and s["attempts"] == 0 for s in stored)


def test_leases_are_renewed_and_timeouts_apply_per_job(engine: Engine):
    def handle(jobs):
        deadline = time.monotonic() + (0.6 if jobs[0].data["slow"] else 1.0)
        while time.monotonic() < deadline and not jobs[0].cancelled:
            time.sleep(0.02)
        return [{"cancelled": ctx.cancelled} for ctx in jobs]

    # A 0.4 s lease outlived 2.5 times over: the heartbeat renews every lease of the batch.
    long = engine.queue("long", handler=handle, lease=0.4, batch=Batch(size=5, max_wait=0.1))
    ids = [j.id for j in long.add_bulk([{"slow": False}] * 5)]
    timed = engine.queue("timed", handler=handle, timeout=0.3, retries=0, batch=Batch(size=5, max_wait=0.1))
    timed_ids = [j.id for j in timed.add_bulk([{"slow": True}] * 3)]
    # Held while a batch fills (max_wait 1 s): their leases are renewed too.
    filling = engine.queue("filling", handler=lambda jobs: None, lease=0.4, batch=Batch(size=50, max_wait=1.0))
    filling_ids = [j.id for j in filling.add_bulk([{"i": i} for i in range(3)])]
    with running(engine) as worker:
        fast_services(worker)  # a lapsed lease would be rescued (a second run) within 0.2 s
        wait_until(lambda: settled(engine, "long", ids, {}) and settled(engine, "filling", filling_ids, {})
                   and settled(engine, "timed", timed_ids, {i: ["failed"] for i in timed_ids}), timeout=6)
    runs = all_runs(engine)
    assert all(runs[i][0]["output"] == {"cancelled": False} for i in ids)
    assert all(runs[i][0]["error"]["type"] == "Timeout" for i in timed_ids)
    assert all(runs[i][0]["attempts"] == 1 for i in filling_ids)


@pytest.mark.parametrize(("options", "message"), [
    ({"size": 0}, "Batch size must be an integer from 1 to 10,000, got 0"),
    ({"size": True}, "Batch size must be an integer"),
    ({"max_wait": -1}, "Batch max_wait must be a number of seconds from 0 to 3,600, got -1"),
    ({"max_wait": float("nan")}, "Batch max_wait must be a number"),
    ({"group_by": ""}, "Batch group_by '' must be a payload field name"),
    ({"group_by": 3}, "Batch group_by must be None, a payload field name or a function"),
])
def test_bad_batch_options_are_configuration_errors(options, message):
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(")):
        Batch(**options)


def test_batch_must_be_a_batch():
    from oqronkit.queues.queue import Queue

    with pytest.raises(ConfigurationError, match=r"Queue 'q': batch must be oqronkit\.Batch"):
        Queue("q", batch={"size": 3})  # checked before the queue joins any registry


def test_condition_and_before_run_gate_each_job_of_a_batch(engine: Engine):
    calls: list[list[int]] = []

    def before_run(ctx):
        if ctx.data["i"] == 3:
            raise RuntimeError("not ready")

    q = engine.queue("gated", handler=lambda jobs: calls.append([c.data["i"] for c in jobs]), concurrency=1,
                     batch=Batch(size=6, max_wait=0.2), retries=0,
                     condition=lambda ctx: "odd one" if ctx.data["i"] == 1 else True, before_run=before_run)
    ids = [j.id for j in q.add_bulk([{"i": i} for i in range(6)])]
    with running(engine):
        wait_until(lambda: engine.durable.count("queue_job:gated") == 0 and len(all_runs(engine)) == 6)
    assert sorted(i for c in calls for i in c) == [0, 2, 4, 5]  # the gated ones never reach the handler
    runs = all_runs(engine)
    skipped, failed = runs[ids[1]][0], runs[ids[3]][0]
    assert skipped["status"] == "cancelled" and "odd one" in str(skipped.get("error") or skipped)
    assert failed["status"] == "failed" and "not ready" in str(failed["error"])
