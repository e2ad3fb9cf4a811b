"""Uniqueness windows: add(unique_for=..., unique_key=...) in every mode."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest

from oqronkit import Engine, InvalidJob
from oqronkit.queues.uniqueness import GoneJob, payload_key

from .conftest import running, wait_until
from .unique_producers import add_in_processes, add_in_threads


def test_twenty_producers_in_two_processes_share_one_job_per_window(engine: Engine, mode: str):
    engine.queue("uq")
    window, pause = 2.0, 2.1
    if mode == "memory":  # one process's memory: the producers are threads
        rows = add_in_threads(engine, "uq", 20, threading.Barrier(20), window, pause)
    else:
        rows = add_in_processes(engine.config, "uq", processes=2, threads=10, window=window, pause=pause)
    assert len(rows) == 20
    firsts, seconds = {r[1] for r in rows}, {r[2] for r in rows}
    assert len(firsts) == 1 and len(seconds) == 1 and firsts != seconds  # a new job once the window closed
    assert engine.durable.count("queue_job:uq") == 2
    record = engine.durable.get("queue_unique:uq", "k")
    assert record.value["jobId"] in seconds and record.record_kind == "state"
    assert record.expires_at == record.value["expiresAt"]


def test_the_first_job_comes_back_after_it_completed(engine: Engine):
    ran = []
    q = engine.queue("uc", handler=lambda ctx: ran.append(ctx.data), remove_on_complete=0.001)
    first = q.add({"v": 1}, unique_for=60)
    with running(engine):
        wait_until(lambda: ran and engine.durable.get("queue_job:uc", first.id) is None)
    again = q.add({"v": 1}, unique_for=60)
    assert isinstance(again, GoneJob) and again.gone and again.id == first.id
    assert again.data is None and again.status == "completed"
    assert ran == [{"v": 1}] and engine.durable.count("queue_job:uc") == 0


def test_a_dead_lettered_first_job_comes_back_as_stored(engine: Engine):
    def boom(ctx):
        raise RuntimeError("no")

    q = engine.queue("ux", handler=boom, retries=0)
    first = q.add({"v": 1}, unique_for=60)
    with running(engine):
        wait_until(lambda: engine.durable.get("queue_dlq:ux", first.id) is not None)
    again = q.add({"v": 1}, unique_for=60)
    assert again.id == first.id and again.status == "dead" and again.data == {"v": 1}
    assert not isinstance(again, GoneJob)


def test_the_key_defaults_to_a_hash_of_the_payload(engine: Engine):
    q = engine.queue("uh")
    a = q.add({"x": 1, "y": [1, 2]}, unique_for=timedelta(minutes=1))
    assert q.add({"y": [1, 2], "x": 1}, unique_for=60).id == a.id  # key order does not matter
    assert q.add({"x": 2}, unique_for=60).id != a.id
    assert engine.durable.get("queue_unique:uh", payload_key({"x": 1, "y": [1, 2]})).value["jobId"] == a.id
    assert q.add({"x": 1, "y": [1, 2]}).id != a.id  # no window: a plain add
    assert q.add({"x": 1}, unique_for=60, unique_key="other").id != a.id


def test_an_expired_window_opens_a_new_one(engine: Engine):
    q = engine.queue("ue")
    first = q.add({"v": 1}, unique_for=0.05, unique_key="k")
    time.sleep(0.1)
    second = q.add({"v": 2}, unique_for=60, unique_key="k")
    assert second.id != first.id and second.data == {"v": 2}
    assert q.add({"v": 3}, unique_for=60, unique_key="k").id == second.id
    assert engine.durable.prune_expired(now=engine.durable.get("queue_unique:ue", "k").expires_at) >= 1
    assert engine.durable.get("queue_unique:ue", "k") is None  # retention prunes windows


def test_add_bulk_takes_windows_in_order(engine: Engine):
    q = engine.queue("ub")
    jobs = q.add_bulk([{"data": 1, "unique_for": 60, "unique_key": "a"}, 2,
                       {"data": 3, "unique_for": 60, "unique_key": "a"}, {"data": 4, "delay": 5}])
    assert [j.data for j in jobs] == [1, 2, 1, 4]
    assert jobs[0].id == jobs[2].id and engine.durable.count("queue_job:ub") == 3


def test_a_window_with_dependencies_and_a_delay(engine: Engine):
    q = engine.queue("ud")
    parent = q.add({"p": 1})
    child = q.add({"c": 1}, unique_for=60, depends_on=[parent], delay=30)
    assert child.status == "waiting-dependencies"
    assert q.add({"c": 1}, unique_for=60, depends_on=[parent]).id == child.id


@pytest.mark.parametrize(("options", "message"), [
    ({"unique_key": "k"}, "unique_key needs unique_for or debounce"),
    ({"unique_for": 10, "debounce": 10}, "either unique_for or debounce"),
    ({"unique_for": 10, "job_id": "j"}, "unique_for and job_id cannot be combined"),
    ({"debounce": 10, "job_id": "j"}, "debounce and job_id cannot be combined"),
    ({"debounce": 10, "delay": 5}, "debounce and delay cannot be combined"),
    ({"debounce": 10, "run_at": 5}, "debounce and run_at cannot be combined"),
    ({"unique_for": 0}, "unique_for must be a positive"),
    ({"unique_for": -1}, "must not be negative"),
    ({"debounce": "soon"}, "debounce must be seconds"),
    ({"unique_for": 10**9}, "at most 31,622,400 seconds"),
    ({"unique_for": 10, "unique_key": ""}, "unique_key must be a non-empty string"),
    ({"unique_for": 10, "unique_key": 7}, "unique_key must be a non-empty string"),
    ({"unique_for": 10, "bogus": 1}, "Unknown add option(s): bogus"),
])
def test_bad_combinations_are_refused_before_anything_is_written(engine: Engine, options, message):
    q = engine.queue("bad")
    with pytest.raises(InvalidJob, match=message.replace("(", r"\(").replace(")", r"\)")):
        q.add({"v": 1}, **options)
    with pytest.raises(InvalidJob):
        q.add(object(), unique_for=10)  # the default key needs a JSON payload
    assert engine.durable.count("queue_job:bad") == 0 and engine.durable.count("queue_unique:bad") == 0
