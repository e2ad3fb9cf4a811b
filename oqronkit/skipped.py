"""Rows a leader service cannot use (written by hand, by an older version, or damaged):
each is skipped and logged once, so one bad row never stops a pass over the others."""

from __future__ import annotations

import logging
from collections.abc import Callable

logger = logging.getLogger(__name__)

#: What a row that cannot be used raises: a bad value or type, a missing key, a number
#: out of range, or a record the durable plane refuses (InvalidRecord is a ValueError).
#: Not BackendUnavailable (a ConnectionError): an outage ends the pass as before.
UNUSABLE = (ValueError, TypeError, LookupError, AttributeError, ArithmeticError)

_MAX_REMEMBERED = 10_000
_logged: set[tuple[str, str, str]] = set()


def skip(service: str, namespace: str, row_id: str, exc: BaseException) -> None:
    """Note that ``service`` skipped ``namespace``/``row_id``; logged the first time only."""
    key = (service, namespace, str(row_id))
    if key in _logged:
        return
    if len(_logged) >= _MAX_REMEMBERED:  # bounded: at worst a row is logged once more
        _logged.clear()
    _logged.add(key)
    logger.warning("%s skipped %s/%s, a row it cannot use (it tries again each pass, logged once): %s: %s",
                   service, namespace, row_id, type(exc).__name__, exc,
                   extra={"action": "services.row_skipped", "service": service, "namespace": namespace})


def guarded[T](service: str, namespace: str, row_id: str, fn: Callable[[], T]) -> T | None:
    """``fn()``, or None after :func:`skip` when it fails on an unusable row."""
    try:
        return fn()
    except UNUSABLE as exc:
        skip(service, namespace, row_id, exc)
        return None
