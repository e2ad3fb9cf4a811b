"""``oqron replay``: the deploy pipeline's regression check, against a running worker;
a run ids file longer than the cap becomes a tracked replay operation."""

from __future__ import annotations

import json

from oqronkit import Engine
from oqronkit.cli import replay as replay_command
from oqronkit.namespaces import RUNS
from oqronkit.operations import OperationRunner, Operations, replaying_ids
from tests.engine.queue.conftest import running, wait_until

from .conftest import audit_entries, cli


def completed(engine: Engine, queue: str) -> list[dict]:
    return [r.value for r in engine.durable.list(RUNS, name=queue, status="completed", limit=100).records]


def test_replay_exits_zero_when_identical_and_one_when_an_output_differs(engine: Engine):
    factor = {"n": 2}
    q = engine.queue("double", handler=lambda ctx: {"out": ctx.data * factor["n"]}, replayable=True)
    q.add_bulk([1, 2, 3])
    with running(engine):
        wait_until(lambda: len(completed(engine, "double")) == 3)
        same = cli(engine, "replay", "--handler", "double", "--last", "3", "--wait", "--json")
        assert same.code == 0, same.err
        doc = json.loads(same.out)
        assert doc["ok"] and doc["replay_set"]["summary"]["identical"] == 3 and doc["count"] == 3
        factor["n"] = 3
        differs = cli(engine, "replay", "--handler", "double", "--last", "2", "--wait")
        assert differs.code == 1
        assert "0 identical, 2 changed, 0 failed" in differs.out
        [original] = [r for r in completed(engine, "double") if r["input"] == 1 and "replayOf" not in r]
        one = cli(engine, "replay", "--run", original["id"], "--wait", "--json")
    assert one.code == 1 and json.loads(one.out)["replay_set"]["pairs"][0]["changes"] == [
        {"kind": "changed", "path": "$.out", "before": 2, "after": 3}]
    entry = audit_entries(engine, 1)[0]
    assert entry["action"] == "replay" and entry["source"] == "cli" and entry["user"] == "alice"
    assert entry["replaySet"] == json.loads(one.out)["replay_set"]["id"]
    again = cli(engine, "replay", "--set", entry["replaySet"])
    assert again.code == 1 and "0 identical, 1 changed, 0 failed" in again.out


def test_replay_refuses_a_handler_not_declared_replayable_and_names_it(engine: Engine):
    q = engine.queue("charge", handler=lambda ctx: {"charged": ctx.data})
    q.add(5)
    with running(engine):
        wait_until(lambda: completed(engine, "charge"))
    refused = cli(engine, "replay", "--handler", "charge", "--last", "10", "--wait")
    assert refused.code == 1 and "'charge' is not declared replayable=True" in refused.err
    assert cli(engine, "replay", "--handler", "charge", "--last", "0").code == 2
    assert cli(engine, "replay", "--set", "missing").code == 2


def test_a_run_ids_file_or_a_last_beyond_the_cap_is_a_tracked_replay(engine: Engine, tmp_path, monkeypatch):
    monkeypatch.setattr(replaying_ids, "MAX_REPLAYS", 2)  # the cap is 1,000: three ids stand for more
    q = engine.queue("double", handler=lambda ctx: {"out": ctx.data * 2}, replayable=True)
    q.add_bulk([1, 2, 3])
    ids_file = tmp_path / "ids.txt"
    with running(engine):
        wait_until(lambda: len(completed(engine, "double")) == 3)
        ids_file.write_text("\n".join(r["id"] for r in completed(engine, "double")) + "\n\n", encoding="utf-8")
        made = cli(engine, "replay", "--run-ids-file", str(ids_file), "--json")
        assert made.code == 0, made.err
        doc = json.loads(made.out)
        assert doc["replay_set"]["operation"] and doc["replay_set"]["selection"] == {"runIds": 3}
        entry = audit_entries(engine, 1)[0]
        assert entry["action"] == "operation-replay" and entry["operation"] == doc["replay_set"]["operation"]
        OperationRunner(engine, owner="test").drain()  # the leader's part
        waited = cli(engine, "replay", "--set", doc["replay_set"]["id"], "--wait", "--json")
    assert waited.code == 0, waited.out
    assert json.loads(waited.out)["replay_set"]["summary"]["identical"] == 3
    monkeypatch.setattr(replay_command, "MAX_REPLAYS", 2)
    last = cli(engine, "replay", "--handler", "double", "--last", "3", "--json")
    assert last.code == 0, last.err
    op = Operations(engine).get(json.loads(last.out)["replay_set"]["operation"])
    assert (op.target, op.filter.last) == ("runs", 3)  # type: ignore[union-attr]
    assert audit_entries(engine, 1)[0]["operation"] == op.id
    ids_file.write_text("\n", encoding="utf-8")
    assert cli(engine, "replay", "--run-ids-file", str(ids_file)).code == 2
    assert cli(engine, "replay", "--run-ids-file", str(tmp_path / "none.txt")).code == 2
