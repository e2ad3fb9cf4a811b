"""The topic pages' input: the log's filters (GET) and a replay's start position (POST).
A bad value is a :class:`~oqronboard.base.pages.BadFilter`: 400 with a message."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django import forms

from oqronboard.runs.topics import MessageFilters
from oqronkit.clock import now_ms
from oqronkit.topics.groups import Position

from .base.cursors import CursorField, decode_cursor
from .base.filters import INSTANT_HELP, WINDOWS, InstantField, TextFilter, clean_or_400, parse_instant
from .base.pages import BadFilter

ALL = "all"
LOG_WINDOWS = (ALL, *WINDOWS)
OFFSET = re.compile(r"^[0-9]{1,16}$")
POSITION_WORDS = ("earliest", "latest")
POSITION_HELP = f"an offset (0 or more), 'earliest', 'latest', or {INSTANT_HELP}"


class LogFilterForm(forms.Form):
    key = TextFilter(label="key")
    correlation = TextFilter(label="correlation id")
    window = forms.ChoiceField(choices=[(w, w) for w in LOG_WINDOWS], required=False, label="window")
    before = InstantField(label="published before")
    cursor = CursorField(label="cursor")


def log_filters(params: Mapping[str, Any], *, now: int | None = None) -> tuple[MessageFilters, dict[str, Any]]:
    """Validated filters of a topic's log and the cleaned values to echo in the form."""
    data = clean_or_400(LogFilterForm(params))
    data["window"] = data["window"] or ALL
    since = None if data["window"] == ALL else (now_ms() if now is None else now) - WINDOWS[data["window"]]
    filters = MessageFilters(key=data["key"], correlation=data["correlation"], since=since, before=data["before"],
                             cursor=decode_cursor(data["cursor"]))
    return filters, data


class ReplayForm(forms.Form):
    position = forms.CharField(max_length=40, strip=True, label="from")
    confirmed = forms.BooleanField(required=False)


def replay_position(params: Mapping[str, Any], nexts: list[int], *, now: int | None = None
                    ) -> tuple[Position, str, bool]:
    """The start position a replay form asks for, its text, and whether it is
    confirmed. An offset past every partition's next offset, or a time in the future,
    is refused (they would skip messages not yet published)."""
    data = clean_or_400(ReplayForm(params))
    text: str = data["position"]
    return parse_position(text, nexts, now=now), text, bool(data["confirmed"])


def parse_position(text: str, nexts: list[int], *, now: int | None = None) -> Position:
    word = text.lower()
    if word in POSITION_WORDS:
        return word
    if OFFSET.match(text):
        offset = int(text)
        newest = max(nexts, default=0)
        if offset > newest:
            raise BadFilter(f"Offset {offset} is past the topic's newest offset: replay from 0 to {newest} "
                            f"(each partition from that offset; {newest} waits for the next message).")
        return offset
    if text.startswith("-") and text[1:].isdigit():
        raise BadFilter(f"Offset {text} is negative: an offset is 0 or more.")
    try:
        at = parse_instant(text)
    except ValueError as exc:
        raise BadFilter(f"Cannot replay from {text[:40]!r}: give {POSITION_HELP}. ({exc})") from None
    if at > (now_ms() if now is None else now):
        raise BadFilter(f"{text[:40]!r} is in the future: replay from a time that has passed.")
    return datetime.fromtimestamp(at / 1000, tz=UTC)


def describe(position: Position) -> str:
    if isinstance(position, datetime):
        return "the first message published at or after " + position.strftime("%Y-%m-%d %H:%M:%S UTC")
    if isinstance(position, int):
        return f"offset {position}"
    return {"earliest": "the oldest retained message", "latest": "the newest (skip every message not yet handed over)"
            }.get(position, position)
