"""The keyset page cursor every paged list shares (runs, failed runs, dead letters, a
queue's jobs, a schedule's history): the last row's sort key (epoch ms) and id, as
base64url JSON. A cursor is user input: anything this module did not make is a
:class:`~oqronboard.base.pages.BadFilter`, answered with 400 "cursor malformed"."""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from django import forms

from .pages import BadFilter

PAGE_SIZE = 50
MAX_CURSOR_CHARS = 400
# Epoch ms stay far inside this; a bigger key (or NaN, Infinity, 1e400) is not ours.
MAX_KEY = 1e15
MALFORMED = "Cursor malformed: the page cursor is not one the board made; start again from the first page."


def encode_cursor(key: Any, row_id: str) -> str:
    raw = json.dumps([key, row_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _no_constants(name: str) -> Any:
    raise ValueError(f"{name} in a cursor")


def decode_cursor(cursor: str | None) -> tuple[int | float, str] | None:
    """The ``(key, id)`` of a cursor made by :func:`encode_cursor`; None for no cursor;
    :class:`BadFilter` for anything else."""
    if not cursor:
        return None
    if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_CHARS:
        raise BadFilter(MALFORMED)
    try:
        raw = base64.urlsafe_b64decode((cursor + "=" * (-len(cursor) % 4)).encode("ascii"))
        key, row_id = json.loads(raw.decode("utf-8"), parse_constant=_no_constants)
    except (ValueError, TypeError, binascii.Error, RecursionError) as exc:
        raise BadFilter(MALFORMED) from exc
    if isinstance(key, bool) or not isinstance(key, int | float) or not isinstance(row_id, str):
        raise BadFilter(MALFORMED)
    if not -MAX_KEY <= key <= MAX_KEY:  # also False for NaN; exact for huge ints (no overflow)
        raise BadFilter(MALFORMED)
    if "\x00" in row_id or not _is_utf8(row_id):
        raise BadFilter(MALFORMED)
    return key, row_id


def _is_utf8(text: str) -> bool:
    """False when ``text`` holds a lone surrogate (no database can take it)."""
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class CursorField(forms.CharField):
    """A page cursor as sent, for a filter form; :func:`decode_cursor` judges it, so any
    bad one answers the same "cursor malformed" (not a form error about its length)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, strip=False, **kwargs)
