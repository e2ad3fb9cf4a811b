"""Event names and the patterns endpoints subscribe with: dot-separated segments, where
``*`` stands for exactly one segment and ``**`` for any number (none included):
``order.*`` matches ``order.paid`` but not ``order.paid.late``; ``order.**`` matches
``order``, ``order.paid`` and ``order.paid.late``; ``**`` matches every event."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from ..errors import ConfigurationError, InvalidJob

_SEGMENT = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MAX_EVENT_LENGTH = 200
MAX_PATTERNS = 100


def check_event(event: Any) -> str:
    """An event name: 1-200 characters, segments of letters, digits, '_' or '-' joined by '.'."""
    if not isinstance(event, str) or not 0 < len(event) <= MAX_EVENT_LENGTH or not all(
            _SEGMENT.match(part) for part in event.split(".")):
        raise InvalidJob(f"Event name {event!r} must be 1-{MAX_EVENT_LENGTH} characters: segments of letters, "
                         "digits, '_' or '-' joined by '.', e.g. 'order.paid'.")
    return event


def check_patterns(patterns: Any, *, what: str) -> list[str]:
    """A non-empty list of event patterns (segments, ``*`` or ``**``), without duplicates."""
    if isinstance(patterns, str) or not isinstance(patterns, Sequence) or not 0 < len(patterns) <= MAX_PATTERNS:
        raise ConfigurationError(f"{what}: events must be a list of 1-{MAX_PATTERNS} patterns, got {patterns!r}.")
    for pattern in patterns:
        if not isinstance(pattern, str) or not 0 < len(pattern) <= MAX_EVENT_LENGTH or not all(
                part in ("*", "**") or _SEGMENT.match(part) for part in pattern.split(".")):
            raise ConfigurationError(f"{what}: event pattern {pattern!r} must be segments of letters, digits, "
                                     "'_' or '-', '*' (one segment) or '**' (any number), joined by '.'.")
    return list(dict.fromkeys(patterns))


def matches(pattern: str, event: str) -> bool:
    """Whether ``event`` matches ``pattern``."""
    return _match(tuple(pattern.split(".")), tuple(event.split(".")))


def matches_any(patterns: Sequence[str], event: str) -> bool:
    return any(matches(pattern, event) for pattern in patterns)


@lru_cache(maxsize=4096)
def _match(parts: tuple[str, ...], segments: tuple[str, ...]) -> bool:
    # Segment by segment; "**" either stops standing for segments or takes one more.
    if not parts:
        return not segments
    head, rest = parts[0], parts[1:]
    if head == "**":
        return _match(rest, segments) or (bool(segments) and _match(parts, segments[1:]))
    return bool(segments) and (head == "*" or head == segments[0]) and _match(rest, segments[1:])
