"""The ``django-tasks-oqron`` side of the benchmark: the shared body as a ``@task``, the
same function as ``djtasks_tasks.py`` runs under django-tasks-db."""

from __future__ import annotations

from common import complete
from django.tasks import task


@task()
def bench_task(i: int, to: str, t: float | None = None) -> None:
    """The shared task body: one Redis INCR."""
    data: dict[str, object] = {"i": i, "to": to}
    if t is not None:
        data["t"] = t
    complete(data)
