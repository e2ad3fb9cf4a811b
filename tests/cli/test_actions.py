"""The action commands against known seeded state, in SQLite and Postgres: what they
change, their confirmations (``--yes`` without a terminal), caps and audit records."""

from __future__ import annotations

import json

import pytest

from oqronkit.namespaces import dlq_namespace, job_namespace

from .conftest import Seeded, audit_entries, cli


def test_retry_named_dead_letters_is_audited(engine, seeded: Seeded):
    outcome = cli(engine, "retry", "emails:d-boom-1", "emails:nope", "--json")
    assert outcome.code == 0, outcome.err
    doc = json.loads(outcome.out)
    assert (doc["ok"], doc["matched"], doc["retried"]) == (True, 2, 1)
    assert doc["message"] == "Retried 1 of 2 dead letter(s)."
    assert doc["items"] == [{"queue": "emails", "id": "d-boom-1", "ok": True, "message": "retried"},
                            {"queue": "emails", "id": "nope", "ok": False,
                             "message": "not a dead letter (any more)"}]
    assert engine.durable.get(job_namespace("emails"), "d-boom-1").value["status"] == "waiting"
    entry = audit_entries(engine)[0]
    assert entry["id"] == doc["audit_id"]
    assert (entry["user"], entry["source"], entry["action"], entry["ok"]) == ("alice", "cli", "retry", True)
    assert entry["ids"] == ["emails/d-boom-1", "emails/nope"] and entry["mode"] == "ids"
    assert entry["project"] == engine.config.project and entry["host"]
    # the job's own audit trail, which its board page lists
    assert engine.durable.get("audit:job:emails:d-boom-1", entry["id"]) is not None
    human = cli(engine, "retry", "emails:d-boom-2")
    assert human.code == 0 and human.out.splitlines() == [
        "QUEUE   ID        OK   MESSAGE", "emails  d-boom-2  yes  retried", "Retried 1 of 1 dead letter(s)."]


def test_retry_all_needs_yes_without_a_terminal(engine, seeded: Seeded):
    refused = cli(engine, "retry", "--all", "--queue", "emails")
    assert refused.code == 2 and "add --yes" in refused.err and refused.out == ""
    assert engine.durable.count(dlq_namespace("emails")) == 3 and audit_entries(engine) == []
    declined = cli(engine, "retry", "--all", "--queue", "emails", tty=True, answer="n\n")
    assert declined.code == 1 and "Retry 3 dead letter(s) matching queue=emails?" in declined.err
    assert engine.durable.count(dlq_namespace("emails")) == 3
    done = cli(engine, "retry", "--all", "--queue", "emails", tty=True, answer="yes\n")
    assert done.code == 0 and "Retried 3 of 3 dead letter(s)." in done.out
    assert engine.durable.count(dlq_namespace("emails")) == 0
    assert engine.durable.count(dlq_namespace("reports")) == 1
    assert audit_entries(engine)[0]["mode"] == "matching"


def test_delete_asks_even_for_named_ones(engine, seeded: Seeded):
    refused = cli(engine, "delete", "emails:d-key")
    assert refused.code == 2 and "Delete 1 dead letter(s) for good?" in refused.err
    assert engine.durable.get(dlq_namespace("emails"), "d-key") is not None
    done = cli(engine, "delete", "emails:d-key", "--yes")
    assert done.code == 0 and done.out.splitlines()[-1] == "Deleted 1 of 1 dead letter(s)."
    assert done.out.splitlines()[0].split() == ["QUEUE", "ID", "OK", "MESSAGE"]
    assert engine.durable.get(dlq_namespace("emails"), "d-key") is None
    entry = audit_entries(engine)[0]
    assert (entry["action"], entry["ids"], entry["result"]) == ("delete", ["emails/d-key"],
                                                                "Deleted 1 of 1 dead letter(s).")


def test_delete_all_is_capped(engine, seeded: Seeded, monkeypatch):
    from oqronkit.cli import actions

    monkeypatch.setattr(actions, "ACTION_CAP", 2)
    doc = json.loads(cli(engine, "delete", "--all", "--yes", "--json").out)
    assert (doc["matched"], doc["deleted"]) == (2, 2) and "at most 2; more may match" in doc["message"]
    assert engine.durable.count(kind="dlq") == 2
    monkeypatch.setattr(actions, "SHOWN_TARGETS", 1)
    human = cli(engine, "delete", "--all", "--yes").out.splitlines()
    assert len(human) == 4 and human[2] == "... and 1 more (--json lists every one)"
    too_many = cli(engine, "retry", "emails:a", "emails:b", "emails:c")
    assert too_many.code == 2 and "at most 2" in too_many.err


def test_selection_must_be_ids_or_all(engine, seeded: Seeded):
    assert cli(engine, "retry").code == 2
    both = cli(engine, "retry", "emails:d-key", "--all")
    assert both.code == 2 and "not both" in both.err
    bad = cli(engine, "retry", "just-an-id")
    assert bad.code == 2 and "QUEUE:JOB_ID" in bad.err


def test_cancel_and_promote(engine, seeded: Seeded):
    assert cli(engine, "cancel", f"emails:{seeded.waiting[0]}").code == 2  # no terminal, no --yes
    cancelled = cli(engine, "cancel", f"emails:{seeded.waiting[0]}", "emails:gone", "--yes", "--json")
    doc = json.loads(cancelled.out)
    assert cancelled.code == 0 and (doc["matched"], doc["done"]) == (2, 1)
    dead = engine.durable.get(dlq_namespace("emails"), seeded.waiting[0]).value
    assert dead["deadReason"] == "cancelled by alice from the CLI"
    assert audit_entries(engine)[0]["queue"] == "emails"
    human = cli(engine, "cancel", f"emails:{seeded.waiting[1]}", "--yes").out.splitlines()
    assert human[1].split()[1:3] == [seeded.waiting[1], "yes"] and human[-1] == "Cancelled 1 of 1 job(s)."
    promoted = cli(engine, "promote", f"emails:{seeded.delayed}")
    assert promoted.code == 0 and "promoted: it runs now" in promoted.out
    assert engine.durable.get(job_namespace("emails"), seeded.delayed).value["status"] == "waiting"
    again = cli(engine, "promote", f"emails:{seeded.delayed}", "--json")
    assert again.code == 1 and json.loads(again.out)["items"][0]["message"] == "not promoted: the job is not delayed"
    assert [e["action"] for e in audit_entries(engine)] == ["promote", "promote", "cancel", "cancel"]


def test_pause_and_resume_queues_and_crons(engine, seeded: Seeded):
    paused = cli(engine, "pause", "emails")
    assert (paused.code, paused.out) == (0, "Queue emails paused.\n")
    assert engine.controller("emails").is_paused()
    assert json.loads(cli(engine, "queues", "--json").out)["items"][0]["paused"] is True
    assert cli(engine, "resume", "emails").code == 0 and not engine.controller("emails").is_paused()
    reports = cli(engine, "pause", "reports")  # no record, but a dead letter: a queue
    assert reports.code == 0
    missing = cli(engine, "pause", "nowhere")
    assert missing.code == 2 and "No queue named 'nowhere'" in missing.err
    cron = cli(engine, "pause", "cron:nightly", "--json")
    assert json.loads(cron.out)["message"] == "Cron nightly paused."
    assert json.loads(cli(engine, "schedules", "--json").out)["items"][0]["paused"] is True
    assert cli(engine, "pause", "cron:nope").code == 2 and cli(engine, "pause", "job:x").code == 2
    actions = [(e["action"], e.get("target")) for e in audit_entries(engine)]
    assert actions == [("pause", "cron nightly"), ("pause", "queue reports"), ("resume", "queue emails"),
                       ("pause", "queue emails")]


def test_purge_is_confirmed_capped_and_audited(engine, seeded: Seeded, monkeypatch):
    from oqronkit.cli import actions

    assert cli(engine, "purge", "emails").code == 2
    monkeypatch.setattr(actions, "ACTION_CAP", 2)
    first = cli(engine, "purge", "emails", "--yes", "--json")
    doc = json.loads(first.out)
    assert doc["purged"] == 2 and "at most 2; more may wait" in doc["message"]
    second = cli(engine, "purge", "emails", "--yes")
    assert second.out == "Purged 1 pending job(s) of queue emails.\n"
    assert engine.durable.count(job_namespace("emails")) == 0
    assert engine.controller("emails").counts()["waiting"] == 0
    assert engine.durable.count(dlq_namespace("emails")) == 3  # dead letters are not pending work
    nothing = cli(engine, "purge", "emails", "--json")  # nothing to purge: no question, exit 1
    assert nothing.code == 1 and json.loads(nothing.out)["purged"] == 0
    assert [e["action"] for e in audit_entries(engine)] == ["purge"] * 3


@pytest.mark.parametrize("command", ["queues", "dead"])
def test_other_scope_by_flag(engine, seeded: Seeded, command):
    doc = json.loads(cli(engine, command, "--project", "elsewhere", "--json").out)
    assert doc["count"] == 0
    bad = cli(engine, command, "--project", "no spaces")
    assert bad.code == 2 and "project" in bad.err
