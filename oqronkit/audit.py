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
from collections.abc import Iterable, Sequence
from typing import Any

from .codec import text_problem
from .durable import RecordWrite
from .errors import OqronError
from .namespaces import AUDIT, job_audit_namespace
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


def audit_writes(entry: dict[str, Any], targets: Sequence[tuple[str, str]]) -> list[RecordWrite]:
    """The record and its per-job copies. A job whose id the engine no longer accepts in
    a name (a newline, from an older version) gets no copy: one refused namespace would
    fail the whole write."""
    writes = [RecordWrite(AUDIT, entry["id"], entry)]
    links = (job_audit_namespace(q, j) for q, j in targets[:MAX_JOB_LINKS])
    writes += [RecordWrite(ns, entry["id"], entry) for ns in links if text_problem(ns) is None]
    return writes


def save_audit(engine: Planes, entry: dict[str, Any], targets: Sequence[tuple[str, str]]) -> bool:
    """Write ``entry``; never raises: an action already done must not be reported as
    failed because its audit write failed. False when the write failed (logged)."""
    try:
        engine.durable.put_many(audit_writes(entry, targets))
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
