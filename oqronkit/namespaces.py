"""Record kinds: which kind a namespace holds and which durable table stores it.

This is the spec's taxonomy (``storage-model.md``, "Record kinds"), exported so tools,
the board and users' own SQL all classify rows the same way.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Final, Literal

RecordKind = Literal[
    "definition", "control", "job", "dlq", "run", "message", "log", "state", "record"
]
TableKey = Literal["records", "jobs", "runs"]

RECORDS_TABLE: Final = "oqron_records"
JOBS_TABLE: Final = "oqron_jobs"
RUNS_TABLE: Final = "oqron_runs"
TABLE_NAMES: Final[dict[TableKey, str]] = {
    "records": RECORDS_TABLE,
    "jobs": JOBS_TABLE,
    "runs": RUNS_TABLE,
}
RECORD_KINDS: Final[tuple[RecordKind, ...]] = (
    "definition", "control", "job", "dlq", "run", "message", "log", "state", "record",
)

_EXACT: Final[dict[str, RecordKind]] = {
    "cron": "definition",
    "schedule": "definition",
    "cache": "definition",
    "ratelimit": "definition",
    "topic": "definition",
    "queue": "control",
    "worker": "control",
    "webhook": "control",
    "topic_state": "control",
    "cron_durable": "control",
    "schedule_durable": "control",
    "runs": "run",
    "webhook_cb": "state",
}
# Families are "<family>:<suffix>"; the suffix may itself contain ':'.
_FAMILIES: Final[dict[str, RecordKind]] = {
    "webhook_endpoints": "definition",
    "topic_groups": "control",
    "queue_job": "job",
    "queue_dlq": "dlq",
    "topic_msg": "message",
    "module_logs": "log",
}


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
    if kind in ("run", "message"):
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
