"""Declaring crons and schedules, and operating them: pause, resume, run-now, preview.

Declaring does no I/O: the definition is validated and registered; worker processes
store it (under the version rules) when their services start, and the leader fires it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from ..errors import ConfigurationError, InvalidSchedule
from ..namespaces import RUNS, SCHEDULE
from ..queues.gates import gate, pop_gates
from . import control
from .definition import Definition, build_definition, handler_name
from .timing import get_zone

if TYPE_CHECKING:
    from ..engine import Engine
    from ..queues.queue import Registry

_REGISTRIES: WeakKeyDictionary[Registry, dict[tuple[str, str], Declared]] = WeakKeyDictionary()
_DEFAULT = object()


def registry_for(registry: Registry) -> dict[tuple[str, str], Declared]:
    """The crons and schedules declared against ``registry`` (keyed by (kind, name))."""
    found = _REGISTRIES.get(registry)
    if found is None:
        found = _REGISTRIES[registry] = {}
    return found


class Declared:
    """Common surface of :class:`Cron` and :class:`Schedule`."""

    kind = "cron"

    def __init__(self, definition: Definition, fn: Callable[..., Any] | None, engine: Engine | None,
                 *, register: bool = True, gates: tuple[Any, Any] = (None, None)) -> None:
        self.definition = definition
        self.gates = gates  # (condition, before_run), checked before each handler call (gates.py)
        self.fn: Callable[..., Any] | None = None
        self._engine = engine
        if fn is not None:
            self._set_handler(fn, declare_queue=register)
        if register:
            self._register()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}: {self.definition.timing.describe()}>"

    @property
    def name(self) -> str:
        return self.definition.name

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            from ..engine import get_engine

            return get_engine()
        return self._engine

    @property
    def _registry(self) -> Registry:
        if self._engine is not None:
            return self._engine.registry
        from ..queues.queue import default_registry

        return default_registry

    def _register(self) -> None:
        declared = registry_for(self._registry)
        existing = declared.get(self.definition.key)
        if existing is not None and existing is not self and existing.fn is not None and self.fn is not None \
                and existing.fn is not self.fn and handler_name(existing.fn) != handler_name(self.fn):
            raise ConfigurationError(f"{self.kind} {self.name!r} is declared twice with different handlers; "
                                     "declare it once and import it where needed.")
        declared[self.definition.key] = self

    def _set_handler(self, fn: Callable[..., Any], *, declare_queue: bool = True) -> None:
        if not callable(fn) or inspect.isclass(fn):
            raise InvalidSchedule(f"{self.kind} {self.name!r}: the handler must be a function.")
        self.fn = fn if self.gates == (None, None) else gate(fn, condition=self.gates[0], before_run=self.gates[1])
        self.definition = self.definition.derive(handler=handler_name(fn))
        if self.definition.as_job and declare_queue:
            from .jobmode import declare_queue as declare_job_queue

            declare_job_queue(self.definition, self.fn, self._engine)

    def __call__(self, fn: Callable[..., Any]) -> Declared:
        """Decorator form: ``@oqronkit.cron("nightly", "0 3 * * *")`` binds the function
        as the handler and leaves the name bound to this object (``nightly.pause()``)."""
        if self.fn is not None:
            raise InvalidSchedule(f"{self.kind} {self.name!r} already has a handler.")
        self.handler(fn)
        return self

    def handler(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Decorator setting the handler and returning the function unchanged."""
        self._set_handler(fn)
        self._register()
        return fn

    # -- operating it (cluster-wide, through the durable plane) ----------------------------------

    def _stored(self) -> tuple[Definition, dict[str, Any]]:
        if self.definition.base is not None:
            return control.load(self.engine, self.kind, self.name)
        return control.store_definition(self.engine, self.definition, control.current_ms())

    def pause(self) -> None:
        """Stop firing on every node (persisted; running runs finish)."""
        self._stored()
        control.set_paused(self.engine, self.kind, self.name, True)

    def resume(self) -> None:
        """Fire again from the next slot after now (slots of the pause are dropped)."""
        self._stored()
        control.set_paused(self.engine, self.kind, self.name, False)

    def run_now(self, payload: Any = _DEFAULT) -> str:
        """Ask the leader to run it once now (even while paused); returns the run id."""
        self._stored()
        return control.request_run(self.engine, self.kind, self.name, payload, use_default=payload is _DEFAULT)

    def state(self) -> dict[str, Any]:
        """The control record: pointer, pause, version, counters, pending work."""
        return self._stored()[1]

    def preview(self, n: int = 5, *, after: datetime | int | None = None) -> list[datetime]:
        """The next ``n`` fire times after ``after`` (default now), aware datetimes in
        the definition's time zone (jitter not included)."""
        return preview(self.definition, n, after=after)

    def describe(self) -> str:
        return self.definition.timing.describe()

    def runs(self, limit: int = 20) -> list[dict[str, Any]]:
        """The latest run records (newest first)."""
        page = self.engine.durable.list(RUNS, name=self.name, module=self.kind, order="started",
                                        descending=True, limit=limit)
        return [r.value for r in page.records]


def preview(definition: Definition, n: int = 5, *, after: datetime | int | None = None) -> list[datetime]:
    """The next ``n`` slots of ``definition`` after ``after`` (default now)."""
    if not isinstance(n, int) or not 1 <= n <= 1000:
        raise InvalidSchedule("preview n must be between 1 and 1000.")
    if after is None:
        t = control.current_ms()
    else:
        t = int(after.timestamp() * 1000) if isinstance(after, datetime) else after
    zone = get_zone(definition.timezone)
    out: list[datetime] = []
    slot = definition.timing.next_after(t)
    while slot is not None and len(out) < n:
        out.append(datetime.fromtimestamp(slot / 1000, zone))
        slot = definition.timing.next_after(slot)
    return out


class Cron(Declared):
    """A periodic definition (see :func:`cron`)."""

    kind = "cron"


class Schedule(Declared):
    """A one-off or recurring schedule (see :func:`schedule`); ``trigger`` creates
    dynamic instances stored durably, fired by whichever node leads."""

    kind = "schedule"

    def trigger(self, payload: Any = None, *, run_at: datetime | int | None = None,
                every: float | timedelta | None = None, rrule: str | None = None,
                key: str | None = None, timezone: str | None = None) -> Schedule:
        """Create a dynamic schedule ``<name>:<key>`` running this schedule's handler
        with ``payload`` at ``run_at`` (default: now), or on ``every``/``rrule``. It is
        stored with its payload and handler name, so any leader fires it, after
        restarts too. ``key`` makes it idempotent (an existing key returns that one)."""
        from ..ids import new_id

        if self.definition.base is not None:
            raise InvalidSchedule("trigger() belongs to a declared schedule, not to one of its dynamic instances.")
        now = control.current_ms()
        if run_at is None and every is None and rrule is None:
            run_at = now
        base = self.definition
        if base.handler is None:  # declared here without its handler: name the one the workers run
            stored = self.engine.durable.get(SCHEDULE, base.name)
            base = base.derive(handler=stored.value.get("handler") if stored else None)
        dynamic = build_definition(
            "schedule", f"{base.name}:{key or new_id()}", every=every, run_at=run_at, rrule=rrule,
            timezone=timezone or base.timezone, missed=base.missed, overlap=base.overlap,
            catch_up_window=_seconds(base.catch_up_window_ms), jitter=_seconds(base.jitter_ms),
            timeout=_seconds(base.timeout_ms), retries=base.retries, backoff=None,
            max_missed_runs=base.max_missed_runs, payload=payload, handler=base.handler, as_job=base.as_job,
            base=base.name, now=now,
        ).derive(backoff=base.backoff)
        engine = self.engine
        if not engine.durable.insert(SCHEDULE, dynamic.name, {**dynamic.to_record(), "createdAt": now,
                                                               "updatedAt": now}):
            existing, _ = control.load(engine, "schedule", dynamic.name)
            return Schedule(existing, self.fn, self._engine, register=False)
        control.ensure_control(engine, dynamic, now)
        control.signal_change(engine, "schedule", dynamic.name, now)
        return Schedule(dynamic, self.fn, self._engine, register=False)

    def cancel(self) -> None:
        """Stop this schedule for good (typically a dynamic instance)."""
        control.cancel_schedule(self.engine, self.kind, self.name)


def _seconds(ms: int | None) -> float | None:
    return None if ms is None else ms / 1000


def _declare[D: Declared](cls: type[D], kind: str, name: str, handler: Any, engine: Engine | None,
                          options: dict[str, Any]) -> D:
    gates = pop_gates(name, options)
    definition = build_definition(kind, name, handler=handler_name(handler), now=control.current_ms(), **options)  # type: ignore[arg-type]
    return cls(definition, handler, engine, gates=gates)


def cron(
    name: str,
    expression: str | None = None,
    *,
    every: float | timedelta | None = None,
    timezone: str = "UTC",
    missed: str = "skip",
    catch_up_window: float | timedelta | None = None,
    overlap: str = "skip",
    jitter: float | timedelta | None = None,
    timeout: float | timedelta | None = None,
    retries: int = 0,
    backoff: Any = None,
    max_missed_runs: int = 100,
    payload: Any = None,
    handler: Callable[..., Any] | None = None,
    as_job: bool = False,
    version: int = 1,
    condition: Callable[..., Any] | None = None,
    before_run: Callable[..., Any] | None = None,
    engine: Engine | None = None,
) -> Cron:
    """Declare a cron: ``expression`` (5 fields, or 6 with seconds FIRST, or an alias
    such as ``@daily``) or ``every`` (seconds / timedelta, at least 1 s), evaluated in
    ``timezone``. Use it directly with ``handler=`` or as a decorator::

        @oqronkit.cron("nightly", "0 3 * * *", timezone="Europe/Berlin")
        def nightly(ctx): ...

    ``missed``: what happens to slots that passed while no leader ran (``skip``,
    ``run-once``, ``run-all`` up to ``max_missed_runs`` within ``catch_up_window``).
    ``overlap``: what a slot does while the previous run is still going (``skip``,
    ``allow``, ``buffer-one``, ``cancel-previous``). ``as_job=True`` turns each slot into
    a durable job (retries, dead letters, any worker) instead of a run on the leader.
    ``condition(ctx)`` / ``before_run(ctx)``: checked before each handler call (a False
    or a reason string records the tick's run as ``cancelled``, ``skipped: <reason>``).
    Invalid options raise :class:`~oqronkit.errors.InvalidSchedule` here, not at 3 a.m.
    """
    options = dict(expression=expression, every=every, timezone=timezone, missed=missed,
                   catch_up_window=catch_up_window, overlap=overlap, jitter=jitter, timeout=timeout,
                   retries=retries, backoff=backoff, max_missed_runs=max_missed_runs, payload=payload,
                   as_job=as_job, version=version, condition=condition, before_run=before_run)
    return _declare(Cron, "cron", name, handler, engine, options)


def schedule(
    name: str,
    *,
    run_at: datetime | int | None = None,
    every: float | timedelta | None = None,
    rrule: str | None = None,
    timezone: str = "UTC",
    missed: str = "run-once",
    catch_up_window: float | timedelta | None = None,
    overlap: str = "skip",
    jitter: float | timedelta | None = None,
    timeout: float | timedelta | None = None,
    retries: int = 0,
    backoff: Any = None,
    max_missed_runs: int = 100,
    payload: Any = None,
    handler: Callable[..., Any] | None = None,
    as_job: bool = False,
    version: int = 1,
    condition: Callable[..., Any] | None = None,
    before_run: Callable[..., Any] | None = None,
    engine: Engine | None = None,
) -> Schedule:
    """Declare a schedule: once at ``run_at``; every ``every`` (starting at ``run_at`` if
    given); an RFC 5545 ``rrule`` (FREQ DAILY..YEARLY, expanded in ``timezone`` from
    ``run_at`` or 2001-01-01 00:00 local); or none of them: a template that fires only
    through :meth:`Schedule.trigger`. ``missed`` defaults to ``run-once`` so a one-off
    whose time passed during downtime still runs (once)."""
    options = dict(run_at=run_at, every=every, rrule=rrule, timezone=timezone, missed=missed,
                   catch_up_window=catch_up_window, overlap=overlap, jitter=jitter, timeout=timeout,
                   retries=retries, backoff=backoff, max_missed_runs=max_missed_runs, payload=payload,
                   as_job=as_job, version=version, condition=condition, before_run=before_run)
    return _declare(Schedule, "schedule", name, handler, engine, options)
