"""200,000 dead letters in Postgres, seeded with one INSERT ... SELECT (not the engine's
per-job path), all retried or all deleted by one tracked operation: no 1,000-item cap.

Slow: on the shared 2-core test machine the delete took 37 s and the retry 82 s (201
chunks of 1,000; reading each chunk's values is most of it), plus about 35 s of seeding."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from oqronkit import Engine
from oqronkit.clock import now_ms
from oqronkit.namespaces import dlq_namespace, job_namespace
from oqronkit.operations import OperationRunner, Operations
from tests.engine.queue.conftest import built_engine

COUNT = 200_000
# What a dead letter holds (a job cancelled while pending: tests/engine/operations/conftest.py).
TEMPLATE = {
    "data": {"n": 1}, "lifo": False, "tags": [], "runAt": None, "errors": [], "stalls": 0, "status": "dead",
    "backoff": {"type": "exponential", "delayMs": 2000, "maxMs": 60000, "jitter": 0.2}, "groupId": None,
    "attempts": 4, "priority": 0, "workerId": None, "blockedBy": None, "dependsOn": [],
    "lastError": {"type": "RuntimeError", "message": "card declined"}, "startedAt": None, "timeoutMs": None,
    "deadReason": "retries exhausted", "dependents": [], "leaseToken": None, "maxAttempts": 4, "currentRunId": None,
    "stalledToken": None, "traceContext": None, "correlationId": None, "parentFailure": "block",
    "cancelRequested": False, "errorFingerprint": "f00d", "pendingDependencies": [],
}
SEED = """
INSERT INTO oqron_jobs (project, environment, namespace, record_kind, id, value, inserted_at, expires_at)
SELECT %(project)s, %(environment)s, %(namespace)s, 'dlq', lpad(g::text, 8, '0'),
       %(template)s::jsonb || jsonb_build_object('id', lpad(g::text, 8, '0'), 'queue', %(queue)s::text,
                                                  'createdAt', %(at)s::bigint - 60000, 'updatedAt', %(at)s::bigint - g,
                                                  'diedAt', %(at)s::bigint - g),
       %(at)s::bigint, NULL
FROM generate_series(1, %(count)s) AS g
"""


@pytest.fixture
def pg_engine(request: pytest.FixtureRequest, tmp_path, scope_names) -> Iterator[Engine]:
    with built_engine("postgres", request, tmp_path, scope_names[0]) as eng:
        yield eng


def seed(engine: Engine, queue: str) -> None:
    import psycopg

    assert engine.durable.count(dlq_namespace(queue)) == 0  # the engine creates its tables first
    with psycopg.connect(request_url(engine), autocommit=True) as conn:
        conn.execute(SEED, {"project": engine.config.project, "environment": engine.config.environment,
                            "namespace": dlq_namespace(queue), "queue": queue, "template": json.dumps(TEMPLATE),
                            "at": now_ms() - 1000, "count": COUNT})
        conn.execute("ANALYZE oqron_jobs")


def request_url(engine: Engine) -> str:
    assert engine.config.database_url is not None
    return engine.config.database_url


@pytest.mark.slow
@pytest.mark.parametrize("action", ["delete", "retry"])
def test_an_operation_takes_all_200k_dead_letters(pg_engine: Engine, action: str) -> None:
    seed(pg_engine, "bulk")
    ops = Operations(pg_engine)
    op = ops.create(action, user="ann", queue="bulk")
    assert op.planned == COUNT
    started = time.monotonic()
    OperationRunner(pg_engine, owner="w1").drain()
    elapsed = time.monotonic() - started
    done = ops.get(op.id)
    assert (done.status, done.progress.done, done.progress.failed, done.progress.skipped) == ("done", COUNT, 0, 0)
    assert pg_engine.durable.count(dlq_namespace("bulk")) == 0
    assert pg_engine.durable.count(job_namespace("bulk")) == (COUNT if action == "retry" else 0)
    if action == "retry":
        assert pg_engine.hot.depths("bulk", now_ms()).ready == COUNT
    print(f"{action} of {COUNT:,} dead letters: {elapsed:.1f} s in {done.progress.chunks} chunks")
