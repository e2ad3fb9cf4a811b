"""Wall-clock time in epoch milliseconds, the unit every record stores."""

from __future__ import annotations

import time


def now_ms() -> int:
    """Current time as integer epoch milliseconds."""
    return time.time_ns() // 1_000_000
