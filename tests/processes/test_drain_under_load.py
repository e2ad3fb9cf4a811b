"""Stopping a worker under sustained load (issue 25, item 1): a claim in flight when
the stop began landed after the held jobs were returned, so nobody ran or returned its
jobs; the stop then hung for the finisher's 30 s join and every such job was later
rescued as a stall, costing an attempt. Thirty stops in a row per mode, real Postgres
and Redis: each completes within the drain timeout plus 1 s, and afterwards no job holds
a lease (none is rescued) and no job that never started has an attempt counted."""

from __future__ import annotations

import threading
import time

import pytest

from oqronkit import Engine
from oqronkit.worker import WorkerProcess
from tests.engine.queue.conftest import MODES, built_engine

pytestmark = pytest.mark.slow
STOPS = 30
DRAIN_TIMEOUT = 1.0


@pytest.fixture(params=MODES)
def engine(request, tmp_path, scope_names):
    with built_engine(request.param, request, tmp_path, scope_names[0]) as eng:
        yield eng


def work(ctx):
    time.sleep(0.002)
    return {"n": ctx.data["n"]}


def test_thirty_stops_under_load_each_return_every_held_job_uncounted(engine: Engine):
    q = engine.queue("load", handler=work, concurrency=5, retries=0, lease=30.0)
    done = threading.Event()

    def produce() -> None:  # a few hundred jobs a second, for as long as the stops go on
        n = 0
        while not done.is_set():
            q.add_bulk([{"n": n + i} for i in range(20)])
            n += 20
            done.wait(0.05)

    producer = threading.Thread(target=produce, daemon=True)
    producer.start()
    times: list[float] = []
    try:
        for _ in range(STOPS):
            process = WorkerProcess(engine, services=False, poll_interval=0.2, drain_timeout=DRAIN_TIMEOUT)
            thread = threading.Thread(target=process.run, daemon=True)
            thread.start()
            time.sleep(0.3)
            began = time.monotonic()
            process.request_stop()
            thread.join(DRAIN_TIMEOUT + 30)
            times.append(time.monotonic() - began)
            assert not thread.is_alive(), "the stop hung"
            assert process.exit_code == 0
    finally:
        done.set()
        producer.join(10)
    worst = max(times)
    assert worst < DRAIN_TIMEOUT + 1.0, times
    counts = q.counts()
    assert counts["active"] == 0, counts  # no lease left for the rescuer to count as a stall
    jobs, cursor = [], None
    while True:
        page = engine.durable.list("queue_job:load", limit=1000, cursor=cursor)
        jobs += [r.value for r in page.records]
        if (cursor := page.next_cursor) is None:
            break
    counted = [j for j in jobs if j["attempts"] or j["stalls"] or j["status"] != "waiting"]
    assert counted == [], counted[:3]
    completed = engine.durable.count("runs")
    print(f"\n{engine.config.mode}: {STOPS} stops, worst {worst:.2f} s, median {sorted(times)[STOPS // 2]:.2f} s, "
          f"{completed} runs, {len(jobs)} jobs left waiting, 0 leases left (rescued: 0)")
