"""What a running cluster's leader does for the board, played beside board_pages.py's
timed requests (no worker runs on the bench database): it keeps the queue depths a
board asked for counted every second (``oqronkit.services.kept_depths``), rolls the
runs up into the metrics history's minute buckets and runs the table upkeep (ANALYZE,
VACUUM where autovacuum lags: this server runs without it) every minute, on an engine of
its own in a child process, as a cluster's leader runs them in a worker of its own: their
statements load the database as they would, without sharing the timing process's GIL.

``--cold`` in board_pages.py: one viewer polling every few seconds, so every request
finds the figures viewers share (``OQRON_BOARD_CACHE_SECONDS``) expired: the board's
cache is emptied before each one, while the leader's duties go on as they do.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from typing import Any

MINUTE_DUTIES_S = 60.0
STARTED_WITHIN_S = 600.0


class LeaderDuties:
    """A child process running the kept depths and the rollup on their intervals until stopped."""

    def __init__(self, database_url: str, project: str, environment: str) -> None:
        context = multiprocessing.get_context("spawn")  # no inherited connections or Django state
        self._stop = context.Event()
        self._ready = context.Event()
        self._process = context.Process(target=_run, name="bench-leader", daemon=True,
                                        args=(database_url, project, environment, self._ready, self._stop))

    def start(self) -> LeaderDuties:
        self._process.start()
        if not self._ready.wait(STARTED_WITHIN_S):
            self._process.terminate()
            raise RuntimeError("the leader's duties did not start (see the child's output)")
        return self

    def stop(self) -> None:
        self._stop.set()
        self._process.join(timeout=30)
        if self._process.is_alive():
            self._process.terminate()


def _run(database_url: str, project: str, environment: str, ready: Any, stop: Any) -> None:
    os.environ.update({"OQRON_MODE": "postgres", "OQRON_DATABASE_URL": database_url,
                       "OQRON_PROJECT": project, "OQRON_ENVIRONMENT": environment, "OQRON_LOG_LEVEL": "WARNING"})
    import oqronkit
    from oqronkit.history.rollup import rollup
    from oqronkit.services.kept_depths import KEEP_EVERY_S, keep_depths
    from oqronkit.services.upkeep import table_upkeep

    engine = oqronkit.configure()
    started = time.perf_counter()
    report = rollup(engine.durable)  # the last hour's minutes, as a leader running all along has them
    print(f"rolled {report.minutes} minute(s) of {report.runs:,} runs in {time.perf_counter() - started:.1f} s")
    started = time.perf_counter()
    done = table_upkeep(engine)
    print(f"table upkeep: {', '.join(done) or 'nothing due'} ({time.perf_counter() - started:.1f} s)", flush=True)
    ready.set()
    passes = {"depths": 0, "minute": 0}
    last_rollup = time.monotonic()
    while not stop.wait(KEEP_EVERY_S):
        keep_depths(engine.hot)
        passes["depths"] += 1
        if time.monotonic() - last_rollup >= MINUTE_DUTIES_S:
            rollup(engine.durable)
            table_upkeep(engine)
            passes["minute"] += 1
            last_rollup = time.monotonic()
    print(f"leader duties: {passes['depths']} depth pass(es), {passes['minute']} minute pass(es)", flush=True)
    engine.close()


def forget_shared() -> None:
    """The board's shared figures expired, as a lone viewer's next poll finds them."""
    from django.core.cache import cache

    cache.clear()
