"""The spec's record-kind table (docs/explanation/storage-model.md, its record kinds) and table routing."""

from __future__ import annotations

import pytest

import oqronkit
from oqronkit import (
    JOBS_TABLE,
    RECORD_KINDS,
    RECORDS_TABLE,
    RUNS_TABLE,
    TABLE_NAMES,
    classify_namespace,
    table_for_kind,
    table_name_for_namespace,
)
from oqronkit import namespaces as ns
from oqronkit.namespaces import sole_namespace_of_kind

# Every row of the spec's table, one namespace (or family member) per case.
SPEC_ROWS = [
    ("cron", "definition"),
    ("schedule", "definition"),
    ("cache", "definition"),
    ("ratelimit", "definition"),
    ("topic", "definition"),
    ("webhook_endpoints:billing", "definition"),
    ("queue", "control"),
    ("worker", "control"),
    ("webhook", "control"),
    ("topic_state", "control"),
    ("topic_groups:orders", "control"),
    ("cron_durable", "control"),
    ("schedule_durable", "control"),
    ("queue_job:emails", "job"),
    ("queue_dlq:emails", "dlq"),
    ("runs", "run"),
    ("topic_msg:order-events", "message"),
    ("module_logs:queue", "log"),
    ("webhook_cb", "state"),
    ("my_custom_namespace", "record"),
]
# Ours, beyond the spec's table: tracked bulk operations and their progress; a tracked
# replay's pairs and tally and a resend's handled deliveries are plain records; the
# metrics history's buckets and deploy markers (kind metric) and its watermark.
OUR_ROWS = [("operations", "operation"), ("operation_progress", "state"), (ns.replay_pairs_namespace("s1"), "record"),
            (ns.REPLAY_TALLIES, "record"), (ns.operation_items_namespace("o1"), "record"),
            ("metrics_minute", "metric"), ("metrics_hour", "metric"), ("metrics_day", "metric"),
            ("metrics_deploys", "metric"), ("metrics_state", "state")]


@pytest.mark.parametrize(("namespace", "kind"), SPEC_ROWS + OUR_ROWS)
def test_spec_table(namespace, kind):
    assert classify_namespace(namespace) == kind


@pytest.mark.parametrize(
    ("namespace", "kind"),
    [
        ("", "record"),
        ("queue_jobx", "record"),  # the family's prefix without its colon
        ("queue_job", "record"),  # the family name alone is not a member
        ("queue_dlq", "record"),
        ("topic_msg", "record"),
        ("webhook_endpoints", "record"),
        ("topic_groups", "record"),
        ("module_logs", "record"),
        ("queue_job:a:b", "job"),  # the suffix may itself contain ':'
        ("queue_dlq:a:b:c", "dlq"),
        ("Queue_Job:x", "record"),  # case-sensitive, like the spec's TypeScript
        ("RUNS", "record"),
        ("Cron", "record"),
        ("runs:x", "record"),  # exact names are not families
        ("cron:nightly", "record"),
        ("queue:emails", "record"),
        ("unknown_family:x", "record"),
        (":x", "record"),
        (" queue_job:x", "record"),  # no trimming
        ("queue_job :x", "record"),
    ],
)
def test_edge_cases(namespace, kind):
    assert classify_namespace(namespace) == kind


def test_an_empty_family_suffix_still_names_the_family():
    # Decision: "queue_job:" classifies as a job (the family matched; the suffix is
    # not validated here). The durable plane still accepts it as a namespace, since a
    # queue named "" is a caller's choice, not the classifier's to refuse.
    assert classify_namespace("queue_job:") == "job"
    assert classify_namespace("queue_dlq:") == "dlq"
    assert classify_namespace("topic_msg:") == "message"
    plane = oqronkit.open_durable(oqronkit.OqronConfig(mode="memory", database_url=None))
    plane.put("queue_job:", "j1", {"status": "waiting"})
    assert plane.get("queue_job:", "j1").record_kind == "job"


@pytest.mark.parametrize(
    ("kind", "table"),
    [
        ("job", "jobs"),
        ("dlq", "jobs"),
        ("run", "runs"),
        ("message", "runs"),
        ("definition", "records"),
        ("control", "records"),
        ("log", "records"),
        ("state", "records"),
        ("operation", "records"),
        ("record", "records"),
        ("unheard-of", "records"),
        ("", "records"),
    ],
)
def test_table_for_kind(kind, table):
    assert table_for_kind(kind) == table


def test_every_kind_is_exported_and_routed():
    assert set(RECORD_KINDS) == {kind for _ns, kind in SPEC_ROWS + OUR_ROWS}
    assert {table_for_kind(k) for k in RECORD_KINDS} == {"records", "jobs", "runs"}


def test_table_names():
    assert RECORDS_TABLE == "oqron_records"
    assert JOBS_TABLE == "oqron_jobs"
    assert RUNS_TABLE == "oqron_runs"
    assert TABLE_NAMES == {"records": "oqron_records", "jobs": "oqron_jobs", "runs": "oqron_runs"}
    for name in ("RECORDS_TABLE", "JOBS_TABLE", "RUNS_TABLE", "TABLE_NAMES", "RECORD_KINDS",
                 "classify_namespace", "table_for_kind", "table_name_for_namespace"):
        assert name in oqronkit.__all__


@pytest.mark.parametrize(
    ("namespace", "table"),
    [
        ("queue_job:emails", "oqron_jobs"),
        ("queue_dlq:emails", "oqron_jobs"),
        ("runs", "oqron_runs"),
        ("topic_msg:orders", "oqron_runs"),
        ("cron", "oqron_records"),
        ("module_logs:queue", "oqron_records"),
        ("webhook_cb", "oqron_records"),
        ("anything", "oqron_records"),
    ],
)
def test_table_name_for_namespace(namespace, table):
    assert table_name_for_namespace(namespace) == table


@pytest.mark.parametrize("kind", RECORD_KINDS)
def test_sole_namespace_of_kind_names_the_only_namespace_a_kind_can_have(kind):
    # A kind filter may add this namespace (an index serves it): it must never drop a row.
    namespace = sole_namespace_of_kind(kind)
    # state spans webhook_cb, queue_groups, operation_progress and the queue_unique/debounce families
    expected = {"run": "runs", "operation": "operations"}.get(kind)
    assert namespace == expected
    if namespace is not None:
        assert classify_namespace(namespace) == kind
        others = [ns for ns, _ in SPEC_ROWS] + ["x", "x:y", "runs:x", "webhook_cb:x", "queue_groups"]
        assert all(classify_namespace(other) != kind or other == namespace for other in others)


# -- builders and parsers (namespaces.py is the one place a namespace is spelled) --------

FAMILIES = [
    (ns.job_namespace, ns.queue_of, "queue_job:", "job"),
    (ns.dlq_namespace, ns.queue_of, "queue_dlq:", "dlq"),
    (ns.topic_msg_namespace, ns.topic_of_messages, "topic_msg:", "message"),
    (ns.topic_groups_namespace, ns.topic_of_groups, "topic_groups:", "control"),
    (ns.webhook_endpoints_namespace, ns.webhook_of_endpoints, "webhook_endpoints:", "definition"),
    (ns.module_logs_namespace, ns.module_of_logs, "module_logs:", "log"),
]
# Not in the spec's table (docs/explanation/storage-model.md): add's uniqueness windows and debounce keys.
OWN_FAMILIES = [
    (ns.unique_namespace, "queue_unique:", "state"),
    (ns.debounce_namespace, "queue_debounce:", "state"),
]


@pytest.mark.parametrize(("build", "prefix", "kind"), OWN_FAMILIES)
@pytest.mark.parametrize("name", ["emails", "a:b", ""])
def test_own_families(build, prefix, kind, name):
    assert build(name) == prefix + name
    assert classify_namespace(build(name)) == kind
    assert table_name_for_namespace(build(name)) == "oqron_records"
    assert classify_namespace(prefix[:-1]) == "record"


@pytest.mark.parametrize(("build", "parse", "prefix", "kind"), FAMILIES)
@pytest.mark.parametrize("name", ["emails", "a:b", "a:b:c", ":", "", "ünï cødé", "queue_job:x"])
def test_family_round_trip(build, parse, prefix, kind, name):
    namespace = build(name)
    assert namespace == prefix + name  # the spec's spelling, byte for byte
    assert parse(namespace) == name
    assert classify_namespace(namespace) == kind


@pytest.mark.parametrize(("build", "parse", "prefix", "kind"), FAMILIES)
@pytest.mark.parametrize("other", ["runs", "queue", "", "x:y", "queue_jobx:a", "Queue_Job:a", " queue_job:a"])
def test_a_parser_answers_none_outside_its_family(build, parse, prefix, kind, other):
    assert parse(other) is None


def test_queue_of_reads_jobs_and_dead_letters_only():
    assert ns.queue_of("queue_job:emails") == "emails"
    assert ns.queue_of("queue_dlq:emails") == "emails"
    assert ns.queue_of("topic_msg:emails") is None
    assert ns.is_dead_letters("queue_dlq:emails")
    assert not ns.is_dead_letters("queue_job:emails")
    assert not ns.is_dead_letters("queue_dlqx:emails")


def test_prefixes_are_the_families_with_their_colon():
    assert ns.JOB_PREFIX == "queue_job:"
    assert ns.DLQ_PREFIX == "queue_dlq:"
    for build, _parse, prefix, _kind in FAMILIES:
        assert build("").endswith(":")
        assert build("q").startswith(prefix)


def test_fixed_namespaces_are_the_spec_names():
    fixed = {
        ns.RUNS: "run", ns.QUEUE: "control", ns.WORKER: "control", ns.CRON: "definition",
        ns.SCHEDULE: "definition", ns.CRON_DURABLE: "control", ns.SCHEDULE_DURABLE: "control",
        ns.CACHE: "definition", ns.RATELIMIT: "definition", ns.TOPIC: "definition",
        ns.TOPIC_STATE: "control", ns.WEBHOOK: "control", ns.WEBHOOK_CB: "state",
    }
    assert {name: kind for name, kind in SPEC_ROWS if ":" not in name and name != "my_custom_namespace"} == fixed
    assert ns.SCHEDULER_CONTROL == {"cron": "cron_durable", "schedule": "schedule_durable"}


def test_audit_namespaces_are_plain_records():
    assert ns.AUDIT == "audit"
    assert ns.job_audit_namespace("emails", "j1") == "audit:job:emails:j1"
    assert ns.job_audit_namespace("a:b", "j:1") == "audit:job:a:b:j:1"
    assert classify_namespace(ns.AUDIT) == "record"
    assert classify_namespace(ns.job_audit_namespace("emails", "j1")) == "record"


@pytest.mark.parametrize(
    ("namespace", "kind"),
    [("queue_groups", "state"), ("queue_group_members:01abc", "record"), ("queue_groups:x", "record")],
)
def test_group_namespaces_beyond_the_spec(namespace, kind):
    """Groups (docs/explanation/storage-model.md, a deviation): in oqron_records, off the definitions page."""
    assert classify_namespace(namespace) == kind
    assert ns.group_members_namespace("g1") == "queue_group_members:g1"
