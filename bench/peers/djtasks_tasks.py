"""django-tasks' side of the benchmark: one task with the shared body."""

from __future__ import annotations

from common import complete
from django_tasks import task


@task()
def bench_task(i: int, to: str, t: float | None = None) -> None:
    """The shared task body: one Redis INCR."""
    data = {"i": i, "to": to}
    if t is not None:
        data["t"] = t
    complete(data)
