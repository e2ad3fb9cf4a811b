"""What a running cluster's leader does for the board, played beside board_pages.py's
timed requests (no worker runs on the bench database): it keeps the queue depths a
board asked for counted every second (``oqronkit.services.kept_depths``), rolls the
runs up into the metrics history's minute buckets and runs the table upkeep (ANALYZE,
VACUUM where autovacuum lags: this server runs without it) every minute, on the engine's
own connections, so their cost lands on the timed pages as it would.

``--cold`` in board_pages.py: one viewer polling every few seconds, so every request
finds the figures viewers share (``OQRON_BOARD_CACHE_SECONDS``) expired: the board's
cache is emptied before each one, while the leader's duties go on as they do.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from oqronkit.history.rollup import rollup
from oqronkit.services.kept_depths import KEEP_EVERY_S, keep_depths
from oqronkit.services.upkeep import table_upkeep

MINUTE_DUTIES_S = 60.0


class LeaderDuties:
    """A thread running the kept depths and the rollup on their intervals until stopped."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bench-leader", daemon=True)
        self.passes = {"depths": 0, "minute": 0}

    def start(self) -> LeaderDuties:
        started = time.perf_counter()
        report = rollup(self.engine.durable)  # the last hour's minutes, as a leader running all along has them
        print(f"rolled {report.minutes} minute(s) of {report.runs:,} runs in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        done = table_upkeep(self.engine)
        print(f"table upkeep: {', '.join(done) or 'nothing due'} ({time.perf_counter() - started:.1f} s)")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=30)

    def _loop(self) -> None:
        last_rollup = time.monotonic()
        while not self._stop.wait(KEEP_EVERY_S):
            keep_depths(self.engine.hot)
            self.passes["depths"] += 1
            if time.monotonic() - last_rollup >= MINUTE_DUTIES_S:
                rollup(self.engine.durable)
                table_upkeep(self.engine)
                self.passes["minute"] += 1
                last_rollup = time.monotonic()


def forget_shared() -> None:
    """The board's shared figures expired, as a lone viewer's next poll finds them."""
    from django.core.cache import cache

    cache.clear()
