"""The ``ctx`` a cron or schedule handler receives, the same in both execution modes:
on the leader (no job) or as a job on any worker (``as_job=True``)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..codec import copy_json
from .running import RunningRun
from .timing import get_zone

if TYPE_CHECKING:
    from ..worker.context import JobContext

LEVELS = ("debug", "info", "warning", "error")


class CronContext:
    """What a handler knows about the fire it runs, and how it reports back.

    ``slot`` is the scheduled time (aware, in the definition's time zone; None for a
    run-now), ``payload`` the definition's (or the trigger's) payload, ``trigger`` one
    of ``cron``/``schedule``/``catch-up``/``retry``/``recovery``/``manual``.
    """

    def __init__(self, *, name: str, kind: str, run_id: str, slot_ms: int | None, payload: Any, attempt: int,
                 trigger: str, zone: str) -> None:
        self.name = name
        self.kind = kind
        self.run_id = run_id
        self.slot_ms = slot_ms
        self.slot: datetime | None = (datetime.fromtimestamp(slot_ms / 1000, get_zone(zone))
                                      if slot_ms is not None else None)
        self.payload = payload
        self.data = payload  # the name queue handlers use
        self.attempt = attempt
        self.trigger = trigger

    def __repr__(self) -> str:
        return f"<CronContext {self.kind} {self.name!r} slot={self.slot} attempt={self.attempt}>"

    @property
    def cancelled(self) -> bool:
        """True once the run timed out, was cancelled (overlap ``cancel-previous``) or the
        process is stopping: long handlers should check it and return early."""
        return False

    def log(self, level: str, msg: str) -> None:
        """Append a line to this run's logs."""

    def progress(self, percent: float, label: str | None = None) -> None:
        """Report progress (0-100)."""


class LeaderContext(CronContext):
    """A run executing on the leader's thread pool."""

    def __init__(self, running: RunningRun, *, log_limit: int) -> None:
        run, d = running.run, running.definition
        super().__init__(name=d.name, kind=d.kind, run_id=run["id"], slot_ms=run.get("slotAt"),
                         payload=copy_json(run.get("input")), attempt=run["attempts"], trigger=run["trigger"],
                         zone=d.timezone)
        self._running = running
        self._log_limit = log_limit

    @property
    def cancelled(self) -> bool:
        return self._running.cancelled.is_set()

    def log(self, level: str, msg: str) -> None:
        from ..queues.runs import add_log

        with self._running.lock:
            add_log(self._running.run, level if level in LEVELS else "info", str(msg), limit=self._log_limit)

    def progress(self, percent: float, label: str | None = None) -> None:
        with self._running.lock:
            self._running.run["progressPercent"] = round(max(0.0, min(100.0, float(percent))), 1)
            if label is not None:
                self._running.run["progressLabel"] = str(label)[:200]


class JobCronContext(CronContext):
    """A run executing as a job (``as_job=True``): logs and progress go to the job's run."""

    def __init__(self, job_ctx: JobContext, zone: str) -> None:
        data = job_ctx.data or {}
        super().__init__(name=data.get("name", ""), kind=data.get("kind", "cron"), run_id=job_ctx.run_id,
                         slot_ms=data.get("slot"), payload=data.get("payload"), attempt=job_ctx.attempt,
                         trigger=data.get("trigger", "cron"), zone=zone)
        self.job_id = job_ctx.job_id
        self._job_ctx = job_ctx

    @property
    def cancelled(self) -> bool:
        return self._job_ctx.cancelled

    def log(self, level: str, msg: str) -> None:
        self._job_ctx.log(level, msg)

    def progress(self, percent: float, label: str | None = None) -> None:
        self._job_ctx.progress(percent, label)
