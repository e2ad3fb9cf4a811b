"""A 1,000-member group through a SIGKILLed worker and a FLUSHALL (redis-postgres): the
callback is enqueued once, runs once, and reads every member's output."""

from __future__ import annotations

import signal
import time

import pytest

from oqronkit import Engine, Registry, get_group
from tests.dedicated import dedicated_redis
from tests.engine.queue.conftest import wait_until
from tests.processes.test_faults import all_runs, fleet, make_config

pytestmark = pytest.mark.slow
MEMBERS = 1000


def test_a_1000_member_group_fires_once_through_sigkill_and_flushall(tmp_path, scope_names, pg_schema_url):
    with dedicated_redis() as redis_server:
        engine = Engine(make_config(pg_schema_url, redis_server.url, scope_names[0]), registry=Registry())
        try:
            engine.queue("members")
            engine.queue("finished")
            gid = engine.group([("members", {"i": i, "ms": 15}) for i in range(MEMBERS)],
                               on_complete=("finished", None), on_failure=("finished", None), name="thousand")
            with fleet(engine.config, tmp_path, app="tests.processes.group_app") as workers:
                victim = workers.spawn()
                workers.spawn()
                left = lambda: engine.durable.count("queue_job:members")  # noqa: E731
                wait_until(lambda: left() <= 750, timeout=30, interval=0.02)
                victim.send_signal(signal.SIGKILL)  # mid-job: its leased members come back
                killed_at = left()
                workers.spawn()
                wait_until(lambda: left() <= 400, timeout=30, interval=0.02)
                redis_server.flushall()  # the hot plane forgets queues, leases and the leader
                flushed_at = left()
                try:
                    wait_until(lambda: get_group(gid, engine=engine).status == "completed", timeout=40, interval=0.2)
                    callback = f"{gid}:onComplete"
                    wait_until(lambda: any(r["jobId"] == callback and r["status"] == "completed"
                                           for r in all_runs(engine)), timeout=20, interval=0.2)
                    time.sleep(1.0)  # a late second run would show now
                except AssertionError:
                    pytest.fail(f"group {get_group(gid, engine=engine)}; {left()} member(s) left\n{workers.logs()}")
            runs = [r for r in all_runs(engine) if r["jobId"] == callback]
            assert [r["status"] for r in runs] == ["completed"], runs
            assert runs[0]["output"] == {"completed": MEMBERS, "indexes": list(range(MEMBERS))}
            assert engine.durable.get("queue_job:finished", f"{gid}:onFailure") is None
            print(f"\n1,000-member group: SIGKILL with {killed_at} left, FLUSHALL with {flushed_at} left; "
                  "callback ran once with every output")
        finally:
            engine.close()
