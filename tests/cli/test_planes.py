"""``oqron planes`` (exit 1 while the planes disagree) and ``oqron reconcile`` (repairs,
audited), on the sqlite and postgres modes, whose hot tables can lose entries."""

from __future__ import annotations

import json

from oqronkit import Engine
from oqronkit.clock import now_ms
from tests.cli.conftest import audit_entries, cli
from tests.lost_jobs import lose_from_hot


def lose(engine: Engine, queue: str, n: int) -> list[str]:
    engine.durable.put("queue", queue, {"name": queue, "paused": False, "updatedAt": now_ms()})
    return lose_from_hot(engine, queue, n)


def test_planes_reports_the_drift_and_reconcile_repairs_it(engine: Engine):
    lost = lose(engine, "mail", 2)
    drift = cli(engine, "planes", "--json")
    assert drift.code == 1
    doc = json.loads(drift.out)
    [row] = doc["items"]
    assert doc["ok"] is False and row["queue"] == "mail" and row["unsignalled"] == 2
    assert set(row["unsignalled_ids"]) == set(lost) and doc["cost"]["calls"] > 0
    human = cli(engine, "planes")
    assert "UNSIGNALLED" in human.out and "The planes disagree" in human.out and human.code == 1

    repaired = cli(engine, "reconcile", "--json", user="carol")
    assert repaired.code == 0, repaired.err
    doc = json.loads(repaired.out)
    assert doc["repaired"] == {"signalled": 2} and {item["id"] for item in doc["items"]} == set(lost)
    [entry] = [e for e in audit_entries(engine) if e["action"] == "reconcile"]
    assert entry["user"] == "carol" and entry["source"] == "cli" and entry["ok"] is True
    assert engine.hot.present("mail", lost) == set(lost)

    clean = cli(engine, "planes")
    assert clean.code == 0 and "The planes agree." in clean.out
    assert "last reconcile pass by cli:carol: checked 2, repaired 2" in clean.out
    assert cli(engine, "planes", "--queue", "other", "--json").code == 0
    assert "nothing to repair" in cli(engine, "reconcile").out
