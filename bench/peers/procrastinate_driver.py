"""Producer for Procrastinate: ``defer`` (single) and ``batch_defer`` (bulk)."""

from __future__ import annotations

from typing import Any

from driver_cli import main
from procrastinate_app import app, bench_task


def add_one(data: dict[str, Any]) -> Any:
    return bench_task.defer(**data)


def add_many(items: list[dict[str, Any]]) -> Any:
    return bench_task.batch_defer(*items)


def warm_up() -> None:
    """Open the app's pool and touch the database before anything is timed."""
    app.open()
    app.check_connection()


if __name__ == "__main__":
    main(add_one=add_one, add_many=add_many, warm_up=warm_up, tear_down=app.close)
