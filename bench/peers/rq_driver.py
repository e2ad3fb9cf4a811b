"""Producer for RQ: ``Queue.enqueue`` (single) and ``Queue.enqueue_many`` (bulk)."""

from __future__ import annotations

from typing import Any

from driver_cli import main
from rq import Queue
from rq_app import bench_task, job_id, queue

q = queue()


def add_one(data: dict[str, Any]) -> Any:
    return q.enqueue(bench_task, data, job_id=job_id(data))


def add_many(items: list[dict[str, Any]]) -> Any:
    return q.enqueue_many([Queue.prepare_data(bench_task, (data,), job_id=job_id(data)) for data in items])


def warm_up() -> None:
    """Open the connection before anything is timed."""
    q.connection.ping()


if __name__ == "__main__":
    main(add_one=add_one, add_many=add_many, warm_up=warm_up)
