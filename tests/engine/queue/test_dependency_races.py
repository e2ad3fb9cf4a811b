"""Two parents of one child finishing at the same time: each removes itself from the
child's pending list under a compare-and-set, so neither removal is lost."""

from __future__ import annotations

import pytest

from oqronkit import Engine
from oqronkit.queues.dependencies import resolve_child


def test_parents_finishing_together_both_release_the_child(engine: Engine, monkeypatch: pytest.MonkeyPatch):
    q = engine.queue("fan-in")
    a, b = q.add("a", delay=600), q.add("b", delay=600)
    child = q.add("c", depends_on=[a, b])
    get = engine.durable.get
    interleaved: list[str] = []

    def get_then_other_parent_finishes(namespace: str, id: str):
        record = get(namespace, id)
        if id == child.id and not interleaved:  # b's resolution lands between a's read and write
            interleaved.append(id)
            resolve_child(engine.durable, engine.hot, "fan-in", child.id, ["fan-in", b.id], "completed")
        return record

    monkeypatch.setattr(engine.durable, "get", get_then_other_parent_finishes)
    resolve_child(engine.durable, engine.hot, "fan-in", child.id, ["fan-in", a.id], "completed")
    monkeypatch.setattr(engine.durable, "get", get)
    stored = engine.durable.get("queue_job:fan-in", child.id).value
    assert interleaved and stored["pendingDependencies"] == []
    assert stored["status"] == "waiting"
