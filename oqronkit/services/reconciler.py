"""The reconciler: the durable plane is the truth, the hot plane a cache of it.

Every durable waiting or delayed job missing from the hot plane on two passes in a row
(a Redis restart, an ``add`` while the hot plane was down) is signalled again. One pass
cannot tell a lost job from one caught between the durable scan and the hot plane's
``present`` check: added (stored, not yet signalled), or claimed and completed (in
hot plane backends that settle out of order). Re-signalling those could run a job
twice; by the next pass they are signalled or gone. Likewise an active job missing from the
hot plane on two passes in a row (its worker would have re-created the lease with its
heartbeat in between) is treated as stalled.

A pass walks ids and statuses only (``scan_statuses``: no values, no sort), so a
backlog of a million waiting jobs costs a key walk every interval, not a million JSON
documents; full records are read only for the few jobs found missing.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import TYPE_CHECKING, Any

from ..backends.hot_types import Signal
from ..clock import now_ms
from ..namespaces import job_namespace
from ..queues.jobs import Job, job_signal
from ..skipped import UNUSABLE, guarded
from .rescuer import mark_stalled

if TYPE_CHECKING:
    from ..engine import Engine
    from .passes import ServicePass

logger = logging.getLogger(__name__)
PAGE = 1000
PENDING = ("waiting", "delayed")


class Reconciler:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        # (queue, job id) missing from the hot plane on the last pass: active jobs with
        # their lease token, waiting and delayed jobs in _missing.
        self._suspects: dict[tuple[str, str], int | None] = {}
        self._missing: set[tuple[str, str]] = set()
        self._stall_queues: set[str] | None = None
        self._report: ServicePass | None = None

    def run(self, queues: list[str], *, stall_queues: set[str] | None = None,
            report: ServicePass | None = None) -> int:
        """One pass over every queue; returns how many jobs were signalled again. Active
        jobs count stalls only in ``stall_queues`` (default: all; see Services.settled_queues).
        ``report`` is told what was checked and repaired."""
        self._stall_queues, self._report = stall_queues, report
        signalled = 0
        suspects: dict[tuple[str, str], int | None] = {}
        missing: set[tuple[str, str]] = set()
        for queue in queues:
            batch: list[tuple[str, str]] = []
            for entry in self.engine.durable.scan_statuses(job_namespace(queue), (*PENDING, "active"), page=PAGE):
                batch.append(entry)
                if len(batch) == PAGE:
                    signalled += self._check(queue, batch, missing, suspects)
                    batch = []
            signalled += self._check(queue, batch, missing, suspects)
        self._suspects, self._missing = suspects, missing
        if signalled:
            logger.warning("reconciler signalled %d durable job(s) the hot plane had lost", signalled,
                           extra={"action": "reconciler.signalled"})
        return signalled

    def _check(self, queue: str, batch: list[tuple[str, str]], missing: set[tuple[str, str]],
               suspects: dict[tuple[str, str], int | None]) -> int:
        """Check one page of (id, status) against the hot plane: note what is missing for
        the first time, act on what was missing on the last pass too. Returns how many
        jobs were signalled again."""
        if not batch:
            return 0
        if self._report is not None:
            self._report.checked += len(batch)
        durable, hot = self.engine.durable, self.engine.hot
        present = hot.present(queue, list(dict.fromkeys(id for id, _ in batch)))
        again: list[str] = []
        for id, status in batch:
            key = (queue, id)
            if id in present:
                continue
            if status in PENDING and key not in self._missing:
                missing.add(key)
            else:  # pending and missing twice, or active: decide on the full record
                again.append(id)
        if not again:
            return 0
        lost: list[Signal] = []
        namespace = job_namespace(queue)
        for record in durable.get_many(namespace, list(dict.fromkeys(again))):
            signal = guarded("reconciler", namespace, record.id,
                             partial(self._decide, queue, record.value, missing, suspects))
            if signal is not None:
                lost.append(signal)
        return self._signal(queue, lost)

    def _decide(self, queue: str, value: dict[str, Any], missing: set[tuple[str, str]],
                suspects: dict[tuple[str, str], int | None]) -> Signal | None:
        """What to do with one job missing from the hot plane: its signal when it is lost."""
        job = Job.from_value(value)
        key = (queue, job.id)
        if job.status in PENDING:
            if key in self._missing:
                return job_signal(job)
            missing.add(key)  # became pending since the scan (a retry): first sighting
        elif job.status == "active":
            if key in self._suspects and self._suspects[key] == job.lease_token and (
                    self._stall_queues is None or queue in self._stall_queues):
                mark_stalled(self.engine, job, job.lease_token, "lease missing from the hot plane")
                if self._report is not None:
                    self._report.note(queue, job.id, "stalled")
            else:
                suspects[key] = job.lease_token
        return None

    def _signal(self, queue: str, lost: list[Signal]) -> int:
        """Signal the lost jobs in one call; should the hot plane refuse one of them,
        one by one, skipping those it refuses."""
        hot = self.engine.hot
        try:
            hot.signal(queue, lost, now_ms())
            done = lost
        except UNUSABLE:
            def one(signal: Signal) -> bool:
                hot.signal(queue, [signal], now_ms())
                return True

            done = [s for s in lost if guarded("reconciler", job_namespace(queue), s.job_id, partial(one, s))]
        if self._report is not None:
            for signal in done:
                self._report.note(queue, signal.job_id, "signalled")
        return len(done)
