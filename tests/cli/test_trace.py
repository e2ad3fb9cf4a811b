"""``oqron trace <id>``: a correlation id's timeline, indented by cause, from a real
worker run in SQLite and Postgres; --json; exit 1 for an id nothing carries."""

from __future__ import annotations

import json

from oqronkit import correlate
from tests.engine.queue.conftest import running, wait_until

from .conftest import cli


def test_trace_of_a_handler_that_enqueued_another_job(engine):
    engine.queue("emails", handler=lambda ctx: "sent")
    engine.queue("checkout", handler=lambda ctx: engine.get_queue("emails").add({"to": "a@x"}).id)
    with correlate("cli-order-1"):
        engine.get_queue("checkout").add({"cart": 1})
    with running(engine):
        wait_until(lambda: [e.status for e in engine.trace("cli-order-1").entries] == ["completed", "completed"])
    human = cli(engine, "trace", "cli-order-1")
    assert human.code == 0, human.err
    lines = human.out.splitlines()
    assert lines[0].split()[:4] == ["OFFSET", "MS", "ENTRY", "NAME"]
    assert len(lines) == 3 and lines[1].split()[1:4] == ["run", "checkout", "completed"]
    assert lines[2].split()[1:5] == ["└", "run", "emails", "completed"]  # under the run that added it
    doc = json.loads(cli(engine, "trace", "cli-order-1", "--json").out)
    assert doc["ok"] is True and doc["correlation_id"] == "cli-order-1" and doc["truncated"] is False
    first, second = doc["items"]
    assert second["parent"] == first["key"] and (first["depth"], second["depth"]) == (0, 1)


def test_an_unknown_id_exits_1_and_a_bad_limit_2(engine):
    missing = cli(engine, "trace", "nobody")
    assert missing.code == 1 and "carries 'nobody'" in missing.out + missing.err
    assert cli(engine, "trace", "x", "--limit", "0").code == 2
