"""The ``ctx`` object a handler receives."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, NoReturn

from ..codec import copy_json, dumps_compact, storage_problem
from ..errors import Discard, InvalidRecord
from ..queues.runs import add_log, safe_text
from .inflight import Inflight
from .state import WorkerState

logger = logging.getLogger("oqronkit.handler")
LEVELS = ("debug", "info", "warning", "error")
#: The keys every run record has, which ``annotate`` may not replace.
RESERVED_RUN_KEYS = frozenset({
    "id", "app", "logs", "name", "error", "input", "jobId", "module", "output", "status", "endedAt", "trigger",
    "attempts", "timeline", "workerId", "startedAt", "durationMs", "environment", "correlationId",
    "progressPercent", "progressLabel", "queue", "replayOf", "replaySet", "waitMs",
})


class JobContext:
    """What a handler knows and can do about the attempt it runs."""

    def __init__(self, inflight: Inflight, state: WorkerState) -> None:
        self._inflight = inflight
        self._state = state
        job = inflight.job
        # The handler's own copy: what it changes stays out of the run's input snapshot
        # and of the payload a retry or the dead-letter queue keeps (a datetime put in
        # there used to make the whole batch of run records unstorable).
        self.data: Any = copy_json(job.data)
        self.job_id: str = job.id
        self.queue: str = job.queue
        self.attempt: int = job.attempts
        self.max_attempts: int = job.max_attempts
        self.correlation_id: str | None = job.correlation_id
        assert inflight.run is not None, "a handler runs a started attempt, which has its run"
        self._run = inflight.run
        self.run_id: str = self._run["id"]
        self.tags: list[str] = list(job.tags)
        self.worker_id: str = state.worker_id  # the run's workerId (django.tasks reports it)
        #: The group this job belongs to (a callback reads its members with oqronkit.group_results).
        self.group_id: str | None = job.group
        #: The original run's id when this job replays it (oqronkit.replay), else None.
        self.replay: str | None = job.replay_of

    def __repr__(self) -> str:
        return f"<JobContext {self.queue}/{self.job_id} attempt {self.attempt}/{self.max_attempts}>"

    @property
    def cancelled(self) -> bool:
        """True once the job was cancelled, timed out or lost its lease, or a stopping
        worker's drain deadline passed (until then a drain lets the handler run): long
        handlers should check it and return early."""
        return self._inflight.cancelled

    def log(self, level: str, msg: str) -> None:
        """Append a line to this run's logs (bounded) and the live overlay. NULs and
        lone surrogates in it are replaced (codec.clean_text): a run must stay storable."""
        if level not in LEVELS:
            level = "info"
        text = safe_text(msg)
        with self._inflight.lock:
            add_log(self._run, level, text, limit=self._state.config.run_log_limit)
            self._inflight.overlay_dirty = True

    def progress(self, percent: float, label: str | None = None) -> None:
        """Report progress (0-100); the board's progress bar follows it live."""
        value = max(0.0, min(100.0, float(percent)))
        text = None if label is None else safe_text(label)[:200]
        with self._inflight.lock:
            self._run["progressPercent"] = round(value, 1)
            if text is not None:
                self._run["progressLabel"] = text
            self._inflight.overlay_dirty = True

    def annotate(self, fields: Mapping[str, Any]) -> None:
        """Add top-level fields to this attempt's run record, kept whatever the outcome
        (a webhook delivery's request and response, recorded even when it fails). JSON
        only, stored as given; a run's own keys (status, output, ...) are refused."""
        clashing = sorted(k for k in fields if not isinstance(k, str) or k in RESERVED_RUN_KEYS)
        if clashing:
            raise InvalidRecord(f"annotate cannot set the run's own key(s) {clashing}.")
        try:
            text = dumps_compact(dict(fields))
        except (TypeError, ValueError) as exc:
            raise InvalidRecord(f"run fields must be JSON: {exc}") from exc
        problem = storage_problem(text)
        if problem is not None:
            raise InvalidRecord(f"run fields cannot be stored: {problem}.")
        copied = copy_json(dict(fields))
        with self._inflight.lock:
            self._run.update(copied)  # extra keys, checked above
            self._inflight.overlay_dirty = True

    def discard(self, reason: str) -> NoReturn:
        """Fail this job now, with no further retries (it goes to the dead-letter queue)."""
        raise Discard(reason)

    def spawn_child(self, queue: str, data: Any, **options: Any) -> Any:
        """Add a job to ``queue`` that carries this job's correlation id."""
        options.setdefault("correlation_id", self.correlation_id or self.job_id)
        return self._state.engine.get_queue(queue).add(data, **options)
