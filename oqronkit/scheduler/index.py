"""The leader's in-memory index of definitions: loading it when a node becomes leader,
following changes (operators' pauses, new dynamic schedules, version upgrades) through
numbered hot-plane signals, and a slow sweep of the control records as a safety net for
signals the hot plane lost. Mixed into :class:`~.scheduler.Scheduler`.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..namespaces import SCHEDULER_CONTROL
from ..skipped import guarded
from .control import CHANGES_COUNTER, CHANGES_GROUP, ensure_control
from .declare import registry_for
from .definition import Definition

if TYPE_CHECKING:
    from ..engine import Engine

logger = logging.getLogger(__name__)
SWEEP_PAGE = 500  # control records re-read per tick during a sweep
MAX_CHANGES_PER_TICK = 1000  # more than this at once (a deploy): a sweep re-reads everything instead
MISSING_CHANGE_WAIT_MS = 2_000


class Entry:
    __slots__ = ("definition", "due", "fn", "state", "token")

    def __init__(self, definition: Definition, state: dict[str, Any], fn: Callable[..., Any] | None) -> None:
        self.definition, self.state, self.fn = definition, state, fn
        self.token: int = -1
        self.due: int | None = None  # the live heap item (older items are skipped when popped)


class DefinitionIndex:
    """Keeps ``entries`` (and the heap, through ``_push``) in step with the durable plane."""

    engine: Engine
    worker_id: str
    entries: dict[tuple[str, str], Entry]
    loaded: bool
    sweep_every_ms: int
    discover_every_ms: int
    _ignored: set[tuple[str, str]]
    _heap: list[tuple[int, int, tuple[str, str]]]
    _seen_counter: int | None
    _missing_since: int | None
    _next_recover: int
    _next_sweep: int
    _next_discover: int
    _sweep: list[tuple[str, str]] | None

    def prepare(self, *, force: bool = False) -> None:  # provided by the Scheduler
        raise NotImplementedError

    def _push(self, entry: Entry, now: int) -> None:  # provided by the Scheduler
        raise NotImplementedError

    def _load(self, now: int) -> None:
        self.prepare(force=True)
        self.entries.clear()
        self._heap.clear()
        self._ignored.clear()
        self._seen_counter = self.engine.hot.get_counters([CHANGES_COUNTER]).get(CHANGES_COUNTER, 0)
        self._missing_since = None
        for kind in ("cron", "schedule"):
            controls = self._list_all(SCHEDULER_CONTROL[kind])
            for name, value in self._list_all(kind).items():
                state = controls.get(name)  # one unreadable definition must not keep the others unloaded
                guarded("scheduler", kind, name, functools.partial(self._install_record, value, state, now))
        self.loaded = True
        self._next_recover = 0
        self._next_sweep = now + self.sweep_every_ms
        self._next_discover = now + self.discover_every_ms
        self._sweep = None
        logger.info("scheduler loaded %d definition(s) on leader %s", len(self.entries), self.worker_id,
                    extra={"action": "scheduler.loaded"})

    def _list_all(self, namespace: str) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        cursor = None
        while True:
            page = self.engine.durable.list(namespace, limit=1000, cursor=cursor)
            found.update((r.id, r.value) for r in page.records)
            if page.next_cursor is None:
                return found
            cursor = page.next_cursor

    def _install_record(self, value: dict[str, Any], state: dict[str, Any] | None, now: int) -> None:
        self._install(Definition.from_record(value), state, now)

    def _install(self, d: Definition, state: dict[str, Any] | None, now: int) -> None:
        declared = registry_for(self.engine.registry).get((d.kind, d.declared_name))
        if declared is None:
            if d.key not in self._ignored:
                self._ignored.add(d.key)
                logger.warning("%s %s is stored but not declared in this process; the leader does not fire it",
                               d.kind, d.name, extra={"action": "scheduler.undeclared"})
            return
        self._ignored.discard(d.key)
        d.timing  # noqa: B018 - compile the expression now, at load, not on the first fire
        entry = Entry(d, state if state is not None else ensure_control(self.engine, d, now), declared.fn)
        self.entries[d.key] = entry
        self._push(entry, now)

    def _reload(self, kind: str, name: str, now: int) -> None:
        record = self.engine.durable.get(kind, name)
        if record is None:
            self.entries.pop((kind, name), None)
            return
        control = self.engine.durable.get(SCHEDULER_CONTROL[kind], name)
        self._install(Definition.from_record(record.value), control.value if control else None, now)

    def _poll_changes(self, now: int) -> None:
        """Re-read the definitions changed since the last tick (see ``signal_change``)."""
        counter = self.engine.hot.get_counters([CHANGES_COUNTER]).get(CHANGES_COUNTER, 0)
        seen = self._seen_counter or 0
        if counter == seen:
            return
        if counter < seen or counter - seen > MAX_CHANGES_PER_TICK:  # hot plane reset, or a flood
            self._seen_counter, self._next_sweep, self._next_discover = counter, now, now
            return
        numbers = range(seen + 1, counter + 1)
        found = self.engine.hot.kv_get(CHANGES_GROUP, [str(n) for n in numbers], now)
        for n in numbers:
            change = found.get(str(n))
            if change is None:
                # Numbered but not written yet (incr comes first): wait a moment, then leave it to the sweep.
                self._missing_since = self._missing_since or now
                if now - self._missing_since < MISSING_CHANGE_WAIT_MS:
                    return
                self._next_sweep = self._next_discover = now
            else:
                kind, _, name = change.partition("/")
                if kind in SCHEDULER_CONTROL:
                    self._reload(kind, name, now)
            self._seen_counter, self._missing_since = n, None

    def _sweep_step(self, now: int) -> None:
        """A safety net for change signals the hot plane lost: every ``sweep_every_ms``
        re-read the known control records (``get_many``, one chunk per tick); every
        ``discover_every_ms`` also list the namespaces for definitions never seen."""
        if self._sweep is None:
            if now < self._next_sweep:
                return
            self._sweep = sorted(self.entries)
        chunk, self._sweep = self._sweep[:SWEEP_PAGE], self._sweep[SWEEP_PAGE:]
        for kind in SCHEDULER_CONTROL:
            names = [name for k, name in chunk if k == kind]
            found = {r.id: r.value for r in self.engine.durable.get_many(SCHEDULER_CONTROL[kind], names)}
            for name in names:
                entry, value = self.entries.get((kind, name)), found.get(name)
                if entry is None or value is None or value.get("version") != entry.state.get("version"):
                    self._reload(kind, name, now)
                elif value.get("rev") != entry.state.get("rev"):
                    entry.state = value
                    self._push(entry, now)
        if self._sweep:
            return
        self._sweep, self._next_sweep = None, now + self.sweep_every_ms
        if now >= self._next_discover:
            self._next_discover = now + self.discover_every_ms
            for kind, namespace in SCHEDULER_CONTROL.items():
                for name in self._list_all(namespace):
                    if (kind, name) not in self.entries and (kind, name) not in self._ignored:
                        self._reload(kind, name, now)
