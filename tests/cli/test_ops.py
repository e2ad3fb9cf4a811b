"""``oqron ops``: create (confirmed for a delete), list, show, pause, resume, cancel and
``--wait`` with a runner doing the work beside it, on SQLite and Postgres; audited."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator

import pytest

from oqronkit import Engine
from oqronkit.namespaces import dlq_namespace, job_namespace
from oqronkit.operations import OperationRunner, Operations

from .conftest import Seeded, audit_entries, cli


@pytest.fixture
def runner(engine: Engine) -> Iterator[None]:
    """A leader's runner draining operations every 50 ms while the test runs."""
    stop = threading.Event()
    work = OperationRunner(engine, owner="test-leader", chunk=2)
    thread = threading.Thread(target=lambda: [work.drain() for _ in iter(lambda: stop.wait(0.05), True)], daemon=True)
    thread.start()
    yield
    stop.set()
    thread.join(timeout=10)


def test_create_retry_and_wait(engine: Engine, seeded: Seeded, runner: None):
    outcome = cli(engine, "ops", "create", "retry", "--queue", "emails", "--wait", "--timeout", "30", "--json")
    assert outcome.code == 0, outcome.err
    doc = json.loads(outcome.out)
    assert (doc["ok"], doc["status"], doc["counts"]["done"], doc["createdBy"]) == (True, "done", 3, "alice")
    assert engine.durable.count(dlq_namespace("emails")) == 0 and engine.durable.count(dlq_namespace("reports")) == 1
    assert {"d-boom-1", "d-boom-2", "d-key"} <= {r.id for r in engine.durable.list(job_namespace("emails")).records}
    entry = audit_entries(engine)[0]
    assert (entry["action"], entry["user"], entry["source"], entry["operation"]) == (
        "operation-retry", "alice", "cli", doc["id"])
    shown = cli(engine, "ops", "show", doc["id"])
    assert shown.code == 0 and "done: 3 done, 0 failed" in shown.out
    listed = json.loads(cli(engine, "ops", "list", "--json").out)
    assert [item["id"] for item in listed["items"]] == [doc["id"]]


def test_delete_needs_yes_without_a_terminal(engine: Engine, seeded: Seeded):
    refused = cli(engine, "ops", "create", "delete", "--queue", "emails")
    assert refused.code == 2 and "add --yes" in refused.err
    assert Operations(engine).list()[0] == [] and audit_entries(engine) == []
    done = cli(engine, "ops", "create", "delete", "--fingerprint", "f" * 16, "--name", "purge f", "--yes", "--json")
    assert done.code == 0 and json.loads(done.out)["filter"]["fingerprint"] == "f" * 16
    assert json.loads(done.out)["name"] == "purge f"


def test_pause_resume_cancel_and_refusals(engine: Engine, seeded: Seeded):
    op = json.loads(cli(engine, "ops", "create", "retry", "--json").out)
    paused = cli(engine, "ops", "pause", op["id"], "--json")
    assert paused.code == 0 and json.loads(paused.out)["status"] == "paused"
    again = cli(engine, "ops", "pause", op["id"])
    assert again.code == 1 and "is paused: it cannot pause" in again.err
    assert json.loads(cli(engine, "ops", "resume", op["id"], "--json").out)["status"] == "running"
    assert json.loads(cli(engine, "ops", "cancel", op["id"], "--json").out)["status"] == "cancelled"
    assert [e["action"] for e in audit_entries(engine)[:3]] == ["operation-cancel", "operation-resume",
                                                                "operation-pause"]
    assert cli(engine, "ops", "show", "nope").code == 1
    assert cli(engine, "ops", "show").code == 2
    assert cli(engine, "ops", "create", "explode").code == 2
    assert cli(engine, "ops", "show", op["id"], "--wait", "--timeout", "0").code == 0  # cancelled is finished
    waiting = json.loads(cli(engine, "ops", "create", "retry", "--queue", "nothing", "--json").out)
    slow = cli(engine, "ops", "show", waiting["id"], "--wait", "--timeout", "0")
    assert slow.code == 2 and "still running" in slow.err  # no runner here


def test_create_replay_and_resend(engine: Engine, runner: None):
    from oqronkit.namespaces import QUEUE
    from tests.engine.operations.seeds import delivery, seed_runs, webhook

    engine.durable.put(QUEUE, "pricing", {"name": "pricing", "replayable": True})  # as its workers declare it
    seed_runs(engine, "pricing", 5)
    replayed = cli(engine, "ops", "create", "replay", "--handler", "pricing", "--last", "3", "--since", "1h",
                   "--wait", "--timeout", "30", "--json")
    assert replayed.code == 0, replayed.err
    doc = json.loads(replayed.out)
    assert (doc["action"], doc["status"], doc["counts"]["done"], doc["filter"]["last"]) == ("replay", "done", 3, 3)
    assert doc["replaySet"] and engine.durable.count(job_namespace("pricing")) == 3
    entry = audit_entries(engine)[0]
    assert (entry["action"], entry["source"], entry["replaySet"]) == ("operation-replay", "cli", doc["replaySet"])
    read = cli(engine, "replay", "--set", doc["replaySet"], "--page", "1", "--json")
    shown = json.loads(read.out)["replay_set"]
    assert (shown["page"], shown["pages"], shown["count"], shown["operation"]) == (1, 2, 3, doc["id"])  # chunks of 2
    assert cli(engine, "replay", "--set", doc["replaySet"], "--page", "0").code == 2
    hook = webhook(engine)
    dead = delivery(hook, end="dead")
    resent = cli(engine, "ops", "create", "resend", "--webhook", "billing", "--run-status", "failed", "--wait",
                 "--json")
    assert resent.code == 0, resent.err
    assert json.loads(resent.out)["counts"]["done"] == 1 and engine.durable.count(dlq_namespace(hook.queue.name)) == 0
    assert dead in {r.id for r in engine.durable.list(job_namespace(hook.queue.name)).records}
    assert cli(engine, "ops", "create", "replay").code == 2  # --handler is missing
    refused = cli(engine, "ops", "create", "replay", "--handler", "plain")
    assert refused.code != 0 and "not declared replayable" in refused.err
