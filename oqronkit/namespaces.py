"""Namespaces: their names, builders and parsers, the kind each holds and its table.

This is the spec's taxonomy (``docs/explanation/storage-model.md``, its record kinds), exported so tools,
the board and users' own SQL all classify rows the same way. Every namespace string is
written here once: fixed ones as constants, families (``<family>:<suffix>``, the suffix
may itself contain ':') as a builder and a parser; every other module calls them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final, Literal

RecordKind = Literal[
    "definition", "control", "job", "dlq", "run", "message", "log", "state", "operation", "metric", "record"
]
TableKey = Literal["records", "jobs", "runs"]

RECORDS_TABLE: Final = "oqron_records"
"""The durable table of definitions, control state, dead letters, messages, logs and other records."""
JOBS_TABLE: Final = "oqron_jobs"
"""The durable table of jobs not yet finished (waiting, delayed, active, blocked)."""
RUNS_TABLE: Final = "oqron_runs"
"""The durable table of runs: one row per attempt of a job, cron or delivery."""
TABLE_NAMES: Final[dict[TableKey, str]] = {
    "records": RECORDS_TABLE,
    "jobs": JOBS_TABLE,
    "runs": RUNS_TABLE,
}
"""The three durable tables by key: ``records``, ``jobs`` and ``runs``."""
RECORD_KINDS: Final[tuple[RecordKind, ...]] = (
    "definition", "control", "job", "dlq", "run", "message", "log", "state", "operation", "metric", "record",
)
"""The kinds of record the storage model knows; :func:`table_for_kind` says which table holds each."""

# Fixed namespaces (definitions and control records, the run log, the board's audit).
RUNS: Final = "runs"
QUEUE: Final = "queue"
WORKER: Final = "worker"
CRON: Final = "cron"
SCHEDULE: Final = "schedule"
CRON_DURABLE: Final = "cron_durable"
SCHEDULE_DURABLE: Final = "schedule_durable"
CACHE: Final = "cache"
RATELIMIT: Final = "ratelimit"
TOPIC: Final = "topic"
TOPIC_STATE: Final = "topic_state"
WEBHOOK: Final = "webhook"
WEBHOOK_CB: Final = "webhook_cb"
# The board's operator actions, written through the engine; not in the spec's table.
AUDIT: Final = "audit"
# The reconciler's and rescuer's passes that repaired something (services/passes.py); not
# in the spec's table: kind record, bounded to a few dozen rows.
SERVICE_PASSES: Final = "service_passes"
# Group records (oqronkit.groups.ledger); not in the spec's table: kind state, kept off the
# definitions (definition and control kinds) the board lists.
QUEUE_GROUPS: Final = "queue_groups"
# Tracked bulk operations (oqronkit.operations); not in the spec's table: kind operation,
# and each one's progress (cursor and counts, written with every chunk): kind state.
OPERATIONS: Final = "operations"
OPERATION_PROGRESS: Final = "operation_progress"
# A replay set's running tally (oqronkit.replay.pages): the final counts of each of its
# chunks of pairs; not in the spec's table: kind record.
REPLAY_TALLIES: Final = "replay_tallies"
# Metrics history (oqronkit.history); not in the spec's table: kind metric, stored in
# oqron_runs (append-heavy, pruned by expires_at), one row per (resolution, scope, key,
# bucket), and the deploy markers; the rollup's watermark is kind state.
METRICS_MINUTE: Final = "metrics_minute"
METRICS_HOUR: Final = "metrics_hour"
METRICS_DAY: Final = "metrics_day"
METRICS_DEPLOYS: Final = "metrics_deploys"
METRICS_STATE: Final = "metrics_state"
# A schedule kind's definitions namespace -> its durable control (pointer) namespace.
SCHEDULER_CONTROL: Final[dict[str, str]] = {CRON: CRON_DURABLE, SCHEDULE: SCHEDULE_DURABLE}

# Family prefixes, colon included: what a namespace__startswith filter needs.
JOB_PREFIX: Final = "queue_job:"
DLQ_PREFIX: Final = "queue_dlq:"
TOPIC_MSG_PREFIX: Final = "topic_msg:"
TOPIC_GROUPS_PREFIX: Final = "topic_groups:"
WEBHOOK_ENDPOINTS_PREFIX: Final = "webhook_endpoints:"
MODULE_LOGS_PREFIX: Final = "module_logs:"
# One group's member ledger (status and output per member); not in the spec's table:
# kind record (unregistered), so thousands of rows never crowd the state kind's lists.
GROUP_MEMBERS_PREFIX: Final = "queue_group_members:"
# Not in the spec's table (docs/explanation/storage-model.md): add's uniqueness windows and debounce keys.
UNIQUE_PREFIX: Final = "queue_unique:"
DEBOUNCE_PREFIX: Final = "queue_debounce:"
# Not in the spec's table, kind record: a tracked replay's pairs in chunks (one row per
# chunk of up to 1,000), and an operation's items: those it has done (a resend's
# deliveries, so a delivery with several attempts in the walk is sent once) or its
# frozen selection (an id-list replay's run ids, ``part.<n>`` of up to 1,000).
REPLAY_PAIRS_PREFIX: Final = "replay_pairs:"
OPERATION_ITEMS_PREFIX: Final = "operation_items:"

_EXACT: Final[dict[str, RecordKind]] = {
    CRON: "definition",
    SCHEDULE: "definition",
    CACHE: "definition",
    RATELIMIT: "definition",
    TOPIC: "definition",
    QUEUE: "control",
    WORKER: "control",
    WEBHOOK: "control",
    TOPIC_STATE: "control",
    CRON_DURABLE: "control",
    SCHEDULE_DURABLE: "control",
    QUEUE_GROUPS: "state",
    OPERATIONS: "operation",
    OPERATION_PROGRESS: "state",
    RUNS: "run",
    WEBHOOK_CB: "state",
    METRICS_MINUTE: "metric",
    METRICS_HOUR: "metric",
    METRICS_DAY: "metric",
    METRICS_DEPLOYS: "metric",
    METRICS_STATE: "state",
}
# Families are "<family>:<suffix>"; the suffix may itself contain ':'.
_FAMILY_KINDS: Final[tuple[tuple[str, RecordKind], ...]] = (
    (WEBHOOK_ENDPOINTS_PREFIX, "definition"),
    (TOPIC_GROUPS_PREFIX, "control"),
    (JOB_PREFIX, "job"),
    (DLQ_PREFIX, "dlq"),
    (TOPIC_MSG_PREFIX, "message"),
    (MODULE_LOGS_PREFIX, "log"),
    (UNIQUE_PREFIX, "state"),
    (DEBOUNCE_PREFIX, "state"),
)
_FAMILIES: Final[dict[str, RecordKind]] = {prefix[:-1]: kind for prefix, kind in _FAMILY_KINDS}


def job_namespace(queue: str) -> str:
    """The namespace of ``queue``'s jobs: ``job_namespace("emails") == "queue_job:emails"``."""
    return JOB_PREFIX + queue


def dlq_namespace(queue: str) -> str:
    """The namespace of ``queue``'s dead letters: ``"queue_dlq:emails"``."""
    return DLQ_PREFIX + queue


def queue_of(namespace: str) -> str | None:
    """The queue of a job or dead-letter namespace (``"queue_dlq:a:b"`` -> ``"a:b"``), or
    None for any other namespace."""
    if namespace.startswith(JOB_PREFIX):
        return namespace[len(JOB_PREFIX):]
    if namespace.startswith(DLQ_PREFIX):
        return namespace[len(DLQ_PREFIX):]
    return None


def is_dead_letters(namespace: str) -> bool:
    """Whether ``namespace`` holds dead letters (``queue_dlq:<queue>``)."""
    return namespace.startswith(DLQ_PREFIX)


def unique_namespace(queue: str) -> str:
    """The namespace of ``queue``'s uniqueness windows: ``"queue_unique:emails"``."""
    return UNIQUE_PREFIX + queue


def debounce_namespace(queue: str) -> str:
    """The namespace of ``queue``'s debounce keys: ``"queue_debounce:emails"``."""
    return DEBOUNCE_PREFIX + queue


def topic_msg_namespace(topic: str) -> str:
    """The namespace of ``topic``'s retained messages: ``"topic_msg:orders"``."""
    return TOPIC_MSG_PREFIX + topic


def topic_of_messages(namespace: str) -> str | None:
    """The topic of a ``topic_msg:<topic>`` namespace, or None for any other."""
    return _suffix(namespace, TOPIC_MSG_PREFIX)


def topic_groups_namespace(topic: str) -> str:
    """The namespace of ``topic``'s consumer groups: ``"topic_groups:orders"``."""
    return TOPIC_GROUPS_PREFIX + topic


def topic_of_groups(namespace: str) -> str | None:
    """The topic of a ``topic_groups:<topic>`` namespace, or None for any other."""
    return _suffix(namespace, TOPIC_GROUPS_PREFIX)


def webhook_endpoints_namespace(webhook: str) -> str:
    """The namespace of ``webhook``'s endpoints: ``"webhook_endpoints:billing"``."""
    return WEBHOOK_ENDPOINTS_PREFIX + webhook


def webhook_of_endpoints(namespace: str) -> str | None:
    """The webhook of a ``webhook_endpoints:<webhook>`` namespace, or None for any other."""
    return _suffix(namespace, WEBHOOK_ENDPOINTS_PREFIX)


def module_logs_namespace(module: str) -> str:
    """The namespace of a module's logs: ``module_logs_namespace("queue") == "module_logs:queue"``."""
    return MODULE_LOGS_PREFIX + module


def module_of_logs(namespace: str) -> str | None:
    """The module of a ``module_logs:<module>`` namespace, or None for any other."""
    return _suffix(namespace, MODULE_LOGS_PREFIX)


def group_members_namespace(group_id: str) -> str:
    """The namespace of a group's member ledger: ``"queue_group_members:<group id>"``."""
    return GROUP_MEMBERS_PREFIX + group_id


def replay_pairs_namespace(set_id: str) -> str:
    """The namespace of a tracked replay set's chunks of pairs: ``"replay_pairs:<set id>"``."""
    return REPLAY_PAIRS_PREFIX + set_id


def operation_items_namespace(op_id: str) -> str:
    """The namespace of the items an operation did: ``"operation_items:<operation id>"``."""
    return OPERATION_ITEMS_PREFIX + op_id


def job_audit_namespace(queue: str, job_id: str) -> str:
    """The namespace of one job's audit entries (``"audit:job:emails:j1"``), which the board
    writes beside ``audit``; never parsed: a queue name may hold ':'."""
    return f"{AUDIT}:job:{queue}:{job_id}"


def _suffix(namespace: str, prefix: str) -> str | None:
    return namespace[len(prefix):] if namespace.startswith(prefix) else None


@lru_cache(maxsize=4096)
def classify_namespace(namespace: str) -> RecordKind:
    """Return the record kind of a logical namespace, per the spec's table.

    ``classify_namespace("queue_job:emails") == "job"``; unknown namespaces are ``record``.
    """
    exact = _EXACT.get(namespace)
    if exact is not None:
        return exact
    family, sep, _suffix = namespace.partition(":")
    if sep:
        return _FAMILIES.get(family, "record")
    return "record"


def table_for_kind(kind: str) -> TableKey:
    """Return which table (``records``, ``jobs`` or ``runs``) stores a record kind."""
    if kind in ("job", "dlq"):
        return "jobs"
    if kind in ("run", "message", "metric"):
        return "runs"
    return "records"


def table_name_for_namespace(namespace: str) -> str:
    """The SQL table name (``oqron_jobs`` ...) that stores rows of ``namespace``."""
    return TABLE_NAMES[table_for_kind(classify_namespace(namespace))]


def sole_namespace_of_kind(kind: str) -> str | None:
    """The one namespace that holds ``kind`` (``"run"`` -> ``"runs"``), or None when the
    kind spans several (families, or ``record``). A kind filter can then name the
    namespace too, which the primary key serves: oqron_runs' kind index leaves runs out."""
    return _SOLE_NAMESPACE.get(kind)


_SOLE_NAMESPACE: Final[dict[str, str]] = {
    kind: namespace for namespace, kind in _EXACT.items()
    if list(_EXACT.values()).count(kind) == 1 and kind not in _FAMILIES.values() and kind != "record"
}
