"""A ``django.tasks`` backend on oqronkit's queues (docs/how-to/django-tasks.md).

``TASKS = {"default": {"BACKEND": "oqronkit.contrib.django.tasks.OqronBackend", "QUEUES": ["default"],
"OPTIONS": {"RETRIES": 3}}}``; ``python manage.py runworker`` runs the tasks.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.db import transaction

from .backend import OqronBackend
from .task import OqronTask


def enqueue_on_commit(task: Any, *args: Any, using: str | None = None, **kwargs: Any) -> None:
    """Enqueue ``task`` once the surrounding transaction commits (never, if it rolls
    back): ``add_on_commit``'s rule for tasks, since ``enqueue`` itself never waits."""
    transaction.on_commit(partial(task.enqueue, *args, **kwargs), using=using)


def declare_configured_queues() -> list[str]:
    """Declare the task queues of every ``OqronBackend`` alias in ``TASKS`` (what a
    worker process needs to consume them); returns the oqronkit queue names."""
    from django.tasks import task_backends

    names: list[str] = []
    for backend in task_backends.all():
        if isinstance(backend, OqronBackend):
            names += [q.name for q in backend.declare_queues()]
    return names


__all__ = ["OqronBackend", "OqronTask", "declare_configured_queues", "enqueue_on_commit"]
