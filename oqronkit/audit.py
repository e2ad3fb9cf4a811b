"""The operator audit log's record: one home for its shape, written through the durable plane.

An operator action (the board's, the admin's, the JSON API's, the CLI's) becomes one
record in the ``audit`` namespace (record kind ``record``, table ``oqron_records``):
who, when, what, on which ids, from where (``source``) and the result. Each affected
job also gets a copy in ``audit:job:<queue>:<job id>`` so its detail page lists "who did
what to me" with one primary-key range read. Ids start with the time in zero-padded
milliseconds, so the primary key orders the log newest first without another index.

The board's ``oqronboard.base.audit.Action`` and the engine-only CLI both call
:func:`audit_entry` and :func:`audit_writes`, so a record reads the same wherever it came from.
"""

from __future__ import annotations

import logging
import secrets
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .codec import text_problem
from .durable import RecordWrite
from .errors import OqronError
from .namespaces import AUDIT, dlq_namespace, job_audit_namespace, job_namespace
from .planes import Planes

logger = logging.getLogger(__name__)
#: What one request or command acts on at most (the board's, the API's and the CLI's).
ACTION_CAP = 1000
#: A bulk action keeps this many ids in its record and links this many jobs to it.
MAX_IDS_KEPT = 1000
MAX_JOB_LINKS = 1000


def new_audit_id(at: int) -> str:
    return f"{at:013d}-{secrets.token_hex(4)}"


def audit_entry(*, at: int, user: str, action: str, source: str, queue: str | None,
                targets: Sequence[tuple[str, str]], ok: bool, result: Any, project: str, environment: str,
                extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The audit record of one action; ``targets`` are ``(queue, job id)`` pairs."""
    return {
        "id": new_audit_id(at), "at": at, "user": user, "action": action, "source": source,
        "queue": queue, "ids": [f"{q}/{j}" for q, j in targets[:MAX_IDS_KEPT]],
        "idCount": len(targets), "ok": ok, "result": result,
        "project": project, "environment": environment, **(extra or {}),
    }


def audit_writes(entry: dict[str, Any], targets: Sequence[tuple[str, str]],
                 correlations: Mapping[tuple[str, str], str] | None = None) -> list[RecordWrite]:
    """The record and its per-job copies; the copy of a job with a correlation id (in
    ``correlations``) carries it and its target, so the job's trace shows the action. A
    job whose id the engine no longer accepts in a name (a newline, from an older
    version) gets no copy: one refused namespace would fail the whole write."""
    writes = [RecordWrite(AUDIT, entry["id"], entry)]
    found = correlations or {}
    for q, j in targets[:MAX_JOB_LINKS]:
        ns = job_audit_namespace(q, j)
        if text_problem(ns) is None:
            cid = found.get((q, j))
            value = entry if cid is None else {**entry, "correlationId": cid, "target": [q, j]}
            writes.append(RecordWrite(ns, entry["id"], value))
    return writes


def target_correlations(engine: Planes, targets: Sequence[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The correlation ids of the targets still stored (waiting, delayed or dead)."""
    found: dict[tuple[str, str], str] = {}
    for queue, ids in by_queue(targets[:MAX_JOB_LINKS]).items():
        for namespace in (job_namespace(queue), dlq_namespace(queue)):
            for record in engine.durable.get_many(namespace, ids):
                cid = record.value.get("correlationId")
                if isinstance(cid, str):
                    found[(queue, record.id)] = cid
    return found


def save_audit(engine: Planes, entry: dict[str, Any], targets: Sequence[tuple[str, str]]) -> bool:
    """Write ``entry``; never raises: an action already done must not be reported as
    failed because its audit write failed. False when the write failed (logged)."""
    try:
        engine.durable.put_many(audit_writes(entry, targets, target_correlations(engine, targets)))
    except OqronError as exc:
        logger.error("could not write the audit record of %s by %s: %s", entry["action"], entry["user"], exc,
                     extra={"action": "audit.write_failed"})
        return False
    return True


def by_queue(pairs: Iterable[tuple[str, str]]) -> dict[str, list[str]]:
    """``(queue, job id)`` targets grouped by queue: one engine call per queue."""
    grouped: dict[str, list[str]] = defaultdict(list)
    for queue, job_id in pairs:
        grouped[queue].append(job_id)
    return grouped
