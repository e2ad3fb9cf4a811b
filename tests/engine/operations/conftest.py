"""Engines on every mode with both planes (the queue suite's, but the cluster) and dead
letters made through the engine's own path."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from oqronkit import Engine
from oqronkit.namespaces import dlq_namespace
from tests.engine.queue.conftest import built_engine

MODES = ["memory", "sqlite", "postgres", "redis-postgres", "redis"]


@pytest.fixture(params=MODES)
def engine(request: pytest.FixtureRequest, tmp_path, scope_names) -> Iterator[Engine]:
    with built_engine(request.param, request, tmp_path, scope_names[0]) as eng:
        yield eng


def make_dead(engine: Engine, queue: str, count: int, *, reason: str = "boom") -> list[str]:
    """``count`` dead letters in ``queue``: added, cancelled while pending, then given the
    last error a failed handler leaves (``reason``), which the search filter reads."""
    q = engine.queue(queue)
    ids = [job.id for job in q.add_bulk([{"n": n} for n in range(count)])]
    for job_id in ids:
        assert q.cancel(job_id, reason=reason)
        dead = engine.durable.get(dlq_namespace(queue), job_id)
        assert dead is not None
        error = {"type": "RuntimeError", "message": reason}
        engine.durable.put(dlq_namespace(queue), job_id, {**dead.value, "lastError": error, "errors": [error]})
    return ids
