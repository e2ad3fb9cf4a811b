"""Producer for django-tasks-db: ``Task.enqueue``, one call per job (it has no bulk API)."""

from __future__ import annotations

import os
from typing import Any

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "djtasks_settings")
django.setup()

from django.db import connection  # noqa: E402
from djtasks_tasks import bench_task  # noqa: E402
from driver_cli import main  # noqa: E402


def add_one(data: dict[str, Any]) -> Any:
    return bench_task.enqueue(**data)


def warm_up() -> None:
    """Open the database connection before anything is timed."""
    connection.ensure_connection()


if __name__ == "__main__":
    main(add_one=add_one, add_many=None, warm_up=warm_up)
