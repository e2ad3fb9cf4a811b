"""Debounce: add(debounce=..., unique_key=...) keeps the latest payload and runs once."""

from __future__ import annotations

import threading
import time

from oqronkit import Engine

from .conftest import running, wait_until
from .unique_producers import add_in_processes, debounce_in_threads


def test_the_latest_payload_runs_once_when_the_window_closes(engine: Engine):
    ran = []
    q = engine.queue("db", handler=lambda ctx: ran.append(ctx.data))
    jobs = [q.add({"v": n}, debounce=0.4, unique_key="user-1") for n in range(5)]
    other = q.add({"v": "x"}, debounce=0.4, unique_key="user-2")
    assert len({j.id for j in jobs}) == 1 and jobs[-1].data == {"v": 4} and other.id != jobs[0].id
    stored = engine.durable.get("queue_job:db", jobs[0].id).value
    assert stored["data"] == {"v": 4} and stored["status"] == "delayed"
    assert stored["runAt"] == jobs[0].run_at  # a fixed window: later adds do not extend it
    assert engine.durable.get("queue_debounce:db", "user-1").record_kind == "state"
    with running(engine):
        wait_until(lambda: len(ran) == 2)
        time.sleep(0.2)
    assert sorted(ran, key=str) == sorted([{"v": 4}, {"v": "x"}], key=str)
    # The window's job ran: the next add opens a new window with a new job.
    again = q.add({"v": 5}, debounce=0.2, unique_key="user-1")
    assert again.id != jobs[0].id and again.data == {"v": 5}
    assert engine.durable.get("queue_debounce:db", "user-1").value["jobId"] == again.id


def test_a_claimed_job_is_never_changed_under_its_worker(engine: Engine):
    started, release, seen = threading.Event(), threading.Event(), []

    def handler(ctx):
        seen.append(ctx.data)
        started.set()
        release.wait(10)

    q = engine.queue("dc", handler=handler)
    first = q.add({"v": 1}, debounce=0.05, unique_key="k")
    with running(engine):
        assert started.wait(10)
        second = q.add({"v": 2}, debounce=0.05, unique_key="k")  # first is running: a new window
        assert second.id != first.id and second.data == {"v": 2}
        release.set()
        wait_until(lambda: len(seen) == 2)
    assert seen == [{"v": 1}, {"v": 2}]


def test_concurrent_adders_keep_one_job_with_one_of_their_payloads(engine: Engine):
    q = engine.queue("dr")
    barrier, ids = threading.Barrier(10), []

    def add(n: int) -> None:
        barrier.wait()
        ids.append(q.add({"n": n}, debounce=30, unique_key="k").id)

    threads = [threading.Thread(target=add, args=(n,)) for n in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(ids)) == 1 and engine.durable.count("queue_job:dr") == 1
    assert engine.durable.get("queue_job:dr", ids[0]).value["data"]["n"] in range(10)
    assert q.counts()["delayed"] == 1  # still signalled once, at its due time


def test_producers_in_two_processes_debounce_into_one_job(engine: Engine, mode: str):
    engine.queue("dp")
    if mode == "memory":
        rows = debounce_in_threads(engine, "dp", 10, threading.Barrier(10), 30, 0)
    else:
        rows = add_in_processes(engine.config, "dp", processes=2, threads=5, window=30, pause=0, kind="debounce")
    assert len(rows) == 10 and len({job_id for _, job_id, _ in rows}) == 1
    [job_id] = {job_id for _, job_id, _ in rows}
    stored = engine.durable.get("queue_job:dp", job_id).value
    assert engine.durable.count("queue_job:dp") == 1 and stored["status"] == "delayed"
    # The stored payload is the one of the add that returned last holding it: some producer's.
    assert str(stored["data"]["n"]) in {payload for _, _, payload in rows}
    assert engine.queue("dp").counts()["delayed"] == 1


def test_add_bulk_debounces_item_by_item(engine: Engine):
    q = engine.queue("dbk")
    item = {"debounce": 30, "unique_key": "k", "run_at": None, "delay": None}  # None is no option
    jobs = q.add_bulk([{"data": 1, **item}, 2, {"data": 3, **item}])
    assert jobs[0].id == jobs[2].id and [j.data for j in jobs] == [1, 2, 3]
    assert engine.durable.get("queue_job:dbk", jobs[0].id).value["data"] == 3
