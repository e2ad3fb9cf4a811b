"""``oqron history``: runs of a real worker rolled up (Engine.rollup_history) and read
back per queue as a table and as JSON, in SQLite and Postgres; a bad range exits 2."""

from __future__ import annotations

import json

from oqronkit.clock import now_ms
from oqronkit.history.rollup import LAG_MS
from oqronkit.namespaces import METRICS_STATE
from tests.engine.queue.conftest import running, wait_until

from .conftest import cli


def test_history_of_a_queue_after_a_real_worker(engine):
    def handler(ctx):
        if ctx.data["n"] % 4 == 0:
            raise ValueError("boom")
        return "ok"

    engine.queue("emails", handler=handler, retries=0)
    start = now_ms()
    engine.durable.put(METRICS_STATE, "rollup", {"next": start - start % 60_000})
    for n in range(8):
        engine.get_queue("emails").add({"n": n})
    with running(engine):
        wait_until(lambda: engine.durable.count("runs") == 8 and not engine.durable.count("queue_job:emails"))
    engine.rollup_history(now=now_ms() + 60_000 + LAG_MS)
    doc = json.loads(cli(engine, "history", "--queue", "emails", "--range", "1h", "--json").out)
    assert doc["ok"] and doc["resolution"] == "minute" and doc["totals"] == {"completed": 6, "failed": 2}
    busy = [item for item in doc["items"] if item["runs"]]
    assert sum(item["failed"] for item in busy) == 2 and all(item["wait_p95_ms"] is not None for item in busy)
    human = cli(engine, "history", "--queue", "emails", "--range", "1h")
    assert human.code == 0 and human.out.splitlines()[0].split()[:3] == ["STARTED", "AT", "RUNS"]
    assert "6 completed" in human.out and "2 failed" in human.out and "note: deploy " in human.out
    assert cli(engine, "history", "--range", "2h").code == 2
