"""Our engine's side of the benchmark: one queue, ``bench``, at its default concurrency.

The worker imports this module (``python -m oqronkit worker --import oqron_tasks``);
the engine is configured from ``OQRON_*`` variables the harness sets per phase.
"""

from __future__ import annotations

import os
from typing import Any

from common import complete

import oqronkit


def handle(ctx: Any) -> None:
    """The shared task body: one Redis INCR."""
    complete(ctx.data)


bench = oqronkit.queue("bench", handler=handle)
if os.environ.get("BENCH_SIGNAL"):  # throughput.py's "-signal" systems: what one callback costs
    bench.on("completed", lambda event: None)
