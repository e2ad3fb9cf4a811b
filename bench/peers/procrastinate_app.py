"""Procrastinate's side of the benchmark: an app on ``BENCH_PG_URL`` and one sync task.

Worker: ``procrastinate --app=procrastinate_app.app --log-level warning worker --concurrency 10``
(peer-bench.md's setting; sync tasks run in threads, wake-ups by LISTEN/NOTIFY).
"""

from __future__ import annotations

import os
from typing import Any

from common import complete
from procrastinate import App, PsycopgConnector

app = App(connector=PsycopgConnector(conninfo=os.environ.get("BENCH_PG_URL", "")))


@app.task(name="bench_task")
def bench_task(**data: Any) -> None:
    """The shared task body: one Redis INCR."""
    complete(data)
