"""The v1 migration: the pure row mapping (every rule of its table) and the runner."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta, timezone

import pytest

from oqronkit import DurablePlane, InvalidRecord, LegacyLayoutDetected, classify_namespace
from oqronkit.backends.memory import MemoryDurableStore
from oqronkit.durable import LEGACY_TABLE
from oqronkit.legacy import (
    DEAD_REASON,
    INTERRUPTED,
    LegacyRow,
    Mapped,
    convert_dates,
    epoch_ms,
    map_v1_row,
    migrate_v1,
    split_namespace,
)
from oqronkit.legacy import mapping as rules
from oqronkit.queues.jobs import Job
from oqronkit.queues.runs import new_run
from oqronkit.scheduler.control import update_control
from oqronkit.scheduler.definition import Definition
from tests.legacy_fixture import (
    CREATED_ISO,
    CREATED_MS,
    DUE_ISO,
    DUE_MS,
    EXPECTED_COUNTS,
    EXPECTED_SKIPPED,
    LAST_RUN_ISO,
    LAST_RUN_MS,
    NEXT_RUN_ISO,
    NEXT_RUN_MS,
    date,
    job,
    v1_rows,
)

NOW = 1_800_000_000_000


def mapped(namespace: str, id: str, value: object, created_at: object = None) -> Mapped:
    return map_v1_row(
        LegacyRow(namespace, id, value, created_at),
        default_project="default", default_environment="development", migrated_at=NOW,
    )


def only(result: Mapped) -> tuple[str, str, str, str, dict]:
    assert result.skipped is None, result.skipped
    assert len(result.writes) == 1, result.writes
    w = result.writes[0]
    return w.project, w.environment, w.namespace, w.id, w.value


def by_namespace(result: Mapped) -> dict[str, dict]:
    assert result.skipped is None, result.skipped
    return {w.namespace: w.value for w in result.writes}


# -- prefixes ------------------------------------------------------------------------


@pytest.mark.parametrize(("namespace", "expected"), [
    ("oqron:shop:production:jobs", ("shop", "production", "jobs")),
    ("oqron:shop:production:ratelimit:bans", ("shop", "production", "ratelimit:bans")),
    ("jobs", ("dp", "de", "jobs")),
    ("ratelimit:bans", ("dp", "de", "ratelimit:bans")),
    ("oqron:shop:jobs", ("dp", "de", "oqron:shop:jobs")),  # too short to be a prefix
    ("oqron::production:jobs", ("dp", "de", "oqron::production:jobs")),
    ("other:shop:production:jobs", ("dp", "de", "other:shop:production:jobs")),
])
def test_split_namespace(namespace, expected):
    assert split_namespace(namespace, project="dp", environment="de") == expected


def test_unprefixed_rows_belong_to_the_default_scope():
    project, environment, namespace, _, _ = only(mapped("legacy_audit", "a", {"x": 1}))
    assert (project, environment, namespace) == ("default", "development", "legacy_audit")


def test_prefixed_rows_belong_to_their_scope():
    project, environment, namespace, id, value = only(mapped("oqron:shop:production:legacy_audit", "a", {"x": 1}))
    assert (project, environment, namespace, id, value) == ("shop", "production", "legacy_audit", "a", {"x": 1})


def test_a_prefix_naming_an_invalid_v2_scope_is_skipped():
    result = mapped("oqron:my shop:production:jobs", "j", job("j", "emails", "waiting"))
    assert result.writes == ()
    assert result.skipped == "project or environment name is not valid in v2"


# -- dates ---------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [
    (1_751_536_800_000, 1_751_536_800_000),
    (1_751_536_800_000.7, 1_751_536_800_000),
    ("1751536800000", 1_751_536_800_000),
    (date(CREATED_ISO), CREATED_MS),
    ("2025-07-03T10:00:00.000Z", CREATED_MS),
    ("2025-07-03T12:00:00+02:00", CREATED_MS),
    ("2025-07-03T10:00:00", CREATED_MS),          # naive: v1 wrote UTC
    ("2025-07-03 10:00:00", CREATED_MS),          # SQLite's CURRENT_TIMESTAMP form
    (datetime(2025, 7, 3, 10, tzinfo=UTC), CREATED_MS),
    (datetime(2025, 7, 3, 12, tzinfo=timezone(timedelta(hours=2))), CREATED_MS),
    (datetime(2025, 7, 3, 10), CREATED_MS),
    ("not a date", None),
    (date("garbage"), None),
    (None, None),
    (True, None),
    (math.nan, None),
    ([1], None),
])
def test_epoch_ms(value, expected):
    assert epoch_ms(value) == expected


def test_convert_dates_replaces_wrappers_at_any_depth():
    value = {
        "at": date(CREATED_ISO),
        "nested": {"list": [date(DUE_ISO), {"deep": date(LAST_RUN_ISO)}, 3, "s"]},
        "bad": date("garbage"),
        "plain": {"__type": "Other", "__val": 1},
    }
    assert convert_dates(value) == {
        "at": CREATED_MS,
        "nested": {"list": [DUE_MS, {"deep": LAST_RUN_MS}, 3, "s"]},
        "bad": date("garbage"),  # kept, so no data is lost
        "plain": {"__type": "Other", "__val": 1},
    }


def test_every_namespace_gets_its_dates_converted():
    *_, value = only(mapped("legacy_audit", "a", {"at": date(CREATED_ISO), "l": [date(DUE_ISO)]}))
    assert value == {"at": CREATED_MS, "l": [DUE_MS]}


def test_top_level_iso_strings_of_jobs_become_epoch_ms():
    *_, value = only(mapped("jobs", "j", job("j", "emails", "delayed", runAt=DUE_ISO, createdAt=CREATED_ISO)))
    assert value["runAt"] == DUE_MS and value["createdAt"] == CREATED_MS
    v1 = job("j", "emails", "completed", startedAt=CREATED_ISO, finishedAt=DUE_ISO)
    *_, run = only(mapped("jobs", "j", v1))
    assert (run["startedAt"], run["endedAt"]) == (CREATED_MS, DUE_MS)


# -- values --------------------------------------------------------------------------


@pytest.mark.parametrize("encode", [json.dumps, lambda v: json.dumps(v).encode(), lambda v: v])
def test_values_may_be_json_text_bytes_or_decoded(encode):
    *_, value = only(mapped("legacy_audit", "a", encode({"x": [1, 2]})))
    assert value == {"x": [1, 2]}


@pytest.mark.parametrize(("raw", "reason"), [
    ("{not json", "value is not valid JSON"),
    ("[1, 2]", "value is not a JSON object"),
    (42, "value is not a JSON object"),
])
def test_values_that_are_not_objects_are_skipped(raw, reason):
    assert mapped("legacy_audit", "a", raw) == Mapped(skipped=reason)


# -- jobs: queue-like ----------------------------------------------------------------

QUEUE_CASES = {
    # v1 status: {v2 namespace: status of the v2 job or run written there}
    "waiting": {"queue_job:emails": "waiting"},
    "delayed": {"queue_job:emails": "delayed"},
    "waiting-children": {"queue_job:emails": "blocked"},
    "active": {"queue_job:emails": "waiting"},
    "running": {"queue_job:emails": "waiting"},
    "stalled": {"queue_job:emails": "waiting"},
    "paused": {"queue_job:emails": "waiting"},
    "failed": {"queue_dlq:emails": "dead", "runs": "failed"},
    "completed": {"runs": "completed"},
    "cancelled": {"runs": "cancelled"},
}


def test_every_queue_status_rule_is_tested():
    assert set(QUEUE_CASES) == set(rules._QUEUE_JOB)


@pytest.mark.parametrize("status", sorted(QUEUE_CASES))
def test_queue_job_status_rules(status):
    written = by_namespace(mapped("jobs", "j1", job("j1", "emails", status, runAt=date(DUE_ISO))))
    assert {ns: value["status"] for ns, value in written.items()} == QUEUE_CASES[status]
    for namespace, value in written.items():
        assert classify_namespace(namespace) in ("job", "dlq", "run")
        if namespace != "runs":
            assert Job.from_value(value).to_value() == value  # a real v2 job record


def test_a_waiting_job_becomes_a_v2_job_record():
    v1 = job("j1", "emails", "waiting", attemptMade=1, correlationId="c-1", tags=["a", 2],
             opts={"priority": 3, "lifo": True, "attempts": 5, "timeout": 3000,
                   "backoff": {"type": "fixed", "delay": 1500}})
    project, environment, namespace, id, value = only(mapped("oqron:shop:production:jobs", "j1", v1))
    assert (project, environment, namespace, id) == ("shop", "production", "queue_job:emails", "j1")
    expected = Job(
        id="j1", queue="emails", data={"to": "j1@example.com"}, status="waiting", priority=3, lifo=True,
        attempts=1, max_attempts=5, timeout_ms=3000, created_at=CREATED_MS, updated_at=NOW,
        correlation_id="c-1", tags=["a", "2"],
        backoff={"type": "fixed", "delayMs": 1500, "maxMs": 60_000, "jitter": 0.2},
    )
    assert value == expected.to_value()


def test_v2_job_defaults_apply_when_v1_says_nothing():
    v1 = {"queueName": "emails", "status": "waiting", "data": [1]}
    *_, value = only(mapped("jobs", "j1", v1, created_at=datetime(2025, 7, 3, 10, tzinfo=UTC)))
    assert value == Job(id="j1", queue="emails", data=[1], created_at=CREATED_MS, updated_at=NOW).to_value()


def test_an_active_job_loses_its_dead_claim():
    v1 = job("j1", "emails", "active", workerId="node-1", startedAt=date(CREATED_ISO),
             processedOn=date(CREATED_ISO), attemptMade=1)
    *_, namespace, id, value = only(mapped("oqron:shop:production:jobs", "j1", v1))
    assert (namespace, id) == ("queue_job:emails", "j1")
    assert value["status"] == "waiting"
    assert value["workerId"] is None and value["startedAt"] is None and value["leaseToken"] is None
    assert value["attempts"] == 1  # the interrupted attempt still counts
    assert value["data"] == {"to": "j1@example.com"}


def test_a_delayed_job_keeps_its_due_time():
    *_, value = only(mapped("jobs", "j1", job("j1", "emails", "delayed", runAt=date(DUE_ISO))))
    assert value["status"] == "delayed" and value["runAt"] == DUE_MS


def test_a_delayed_job_without_a_due_time_becomes_waiting():
    *_, value = only(mapped("jobs", "j1", job("j1", "emails", "delayed")))
    assert value["status"] == "waiting" and value["runAt"] is None


def test_a_parent_waiting_for_children_is_blocked_by_them():
    *_, value = only(mapped("jobs", "p1", job("p1", "emails", "waiting-children", childrenIds=["c1", "c2"])))
    assert value["status"] == "blocked" and value["blockedBy"] == ["c1", "c2"]


def test_a_failed_job_goes_to_the_dlq_with_its_error_and_leaves_a_failed_run():
    v1 = job("j1", "emails", "failed", attemptMade=3, error="SMTP 550", finishedAt=date(DUE_ISO),
             startedAt=date(CREATED_ISO), stacktrace=["Error: SMTP 550", "  at send()"])
    written = by_namespace(mapped("oqron:shop:production:jobs", "j1", v1))
    dead = written["queue_dlq:emails"]
    error = {"type": "Error", "message": "SMTP 550", "traceback": "Error: SMTP 550\n  at send()", "ts": DUE_MS}
    assert dead["status"] == "dead" and dead["lastError"] == error and dead["errors"] == [error]
    assert dead["attempts"] == 3 and dead["diedAt"] == DUE_MS and dead["deadReason"] == DEAD_REASON
    assert dead["data"] == {"to": "j1@example.com"}
    run = written["runs"]
    assert run["status"] == "failed" and run["error"] == error and run["attempts"] == 3
    assert run["startedAt"] == CREATED_MS and run["endedAt"] == DUE_MS


@pytest.mark.parametrize(("fields", "expected"), [
    ({"error": {"message": "boom", "name": "TypeError"}}, ("TypeError", "boom")),
    ({"error": None, "stacktrace": ["Error: first", "Error: last"]}, ("Error", "Error: last")),
    ({"error": None}, None),
])
def test_dlq_error(fields, expected):
    written = by_namespace(mapped("jobs", "j1", job("j1", "emails", "failed", **fields)))
    error = written["queue_dlq:emails"]["lastError"]
    assert (error and (error["type"], error["message"])) == expected
    assert error is None or error["ts"] == NOW  # no finishedAt: the migration time


def test_a_completed_job_becomes_a_spec_run_record():
    v1 = job("j1", "reports", "completed", attemptMade=2, returnValue={"rows": 42}, workerId="node-1",
             startedAt=date(CREATED_ISO), finishedAt=date(DUE_ISO), triggeredBy="api",
             logs=[{"ts": date(CREATED_ISO), "level": "info", "msg": "built"}])
    project, environment, namespace, id, run = only(mapped("oqron:shop:production:jobs", "j1", v1))
    assert (project, environment, namespace, id) == ("shop", "production", "runs", "j1")
    assert run == {
        "id": "j1", "jobId": "j1", "name": "reports", "module": "queue", "status": "completed",
        "trigger": "api", "input": {"to": "j1@example.com"}, "output": {"rows": 42}, "attempts": 2,
        "progressPercent": 100, "logs": [{"ts": CREATED_MS, "level": "info", "msg": "built"}],
        "timeline": [], "error": None, "app": "shop", "environment": "production",
        "workerId": "node-1", "startedAt": CREATED_MS, "endedAt": DUE_MS,
        "durationMs": DUE_MS - CREATED_MS,
    }
    assert set(run) - {"jobId"} == set(new_run(name="x", module="queue", trigger="t", input=None, attempts=1,
                                               app="a", environment="e", worker_id="w"))


def test_a_run_keeps_the_v1_duration_and_falls_back_for_start():
    v1 = job("j1", "emails", "cancelled", durationMs=1234, createdAt=None)
    *_, run = only(mapped("jobs", "j1", v1, created_at="2025-07-03 10:00:00"))
    assert run["durationMs"] == 1234
    assert run["startedAt"] == CREATED_MS  # from the row's created_at column
    *_, run = only(mapped("jobs", "j2", job("j2", "emails", "cancelled", createdAt=None)))
    assert run["startedAt"] == NOW  # runs are listed by startedAt, so they always have one


def test_a_webhook_delivery_run_has_module_webhook():
    *_, run = only(mapped("jobs", "j1", job("j1", "billing", "completed", type="webhook")))
    assert run["module"] == "webhook" and run["name"] == "billing"


def test_a_job_without_a_queue_name_is_skipped():
    result = mapped("jobs", "j1", job("j1", "", "waiting", moduleName=None))
    assert result == Mapped(skipped="job has no queueName")


def test_a_job_falls_back_to_its_module_name_for_the_queue():
    *_, namespace, _, _ = only(mapped("jobs", "j1", job("j1", "", "waiting", moduleName="emails")))
    assert namespace == "queue_job:emails"


def test_a_job_with_an_unknown_status_is_skipped():
    assert mapped("jobs", "j1", job("j1", "emails", "exploded")).skipped == "job with unknown status 'exploded'"


# -- jobs: cron and schedule fires ---------------------------------------------------

FIRE_CASES = {
    "completed": "completed", "failed": "failed", "cancelled": "cancelled",
    "running": "failed", "active": "failed", "stalled": "failed",
    "waiting": "held", "delayed": "held", "paused": "held",
}


def test_every_fire_status_rule_is_tested():
    assert set(FIRE_CASES) == set(rules._FIRE_RUN)


@pytest.mark.parametrize("kind", ["cron", "schedule"])
@pytest.mark.parametrize("status", sorted(FIRE_CASES))
def test_fire_status_rules(kind, status):
    v1 = job("f1", f"system_{kind}", status, type=kind, scheduleId="nightly", error="boom")
    *_, namespace, id, run = only(mapped("jobs", "f1", v1))
    assert (namespace, id) == ("runs", "f1")
    assert run["status"] == FIRE_CASES[status]
    assert run["module"] == kind and run["name"] == "nightly" and run["trigger"] == kind
    if status in ("running", "active", "stalled"):
        assert run["error"]["message"] == INTERRUPTED
    elif status == "failed":
        assert run["error"]["message"] == "boom"
    else:
        assert run["error"] is None


def test_a_fire_with_an_unknown_status_is_skipped():
    result = mapped("jobs", "f1", job("f1", "system_cron", "exploded", type="cron"))
    assert result.skipped == "cron/schedule fire with unknown status 'exploded'"


# -- schedulers, instances, hot-only, verbatim ----------------------------------------


@pytest.mark.parametrize(("v1_namespace", "definition_ns", "pointer_ns"), [
    ("cron_schedules", "cron", "cron_durable"),
    ("schedule_schedules", "schedule", "schedule_durable"),
])
def test_scheduler_records_split_into_definition_and_pointer(v1_namespace, definition_ns, pointer_ns):
    v1 = {
        "name": "nightly", "expression": "0 3 * * *", "timezone": "UTC", "version": 2,
        "nextRunAt": date(NEXT_RUN_ISO), "lastRunAt": LAST_RUN_ISO, "paused": True,
        "pausedAt": date(CREATED_ISO), "runCount": 10, "successCount": 9, "failCount": 1,
        "lastStatus": "failed", "lastError": "boom",
    }
    written = by_namespace(mapped(f"oqron:shop:production:{v1_namespace}", "nightly", v1))
    assert set(written) == {definition_ns, pointer_ns}
    assert written[definition_ns] == {"kind": definition_ns, "name": "nightly", "expression": "0 3 * * *",
                                      "timezone": "UTC", "version": 2}
    assert written[pointer_ns] == {
        "name": "nightly", "nextRunAt": NEXT_RUN_MS, "lastRunAt": LAST_RUN_MS, "paused": True,
        "pausedAt": CREATED_MS, "runCount": 10, "successCount": 9, "failCount": 1,
        "lastStatus": "failed", "lastError": "boom", "version": 2,
        # the v2 control fields, the v1 counts carried over where v2 has them
        "kind": definition_ns, "rev": 0, "done": False, "lastSlotAt": None, "lastFiredAt": LAST_RUN_MS,
        "lastRunId": None, "counters": {"missed": 0, "skipped": 0, "run": 10, "manual": 0},
        "backlog": [], "retries": [], "manual": [],
    }
    assert classify_namespace(definition_ns) == "definition" and classify_namespace(pointer_ns) == "control"


@pytest.mark.parametrize(("v1_namespace", "v1"), [
    ("cron_schedules", {"expression": "0 3 * * *", "timezone": "UTC", "type": "cron"}),
    ("schedule_schedules", {"runAt": date(DUE_ISO), "timezone": "UTC"}),
])
def test_a_copied_definition_is_one_the_scheduler_reads(v1_namespace, v1):
    """The scheduler (and a declaration's version rules) build a Definition from the
    stored record: a copied v1 record must name its kind, or the copy never fires."""
    definition_ns = rules._SCHEDULERS[v1_namespace][0]
    written = by_namespace(mapped(v1_namespace, "nightly", v1))
    read = Definition.from_record(written[definition_ns])
    assert (read.kind, read.name) == (definition_ns, "nightly")


def test_a_copied_control_record_takes_the_schedulers_writes():
    """Every control write is a compare-and-set on ``rev``: a copy without it could never
    be paused, advanced or adopted by a declaration (gave up after 100 tries)."""
    store = MemoryDurableStore()
    plane = DurablePlane(store, project="shop", environment="production")
    plane.start()
    for write in mapped("cron_schedules", "nightly", {"expression": "0 3 * * *"}).writes:
        plane.insert(write.namespace, write.id, dict(write.value))
    engine = type("EngineStub", (), {"durable": plane})()
    stored = update_control(engine, "cron", "nightly", lambda value: value.update(paused=True), now=1)
    assert stored is not None and stored["paused"] is True and stored["rev"] == 1


def test_a_pointer_that_never_ran_says_so():
    written = by_namespace(mapped("cron_schedules", "c", {"name": "c", "expression": "* * * * *"}))
    pointer = written["cron_durable"]
    assert {k: pointer[k] for k in ("name", "nextRunAt", "lastRunAt", "paused")} == {
        "name": "c", "nextRunAt": None, "lastRunAt": None, "paused": False}
    assert pointer["counters"] == {"missed": 0, "skipped": 0, "run": 0, "manual": 0} and pointer["rev"] == 0


@pytest.mark.parametrize(("v1_namespace", "v2_namespace"), sorted(rules._INSTANCES.items()))
def test_instances_become_control_records(v1_namespace, v2_namespace):
    *_, namespace, id, value = only(mapped(v1_namespace, "emails", {"version": 3, "enabled": False}))
    assert (namespace, id) == (v2_namespace, "emails")
    assert value == {"name": "emails", "version": 3, "enabled": False, "paused": True}
    assert classify_namespace(namespace) == "control"


def test_an_instance_keeps_an_explicit_paused_flag_and_defaults_to_running():
    *_, value = only(mapped("queue_instances", "q", {"enabled": True, "paused": True}))
    assert value["paused"] is True
    *_, value = only(mapped("queue_instances", "q", {"version": 1}))
    assert value == {"name": "q", "version": 1, "paused": False}


@pytest.mark.parametrize("v1_namespace", sorted(rules._HOT_ONLY))
def test_hot_only_namespaces_are_skipped(v1_namespace):
    result = mapped(f"oqron:shop:production:{v1_namespace}", "k", {"v": 1})
    assert result == Mapped(skipped=f"hot-only in v2 ({v1_namespace})")


@pytest.mark.parametrize(("v1_namespace", "kind"), [
    ("webhook_endpoints", "record"),        # v1 had no ':{dispatcher}' suffix
    ("webhook_circuit_breaker", "record"),
    ("pubsub_messages", "record"),
    ("batch_buffers", "record"),
    ("legacy_audit", "record"),
    ("topic_msg:orders", "message"),         # already a v2 name: classified as such
    ("runs", "run"),
])
def test_other_namespaces_are_copied_verbatim(v1_namespace, kind):
    result = mapped(v1_namespace, "x1", {"a": [1, {"b": 2}]})
    *_, namespace, id, value = only(result)
    assert (namespace, id, value) == (v1_namespace, "x1", {"a": [1, {"b": 2}]})
    assert result.writes[0].kind == kind


def test_the_dispatch_table_covers_every_special_namespace():
    special = {"jobs", *rules._SCHEDULERS, *rules._INSTANCES, *rules._HOT_ONLY}
    for name in special:
        assert rules._rule_for(name) is not rules._map_verbatim, name
    assert rules._rule_for("anything_else") is rules._map_verbatim


def test_mapping_is_pure():
    row = LegacyRow("jobs", "j1", json.dumps(job("j1", "emails", "active")))
    first = map_v1_row(row, default_project="p", default_environment="e", migrated_at=NOW)
    assert map_v1_row(row, default_project="p", default_environment="e", migrated_at=NOW) == first


# -- the runner ----------------------------------------------------------------------


class V1Store(MemoryDurableStore):
    """A memory store that reports a v1 table, as a real database with oqron_kv would."""

    def __init__(self) -> None:
        super().__init__()
        self.insert_calls = 0

    def has_table(self, table: str) -> bool:
        return table == LEGACY_TABLE

    def insert_many(self, scope, rows):
        self.insert_calls += 1
        return super().insert_many(scope, rows)


def legacy_rows() -> list[LegacyRow]:
    return [LegacyRow(namespace, id, json.dumps(value)) for namespace, id, value in v1_rows()]


def run(plane_for, **options):
    options.setdefault("default_project", "default")
    options.setdefault("default_environment", "development")
    return migrate_v1(legacy_rows(), plane_for, migrated_at=NOW, **options)


@pytest.fixture
def store() -> V1Store:
    return V1Store()


@pytest.fixture
def plane_for(store):
    calls: list[tuple[str, str]] = []

    def plane_for(project: str, environment: str) -> DurablePlane:
        calls.append((project, environment))
        return DurablePlane(store, project=project, environment=environment)

    plane_for.calls = calls
    return plane_for


def test_the_store_fixture_would_be_refused_without_acknowledgement(store):
    with pytest.raises(LegacyLayoutDetected, match="oqron_migrate_v1"):
        DurablePlane(store, project="p", environment="e").start()


def test_dry_run_counts_per_scope_and_kind_and_touches_nothing():
    def no_planes(project, environment):
        raise AssertionError("a dry run must not open a plane")

    report = run(no_planes)
    assert not report.applied
    assert dict(report.planned) == EXPECTED_COUNTS
    assert dict(report.skipped) == EXPECTED_SKIPPED
    assert report.rows_read == len(v1_rows())
    assert report.total_written == report.total_present == 0
    assert report.total_planned == sum(EXPECTED_COUNTS.values())


def test_apply_writes_every_planned_row_and_a_rerun_writes_none(store, plane_for):
    first = run(plane_for, apply=True)
    assert dict(first.written) == EXPECTED_COUNTS
    assert first.total_present == 0
    assert sorted(set(plane_for.calls)) == sorted({("shop", "production"), ("blog", "staging"),
                                                    ("default", "development")})
    assert len(plane_for.calls) == 3  # one plane per scope, started once

    second = run(plane_for, apply=True)
    assert second.total_written == 0
    assert dict(second.present) == EXPECTED_COUNTS
    assert [r[3:] for r in second.rows()] == [(n, 0, n) for _, n in sorted(EXPECTED_COUNTS.items())]


def test_applied_rows_are_readable_through_the_plane(store, plane_for):
    run(plane_for, apply=True)
    shop = DurablePlane(store, project="shop", environment="production")
    waiting = shop.get("queue_job:emails", "j-active")
    assert waiting.record_kind == "job" and waiting.value["status"] == "waiting"
    assert shop.get("queue_dlq:emails", "j-failed").value["lastError"]["message"] == "SMTP 550 mailbox unavailable"
    pointer = shop.get("cron_durable", "nightly").value
    assert (pointer["nextRunAt"], pointer["lastRunAt"]) == (NEXT_RUN_MS, LAST_RUN_MS)
    assert shop.get("runs", "j-done").value["output"] == {"rows": 42}
    assert shop.get("queue", "emails").value["paused"] is True
    assert shop.count(kind="record") == 1
    default = DurablePlane(store, project="default", environment="development")
    assert default.get("queue_job:emails", "d-wait").value["status"] == "waiting"


def test_apply_does_not_overwrite_rows_the_v2_engine_already_wrote(store, plane_for):
    shop = DurablePlane(store, project="shop", environment="production")
    shop.put("cron_durable", "nightly", {"name": "nightly", "nextRunAt": 1})
    report = run(plane_for, apply=True)
    assert report.present[("shop", "production", "control")] == 1
    assert shop.get("cron_durable", "nightly").value == {"name": "nightly", "nextRunAt": 1}


def test_apply_inserts_in_batches(store, plane_for):
    run(plane_for, apply=True, batch_size=2)
    # 7 rows for shop in the order they come: several batches, not one insert per row.
    assert 5 < store.insert_calls < sum(EXPECTED_COUNTS.values())


def test_two_v1_rows_for_one_v2_key_first_wins(store, plane_for):
    rows = [
        LegacyRow("oqron:default:development:legacy_audit", "a", {"n": 1}),
        LegacyRow("legacy_audit", "a", {"n": 2}),
    ]
    report = migrate_v1(rows, plane_for, default_project="default", default_environment="development",
                        apply=True, migrated_at=NOW)
    assert report.total_written == 1 and report.total_present == 1
    plane = DurablePlane(store, project="default", environment="development")
    assert plane.get("legacy_audit", "a").value == {"n": 1}


def test_a_record_too_large_skips_its_row_not_the_batch(store, plane_for):
    rows = [LegacyRow("legacy_audit", "big", {"blob": "x" * 500}), LegacyRow("legacy_audit", "ok", {"n": 1})]
    report = migrate_v1(rows, plane_for, default_project="default", default_environment="development",
                        apply=True, max_record_bytes=100)
    assert dict(report.skipped) == {"too large for max_record_bytes": 1}
    assert report.total_written == 1


def test_a_value_with_nan_is_skipped_as_not_serialisable(store, plane_for):
    rows = [LegacyRow("legacy_audit", "nan", '{"x": NaN}')]
    report = migrate_v1(rows, plane_for, default_project="default", default_environment="development")
    assert dict(report.skipped) == {"value is not JSON-serialisable": 1}


def test_batch_size_must_be_positive(plane_for):
    with pytest.raises(InvalidRecord, match="batch_size"):
        run(plane_for, batch_size=0)
