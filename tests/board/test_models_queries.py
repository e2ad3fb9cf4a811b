"""The read helpers the board's pages build on, on SQLite and Postgres."""

from __future__ import annotations

from oqronboard.definitions.models import Record
from oqronboard.jobs.models import JobRecord
from oqronboard.runs.models import RunRecord
from oqronkit import RecordWrite
from tests.board.conftest import SharedDatabase


def seed(db: SharedDatabase) -> None:
    db.plane.put_many([
        RecordWrite("runs", "r1", {"name": "emails", "module": "queue", "status": "completed", "startedAt": 30}),
        RecordWrite("runs", "r2", {"name": "emails", "module": "queue", "status": "failed", "startedAt": 10}),
        RecordWrite("runs", "r3", {"name": "nightly", "module": "cron", "status": "failed", "startedAt": 20}),
        RecordWrite("runs", "r4", {"name": "nightly", "module": "cron", "status": "queued"}),
        RecordWrite("topic_msg:orders", "m1", {"publishedAt": 1}),
        RecordWrite("topic_msg:audit", "m2", {"publishedAt": 2}),
        RecordWrite("queue_job:emails", "j1", {"status": "waiting"}),
        RecordWrite("queue_job:sms", "j2", {"status": "delayed"}),
        RecordWrite("queue_dlq:emails", "d1", {"status": "failed"}, expires_at=5),
        RecordWrite("cron", "nightly", {"expression": "0 3 * * *"}),
        RecordWrite("queue", "emails", {"status": "paused"}),
        RecordWrite("module_logs:queue", "l1", {"msg": "hi"}),
    ])


def ids(queryset) -> list[str]:
    return sorted(r.id for r in queryset)


def test_run_helpers(shared_db: SharedDatabase):
    seed(shared_db)
    runs = RunRecord.objects.using(shared_db.alias).scoped(shared_db.project, shared_db.environment)
    assert ids(runs.runs()) == ["r1", "r2", "r3", "r4"]
    assert ids(runs.messages()) == ["m1", "m2"]
    assert ids(runs.messages("orders")) == ["m1"]
    assert ids(runs.runs().with_status("failed")) == ["r2", "r3"]
    assert ids(runs.runs().with_status("failed", "queued")) == ["r2", "r3", "r4"]
    assert ids(runs.named("emails")) == ["r1", "r2"]
    assert ids(runs.for_module("cron")) == ["r3", "r4"]
    # Newest start first; a run not started yet sorts last.
    assert [r.id for r in runs.runs().newest_started_first()] == ["r1", "r3", "r2", "r4"]
    assert runs.get(namespace="runs", id="r1").status == "completed"
    assert runs.get(namespace="runs", id="r1").name == "emails"


def test_job_helpers(shared_db: SharedDatabase):
    seed(shared_db)
    jobs = JobRecord.objects.using(shared_db.alias).scoped(shared_db.project, shared_db.environment)
    assert ids(jobs.jobs()) == ["j1", "j2"]
    assert ids(jobs.jobs("emails")) == ["j1"]
    assert ids(jobs.dead_letters()) == ["d1"]
    assert ids(jobs.dead_letters("sms")) == []
    assert ids(jobs.with_status("waiting", "delayed")) == ["j1", "j2"]
    assert jobs.namespaces() == ["queue_dlq:emails", "queue_job:emails", "queue_job:sms"]
    assert jobs.get(id="d1").queue == "emails"
    # d1 expired at t=5 ms; pruning is the engine's job, `live()` hides it meanwhile.
    assert ids(jobs.live()) == ["j1", "j2"]
    assert ids(jobs.live(at_ms=4)) == ["d1", "j1", "j2"]


def test_record_helpers(shared_db: SharedDatabase):
    seed(shared_db)
    records = Record.objects.using(shared_db.alias).scoped(shared_db.project, shared_db.environment)
    assert ids(records.definitions()) == ["nightly"]
    assert ids(records.control()) == ["emails"]
    assert ids(records.module_logs()) == ["l1"]
    assert ids(records.module_logs("queue")) == ["l1"]
    assert ids(records.of_kind("definition", "control")) == ["emails", "nightly"]
    assert [r.id for r in records.in_namespace("cron").newest_first()] == ["nightly"]
    assert str(records.get(id="nightly")) == "cron/nightly"
    assert ids(Record.objects.using(shared_db.alias).scoped("someone-else", "test")) == []
