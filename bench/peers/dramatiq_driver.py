"""Producer for Dramatiq: ``actor.send``, one call per job (no bulk API)."""

from __future__ import annotations

from typing import Any

from dramatiq_app import bench_task, broker
from driver_cli import main


def add_one(data: dict[str, Any]) -> Any:
    return bench_task.send(data)


def warm_up() -> None:
    """Open the connection before anything is timed."""
    broker.client.ping()


if __name__ == "__main__":
    main(add_one=add_one, add_many=None, warm_up=warm_up)
