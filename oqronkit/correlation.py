"""The correlation id in effect: what an add, a publish or a webhook send made here carries.

A correlation id starts at a producer (an explicit ``correlation_id=``, :func:`correlate`
around a block, the Django middleware for a request) and travels with everything that
follows: a handler runs with its job's id in effect, so what it adds or publishes
inherits the id and records the run that caused it (``causedBy``). One ContextVar, read
once per add; nothing is set, stored or indexed when no id is in effect.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any

from .codec import check_text
from .ids import new_id

#: (correlation id, id of the run that caused what is made now, or None).
Carried = tuple[str, str | None]

_current: ContextVar[Carried | None] = ContextVar("oqron_correlation", default=None)


def current() -> Carried | None:
    """The (correlation id, causing run id) in effect, or None."""
    return _current.get()


def current_id() -> str | None:
    """The correlation id in effect, or None."""
    found = _current.get()
    return None if found is None else found[0]


@contextmanager
def correlate(correlation_id: str | None = None) -> Iterator[str]:
    """Every job, message and webhook made inside carries ``correlation_id`` (a new
    id when None); yields the id."""
    carried = check_text(correlation_id, what="correlation_id") if correlation_id is not None else new_id()
    token = _current.set((carried, None))
    try:
        yield carried
    finally:
        _current.reset(token)


def enter_run(correlation_id: str | None, run: Any) -> Token[Carried | None] | None:
    """Put a handler's job's id in effect while it runs, the run as the cause; None
    (and nothing set) when its job carries no id."""
    if correlation_id is None:
        return None
    return _current.set((correlation_id, run["id"] if run else None))


def leave_run(token: Token[Carried | None] | None) -> None:
    if token is not None:
        _current.reset(token)


def from_headers(traceparent: str | None, request_id: str | None) -> str | None:
    """A request's correlation id: its W3C ``traceparent``'s trace id, else its
    ``X-Request-ID``; None when neither is usable."""
    if traceparent:
        parts = traceparent.strip().split("-")
        if len(parts) >= 4 and len(parts[1]) == 32 and parts[1] != "0" * 32 and _is_hex(parts[1]):
            return parts[1].lower()
    if request_id:
        candidate = request_id.strip()[:200]
        if candidate and candidate.isprintable() and candidate.isascii():
            return candidate
    return None


def _is_hex(text: str) -> bool:
    return all(c in "0123456789abcdefABCDEF" for c in text)
