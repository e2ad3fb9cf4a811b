"""Reading numbers out of record values the board did not write (untrusted JSON)."""

from __future__ import annotations

from typing import Any


def json_int(value: Any) -> int | None:
    """``value`` as an int, or None for anything that is not a number (a bool is not)."""
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
