"""Producer for Celery: ``task.delay``, one call per job (no bulk API: groups and
chunks send one message per job)."""

from __future__ import annotations

from typing import Any

from celery_app import app, bench_task
from driver_cli import main


def add_one(data: dict[str, Any]) -> Any:
    return bench_task.delay(data)


def warm_up() -> None:
    """Connect the producer pool ``delay`` uses before anything is timed."""
    with app.producer_or_acquire() as producer:
        producer.connection.ensure_connection(max_retries=3)


if __name__ == "__main__":
    main(add_one=add_one, add_many=None, warm_up=warm_up)
