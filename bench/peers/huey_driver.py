"""Producer for Huey: calling the task enqueues it, one call per job (no bulk API)."""

from __future__ import annotations

from typing import Any

from driver_cli import main
from huey_app import bench_task, huey


def add_one(data: dict[str, Any]) -> Any:
    return bench_task(data)


def warm_up() -> None:
    """Open the connection before anything is timed."""
    huey.storage.conn.ping()


if __name__ == "__main__":
    main(add_one=add_one, add_many=None, warm_up=warm_up)
