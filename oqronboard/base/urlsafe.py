"""One path converter, ``seg``, for every URL segment that carries an engine name or id
(a queue, a job id, a run id, a cron or schedule name).

The engine accepts ids the board's URLs cannot carry as they are: a ``/`` (WSGI
decodes ``%2F`` before Django routes, so percent-encoding is not enough), ``.`` and
``..`` (browsers fold them), a newline, or a word a URL pattern uses as a literal
(``runs/failed/``). Plain values stay as they are, so links with plain ids keep
working; anything else is ``~`` followed by the base64url of its UTF-8 bytes, without
padding. A malformed escape, or one that decodes to text no engine row can hold (a NUL,
a lone surrogate), raises ``ValueError``, which Django answers with 404.
"""

from __future__ import annotations

import base64
import binascii
import re

from django.urls import register_converter, reverse

ESCAPE = "~"
# ":" is plain: run ids are often "cron:nightly:1", and a colon is safe inside a path.
PLAIN = re.compile(r"[A-Za-z0-9_:-][A-Za-z0-9._:-]*")
# Literal segments of the board's URL patterns: an id spelt like one is escaped, so a
# run called "failed" never lands on the failed-runs page.
RESERVED = frozenset({
    "failed", "live", "cancel", "promote", "retry", "delete", "export", "pause", "resume", "run-now",
    "queues", "cron", "schedule", "messages", "groups", "replay", "retry-dead",
})


def encode_segment(value: str) -> str:
    """``value`` as one URL path segment: itself when plain, else the ``~`` escape."""
    value = str(value)
    if PLAIN.fullmatch(value) and value not in RESERVED:
        return value
    # surrogatepass: a stored value holding a lone surrogate still renders as a link (that 404s).
    raw = value.encode("utf-8", "surrogatepass")
    return ESCAPE + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_segment(segment: str) -> str:
    """The value :func:`encode_segment` made ``segment`` from; ``ValueError`` when malformed."""
    if not segment.startswith(ESCAPE):
        return segment
    body = segment[len(ESCAPE):]
    if not re.fullmatch(r"[A-Za-z0-9_-]*", body) or len(body) % 4 == 1:
        raise ValueError(f"malformed escaped segment {segment!r}")
    try:
        value = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"malformed escaped segment {segment!r}") from exc
    if "\x00" in value:
        raise ValueError("a NUL character in an id")
    return value


class SegmentConverter:
    """``<seg:name>``: one path segment, encoded by :func:`encode_segment`."""

    regex = r"[^/]+"

    def to_python(self, value: str) -> str:
        return decode_segment(value)

    def to_url(self, value: str) -> str:
        return encode_segment(value)


register_converter(SegmentConverter, "seg")

# A plain segment (encode_segment keeps it as is) that no route spells.
_SLOT = "SLOTx"


class SegmentPattern:
    """A URL whose parameters are all ``seg`` segments, reversed once and split around
    them: a page of rows fills it per row (a ``reverse`` or ``{% url %}`` costs ~20 us)."""

    def __init__(self, name: str, params: int = 1) -> None:
        self.name = name
        parts = reverse(name, args=[_SLOT] * params).split(_SLOT)
        # A mount prefix spelling the slot cannot be split: such a board reverses per row.
        self.parts = parts if len(parts) == params + 1 else None

    def fill(self, *values: str) -> str:
        """The URL with ``values`` as its parameters, each encoded as the converter would."""
        if self.parts is None:
            return reverse(self.name, args=list(values))
        out = [self.parts[0]]
        for value, rest in zip(values, self.parts[1:], strict=True):
            out += [encode_segment(value), rest]
        return "".join(out)
