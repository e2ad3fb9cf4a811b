"""One queue's claim loop: claim in batches as slots and the prefetch buffer free up,
read the claimed jobs (in the claim's own round trip where the store can: limited.py),
and hand them to the queue's buffer as held attempts."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from ..backends.hot_types import Lease, Signal
from ..backends.types import StoredRecord
from ..clock import now_ms
from ..errors import OqronError
from ..queues.jobs import Job
from .buffer import QueueBuffer
from .inflight import Inflight
from .limited import LimitedClaims
from .recovery import strays
from .state import WorkerState

logger = logging.getLogger(__name__)
#: Most jobs one claim takes (half the largest prefetch of the default concurrency:
#: see prefetch.MAX_PER_SLOT). One round trip to each plane feeds them all.
CLAIM_BATCH = 150


class Consumer:
    """``on_held`` starts held jobs of an ``async def`` queue (sync slots wake themselves)."""

    def __init__(self, state: WorkerState, buffer: QueueBuffer, *, on_held: Callable[[], None],
                 finisher_tokens: Callable[[str], set[int]] = lambda queue: set()) -> None:
        self.state = state
        self.buffer = buffer
        self.queue = buffer.queue
        self._on_held = on_held
        self._finisher_tokens = finisher_tokens  # leases of settled attempts the finisher still holds
        self._limit = LimitedClaims(state, buffer.queue, buffer.prefetch)

    def loop(self) -> None:
        stopping = self.state.stopping
        unread: list[Lease] = []  # claimed, but their jobs could not be read yet
        while not stopping.is_set():
            retrying, read = bool(unread), None
            if retrying:
                leases, unread = unread, []
            else:
                if self.state.unsure.take(self.queue.name):
                    claimed = self._recover()
                else:
                    claimed, read = self._claim() or (None, None)
                if not claimed:
                    continue
                leases = claimed
            try:
                self._hold_jobs(leases, read)
            except OqronError as exc:
                unread = self._keep_unread(leases, exc, log=not retrying)
        if self.state.unsure.take(self.queue.name):  # a last look: what it holds unknowingly goes back now
            unread += self._strays(unread) or []
        if unread:
            self._return_unread(unread)

    def _recover(self) -> list[Lease] | None:
        """After a claim or ack with no reply: the leases this worker holds unknowingly,
        to read and run like a claim (a job already gone is acked again); None when the
        plane does not answer yet (the queue stays marked)."""
        found = self._strays([])
        if found:
            logger.warning("%d lease(s) of %s were this worker's without its knowing (a claim or an ack got no "
                           "reply); taken back now", len(found), self.queue.name,
                           extra={"action": "worker.leases_recovered"})
            self.state.count("recovered", len(found))
            self.buffer.idle = False
        return found

    def _strays(self, also_known: list[Lease]) -> list[Lease] | None:
        try:
            found = strays(self.state, self.buffer, self._finisher_tokens, also_known)
        except OqronError as exc:
            self.state.unsure.mark(self.queue.name)
            self._hot_down(exc)
            return None
        self.state.hot_ok = True
        return found

    def _claim(self) -> tuple[list[Lease], list[StoredRecord] | None] | None:
        """Claim what there is room for, with the claimed jobs' records where the claim
        read them too; None (after waiting a little) when nothing was claimed."""
        state, buffer, name = self.state, self.buffer, self.queue.name
        if name in state.paused:
            buffer.idle = True
            state.stopping.wait(0.25)
            return None
        with state.lock:
            free = buffer.free_slots()
            if free == 0:
                buffer.room_waiters += 1
                try:
                    buffer.room.wait(0.05 if self.queue.throttle else 0.5)
                finally:
                    buffer.room_waiters -= 1
                return None
        if self._limit.waiting():
            return None
        asked_at = time.monotonic()  # what the claim saw is as of its start
        try:
            leases, read = self._limit.claim(min(free, CLAIM_BATCH))
            state.hot_ok = True
        except OqronError as exc:
            state.unsure.mark(name)  # it may have run: ask what we hold once the plane answers
            self._hot_down(exc)
            return None
        if not leases:
            if self._limit.held:  # ready jobs wait for the cluster-wide limit: not idle
                buffer.idle = False
                self._limit.waiting()
                return None
            if not buffer.inflight:
                buffer.idle, buffer.idle_at = True, asked_at
            if state.burst:
                state.stopping.wait(0.05)
            else:
                self._wait_for_work()
            return None
        buffer.idle = False
        state.last_claim_at = now_ms()
        buffer.claimed(len(leases))
        if state.metrics is not None:
            state.metrics.claimed(name, len(leases))
        return leases, read

    def _keep_unread(self, leases: list[Lease], exc: OqronError, *, log: bool) -> list[Lease]:
        """Claimed jobs that could not be read (an outage) or started: keep their leases,
        renewed, and read them again. Left to lapse, each cost its job a stall."""
        queue = self.queue
        if log:
            logger.error("could not start %d job(s) of %s; their leases are kept and the start retried: %s",
                         len(leases), queue.name, exc, extra={"action": "worker.start_failed"})
        self.state.stopping.wait(min(1.0, queue.lease_ms / 3000))
        try:
            kept = self.state.hot.extend(queue.name, leases, lease_ms=queue.lease_ms, now=now_ms())
        except OqronError:
            kept = leases  # no answer: the retry's _still_leased asks again before any start
        return kept

    def _return_unread(self, leases: list[Lease]) -> None:
        """At the stop: give back claimed jobs never read, as ready and uncounted."""
        state, queue, now = self.state, self.queue, now_ms()
        try:
            records = {r.id: r for r in state.durable.get_many(queue.namespace, [le.job_id for le in leases])}
            for lease in leases:
                record = records.get(lease.job_id)
                if record is None:
                    state.hot.ack(queue.name, [lease])
                    continue
                job = Job.from_value(record.value)
                state.hot.release(queue.name, lease, Signal(job.id, job.priority, None, job.lifo), now)
        except OqronError as exc:
            logger.warning("could not give back %d claimed job(s) of %s; their leases lapse: %s", len(leases),
                           queue.name, exc, extra={"action": "worker.return_failed"})
            return
        state.count("returned", len(leases))

    def _wait_for_work(self) -> None:
        hot, timeout = self.state.hot, self.state.poll_interval
        try:
            due = hot.next_due(self.queue.name)
            if due is not None:
                timeout = min(timeout, max((due - now_ms()) / 1000, 0.001))
            hot.wait([self.queue.name], timeout)
        except OqronError as exc:
            self._hot_down(exc)

    def _hot_down(self, exc: Exception) -> None:
        if self.state.hot_ok:
            logger.error("hot plane unreachable; claiming paused until it answers: %s", exc,
                         extra={"action": "worker.hot_down"})
        self.state.hot_ok = False
        self.state.stopping.wait(1.0)

    def _hold_jobs(self, leases: list[Lease], read: list[StoredRecord] | None = None) -> None:
        """Read the claimed jobs (unless the claim did: ``read``) and keep them as held
        attempts; the queue's slots start as many as they have room for."""
        state, queue = self.state, self.queue
        if read is None:
            read = state.durable.get_many(queue.namespace, [le.job_id for le in leases])
        records = {r.id: r for r in read}
        gone = [le for le in leases if le.job_id not in records]
        if gone:  # deleted or cancelled while signalled: nothing to run
            state.hot.ack(queue.name, gone)
        held: list[Inflight] = []
        for lease in leases:
            record = records.get(lease.job_id)
            if record is None:
                continue
            job = Job.from_value(record.value)
            job.attempts += 1
            job.status, job.lease_token, job.worker_id = "active", lease.token, state.worker_id
            held.append(Inflight(job=job, lease=lease, run=None, queue=queue, deadline=None))
        # A slow durable read may have outlived the lease: never start a job another
        # worker may hold now. The active state is written behind by the finisher.
        held = self._still_leased(held) if held else held
        if not held:
            return
        with state.lock:
            # A claim that lands once the stop has begun (after the held jobs were
            # returned) is given back here: nobody would run or return it, and its lease
            # would lapse into a stall.
            stopping = state.stopping.is_set()
            if not stopping:
                self.buffer.hold(held)
        if stopping:
            self._give_back_unstarted(held)
        elif queue.is_async:
            self._on_held()

    def _give_back_unstarted(self, held: list[Inflight]) -> None:
        """Release the leases of jobs claimed but never started: their durable rows were
        never touched, so the attempt is not counted."""
        hot, now = self.state.hot, now_ms()
        for inflight in held:
            job = inflight.job
            hot.release(self.queue.name, inflight.lease, Signal(job.id, job.priority, None, job.lifo), now)
        self.state.count("returned", len(held))

    def _still_leased(self, started: list[Inflight]) -> list[Inflight]:
        """The attempts whose lease is still ours, renewed if the durable reads and
        writes before them were slow.

        Between the claim and here the durable plane may have stalled (a Postgres
        restart blocks a pool checkout for up to its timeout). A lease can lapse
        meanwhile and the rescuer hand the job to another worker: starting it then
        would run it twice at the same time. So when more than a third of the lease has
        gone (the heartbeat's renewal period), renew first and start only the jobs
        whose lease was renewed. The others are left alone: the rescuer or the new
        holder owns them.
        """
        queue, now = self.queue, now_ms()
        if now - (min([i.lease.expires_at for i in started]) - queue.lease_ms) < queue.lease_ms / 3:
            return started  # the usual case: no extra round trip
        kept = {le.job_id: le for le in self.state.hot.extend(queue.name, [i.lease for i in started],
                                                              lease_ms=queue.lease_ms, now=now)}
        lost = [i for i in started if i.job.id not in kept]
        if lost:
            logger.warning("%d job(s) of %s lost their lease while the durable plane was slow; not starting them",
                           len(lost), queue.name, extra={"action": "worker.lease_lapsed_before_start"})
        for inflight in started:
            if inflight.job.id in kept:
                inflight.lease = kept[inflight.job.id]
        return [i for i in started if i.job.id in kept]
