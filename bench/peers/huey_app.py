"""Huey's side of the benchmark: a ``RedisHuey`` named after the phase, one task.

Worker: ``huey_consumer huey_app.huey -w 4 -k thread -q`` (peer-bench.md's setting;
``-q`` logs at WARNING). Every key Huey writes carries its name
(``huey.redis.<ns>``, ``huey.schedule.<ns>``, ...), so the phase's namespace
``BENCH_NS`` (letters, digits and ``_`` only: Huey drops other characters from
names) keeps phases apart and the harness deletes ``*<ns>*`` afterwards.
"""

from __future__ import annotations

import os
from typing import Any

from common import complete
from huey import RedisHuey

huey = RedisHuey(os.environ.get("BENCH_NS", "bench"), url=os.environ.get("BENCH_REDIS_URL"))


@huey.task()
def bench_task(data: dict[str, Any]) -> None:
    """The shared task body: one Redis INCR."""
    complete(data)
