"""The declaration API users call in their ``oqron.py`` modules."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .lifecycle import Callback, register
from .queues.queue import Queue, default_registry


def queue(name: str, **options: Any) -> Queue:
    """Declare (or look up) a queue on the default engine.

    ``oqronkit.queue("emails", handler=send)`` or, as a decorator::

        emails = oqronkit.queue("emails", concurrency=10)

        @emails.handler
        def send(ctx): ...

    A queue without a handler is publisher-only; consume it elsewhere with
    :func:`worker`.
    """
    existing = default_registry.queues.get(name)
    if existing is not None and not options:
        return existing
    return Queue(name, **options)


def worker(queue_name: str, handler: Callable[..., Any], **options: Any) -> Queue:
    """Consume a publisher-only queue in this process (another node may publish to it)."""
    existing = default_registry.queues.get(queue_name)
    if existing is not None and existing.fn is None and not options:
        existing.handler(handler)
        existing.module = "worker"
        return existing
    declared = Queue(queue_name, handler=handler, **options)
    declared.module = "worker"
    return declared


def on(event: str, fn: Callback | None = None) -> Any:
    """Call ``fn(event)`` on ``event`` of every queue of the default engine (its registry),
    in the process where the event happens (see :mod:`oqronkit.lifecycle`); usable as
    ``@oqronkit.on("dead")``."""
    return register(default_registry.listeners, event, fn)
