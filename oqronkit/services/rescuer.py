"""The rescuer: jobs whose lease lapsed (their worker died or hung) go back to their
queue, counting the attempt, or to the dead-letter queue after too many stalls."""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING

from ..backends.hot_types import Lease, Signal
from ..backends.types import ABSENT
from ..clock import now_ms
from ..errors import OqronError
from ..lifecycle import fire_stalled
from ..live import WORKER_TTL_MS, alive_workers
from ..namespaces import RUNS, dlq_namespace, job_namespace
from ..queues.backoff import Backoff
from ..queues.dependencies import on_parent_done
from ..queues.jobs import Job, shed_error_detail
from ..queues.shedding import write_shedding
from ..skipped import guarded

if TYPE_CHECKING:
    from ..engine import Engine
    from .passes import ServicePass

logger = logging.getLogger(__name__)
BATCH = 200


def rescue_expired(engine: Engine, queues: list[str], report: ServicePass | None = None) -> int:
    """Settle every lapsed lease of ``queues``; how many. ``report`` is told each one."""
    rescued = 0
    for queue in queues:
        # A dead holder leaves the registry only WORKER_TTL_MS after its last heartbeat:
        # trust "alive" only where a lease outlives that (renewed every third of it).
        trust_registry = _lease_ms(engine, queue) * 2 // 3 > WORKER_TTL_MS
        while leases := engine.hot.take_expired(queue, now=now_ms(), limit=BATCH):
            alive = _alive(engine, leases) if trust_registry else set()
            if report is not None:
                report.checked += len(leases)
            for i, lease in enumerate(leases):
                rescue = partial(rescue_one, engine, queue, lease, holder_alive=lease.worker in alive)
                try:
                    # A row it cannot use is skipped: the reconciler finds that job again later.
                    guarded("rescuer", job_namespace(queue), lease.job_id, rescue)
                except OqronError:
                    _put_back(engine, queue, leases[i:])
                    raise
                rescued += 1
                if report is not None:
                    report.note(queue, lease.job_id, "rescued")
    return rescued


def _put_back(engine: Engine, queue: str, leases: list[Lease]) -> None:
    """Leases taken but not settled (the durable plane failed, say, while the hot plane
    answers) go back under their tokens: dropped, a live holder's heartbeat re-created
    them while the job went unrescued, and a dead holder's job waited for the reconciler."""
    try:
        engine.hot.extend(queue, leases, lease_ms=_lease_ms(engine, queue), now=now_ms())
    except OqronError as exc:
        logger.warning("could not put back %d lease(s) of %s: %s", len(leases), queue, exc,
                       extra={"action": "rescuer.put_back_failed"})


def _alive(engine: Engine, leases: list[Lease]) -> set[str]:
    """The holders of ``leases`` alive in the worker registry; none if it cannot be read
    (then every lease is judged as a dead worker's: counted, as before)."""
    try:
        return alive_workers(engine.hot, (lease.worker for lease in leases))
    except OqronError as exc:
        logger.warning("could not read the worker registry; lapsed leases count as their workers' deaths: %s",
                       exc, extra={"action": "rescuer.registry_unread"})
        return set()


def rescue_one(engine: Engine, queue: str, lease: Lease, *, holder_alive: bool = False) -> None:
    """Settle one expired lease from the job's durable state. ``holder_alive``: the worker
    it was leased to is in the worker registry (README, "What is guaranteed": which
    lapsed leases count an attempt)."""
    namespace = job_namespace(queue)
    record = engine.durable.get(namespace, lease.job_id)
    if record is None:
        return  # completed or cancelled meanwhile
    job = Job.from_value(record.value)
    now = now_ms()
    if job.status in ("waiting", "delayed") and job.lease_token is None:
        if job.stalled_token == lease.token:
            # This claim's stall is counted already: its holder's heartbeat re-created the
            # lease between our take and our signal (an outage had lapsed it), then let it
            # lapse again. Counting it twice dead-lettered live, even completed, jobs.
            engine.hot.signal(queue, [Signal(job.id, job.priority, job.run_at, job.lifo)], now)
            return
        if holder_alive:
            # No attempt recorded as started, and its worker lives: it never knew of this lease
            # (a claim whose reply it lost) or could not renew it. No attempt is charged.
            engine.hot.signal(queue, [Signal(job.id, job.priority, job.run_at, job.lifo)], now)
            logger.warning("job %s/%s returned uncounted: its lease lapsed on live worker %s before an attempt was "
                           "recorded", queue, job.id, lease.worker, extra={"action": "rescuer.returned_uncounted"})
            return
        # Claimed, then its worker died before the active state was written behind:
        # still a stalled attempt, so a job that kills its worker cannot loop forever.
        # (A worker dying in the instant between storing a retry and releasing its
        # lease also lands here and counts one stall too many: rare and harmless.)
        job.attempts += 1
        mark_stalled(engine, job, None, "lease expired before the attempt was recorded (worker lost?)",
                     claim=lease.token)
        return
    if job.status != "active" or job.lease_token != lease.token:
        # The job moved on (its worker stored the next state but died before releasing
        # it): signal whatever the durable plane says.
        if job.status in ("waiting", "delayed"):
            engine.hot.signal(queue, [Signal(job.id, job.priority, job.run_at, job.lifo)], now)
        return
    mark_stalled(engine, job, lease.token, f"lease expired (worker {job.worker_id} lost?)")


def mark_stalled(engine: Engine, job: Job, token: int | None, why: str, *, claim: int | None = None) -> None:
    """Count a stalled attempt; retry it or, past ``max_stalls`` or its attempts, dead-letter it.
    ``token`` guards the write (the row's lease token); ``claim`` is the lapsed lease's
    token when the row does not show it yet (remembered, so that claim counts once)."""
    namespace = job_namespace(job.queue)
    now = now_ms()
    max_stalls = _max_stalls(engine, job.queue)
    job.stalls += 1
    job.stalled_token = token if claim is None else claim
    job.record_error({"type": "Stalled", "message": why, "attempt": job.attempts, "ts": now,
                      "runId": job.run_id})
    _fail_run(engine, job, why)
    job.lease_token = job.worker_id = None
    job.updated_at = now
    if job.stalls >= max_stalls or job.attempts >= job.max_attempts:
        reason = (f"stalled {job.stalls} times (max_stalls={max_stalls}): {why}" if job.stalls >= max_stalls
                  else f"{why}; attempts exhausted ({job.attempts} of {job.max_attempts})")
        job.die(reason, now)
        # The dead letter first, then the job's guarded removal: a crash or an outage
        # between the two leaves the job in both places, and the next pass ends it; the
        # other order left it in neither (lost).
        dead = dlq_namespace(job.queue)
        ours = write_shedding(lambda value: engine.durable.insert(dead, job.id, value), job.to_value(),
                              shed_error_detail)
        if not engine.durable.compare_and_set(namespace, job.id, expect={"leaseToken": token}, value=None):
            if ours:  # it moved on meanwhile (another holder): not dead after all
                engine.durable.delete(dead, job.id)
            return
        logger.warning("job %s/%s dead-lettered: %s", job.queue, job.id, reason, extra={"action": "rescuer.dead"})
        fire_stalled(engine.registry, job, why, "dead", reason)
        on_parent_done(engine.durable, engine.hot, job, "dead")
        return
    delay = Backoff.from_value(job.backoff).delay_ms(job.attempts)
    job.status, job.run_at = "delayed", now + delay
    if write_shedding(
        lambda value: engine.durable.compare_and_set(namespace, job.id, expect={"leaseToken": token}, value=value),
        job.to_value(), shed_error_detail,
    ):
        engine.hot.signal(job.queue, [Signal(job.id, job.priority, job.run_at, job.lifo)], now)
        logger.warning("job %s/%s rescued (%s); retry in %d ms", job.queue, job.id, why, delay,
                       extra={"action": "rescuer.retry"})
        fire_stalled(engine.registry, job, why, "retried", f"stalled; retry in {delay} ms")


def _fail_run(engine: Engine, job: Job, why: str) -> None:
    """Close the attempt's run as failed, only while it still says running (or was never
    written): a completion landing between our read and our write (its holder confirmed
    the lease on a promoted replica, say) keeps its record and the job its completed run."""
    if not job.run_id:
        return
    from ..queues.runs import finish_run, new_run, stored_run

    record = engine.durable.get(RUNS, job.run_id)
    if record is not None and record.value.get("status") != "running":
        return
    if record is None:  # the worker died before its run was written behind: rebuild it
        run = new_run(name=job.queue, module="queue", trigger="queue", input=job.data, attempts=job.attempts,
                      app=engine.config.project, environment=engine.config.environment,
                      worker_id=job.worker_id or "", job_id=job.id, correlation_id=job.correlation_id,
                      caused_by=job.caused_by,
                      started_at=job.started_at)
        run["id"] = job.run_id
    else:
        run = stored_run(record.value)
    finish_run(run, "failed", error={"type": "Stalled", "message": why, "ts": now_ms()}, reason=why,
               limit=engine.config.run_timeline_limit)
    expect = ABSENT if record is None else {"status": "running"}
    if not engine.durable.compare_and_set(RUNS, job.run_id, expect=expect, value=run):
        logger.info("run %s of %s/%s was settled while the rescuer closed it; kept", job.run_id, job.queue,
                    job.id, extra={"action": "rescuer.run_settled"})


def _lease_ms(engine: Engine, queue: str) -> int:
    declared = engine.registry.queues.get(queue)
    return declared.lease_ms if declared is not None else 30_000


def _max_stalls(engine: Engine, queue: str) -> int:
    declared = engine.registry.queues.get(queue)
    return declared.max_stalls if declared is not None else 2
