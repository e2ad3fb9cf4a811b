"""20,000 runs replayed and 20,000 webhook deliveries resent by tracked operations in
Postgres, the runs seeded with one INSERT ... SELECT each (not the engine's per-run
path): no 1,000-item cap, every item once, and a page of the 20,000-pair replay set read
without reading the other pairs. Slow (seeding and 20 chunks each): marked so CI's quick
runs leave it out, as the 200,000 dead letters' test (test_scale.py)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from oqronkit import Engine
from oqronkit.clock import now_ms
from oqronkit.namespaces import job_namespace
from oqronkit.operations import OperationRunner, Operations
from oqronkit.replay import read_replay_set
from tests.engine.queue.conftest import built_engine

from .seeds import webhook

COUNT = 20_000
SEED = """
INSERT INTO oqron_runs (project, environment, namespace, record_kind, id, value, inserted_at, expires_at)
SELECT %(project)s, %(environment)s, 'runs', 'run', 'r' || lpad(g::text, 8, '0'),
       %(template)s::jsonb || jsonb_build_object(
           'id', 'r' || lpad(g::text, 8, '0'), 'jobId', %(job_prefix)s || lpad(g::text, 8, '0') || %(job_suffix)s,
           'startedAt', %(at)s::bigint - g, 'endedAt', %(at)s::bigint - g + 5,
           'input', CASE WHEN %(delivery)s THEN %(template)s::jsonb -> 'input' || jsonb_build_object(
                        'messageId', 'm' || lpad(g::text, 8, '0')) ELSE jsonb_build_object('n', g) END,
           'messageId', 'm' || lpad(g::text, 8, '0')),
       %(at)s::bigint, NULL
FROM generate_series(1, %(count)s) AS g
"""
QUEUE_RUN = {"name": "pricing", "module": "queue", "trigger": "queue", "status": "completed", "attempts": 1,
             "output": {"ok": True}, "error": None, "logs": [], "timeline": [], "app": "test", "environment": "test",
             "workerId": "w", "durationMs": 5, "progressPercent": 100, "input": None}


@pytest.fixture
def pg_engine(request: pytest.FixtureRequest, tmp_path, scope_names) -> Iterator[Engine]:
    with built_engine("postgres", request, tmp_path, scope_names[0]) as eng:
        yield eng


def seed(engine: Engine, template: dict, *, job_prefix: str, job_suffix: str = "", delivery: bool = False) -> None:
    import psycopg

    assert engine.config.database_url is not None
    assert engine.durable.count(kind="run") == 0  # the engine creates its tables first
    with psycopg.connect(engine.config.database_url, autocommit=True) as conn:
        conn.execute(SEED, {"project": engine.config.project, "environment": engine.config.environment,
                            "template": json.dumps(template), "job_prefix": job_prefix, "job_suffix": job_suffix,
                            "delivery": delivery, "at": now_ms() - 1000, "count": COUNT})
        conn.execute("ANALYZE oqron_runs")


@pytest.mark.slow
def test_a_replay_operation_takes_all_20k_runs_and_its_set_pages(pg_engine: Engine) -> None:
    pg_engine.queue("pricing", handler=lambda ctx: {"ok": True}, replayable=True)
    seed(pg_engine, QUEUE_RUN, job_prefix="j")
    ops = Operations(pg_engine)
    op = ops.create_replay(user="ann", handler="pricing")
    started = time.monotonic()
    OperationRunner(pg_engine, owner="w1").drain()
    elapsed = time.monotonic() - started
    done = ops.get(op.id)
    assert (done.status, done.progress.done, done.progress.failed, done.progress.skipped) == ("done", COUNT, 0, 0)
    assert pg_engine.durable.count(job_namespace("pricing")) == COUNT
    timings = []
    for page in (1, 10, 20):
        at = time.monotonic()
        found = read_replay_set(pg_engine, op.replay_set, page=page)  # type: ignore[arg-type]
        timings.append(time.monotonic() - at)
        assert found is not None and (found.page, found.pages, found.count) == (page, 20, COUNT)
        assert len(found.pairs) == 1000 and found.summary["pending"] == COUNT
    print(f"replay of {COUNT:,} runs: {elapsed:.1f} s in {done.progress.chunks} chunks; "
          f"a page of its set read in {', '.join(f'{t * 1000:.0f}' for t in timings)} ms")


@pytest.mark.slow
def test_a_resend_operation_sends_all_20k_deliveries_once(pg_engine: Engine) -> None:
    hook = webhook(pg_engine)
    data = {"webhook": "billing", "event": "order.paid", "endpointId": "crm", "messageId": "",
            "firedAt": now_ms() - 60_000, "data": {"order": 7}}
    delivery_run = {**QUEUE_RUN, "name": hook.queue.name, "module": "webhook", "trigger": "webhook",
                    "webhook": "billing", "event": "order.paid", "endpointId": "crm", "input": data}
    seed(pg_engine, delivery_run, job_prefix="m", job_suffix="@crm", delivery=True)
    ops = Operations(pg_engine)
    op = ops.create_resend(user="ann", since=now_ms() - 3_600_000, webhook="billing")
    started = time.monotonic()
    OperationRunner(pg_engine, owner="w1").drain()
    elapsed = time.monotonic() - started
    done = ops.get(op.id)
    assert (done.status, done.progress.done, done.progress.failed) == ("done", COUNT, 0), done.progress.errors[:2]
    assert pg_engine.durable.count(job_namespace(hook.queue.name)) == COUNT
    print(f"resend of {COUNT:,} deliveries: {elapsed:.1f} s in {done.progress.chunks} chunks")
