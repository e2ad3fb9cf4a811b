"""A runner process killed (SIGKILL) in the middle of an operation, wherever it was (in a
chunk's write, between the write and its signals, between chunks), and another runner
resuming: every dead letter retried exactly once, none skipped, counts exact, and the
reconciler signals whatever the killed chunk never did. Then the leader's own service
(a worker process) running an operation to the end."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from oqronkit import Engine
from oqronkit.clock import now_ms
from oqronkit.namespaces import dlq_namespace, job_namespace
from oqronkit.operations import OperationRunner, Operations
from oqronkit.services.reconciler import Reconciler
from tests.engine.queue.conftest import built_engine, fast_services, running, wait_until

from .conftest import make_dead

COUNT = 60
RUNNER = """
import os, time
from oqronkit import Engine, OqronConfig, Registry
from oqronkit.operations import OperationRunner
config = OqronConfig(mode="postgres", database_url=os.environ["T_URL"], project=os.environ["T_PROJECT"])
engine = Engine(config, registry=Registry())
# Slow chunks, so the kill lands mid-operation: a pause after each write, before its signals.
OperationRunner(engine, owner="doomed", chunk=4, lock_ttl_ms=300, after_write=lambda op: time.sleep(0.03)).drain()
"""


@pytest.fixture
def pg_engine(request: pytest.FixtureRequest, tmp_path, scope_names) -> Iterator[Engine]:
    with built_engine("postgres", request, tmp_path, scope_names[0]) as eng:
        yield eng


@pytest.mark.slow  # a real process, killed: about 20 s on the shared machine
def test_a_killed_runner_process_is_resumed_exactly(pg_engine: Engine) -> None:
    ids = make_dead(pg_engine, "killed", COUNT)
    ops = Operations(pg_engine)
    op = ops.create("retry", user="ann", queue="killed")
    env = {**os.environ, "T_URL": pg_engine.config.database_url or "", "T_PROJECT": pg_engine.config.project}
    child = subprocess.Popen([sys.executable, "-c", RUNNER], env=env)
    try:
        wait_until(lambda: ops.get(op.id).progress.done >= 12, timeout=60)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    stopped = ops.get(op.id)
    assert stopped.status == "running" and 12 <= stopped.progress.done < COUNT
    time.sleep(0.4)  # the killed runner's lock lapses
    OperationRunner(pg_engine, owner="heir", chunk=4).drain()
    done = ops.get(op.id)
    assert (done.status, done.progress.done, done.progress.failed, done.progress.skipped) == ("done", COUNT, 0, 0)
    assert pg_engine.durable.count(dlq_namespace("killed")) == 0
    assert {r.id for r in pg_engine.durable.list(job_namespace("killed"), limit=1000).records} == set(ids)
    reconciler = Reconciler(pg_engine)
    reconciler.run(["killed"])
    reconciler.run(["killed"])  # two passes: a job is re-signalled when missing on both
    assert pg_engine.hot.depths("killed", now_ms()).ready == COUNT


def test_the_leaders_service_runs_an_operation(pg_engine: Engine) -> None:
    make_dead(pg_engine, "served", 7)
    ops = Operations(pg_engine)
    op = ops.create("delete", user="ann", queue="served")
    with running(pg_engine) as process:
        fast_services(process)
        wait_until(lambda: ops.get(op.id).status == "done", timeout=30)
    assert ops.get(op.id).progress.done == 7 and pg_engine.durable.count(dlq_namespace("served")) == 0
