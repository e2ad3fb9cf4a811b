"""Groups: jobs added together, and a callback enqueued once when they have settled.

A group is three kinds of durable rows, written in one atomic ``apply``:

- the group record (``queue_groups/<id>``): its status (``open`` -> ``firing`` ->
  ``completed`` | ``failed``), policy and callbacks;
- one ledger row per member (``queue_group_members:<id>/<queue>:<job id>``): ``pending``,
  then ``completed`` with the member's output, or ``dead`` with its error;
- the callback jobs themselves, stored up front as ``waiting-dependencies`` (no parent):
  a job nothing releases but this module.

Exactly once: whoever settles a member (the finisher, a batch at a time) writes its
ledger row, then walks the ledger's statuses; finding none pending, it decides the group
by a compare-and-set of its record from ``open`` (one process wins, however many race),
and fires: a compare-and-set of the callback job from ``waiting-dependencies`` to
``waiting``, which can succeed only once whoever retries it. Every step is durable and
idempotent, so the leader's sweep (:func:`sweep_groups`) finishes what a crashed process
left: members that left their queue unsettled, groups settled but not decided, groups
decided but not fired.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Literal, NamedTuple

from ..backends.hot_types import Signal
from ..clock import now_ms
from ..codec import check_text
from ..durable import DurablePlane, RecordWrite
from ..errors import BackendUnavailable, InvalidJob, RecordTooLarge
from ..hot import HotPlaneFacade
from ..ids import new_id
from ..lifecycle import emit_many
from ..namespaces import QUEUE_GROUPS, dlq_namespace, group_members_namespace, job_namespace
from ..queues.completed_runs import find_completed_run
from ..queues.enqueue import BULK_OPTIONS, build_job
from ..queues.jobs import Job
from ..skipped import guarded

logger = logging.getLogger(__name__)
FailurePolicy = Literal["first", "after_all"]
FAILURE_POLICIES = ("first", "after_all")
#: A group is written in one transaction: its members, ledger and callbacks together.
MAX_GROUP_MEMBERS = 10_000
#: How long a settled group's record and ledger stay readable (group_results, the board).
KEEP_SETTLED_MS = 7 * 24 * 3600 * 1000
PRUNE_EVERY_S = 60.0
_last_prune = float("-inf")
_CAS_TRIES = 20
#: Completed runs of a queue the sweep reads looking for an unnoticed member's output.
RUN_SCAN = 10_000
_PAGE = 1000
# A member is a fresh job the group alone tracks: no id of the caller's, no parents, no windows.
_REFUSED_OPTIONS = frozenset({"job_id", "depends_on", "parent_failure", "unique_for", "unique_key", "debounce"})


class JobSpec(NamedTuple):
    """A job to add as part of a group: a queue (a Queue or its name), a payload and the
    options of ``Queue.add`` (not those naming or relating jobs: docs/how-to/groups-and-batches.md)."""

    queue: Any
    data: Any = None
    options: Mapping[str, Any] = {}


def job_spec(queue: Any, data: Any = None, **options: Any) -> JobSpec:
    """``job_spec(emails, {"to": ...}, priority=5)``: a group member or callback."""
    return JobSpec(queue, data, options)


def member_key(queue: str, job_id: str) -> str:
    """A member's ledger id; a queue name holds no ':', so the first one splits it."""
    return f"{queue}:{job_id}"


def create_group(
    engine: Any,
    members: Iterable[Any],
    *,
    on_complete: Any = None,
    on_failure: Any = None,
    on_failure_policy: FailurePolicy = "first",
    name: str | None = None,
    group_id: str | None = None,
) -> str:
    """Store a group, its members and its callbacks atomically, signal the members, and
    return the group id. With ``group_id`` given and already stored, nothing is added."""
    if on_failure_policy not in FAILURE_POLICIES:
        raise InvalidJob(f"on_failure_policy must be one of {FAILURE_POLICIES}, got {on_failure_policy!r}.")
    if name is not None:
        check_text(name, what="group name")
    gid = check_text(group_id, what="group_id") if group_id is not None else new_id()
    if group_id is not None and engine.durable.get(QUEUE_GROUPS, gid) is not None:
        return gid
    jobs = [_build(engine, spec, gid, what="a group member") for spec in members]
    if not 1 <= len(jobs) <= MAX_GROUP_MEMBERS:
        raise InvalidJob(f"A group needs 1 to {MAX_GROUP_MEMBERS:,} members, got {len(jobs):,}.")
    callbacks: dict[str, Job] = {}
    for role, spec in (("onComplete", on_complete), ("onFailure", on_failure)):
        if spec is not None:
            callback = _build(engine, spec, gid, what=f"the {role} callback", job_id=f"{gid}:{role}")
            callback.status, callback.run_at = "waiting-dependencies", None  # released by this module alone
            callbacks[role] = callback
    now = now_ms()
    record = {
        "id": gid, "name": name, "status": "open", "outcome": None, "policy": on_failure_policy,
        "total": len(jobs), "createdAt": now, "decidedAt": None, "firedAt": None,
        "queues": sorted({j.queue for j in jobs}),
        "onComplete": _ref(callbacks.get("onComplete")), "onFailure": _ref(callbacks.get("onFailure")),
    }
    ledger = group_members_namespace(gid)
    puts = [RecordWrite(QUEUE_GROUPS, gid, record)]
    puts += [RecordWrite(ledger, member_key(j.queue, j.id), _pending_row(i, j)) for i, j in enumerate(jobs)]
    puts += [RecordWrite(j.namespace, j.id, j.to_value()) for j in [*callbacks.values(), *jobs]]
    engine.durable.apply(puts=puts)
    by_queue: dict[str, list[Job]] = defaultdict(list)
    for job in jobs:
        by_queue[job.queue].append(job)
    for queue, queued in by_queue.items():
        _signal(engine.hot, queue, queued)
        emit_many(engine.registry, engine.registry.queues.get(queue), "enqueued", queued, inline=True)
    logger.info("group %s stored: %d member(s)", gid, len(jobs), extra={"action": "groups.create"})
    return gid


def _build(engine: Any, spec: Any, gid: str, *, what: str, job_id: str | None = None) -> Job:
    queue, data, options = _unpack(spec, what)
    unknown = set(options) - BULK_OPTIONS
    if unknown:
        raise InvalidJob(f"{what}: unknown add option(s): {', '.join(sorted(unknown))}.")
    # A callback is due when the group settles: a delay counted from the group's creation would mislead.
    refused = _REFUSED_OPTIONS & set(options) | ({"delay", "run_at"} & set(options) if job_id else set())
    if refused:
        raise InvalidJob(f"{what}: {', '.join(sorted(refused))} cannot be set on a group's "
                         f"{'callbacks' if job_id else 'jobs'}.")
    queue = engine.controller(queue) if isinstance(queue, str) else queue
    job = build_job(queue, data, job_id=job_id, **options)
    job.group = gid
    return job


def _unpack(spec: Any, what: str) -> tuple[Any, Any, Mapping[str, Any]]:
    if isinstance(spec, (tuple, list)) and len(spec) in (2, 3):
        options = spec[2] if len(spec) == 3 else {}
        if isinstance(options, Mapping) and (isinstance(spec[0], str) or hasattr(spec[0], "namespace")):
            return spec[0], spec[1], options
    raise InvalidJob(f"{what} must be a job_spec(queue, data, **options) or a (queue, data[, options]) tuple, "
                     f"got {spec!r}.")


def _ref(job: Job | None) -> list[str] | None:
    return [job.queue, job.id] if job is not None else None


def _pending_row(index: int, job: Job) -> dict[str, Any]:
    return {"index": index, "queue": job.queue, "jobId": job.id, "status": "pending", "output": None,
            "error": None, "runId": None, "settledAt": None}


def _signal(hot: HotPlaneFacade, queue: str, jobs: Sequence[Job]) -> None:
    try:
        hot.signal(queue, [Signal(j.id, j.priority, j.run_at, j.lifo) for j in jobs], now_ms())
    except BackendUnavailable as exc:  # stored: the reconciler signals them once the hot plane is back
        logger.warning("hot plane unavailable while signalling %d group job(s) of %s: %s", len(jobs), queue, exc,
                       extra={"action": "groups.hot_unavailable"})


# -- settling members ----------------------------------------------------------------


def member_settled(durable: DurablePlane, hot: HotPlaneFacade, job: Job, outcome: str, *,
                   output: Any = None) -> None:
    """Record that ``job`` (a member of ``job.group``) ``completed`` or went ``dead``, then
    decide the group if that settled it. Idempotent: a repeat changes nothing."""
    gid = job.group
    if not gid:
        return
    error = job.last_error or ({"type": "DeadLetter", "message": job.dead_reason} if job.dead_reason else None)
    if _mark(durable, gid, job.queue, job.id, outcome, output=output, error=error, run_id=job.run_id):
        decide(durable, hot, gid)


def members_completed(durable: DurablePlane, hot: HotPlaneFacade, completed: Sequence[tuple[Job, Any]]) -> None:
    """The finisher's batch of completed jobs that belong to groups (with their outputs):
    one read and one write of ledger rows per group, then one decision per group. A
    completion is final, so the rows are written without a compare-and-set."""
    by_group: dict[str, list[tuple[Job, Any]]] = defaultdict(list)
    for job, output in completed:
        if job.group:
            by_group[job.group].append((job, output))
    for gid, items in by_group.items():
        ledger = group_members_namespace(gid)
        rows = {r.id: r.value for r in durable.get_many(ledger, [member_key(j.queue, j.id) for j, _ in items])}
        writes = []
        for job, output in items:
            row = rows.get(member_key(job.queue, job.id))  # None: a callback, or a pruned group
            if row is not None and row.get("status") != "completed":
                writes.append(RecordWrite(ledger, member_key(job.queue, job.id), {
                    **row, "status": "completed", "settledAt": now_ms(), "output": output, "error": None,
                    "runId": job.run_id or row.get("runId")}))
        if not writes:
            continue
        try:
            durable.put_many(writes)
        except RecordTooLarge:  # one output too large beside the ledger's fields: row by row
            for job, output in items:
                _mark(durable, gid, job.queue, job.id, "completed", output=output, error=None, run_id=job.run_id)
        decide(durable, hot, gid)


def _mark(durable: DurablePlane, gid: str, queue: str, job_id: str, outcome: str, *, output: Any,
          error: Any, run_id: str | None) -> bool:
    """Move a member's ledger row to ``outcome``; False when nothing changed (a repeat,
    an outcome already final, no such member: a callback, or a pruned group)."""
    namespace, key = group_members_namespace(gid), member_key(queue, job_id)
    for _ in range(_CAS_TRIES):
        row = durable.get(namespace, key)
        if row is None:
            return False
        status = row.value.get("status")
        if status == outcome or status == "completed":
            return False
        value = {**row.value, "status": outcome, "settledAt": now_ms(), "runId": run_id or row.value.get("runId"),
                 "output": output if outcome == "completed" else None,
                 "error": error if outcome == "dead" else None}
        try:
            if durable.compare_and_set(namespace, key, expect={"status": status}, value=value):
                return True
        except RecordTooLarge:  # the output fits a run but not beside the ledger's fields: say so
            value["output"], value["outputTooLarge"] = None, True
            if durable.compare_and_set(namespace, key, expect={"status": status}, value=value):
                return True
    logger.warning("could not settle %s/%s in group %s (contention); the sweep will", queue, job_id, gid,
                   extra={"action": "groups.settle_contended"})
    return False


def _any(durable: DurablePlane, gid: str, status: str) -> bool:
    return next(iter(durable.scan_statuses(group_members_namespace(gid), [status], page=_PAGE)), None) is not None


def decide(durable: DurablePlane, hot: HotPlaneFacade, gid: str) -> None:
    """Decide an open group from its ledger: ``failed`` once a member is dead (policy
    ``first``) or when none is pending and one is dead, ``completed`` when all completed;
    one compare-and-set from ``open`` wins. Fire a group decided but not fired."""
    record = durable.get(QUEUE_GROUPS, gid)
    if record is None:
        return
    group = record.value
    if group.get("status") == "firing":
        fire(durable, hot, gid)
        return
    if group.get("status") != "open":
        return
    if group.get("policy") == "first" and _any(durable, gid, "dead"):
        outcome = "failed"
    elif _any(durable, gid, "pending"):
        return
    else:
        outcome = "failed" if _any(durable, gid, "dead") else "completed"
    decided = {**group, "status": "firing", "outcome": outcome, "decidedAt": now_ms()}
    if durable.compare_and_set(QUEUE_GROUPS, gid, expect={"status": "open"}, value=decided):
        logger.info("group %s %s", gid, outcome, extra={"action": "groups.decided"})
        fire(durable, hot, gid)


def fire(durable: DurablePlane, hot: HotPlaneFacade, gid: str) -> None:
    """Release the decided group's callback, drop the other, and mark the group final;
    each step is a compare-and-set, so a repeat (the sweep after a crash) is a no-op."""
    record = durable.get(QUEUE_GROUPS, gid)
    if record is None or record.value.get("status") != "firing":
        return
    group = record.value
    wanted, other = ("onComplete", "onFailure") if group["outcome"] == "completed" else ("onFailure", "onComplete")
    if group.get(wanted):
        _release(durable, hot, group[wanted])
    if group.get(other):
        queue, job_id = group[other]
        durable.compare_and_set(job_namespace(queue), job_id, expect={"status": "waiting-dependencies"}, value=None)
    final = {**group, "status": group["outcome"], "firedAt": now_ms()}
    durable.compare_and_set(QUEUE_GROUPS, gid, expect={"status": "firing"}, value=final)


def _release(durable: DurablePlane, hot: HotPlaneFacade, ref: list[str]) -> None:
    queue, job_id = ref
    record = durable.get(job_namespace(queue), job_id)
    if record is None or record.value.get("status") != "waiting-dependencies":
        return  # released already (or cancelled by an operator)
    job = Job.from_value(record.value)
    job.status, job.updated_at = "waiting", now_ms()
    if durable.compare_and_set(job_namespace(queue), job_id, expect={"status": "waiting-dependencies"},
                               value=job.to_value()):
        _signal(hot, queue, [job])


# -- the leader's sweep --------------------------------------------------------------


def sweep_groups(durable: DurablePlane, hot: HotPlaneFacade, *, limit: int = 200) -> int:
    """Finish what a crash left: settle members that left their queue unrecorded, decide
    groups whose members have all settled, fire decided ones. Returns groups visited."""
    visited = 0
    for gid, _status in durable.scan_statuses(QUEUE_GROUPS, ["open", "firing"]):
        if visited >= limit:
            break
        visited += 1
        guarded("group sweep", QUEUE_GROUPS, gid, partial(_sweep_group, durable, hot, gid))
    global _last_prune
    if time.monotonic() - _last_prune >= PRUNE_EVERY_S:  # a sorted read: not on every 5 s sweep
        _last_prune = time.monotonic()
        prune_settled(durable)
    return visited


def prune_settled(durable: DurablePlane, *, now: int | None = None, limit: int = 20) -> int:
    """Delete the oldest groups settled more than :data:`KEEP_SETTLED_MS` ago, ledger
    first (a crash in between leaves the record, pruned next time); returns how many."""
    cutoff = (now_ms() if now is None else now) - KEEP_SETTLED_MS
    pruned = 0
    for record in durable.list(QUEUE_GROUPS, order="inserted", limit=limit).records:
        fired = record.value.get("firedAt")
        if record.value.get("status") not in ("completed", "failed") or not isinstance(fired, int) or fired > cutoff:
            continue
        ledger = group_members_namespace(record.id)
        while ids := [r.id for r in durable.list(ledger, limit=_PAGE).records]:
            durable.delete_many(ledger, ids)
        durable.delete(QUEUE_GROUPS, record.id)
        pruned += 1
    return pruned


def _sweep_group(durable: DurablePlane, hot: HotPlaneFacade, gid: str) -> None:
    ledger = group_members_namespace(gid)
    pending: dict[str, list[str]] = defaultdict(list)
    for key, _status in durable.scan_statuses(ledger, ["pending"], page=_PAGE):
        queue, _, job_id = key.partition(":")
        pending[queue].append(job_id)
    for queue, ids in pending.items():
        for start in range(0, len(ids), _PAGE):
            _settle_gone(durable, gid, queue, ids[start:start + _PAGE])
    decide(durable, hot, gid)


def _settle_gone(durable: DurablePlane, gid: str, queue: str, ids: list[str]) -> None:
    """Settle the members of ``ids`` no longer in their queue: dead-lettered, or gone
    (completed: their output is read back from the run, if retention kept it)."""
    gone = _absent(durable, job_namespace(queue), ids)
    if not gone:
        return
    dead = {r.id: r for r in durable.get_many(dlq_namespace(queue), gone)}
    for job_id, record in dead.items():
        job = Job.from_value(record.value)
        _mark(durable, gid, queue, job_id, "dead", output=None, run_id=job.run_id,
              error=job.last_error or {"type": "DeadLetter", "message": job.dead_reason})
    # Read again: a dead letter retried between the two reads is back in its queue.
    for job_id in _absent(durable, job_namespace(queue), [i for i in gone if i not in dead]):
        run = find_completed_run(durable, queue, job_id, scan=RUN_SCAN)
        _mark(durable, gid, queue, job_id, "completed", output=run.value.get("output") if run else None,
              error=None, run_id=run.id if run else None)


def _absent(durable: DurablePlane, namespace: str, ids: list[str]) -> list[str]:
    present = {r.id for r in durable.get_many(namespace, ids)} if ids else set()
    return [i for i in ids if i not in present]

