"""The read commands against known seeded state, in SQLite and Postgres: the human
table and the --json document, filters, caps and bad arguments."""

from __future__ import annotations

import json

from oqronkit.cli.output import MAX_CELL, relative, truncate
from oqronkit.clock import now_ms
from oqronkit.live import publish_worker

from .conftest import Seeded, cli


def test_queues_table_and_json(engine, seeded: Seeded):
    human = cli(engine, "queues")
    assert human.code == 0, human.err
    lines = human.out.splitlines()
    assert lines[0].split() == ["NAME", "PAUSED", "WAITING", "DELAYED", "ACTIVE", "DEAD", "WORKERS", "HANDLER"]
    assert lines[1].split() == ["emails", "no", "2", "1", "0", "3", "0", "shop.jobs.send_email"]
    assert lines[2].split() == ["reports", "no", "0", "0", "0", "1", "0", "-"]
    assert lines[0].index("WAITING") == lines[1].index("2")  # aligned columns
    doc = json.loads(cli(engine, "queues", "--json").out)
    assert doc["command"] == "queues" and doc["ok"] is True and doc["count"] == 2
    assert doc["items"][0] == {"name": "emails", "paused": False, "waiting": 2, "delayed": 1, "active": 0,
                               "dead": 3, "workers": 0, "handler": "shop.jobs.send_email", "concurrency": 5,
                               "has_record": True}
    assert doc["notes"] == ["no worker consumes emails: its jobs wait"]
    only = json.loads(cli(engine, "queues", "--queue", "reports", "--json").out)
    assert [q["name"] for q in only["items"]] == ["reports"]


def test_queues_count_live_workers(engine, seeded: Seeded):
    publish_worker(engine.hot, {"id": "w-1", "host": "box", "pid": 1, "queues": {"emails": 5}, "inflight": 0,
                                "startedAt": now_ms(), "heartbeatAt": now_ms()})
    doc = json.loads(cli(engine, "queues", "--json").out)
    assert [(q["name"], q["workers"]) for q in doc["items"]] == [("emails", 1), ("reports", 0)]
    assert "notes" not in doc
    human = cli(engine, "queues")
    assert "note:" not in human.out and human.out.splitlines()[1].split()[6] == "1"


def test_runs_newest_first_with_filters(engine, seeded: Seeded):
    doc = json.loads(cli(engine, "runs", "--json").out)
    assert [r["id"] for r in doc["items"]] == ["r-bad", "r-ok", "r-old"]
    assert doc["items"][0]["error"] == "TimeoutError: timeout" and doc["items"][0]["status"] == "failed"
    assert set(doc["items"][0]) == {"id", "status", "module", "name", "queue", "job_id", "attempts", "worker_id",
                                    "started_at", "ended_at", "duration_ms", "error"}
    assert [r["id"] for r in json.loads(cli(engine, "runs", "--status", "completed", "--json").out)["items"]] \
        == ["r-ok", "r-old"]
    assert [r["id"] for r in json.loads(cli(engine, "runs", "--queue", "emails", "--since", "1h",
                                            "--json").out)["items"]] == ["r-ok"]
    limited = json.loads(cli(engine, "runs", "--limit", "1", "--json").out)
    assert [r["id"] for r in limited["items"]] == ["r-bad"] and limited["more"] is True
    assert [r["id"] for r in json.loads(cli(engine, "runs", "--job", "job-r-ok", "--json").out)["items"]] == ["r-ok"]
    by_worker = json.loads(cli(engine, "runs", "--worker", "worker-1", "--limit", "2", "--json").out)
    assert [r["id"] for r in by_worker["items"]] == ["r-bad", "r-ok"] and by_worker["more"] is True
    assert json.loads(cli(engine, "runs", "--worker", "worker-9", "--json").out)["count"] == 0
    searched = json.loads(cli(engine, "runs", "--search", "TIMEOUT", "--json").out)
    assert [r["id"] for r in searched["items"]] == ["r-bad"] and "failed runs" in searched["notes"][0]
    human = cli(engine, "runs", "--limit", "2")
    assert human.out.splitlines()[0].split()[:3] == ["STARTED", "AT", "STATUS"]
    assert "4m ago (" in human.out and "note: more runs match" in human.out


def test_dead_letters_filters(engine, seeded: Seeded):
    doc = json.loads(cli(engine, "dead", "--json").out)
    assert [(d["queue"], d["id"]) for d in doc["items"]] == [
        ("emails", "d-key"), ("emails", "d-boom-2"), ("emails", "d-boom-1"), ("reports", "d-report")]
    boom = doc["items"][1]
    assert boom["error_type"] == "ValueError" and boom["error_message"] == "boom" and boom["attempts"] == 3
    by_print = json.loads(cli(engine, "dead", "--fingerprint", boom["fingerprint"], "--json").out)["items"]
    assert [d["id"] for d in by_print] == ["d-boom-2", "d-boom-1"]
    assert [d["id"] for d in json.loads(cli(engine, "dead", "--queue", "reports", "--json").out)["items"]] \
        == ["d-report"]
    assert [d["id"] for d in json.loads(cli(engine, "dead", "--search", "SKU", "--json").out)["items"]] == ["d-key"]
    assert [d["id"] for d in json.loads(cli(engine, "dead", "--since", "1h", "--limit", "2",
                                            "--json").out)["items"]] == ["d-key", "d-boom-2"]
    human = cli(engine, "dead", "--queue", "emails").out.splitlines()
    assert human[0].split() == ["DIED", "AT", "QUEUE", "ID", "ATTEMPTS", "ERROR", "FINGERPRINT"]
    assert "KeyError: 'sku' missing" in human[1] and "1m ago (20" in human[1]
    assert cli(engine, "dead", "--queue", "nothing-here").out == "(none)\n"


def test_dead_letter_groups(engine, seeded: Seeded):
    doc = json.loads(cli(engine, "dead", "--groups", "--json").out)
    assert [(g["error"], g["count"], g["queues"]) for g in doc["items"]] == [
        ("KeyError: 'sku' missing", 1, ["emails"]), ("ValueError: boom", 2, ["emails"]),
        ("TimeoutError: timeout", 1, ["reports"])]
    boom = doc["items"][1]
    assert boom["last_died_at"] > boom["first_died_at"] and doc["groups"] is True
    human = cli(engine, "dead", "--groups", "--queue", "emails").out.splitlines()
    assert human[0].split() == ["LAST", "DIED", "AT", "COUNT", "FINGERPRINT", "QUEUES", "ERROR"]
    assert human[2].split()[3:5] == ["2", boom["fingerprint"]] and human[2].endswith("emails  ValueError: boom")


def test_schedules(engine, seeded: Seeded):
    doc = json.loads(cli(engine, "schedules", "--json").out)
    assert doc["count"] == 1
    row = doc["items"][0]
    assert (row["kind"], row["name"], row["paused"], row["done"]) == ("cron", "nightly", False, False)
    assert isinstance(row["next_run_at"], int) and row["timing"]
    human = cli(engine, "schedules").out.splitlines()
    assert human[1].split()[:4] == ["cron", "nightly", "no", "no"] and " (20" in human[1]


def test_bad_arguments_are_usage_errors(engine, capsys):
    for argv in (["runs", "--limit", "0"], ["runs", "--limit", "1001"], ["runs", "--status", "nope"],
                 ["dead", "--since", "yesterday"], ["queues", "--queue", "a:b"], ["frobnicate"],
                 ["promote"], ["purge"]):
        outcome = cli(engine, *argv)
        assert outcome.code == 2, argv
    assert "must be an integer from 1 to 1,000" in capsys.readouterr().err


def test_cells_are_truncated_and_times_relative():
    long = "x" * 200
    assert len(truncate(long)) == MAX_CELL and truncate(long).endswith("…")
    assert truncate("a\x1b[31mb") == "a?[31mb"  # no escape sequence reaches the terminal
    assert relative(1_000, 61_000) == "1m ago" and relative(7_200_000, 0) == "in 2h" and relative(5, 5) == "now"
