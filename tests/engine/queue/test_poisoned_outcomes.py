"""Outcomes no durable plane can record as they are (issue 18, items 1, 2, 3 and 5):
a return value with a NUL, a lone surrogate or 5,000 levels of nesting, an exception
whose ``__str__`` raises, a record the backend refuses though the facade let it
through, and exceptions escaping the worker's own threads. Each fails its own attempt
(with the reason) or is stored without the offending part; every ordinary job behind it
completes with its run; a burst worker's exit status and counts say what was recorded.
Real workers (WorkerProcess) on every mode."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from oqronkit import BackendUnavailable, Engine, InvalidRecord
from oqronkit.worker import WorkerProcess
from oqronkit.worker.heartbeat import Heartbeat

from .conftest import running, wait_until

ORDINARY = 40


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("__str__ failed")


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


POISONS = {
    "nul": lambda: {"s": "a\x00b"},
    "surrogate": lambda: {"s": "\ud800"},
    "deep": lambda: {"v": nested(5_000)},
}


def handler(ctx):
    kind = ctx.data["kind"]
    if kind in POISONS:
        return POISONS[kind]()
    if kind == "unprintable":
        raise Unprintable()
    if kind == "dirty-diagnostics":
        ctx.log("info", "log \x00 line \ud800")
        ctx.progress(50, "label \x00 \udfff")
        raise RuntimeError("message \x00 with \ud800 in it")
    return {"n": ctx.data["n"]}


def burst(engine: Engine, timeout: float = 60.0, **options) -> WorkerProcess:
    """A burst worker run to its end; fails the test if it does not end."""
    options.setdefault("poll_interval", 0.2)
    process = WorkerProcess(engine, burst=True, **options)
    thread = threading.Thread(target=process.run, daemon=True)
    thread.start()
    thread.join(timeout)
    assert not thread.is_alive(), "burst worker did not end"
    return process


def all_runs(engine: Engine) -> list[dict]:
    return [r.value for r in engine.durable.list("runs", limit=1000).records]


def add_jobs(engine: Engine, poisoned: list[str], **queue_options):
    q = engine.queue("poison", handler=handler, **queue_options)
    bad = [q.add({"kind": kind}) for kind in poisoned]
    good = q.add_bulk([{"kind": "ordinary", "n": n} for n in range(ORDINARY)])
    return q, bad, good


def assert_ordinary_completed(engine: Engine, good) -> None:
    runs = {r["jobId"]: r for r in all_runs(engine)}
    assert all(runs[job.id]["status"] == "completed" and runs[job.id]["output"] == {"n": job.data["n"]}
               for job in good)
    assert engine.durable.count("queue_job:poison") == 0


@pytest.mark.parametrize("kind", sorted(POISONS))
def test_an_unstorable_return_value_fails_its_attempt_and_the_rest_complete(engine: Engine, kind: str):
    """A NUL made Postgres refuse the batch and the finisher hold it for ever (item 1);
    a lone surrogate killed the finisher (item 2); 5,000 levels completed (Low)."""
    _, [bad], good = add_jobs(engine, [kind], retries=1, backoff=0, concurrency=2)
    process = burst(engine)
    assert process.exit_code == 0
    assert_ordinary_completed(engine, good)
    runs = [r for r in all_runs(engine) if r["jobId"] == bad.id]
    assert [r["status"] for r in runs] == ["failed", "failed"]
    assert all("the handler returned a value that cannot be stored" in r["error"]["message"] for r in runs)
    dead = engine.durable.get("queue_dlq:poison", bad.id).value
    assert dead["attempts"] == 2 and "cannot be stored" in dead["lastError"]["message"]
    assert process.stats_snapshot() == {"completed": ORDINARY, "retried": 1, "dead": 1}
    assert process.supervisor.failures == 0


def test_an_exception_that_cannot_be_printed_fails_its_attempt_and_the_slot_goes_on(engine: Engine):
    """Its __str__ raising killed the slot thread: the job stayed active for ever and,
    with one slot, the queue stopped (item 3)."""
    _, [bad], good = add_jobs(engine, ["unprintable"], retries=1, backoff=0, concurrency=1)
    process = burst(engine)
    assert process.exit_code == 0
    assert_ordinary_completed(engine, good)
    runs = [r for r in all_runs(engine) if r["jobId"] == bad.id]
    assert [r["status"] for r in runs] == ["failed", "failed"]
    assert runs[0]["error"]["type"] == "Unprintable"
    assert runs[0]["error"]["message"] == "<Unprintable whose str() raised RuntimeError>"
    assert "Unprintable" in runs[0]["error"]["traceback"]
    assert engine.durable.get("queue_dlq:poison", bad.id).value["attempts"] == 2
    assert process.supervisor.failures == 0


def test_diagnostics_with_nul_and_lone_surrogates_are_stored_cleaned(engine: Engine):
    _, [bad], good = add_jobs(engine, ["dirty-diagnostics"], retries=0)
    process = burst(engine)
    assert process.exit_code == 0
    assert_ordinary_completed(engine, good)
    [run] = [r for r in all_runs(engine) if r["jobId"] == bad.id]
    assert run["status"] == "failed"
    # codec.clean_text: a NUL becomes one U+FFFD, a lone surrogate one per UTF-8 byte it would take.
    assert run["error"]["message"] == "message \ufffd with \ufffd\ufffd\ufffd in it"
    assert "\x00" not in run["error"]["traceback"] and "Traceback" in run["error"]["traceback"]
    assert run["logs"][0]["msg"] == "log \ufffd line \ufffd\ufffd\ufffd"
    assert run["progressLabel"] == "label \ufffd \ufffd\ufffd\ufffd"


@pytest.mark.parametrize("refusal", [InvalidRecord("the backend refused it (test)"),
                                     UnicodeEncodeError("utf-8", "\ud800", 0, 1, "surrogates not allowed")])
def test_a_record_the_backend_refuses_is_isolated_and_the_batch_settles(
    engine: Engine, monkeypatch: pytest.MonkeyPatch, refusal: Exception
):
    """Defence in depth behind the executor's check: a run the backend refuses though
    the facade let it through (Postgres's DataError, a driver's UnicodeEncodeError) was
    held "for retry" with every later write, or killed the finisher. It is stored
    without the offending part; the rest of its batch settles; nothing stays held."""
    store = engine.durable.store
    refused: list[str] = []

    def refusing(real):
        def call(scope, rows, *args):
            if any("POISON" in row.value_json for row in rows):
                refused.append(real.__name__)
                raise refusal
            return real(scope, rows, *args)
        return call

    monkeypatch.setattr(store, "apply", refusing(store.apply))
    if hasattr(store, "apply_and_release"):
        monkeypatch.setattr(store, "apply_and_release", refusing(store.apply_and_release))
    q = engine.queue("poison", handler=lambda ctx: {"echo": ctx.data["echo"]}, concurrency=4)
    bad = q.add({"echo": "POISON"})
    good = q.add_bulk([{"echo": "fine", "n": n} for n in range(ORDINARY)])
    process = burst(engine)
    assert refused
    assert process.exit_code == 0 and process.finisher.unrecorded() == 0
    runs = {r["jobId"]: r for r in all_runs(engine)}
    assert all(runs[job.id]["status"] == "completed" and runs[job.id]["output"] == {"echo": "fine"} for job in good)
    # Its output and input (both hold the refused value) left out, with a note saying so.
    assert runs[bad.id]["output"] is None and runs[bad.id]["input"] is None
    assert "left out: output, logs, input" in runs[bad.id]["logs"][-1]["msg"]
    assert engine.durable.count("queue_job:poison") == 0
    assert process.stats_snapshot()["completed"] == ORDINARY + 1


def test_an_exception_settling_one_job_fails_that_attempt_alone(engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """No exception in the finisher may kill it: it fails the attempt it belongs to, with
    the reason, and the rest of the batch settles (item 2)."""
    from oqronkit.worker import run_writer

    real = run_writer.finish_run

    def finish_run(run, status, **kwargs):
        if status == "completed" and kwargs.get("output") == {"n": 7}:
            raise RuntimeError("settling this one fails (test)")
        return real(run, status, **kwargs)

    monkeypatch.setattr(run_writer, "finish_run", finish_run)
    q = engine.queue("poison", handler=handler, retries=1, backoff=0, concurrency=4)
    good = q.add_bulk([{"kind": "ordinary", "n": n} for n in range(ORDINARY)])
    process = burst(engine)
    assert process.exit_code == 0
    runs = Counter((r["jobId"], r["status"]) for r in all_runs(engine))
    seven = next(job for job in good if job.data["n"] == 7)
    assert runs[(seven.id, "failed")] == 2
    assert all(runs[(job.id, "completed")] == 1 for job in good if job is not seven)
    failed = [r for r in all_runs(engine) if r["jobId"] == seven.id]
    assert all(r["error"]["message"] == "settling this one fails (test)" for r in failed)
    assert engine.durable.get("queue_dlq:poison", seven.id) is not None
    assert process.stats_snapshot()["completed"] == ORDINARY - 1


def test_a_thread_that_fails_is_restarted_and_the_work_goes_on(engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """Every thread is supervised (item 5): the heartbeat failing twice is logged and
    restarted, and goes on renewing leases shorter than the jobs: each runs once."""
    real = Heartbeat.check_timeouts
    failures = []

    def check_timeouts(self):
        if len(failures) < 2:
            failures.append(1)
            raise RuntimeError("heartbeat bug (test)")
        return real(self)

    def slow(ctx):
        time.sleep(2.0)
        return {"n": ctx.data["n"]}

    monkeypatch.setattr(Heartbeat, "check_timeouts", check_timeouts)
    q = engine.queue("poison", handler=slow, concurrency=4, lease=1.5, prefetch=0)
    good = q.add_bulk([{"n": n} for n in range(4)])
    process = burst(engine)
    assert process.exit_code == 0 and process.supervisor.failures == 2
    assert_ordinary_completed(engine, good)
    assert len(all_runs(engine)) == 4


def test_a_thread_that_keeps_failing_stops_the_worker_with_status_1(engine: Engine, monkeypatch: pytest.MonkeyPatch):
    def check_timeouts(self):
        raise RuntimeError("heartbeat bug (test)")

    monkeypatch.setattr(Heartbeat, "check_timeouts", check_timeouts)
    engine.queue("poison", handler=handler)
    with running(engine) as process:
        wait_until(lambda: process.stopping, timeout=20)
    assert process.exit_code == 1 and process.supervisor.failures == 6


def test_a_burst_worker_that_could_not_record_its_outcomes_exits_1(engine: Engine, monkeypatch: pytest.MonkeyPatch):
    """It used to exit 0 and count completions that were never written (item 1)."""

    def down(*args, **kwargs):
        raise BackendUnavailable("durable plane down (test)")

    q = engine.queue("poison", handler=handler, concurrency=4)
    q.add_bulk([{"kind": "ordinary", "n": n} for n in range(10)])
    monkeypatch.setattr(engine.durable, "apply", down)
    monkeypatch.setattr(engine.durable, "apply_and_release", down)
    process = burst(engine, drain_timeout=1.0)
    assert process.exit_code == 1
    stats = process.stats_snapshot()
    assert stats.get("completed", 0) == 0 and stats["unrecorded"] == 10
    monkeypatch.undo()
    assert engine.durable.count("queue_job:poison") == 10  # nothing lost: they run again
