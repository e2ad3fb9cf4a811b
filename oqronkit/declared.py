"""What a process declared of one module (topics, webhooks, rate limiters, caches), by
registry and name: each module keeps one table, so an engine's registry knows its own."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from weakref import WeakKeyDictionary

from .clock import now_ms
from .durable import DurablePlane
from .queues.queue import QueueHost, Registry, default_engine, default_registry


class DeclaredByName[T]:
    """A module's declared objects, per registry (weakly: a dropped engine drops its own)."""

    def __init__(self) -> None:
        self._tables: WeakKeyDictionary[Registry, dict[str, T]] = WeakKeyDictionary()

    def of(self, registry: Registry) -> dict[str, T]:
        """The objects declared against ``registry``, by name (a live dict)."""
        found = self._tables.get(registry)
        if found is None:
            found = self._tables[registry] = {}
        return found

    def declare_or_get(self, build: Callable[..., T], name: str, options: Mapping[str, Any]) -> T:
        """The default registry's ``name`` when no option is given, else a new declaration."""
        existing = self.of(default_registry).get(name)
        if existing is not None and not options:
            return existing
        return build(name, **options)


class OnEngine:
    """A module's object (topic, webhook, limiter, cache) on the engine it was given, or
    else the default one, and that engine's registry."""

    _engine: QueueHost | None

    @property
    def engine(self) -> QueueHost:
        return self._engine if self._engine is not None else default_engine()

    @property
    def registry(self) -> Registry:
        return self._engine.registry if self._engine is not None else default_registry


def put_definition(durable: DurablePlane, namespace: str, name: str, value: Mapping[str, Any]) -> int:
    """Write a module's definition record, keeping the ``createdAt`` of its first write
    (a restart re-declares it); returns the time written (ms)."""
    now = now_ms()
    current = durable.get(namespace, name)
    created = current.value.get("createdAt", now) if current is not None else now
    durable.put(namespace, name, {**value, "createdAt": created, "updatedAt": now})
    return now
