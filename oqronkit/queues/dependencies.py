"""Job dependencies: children wait for their parents (``depends_on``).

When a parent completes, its recorded dependents are released at once; when it dies
or is cancelled, each child follows its ``parent_failure`` policy. The leader's sweep
(:func:`sweep_waiting`) re-checks every waiting child, so no child can be stranded by a
race with a parent finishing while the child was being added.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from ..backends.hot_types import Signal
from ..clock import now_ms
from ..durable import DurablePlane, RecordWrite
from ..errors import InvalidJob
from ..hot import HotPlaneFacade
from ..namespaces import dlq_namespace, job_namespace
from ..skipped import guarded
from .completed_runs import find_completed_run
from .jobs import Job

logger = logging.getLogger(__name__)
MAX_CAS_TRIES = 20
#: How many of a queue's latest completed runs ``add`` reads looking for a parent that
#: is no longer in oqron_jobs (see :func:`has_completed_run`).
COMPLETED_RUN_SCAN = 10_000


def add_dependent(durable: DurablePlane, queue: str, parent_id: str, child: list[str]) -> bool:
    """Append ``child`` to the parent's dependents (compare-and-set loop); False if the
    parent no longer waits in its queue (the sweep then resolves the child)."""
    namespace = job_namespace(queue)
    for _ in range(MAX_CAS_TRIES):
        record = durable.get(namespace, parent_id)
        if record is None:
            return False
        dependents = list(record.value.get("dependents") or [])
        if child in dependents:
            return True
        value = {**record.value, "dependents": [*dependents, child]}
        if durable.compare_and_set(namespace, parent_id, expect={"dependents": record.value.get("dependents")},
                                   value=value):
            return True
    return False


def has_completed_run(durable: DurablePlane, queue: str, job_id: str, *, scan: int | None = None) -> bool:
    """Whether ``job_id`` of ``queue`` completed: a completed job leaves oqron_jobs and
    only its run says it existed (at most ``scan`` runs read, see :func:`find_completed_run`)."""
    return find_completed_run(durable, queue, job_id, scan=COMPLETED_RUN_SCAN if scan is None else scan) is not None


def on_parent_done(durable: DurablePlane, hot: HotPlaneFacade, parent: Job, outcome: str) -> None:
    """Resolve ``parent``'s dependents after it ``completed`` or went ``dead``, and settle
    it in its group (the finisher settles completed members in batches first)."""
    for queue, child_id in parent.dependents:
        resolve_child(durable, hot, queue, child_id, [parent.queue, parent.id], outcome)
    if parent.group:
        from ..groups.ledger import member_settled  # groups stands above this module

        member_settled(durable, hot, parent, outcome)


def resolve_child(
    durable: DurablePlane, hot: HotPlaneFacade, queue: str, child_id: str, parent: list[str], outcome: str
) -> None:
    namespace = job_namespace(queue)
    for _ in range(MAX_CAS_TRIES):
        record = durable.get(namespace, child_id)
        if record is None:
            return
        child = Job.from_value(record.value)
        if parent not in child.pending or child.status not in ("waiting-dependencies", "blocked"):
            return
        expect = {"pendingDependencies": record.value.get("pendingDependencies"), "status": child.status,
                  "blockedBy": record.value.get("blockedBy")}
        label = f"{parent[0]}/{parent[1]}"
        child.updated_at = now_ms()
        if outcome == "dead" and child.parent_failure == "cascade-fail":
            if _kill(durable, hot, child, expect, f"parent failed: {label}"):
                return
            continue
        if outcome == "dead" and child.parent_failure == "block":
            # Stays pending on the parent: retrying it from the DLQ can still release the child.
            child.blocked_by = sorted({*(child.blocked_by or []), label})
        else:
            child.pending = [p for p in child.pending if p != parent]
            child.blocked_by = [b for b in (child.blocked_by or []) if b != label] or None
        if child.blocked_by:
            child.status = "blocked"
        elif child.pending:
            child.status = "waiting-dependencies"
        else:
            child.status = "delayed" if child.run_at and child.run_at > now_ms() else "waiting"
        if durable.compare_and_set(namespace, child_id, expect=expect, value=child.to_value()):
            if child.status in ("waiting", "delayed"):
                hot.signal(queue, [Signal(child.id, child.priority, child.run_at, child.lifo)], now_ms())
            return


def _kill(durable: DurablePlane, hot: HotPlaneFacade, child: Job, expect: Mapping[str, Any], reason: str) -> bool:
    """Move a child to its dead-letter namespace, then cascade to its own children."""
    namespace = child.namespace
    if not durable.compare_and_set(namespace, child.id, expect=expect, value=child.to_value()):
        return False
    child.die(reason, now_ms())
    durable.apply(puts=[RecordWrite(child.namespace, child.id, child.to_value())], deletes=[(namespace, child.id)])
    on_parent_done(durable, hot, child, "dead")
    return True


def sweep_waiting(durable: DurablePlane, hot: HotPlaneFacade, queues: Sequence[str], *, limit: int = 500) -> int:
    """Re-check children waiting on parents: a parent that left its queue without
    releasing them (completed or died during the child's ``add``) is resolved now."""
    resolved = 0
    for queue in queues:
        records = [
            *durable.list(job_namespace(queue), status="waiting-dependencies", limit=limit).records,
            *durable.list(job_namespace(queue), status="blocked", limit=limit).records,
        ]
        for record in records:
            resolved += guarded("dependency sweep", job_namespace(queue), record.id,
                                partial(_sweep_child, durable, hot, queue, record.value)) or 0
    return resolved


def _sweep_child(durable: DurablePlane, hot: HotPlaneFacade, queue: str, value: dict[str, Any]) -> int:
    child = Job.from_value(value)
    resolved = 0
    for parent_queue, parent_id in list(child.pending):
        if durable.get(job_namespace(parent_queue), parent_id) is not None:
            continue
        # Gone from both places (completed, or deleted by an operator): released.
        outcome = "dead" if durable.get(dlq_namespace(parent_queue), parent_id) else "completed"
        if outcome == "dead" and f"{parent_queue}/{parent_id}" in (child.blocked_by or []):
            continue
        resolve_child(durable, hot, queue, child.id, [parent_queue, parent_id], outcome)
        resolved += 1
    return resolved


def resolve_dependencies(durable: DurablePlane, jobs: list[Job]) -> None:
    """For jobs being added: drop parents that completed; apply the failure policy to
    dead ones; refuse the batch (InvalidJob, nothing written) if a parent is nowhere:
    neither waiting nor running, dead-lettered, nor found among its queue's completed runs."""
    in_batch = {(j.queue, j.id) for j in jobs}
    missing: list[str] = []
    for job in jobs:
        if not job.pending:
            continue
        still, dead = [], []
        for queue, parent_id in job.pending:
            if (queue, parent_id) in in_batch or durable.get(job_namespace(queue), parent_id):
                still.append([queue, parent_id])
            elif durable.get(dlq_namespace(queue), parent_id):
                dead.append(f"{queue}/{parent_id}")
                if job.parent_failure == "block":  # a retried parent can still release it
                    still.append([queue, parent_id])
            elif not has_completed_run(durable, queue, parent_id):
                missing.append(f"{queue}/{parent_id}")
        if missing:
            continue
        job.pending = still
        if dead and job.parent_failure == "cascade-fail":
            job.die(f"parent failed: {', '.join(dead)}", now_ms())
        elif dead and job.parent_failure == "block":
            job.status, job.blocked_by = "blocked", dead
        elif job.pending:
            job.status = "waiting-dependencies"
    if missing:
        raise InvalidJob(
            f"depends_on names job(s) that do not exist: {', '.join(dict.fromkeys(missing))} (not waiting, "
            "running or dead-lettered, and no completed run among their queue's latest "
            f"{COMPLETED_RUN_SCAN:,}). "
            "Nothing was added; drop a parent that completed long ago from depends_on."
        )
