"""Opaque keyset cursors of the durable plane's listings (DurablePlane.list): the sort
key and id of a page's last row, with the order they were made for."""

from __future__ import annotations

import base64
import json

from .backends.types import Order
from .errors import InvalidRecord


def encode_cursor(order: Order, key: int | float, id: str) -> str:
    raw = json.dumps([order, key, id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None, order: Order) -> tuple[int | float, str] | None:
    """Decode a cursor made by :func:`encode_cursor`; a malformed one is bad input."""
    if cursor is None:
        return None
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        made_for, key, id = json.loads(base64.urlsafe_b64decode(padded.encode()))
        if made_for != order or not isinstance(key, (int, float)) or isinstance(key, bool) or not isinstance(id, str):
            raise ValueError(made_for)
    except (ValueError, TypeError) as exc:
        raise InvalidRecord(f"The page cursor {cursor!r} is malformed or made for another order.") from exc
    return key, id
