"""Producer for ``django-tasks-oqron``: ``Task.enqueue`` through ``oqronkit.contrib.django.tasks.OqronBackend``,
one call per job (Django's tasks API has no bulk enqueue)."""

from __future__ import annotations

import os
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "djoqron_settings")
django.setup()

from djoqron_tasks import bench_task  # noqa: E402
from driver_cli import main  # noqa: E402

from oqronkit.contrib.django import engine  # noqa: E402


def add_one(data: dict[str, Any]) -> Any:
    return bench_task.enqueue(**data)


def warm_up() -> None:
    """Open both planes and declare the task queue before anything is timed."""
    eng = engine.get_engine()
    eng.durable  # noqa: B018
    eng.hot  # noqa: B018
    bench_task.get_backend().queue_for("default")


if __name__ == "__main__":
    main(add_one=add_one, add_many=None, warm_up=warm_up)
