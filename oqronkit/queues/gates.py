"""What a queue (or a cron) checks around its jobs: ``condition(ctx)`` and
``before_run(ctx)`` before each handler call, and the ``on_pause`` policy of ``add``.

* ``condition(ctx)`` returns truthy to run; ``False`` (or a string: the reason) skips
  the attempt, recorded as a ``cancelled`` run with reason ``skipped: <reason>``: the
  job ends there (no retry, no dead letter), and ``cancelled`` fires.
* ``before_run(ctx)`` runs after ``condition``; an exception there fails the attempt
  like one from the handler (retried per the queue's policy).
* ``on_pause``: ``hold`` (default: jobs added while paused wait for ``resume``),
  ``skip`` (recorded as a ``cancelled`` run, reason ``skipped: queue paused``, never
  stored as a job), ``reject`` (``add`` raises :class:`QueuePaused`, nothing written).
  Only ``skip`` and ``reject`` read the pause state, cached for :data:`PAUSE_TTL` seconds.
"""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Callable
from typing import Any, Literal

from ..clock import now_ms
from ..durable import RecordWrite
from ..errors import ConfigurationError, InvalidJob, InvalidState, OqronError
from ..lifecycle import CallbackMap, Listeners, emit_many
from ..namespaces import RUNS
from .enqueue import build_job
from .jobs import Job
from .runs import finish_run, new_run
from .uniqueness import WINDOW_OPTIONS

PausePolicy = Literal["hold", "skip", "reject"]
PAUSE_POLICIES = ("hold", "skip", "reject")
#: Seconds a producer trusts the pause state it read (its own pause/resume applies at once).
PAUSE_TTL = 1.0
Hook = Callable[..., Any]


class QueuePaused(InvalidState):
    """``add`` on a paused queue declared with ``on_pause="reject"``: nothing was added;
    resume the queue (``queue.resume()``) or add later."""


class Skip(OqronError):
    """Raised by a ``condition`` that said no: the attempt is skipped with ``reason``."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class QueueHooks:
    """A queue's lifecycle callbacks (``on=`` and the older ``on_complete``/``on_failed``/
    ``on_dead``, which are callbacks of completed/failed/dead taking ``(job, output|error)``),
    its gates and its pause policy."""

    def __init__(self, name: str, *, on: CallbackMap | None = None, on_complete: Hook | None = None,
                 on_failed: Hook | None = None, on_dead: Hook | None = None, condition: Hook | None = None,
                 before_run: Hook | None = None, on_pause: PausePolicy = "hold") -> None:
        if on_pause not in PAUSE_POLICIES:
            raise ConfigurationError(f"Queue {name!r}: on_pause must be hold, skip or reject, got {on_pause!r}.")
        for label, fn in (("condition", condition), ("before_run", before_run)):
            if fn is not None and not callable(fn):
                raise ConfigurationError(f"Queue {name!r}: {label} must be callable, got {fn!r}.")
        self.listeners = Listeners()
        self.listeners.add_all(on)
        for event, hook, part in (("completed", on_complete, "output"), ("failed", on_failed, "error"),
                                  ("dead", on_dead, "error")):
            if hook is not None:
                self.listeners.add(event, _legacy(hook, part))
        self.condition = condition
        self.before_run = before_run
        self.on_pause: PausePolicy = on_pause
        self._gated: tuple[Hook, Hook] | None = None  # (handler, its gated wrapper)
        self._paused: tuple[float, bool] = (-PAUSE_TTL, False)

    def handler(self, fn: Hook) -> Hook:
        """``fn`` behind the queue's condition and before_run (``fn`` itself without them)."""
        if self.condition is None and self.before_run is None:
            return fn
        gated = self._gated
        if gated is None or gated[0] is not fn:
            gated = self._gated = (fn, gate(fn, condition=self.condition, before_run=self.before_run))
        return gated[1]

    def note_paused(self, paused: bool) -> None:
        self._paused = (time.monotonic(), paused)

    def paused(self, queue: Any) -> bool:
        at, paused = self._paused
        if time.monotonic() - at >= PAUSE_TTL:
            paused = queue.is_paused()
            self.note_paused(paused)
        return paused


def _legacy(hook: Hook, part: str) -> Callable[[Any], object]:
    """An ``on_<x>=fn(job, payload)`` hook as a lifecycle callback."""
    def call(event: Any) -> object:
        return hook(event.job, getattr(event, part))
    call.__qualname__ = getattr(hook, "__qualname__", "hook")
    return call


def check_gates(ctx: Any, condition: Hook | None, before_run: Hook | None) -> None:
    """Raise Skip when ``condition`` refuses ``ctx``; then run ``before_run`` (it may raise)."""
    if condition is not None:
        verdict = condition(ctx)
        if isinstance(verdict, str) or not verdict:
            raise Skip(verdict if isinstance(verdict, str) and verdict else "condition returned False")
    if before_run is not None:
        before_run(ctx)


def gate(fn: Hook, *, condition: Hook | None, before_run: Hook | None) -> Hook:
    """``fn`` wrapped so ``condition`` and ``before_run`` run first (an ``async def``
    handler stays one: the gates are called, sync, inside it)."""
    def check(ctx: Any) -> None:
        check_gates(ctx, condition, before_run)

    if inspect.iscoroutinefunction(fn):
        @functools.wraps(fn)
        async def gated_async(ctx: Any) -> Any:
            check(ctx)
            return await fn(ctx)
        return gated_async

    @functools.wraps(fn)
    def gated(ctx: Any) -> Any:
        check(ctx)
        return fn(ctx)
    return gated


def pop_gates(name: str, options: dict[str, Any]) -> tuple[Hook | None, Hook | None]:
    """Take ``condition`` and ``before_run`` out of a cron's options, checked."""
    condition, before_run = options.pop("condition", None), options.pop("before_run", None)
    for label, fn in (("condition", condition), ("before_run", before_run)):
        if fn is not None and not callable(fn):
            raise ConfigurationError(f"{name!r}: {label} must be callable, got {fn!r}.")
    return condition, before_run


def skip_reason(reason: str) -> str:
    return f"skipped: {reason}"


def paused_add(queue: Any, items: list[tuple[Any, Any]]) -> list[Job] | None:
    """Apply the pause policy to an add of ``queue`` (the adding Queue; this module stands
    below it): None to add as usual (``hold``, or not paused); else raise
    :class:`QueuePaused` (``reject``) or record the jobs as skipped (``skip``)."""
    hooks = queue.lifecycle
    if hooks.on_pause == "hold" or not hooks.paused(queue):
        return None
    if hooks.on_pause == "reject":
        raise QueuePaused(f"Queue {queue.name!r} is paused and refuses new jobs (on_pause='reject'); "
                          "nothing was added. Resume it, or add later.")
    try:
        # A skipped job is never stored, so it opens no uniqueness or debounce window.
        jobs = [build_job(queue, data, **{k: v for k, v in options.items() if k not in WINDOW_OPTIONS})
                for data, options in items]
    except TypeError as exc:  # an unknown option, as add reports it
        raise InvalidJob(f"Unknown add option: {exc}") from exc
    engine, now = queue.engine, now_ms()
    reason = skip_reason("queue paused (on_pause='skip')")
    runs = []
    for job in jobs:
        run = new_run(name=queue.name, module=queue.module, trigger=queue.trigger, input=job.data, attempts=0,
                      app=engine.config.project, environment=engine.config.environment, worker_id="",
                      job_id=job.id, correlation_id=job.correlation_id, caused_by=job.caused_by, started_at=now)
        finish_run(run, "cancelled", reason=reason, limit=engine.config.run_timeline_limit, at=now)
        runs.append(RecordWrite(RUNS, run["id"], run))
        job.die(reason, now)
    engine.durable.put_many(runs)
    emit_many(queue.registry, queue, "cancelled", jobs, reason=reason, inline=True)
    return jobs
