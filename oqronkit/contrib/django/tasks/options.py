"""A task backend's ``QUEUES`` and ``OPTIONS``, read once and checked.

Each Django task queue is one oqronkit queue, named ``QUEUE_PREFIX`` + the task queue
name. The other ``OPTIONS`` keys are ``oqronkit.queue(...)`` options (upper case, as
Django spells its settings) applied to every queue of the backend; a task can override
``retries``, ``backoff`` and ``timeout`` for itself (:class:`~oqronkit.contrib.django.tasks.task.OqronTask`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

DEFAULT_PREFIX = "tasks."
# Django runs a task once and reports FAILED: retries are opt-in (OPTIONS or per task).
DEFAULT_RETRIES = 0
# The oqronkit queue options a backend may set, by their OPTIONS key.
QUEUE_OPTIONS = {
    "CONCURRENCY": "concurrency", "RETRIES": "retries", "BACKOFF": "backoff", "TIMEOUT": "timeout",
    "LEASE": "lease", "PREFETCH": "prefetch", "MAX_STALLS": "max_stalls", "THROTTLE": "throttle",
    "REMOVE_ON_COMPLETE": "remove_on_complete", "DEAD_LETTER": "dead_letter", "TAGS": "tags",
}
KNOWN_OPTIONS = frozenset({"QUEUE_PREFIX", *QUEUE_OPTIONS})
# Django's priorities (-100..100) times this are ours (-1000..1000): order kept, range filled.
PRIORITY_FACTOR = 10


def oqron_priority(django_priority: int) -> int:
    """Our priority for a Django task priority: ``10 * p`` (higher runs first in both)."""
    return int(django_priority) * PRIORITY_FACTOR


@dataclass(frozen=True)
class BackendOptions:
    """What a backend alias's settings say, and what is wrong with them (reported by the
    system check and by ``enqueue``, never by the constructor: Django builds backends
    while running the checks)."""

    prefix: str = DEFAULT_PREFIX
    queue_options: Mapping[str, Any] = field(default_factory=dict)
    problems: tuple[str, ...] = ()

    def queue_name(self, task_queue: str) -> str:
        """The oqronkit queue that holds ``task_queue``'s tasks."""
        return f"{self.prefix}{task_queue}"


def read_options(options: Any, queues: set[str]) -> BackendOptions:
    """``OPTIONS`` and ``QUEUES`` of one alias as :class:`BackendOptions`."""
    problems: list[str] = []
    if not isinstance(options, Mapping):
        return BackendOptions(problems=(f"OPTIONS must be a dict, got {type(options).__name__}.",))
    unknown = sorted(str(k) for k in options if k not in KNOWN_OPTIONS)
    if unknown:
        problems.append(f"unknown OPTIONS key(s) {', '.join(unknown)}; known: {', '.join(sorted(KNOWN_OPTIONS))}.")
    prefix = options.get("QUEUE_PREFIX", DEFAULT_PREFIX)
    if not isinstance(prefix, str):
        problems.append(f"QUEUE_PREFIX must be a string, got {prefix!r}.")
        prefix = DEFAULT_PREFIX
    if not queues:
        # Django reads an empty QUEUES as "any name"; a worker must know which to consume.
        problems.append("QUEUES is empty: list the task queue names, so runworker knows which queues to consume.")
    queue_options: dict[str, Any] = {"retries": DEFAULT_RETRIES}
    queue_options.update({QUEUE_OPTIONS[k]: v for k, v in options.items() if k in QUEUE_OPTIONS})
    return BackendOptions(prefix=prefix, queue_options=queue_options, problems=tuple(problems))
