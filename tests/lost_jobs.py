"""Jobs the hot plane lost: stored long ago (past the drift report's grace), their hot
entries gone as after a flush. Shared by the board's and the CLI's plane drift tests."""

from __future__ import annotations

from oqronkit import Engine
from oqronkit.clock import now_ms
from oqronkit.namespaces import job_namespace


def lose_from_hot(engine: Engine, queue: str, n: int) -> list[str]:
    """Add ``n`` jobs to ``queue``, age them a minute, drop their hot entries; their ids."""
    ids = []
    for i in range(n):
        job = engine.queue(queue).add({"i": i})
        record = engine.durable.get(job_namespace(queue), job.id)
        assert record is not None
        engine.durable.put(job_namespace(queue), job.id, {**record.value, "updatedAt": now_ms() - 60_000})
        ids.append(job.id)
    engine.hot.remove(queue, ids)
    return ids
