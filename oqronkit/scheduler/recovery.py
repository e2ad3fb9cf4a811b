"""Resolving claims a dead leader left behind (run on a new leader, then every few
seconds).

* A run still ``running`` that no live process refreshes (absent from the live-run
  group past its TTL) lost its leader: it is marked ``failed`` with a ``LeaderLost``
  error (never left running, never silently dropped) and re-run as a new attempt when
  the definition allows it (:func:`~oqronkit.scheduler.planner.may_rerun`: ``retries``,
  plus one recovery attempt under ``missed="run-once"``/``"run-all"``).
* A job-mode claim still ``queued`` after a grace period is checked against its job: in
  the queue (fine), dead-lettered or finished (the claim is settled from it), or never
  added (the leader died between claim and add: it is added now, same id).
"""

from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING, Any, Protocol

from ..live import LEADER_RUN_TTL_MS, live_run_ids
from ..namespaces import RUNS, dlq_namespace, job_namespace
from ..queues.runs import finish_run, stored_run
from ..skipped import guarded
from .executor import Reruns, RunExecutor
from .index import Entry
from .jobmode import enqueue, settle_claim
from .planner import retry_item

if TYPE_CHECKING:
    from ..engine import Engine

logger = logging.getLogger(__name__)
QUEUED_GRACE_MS = 30_000
PAGE = 500


class RecoveringScheduler(Reruns, Protocol):
    """What recovery reads of the leader's scheduler (:class:`~.scheduler.Scheduler`,
    which calls it): the engine, the runs executing in this process, and the indexed
    definitions a lost run may be re-run under."""

    @property
    def engine(self) -> Engine: ...

    @property
    def executor(self) -> RunExecutor: ...

    @property
    def entries(self) -> dict[tuple[str, str], Entry]: ...


def recover(scheduler: RecoveringScheduler, now: int) -> int:
    """One pass; returns how many claims are still pending (live or too young to judge,
    or jobs still in their queue): the scheduler looks again soon only while some are."""
    pending = 0
    for module in ("cron", "schedule"):
        pending += _running(scheduler, module, now) + _queued(scheduler, module, now)
    return pending


def _running(scheduler: RecoveringScheduler, module: str, now: int) -> int:
    engine = scheduler.engine
    records = engine.durable.list(RUNS, status="running", module=module, limit=PAGE).records
    mine = scheduler.executor.running
    foreign = [r.value for r in records if r.id not in mine]
    suspects = [run for run in foreign if (run.get("startedAt") or 0) <= now - LEADER_RUN_TTL_MS]
    live = live_run_ids(engine.hot, [r["id"] for r in suspects], now=now) if suspects else set()
    for run in suspects:
        if run["id"] not in live:
            guarded("scheduler recovery", RUNS, run["id"], functools.partial(resolve_lost, scheduler, run, now))
    return len(foreign) - len(suspects) + len(live)


def resolve_lost(scheduler: RecoveringScheduler, run: dict[str, Any], now: int) -> bool:
    engine = scheduler.engine
    final = stored_run(dict(run))
    why = f"the leader running it ({run.get('workerId')}) stopped before it finished"
    finish_run(final, "failed", error={"type": "LeaderLost", "message": why, "ts": now}, reason="leader lost",
               limit=engine.config.run_timeline_limit, at=now)
    if not engine.durable.compare_and_set(RUNS, run["id"], expect={"status": "running"}, value=final):
        return False
    entry = scheduler.entries.get((run["module"], run["name"]))
    item = retry_item(entry.definition, run, now, leader_lost=True) if entry is not None else None
    if item is not None and entry is not None:
        state = scheduler.add_retry(entry.definition, item, now)
        scheduler.wake(entry.definition.key, state)
    logger.warning("%s run %s lost its leader; marked failed%s", run["module"], run["id"],
                   "; re-running the slot" if item else "", extra={"action": "scheduler.leader_lost"})
    return True


def _queued(scheduler: RecoveringScheduler, module: str, now: int) -> int:
    records = scheduler.engine.durable.list(RUNS, status="queued", module=module, limit=PAGE).records
    # One claim it cannot read is skipped (logged once), not the end of the pass.
    return sum(guarded("scheduler recovery", RUNS, r.id,
                       functools.partial(_queued_one, scheduler, module, r.value, now)) or 0 for r in records)


def _queued_one(scheduler: RecoveringScheduler, module: str, claim: dict[str, Any], now: int) -> int:
    """1 while the claim is still pending, else 0 (settled, or nothing to do)."""
    engine = scheduler.engine
    if not claim.get("jobId"):
        return 0
    queue, job_id = claim.get("queue"), claim["jobId"]
    if not isinstance(queue, str):
        return 0  # a job-mode claim names its queue; without one there is nothing to settle
    if (claim.get("startedAt") or now) > now - QUEUED_GRACE_MS or \
            engine.durable.get(job_namespace(queue), job_id) is not None:
        return 1
    dead = engine.durable.get(dlq_namespace(queue), job_id)
    if dead is not None:
        settle_claim(engine, job_id, "failed", error=dead.value.get("lastError"),
                     attempts=dead.value.get("attempts"), reason=dead.value.get("deadReason"))
        return 0
    attempts = [r.value for r in engine.durable.list(RUNS, name=queue, order="started", descending=True,
                                                      limit=200).records if r.value.get("jobId") == job_id]
    if attempts:
        last = attempts[0]
        status = "completed" if any(a["status"] == "completed" for a in attempts) else last["status"]
        settle_claim(engine, job_id, status, output=last.get("output"), error=last.get("error"),
                     attempts=len(attempts))
        return 0
    entry = scheduler.entries.get((module, claim["name"]))
    if entry is None:
        return 0
    enqueue(engine, entry.definition, stored_run(claim))  # claimed, then the leader died before adding the job
    logger.warning("re-added the job of claim %s (its leader died before adding it)", job_id,
                   extra={"action": "scheduler.job_readded"})
    return 1
