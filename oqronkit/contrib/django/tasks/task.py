"""``OqronTask``: Django's ``Task`` with the job options Django's API has no word for.

``@task(retries=3, backoff=5, timeout=30)`` sets them for every enqueue of a task, and
``my_task.using(job_id="welcome-42").enqueue(...)`` for one (an idempotency key: while
that job waits, runs or is dead-lettered, enqueueing it again returns its result).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from django.tasks import Task

# The OqronTask fields that are job options, by their name in ``Queue.add``.
JOB_OPTION_FIELDS = ("retries", "backoff", "timeout", "job_id")


if TYPE_CHECKING:  # the stubs make Task generic; at run time it is a plain class
    _TaskBase = Task[Any, Any]
else:
    _TaskBase = Task


@dataclass(frozen=True, slots=True, kw_only=True)
class OqronTask(_TaskBase):
    """A task of :class:`~oqronkit.contrib.django.tasks.OqronBackend`; None keeps the backend's value."""

    retries: int | None = None
    backoff: Any = None
    timeout: float | None = None
    job_id: str | None = None

    def using(self, *, priority: int | None = None, queue_name: str | None = None,
              run_after: datetime | None = None, backend: str | None = None, **options: Any) -> OqronTask:
        """Django's ``using`` plus the job options (``retries``, ``backoff``, ``timeout``,
        ``job_id``)."""
        unknown = set(options) - set(JOB_OPTION_FIELDS)
        if unknown:
            raise TypeError(f"using() got unexpected option(s) {', '.join(sorted(unknown))}.")
        base = cast(OqronTask, Task.using(self, priority=priority, queue_name=queue_name, run_after=run_after,
                                          backend=backend))
        return replace(base, **options) if options else base

    def job_options(self) -> dict[str, Any]:
        """The job options this task sets (those left None are not returned)."""
        values = {name: getattr(self, name) for name in JOB_OPTION_FIELDS}
        return {name: value for name, value in values.items() if value is not None}
