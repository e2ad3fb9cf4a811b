"""Our engine's side of the benchmark: one queue, ``bench``, at its default concurrency;
with ``OQRON_BENCH_BATCH=N`` (the ``oqron-<mode>-batch`` rows) a batch queue of N per call.

The worker imports this module (``python -m oqronkit worker --import oqron_tasks``);
the engine is configured from ``OQRON_*`` variables the harness sets per phase.
"""

from __future__ import annotations

import os
from typing import Any

from common import complete, complete_many

import oqronkit


def handle(ctx: Any) -> None:
    """The shared task body: one Redis INCR."""
    complete(ctx.data)


def handle_batch(jobs: list[Any]) -> None:
    """The same completions, one call per batch."""
    complete_many([ctx.data for ctx in jobs])


BATCH = int(os.environ.get("OQRON_BENCH_BATCH", "0"))
if BATCH:
    bench = oqronkit.queue("bench", handler=handle_batch, batch=oqronkit.Batch(size=BATCH, max_wait=0.05))
else:
    bench = oqronkit.queue("bench", handler=handle)
if os.environ.get("BENCH_SIGNAL"):  # throughput.py's "-signal" systems: what one callback costs
    bench.on("completed", lambda event: None)
