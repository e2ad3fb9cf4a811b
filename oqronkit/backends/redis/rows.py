"""How the Redis durable store writes a row and its index entries as strings.

A row is one hash field: ``<ins16><st16><hlen6><header><json>``. The fixed-width keys
lead so that the Lua side finds them without decoding anything:

* ``ins16``: ``inserted_at`` as 16 zero-padded digits;
* ``st16``: the run field ``startedAt`` as 16 hex digits that sort like the number
  (IEEE-754 bits, sign-flipped), or 16 ``-`` when the row has no numeric ``startedAt``;
* ``hlen6``: the length of the header in 6 digits;
* the header: an ASCII JSON array ``[expires_at text or null, kind, status, name,
  module]``, the filter fields as strings or null, so a script can drop a row's old
  index entries without decoding the whole value.

Index members are ``ins16 + id`` and ``st16 + id`` in score-0 sorted sets, so ZRANGEBYLEX
walks them in (key, id) order: exactly the order of the SQL backends' keyset pagination
(ids compare by code point, which UTF-8 bytes preserve).
"""

from __future__ import annotations

import json
import struct
from typing import Any

from ...codec import decode_json, dumps_compact
from ..types import EncodedRow, ListQuery, StoredRecord

NO_START = "-" * 16
KEY_WIDTH = 16
#: The listing filters that have an index of their own (lua/durable_write.lua).
FILTER_FIELDS = ("status", "name", "module")
_HEADER_AT = 2 * KEY_WIDTH + 6
_SIGN = 1 << 63
_ALL = (1 << 64) - 1


def inserted_key(ms: int | float) -> str:
    """``inserted_at`` (epoch ms) as 16 sortable digits (negative values sort as 0)."""
    return f"{max(int(ms), 0):016d}"


def started_key(value: int | float) -> str:
    """A number as 16 hex digits whose byte order is the numbers' order."""
    number = float(value) + 0.0  # -0.0 becomes 0.0: equal numbers, equal keys
    bits = struct.unpack(">Q", struct.pack(">d", number))[0]
    bits = (bits ^ _ALL) if bits & _SIGN else (bits | _SIGN)
    return f"{bits:016x}"


def encode_row(row: EncodedRow) -> str:
    value: dict[str, Any] = decode_json(row.value_json)
    started = value.get("startedAt")
    start = started_key(started) if isinstance(started, (int, float)) and not isinstance(started, bool) else NO_START
    fields = [v if isinstance(v := value.get(name), str) else None for name in FILTER_FIELDS]
    expires = None if row.expires_at is None else str(row.expires_at)
    header = dumps_compact([expires, row.kind, *fields])  # 2 us, json.dumps 5.5 (on every write)
    if not header.isascii():  # the length is counted in bytes: escape what is not ASCII
        header = json.dumps([expires, row.kind, *fields], separators=(",", ":"))
    return f"{inserted_key(row.inserted_at)}{start}{len(header):06d}{header}{row.value_json}"


def decode_row(namespace: str, id: str, raw: str) -> StoredRecord:
    end = _HEADER_AT + int(raw[2 * KEY_WIDTH:_HEADER_AT])
    expires, kind, *_fields = json.loads(raw[_HEADER_AT:end])
    return StoredRecord(
        namespace, id, kind, decode_json(raw[end:]), int(raw[:KEY_WIDTH]), None if expires is None else int(expires),
    )


def row_json(raw: str) -> str:
    """The value JSON of a stored row."""
    return raw[_HEADER_AT + int(raw[2 * KEY_WIDTH:_HEADER_AT]):]


def split_expiry_member(member: str) -> tuple[str, str]:
    """(namespace, id) of an ``exp`` index member ``<byte length of ns>:<ns><id>``."""
    raw = member.encode()
    colon = raw.index(b":")
    end = colon + 1 + int(raw[:colon])
    return raw[colon + 1:end].decode(), raw[end:].decode()


def filter_index(base: str, table: str, order: str, field: str, namespace: str, value: str) -> str:
    """The key of one filter index, exactly as lua/durable_write.lua names it."""
    which = "s" if order == "started" else "i"
    return f"{base}fx:{table}:{which}:{field}:{len(namespace.encode())}:{namespace}:{value}"


_Op = tuple[str, str, str, str]  # code, id, payload, expected (see lua/durable_write.lua)


class Batch:
    """Operations for one durable_write call, grouped per (table, namespace)."""

    def __init__(self) -> None:
        self.groups: dict[tuple[str, str], tuple[list[str], list[_Op]]] = {}

    def add(self, table: str, namespace: str, kind: str, code: str, id: str, payload: str = "",
            expected: str = "") -> None:
        kinds, ops = self.groups.setdefault((table, namespace), ([], []))
        if kind:
            kinds.append(kind)
        ops.append((code, id, payload, expected))

    def refs(self) -> list[tuple[str, str]]:
        """(namespace, id) of every operation, in the order of the script's results."""
        return [(ns, op[1]) for (_t, ns), (_k, ops) in self.groups.items() for op in ops]


def listing_bounds(query: ListQuery) -> tuple[str, str]:
    """ZRANGEBYLEX bounds (lower, upper) of a listing: its started window (on the
    started index) and its cursor, whichever is tighter."""
    lo, hi = "-", "+"
    if query.order == "started":
        if query.started_from is not None:
            lo = "[" + started_key(query.started_from)
        if query.started_to is not None:
            hi = "(" + started_key(query.started_to)
    if query.after is not None:
        score, id = query.after
        key = started_key(score) if query.order == "started" else inserted_key(score)
        cursor = "(" + key + id
        if query.descending:
            hi = cursor if hi == "+" or cursor[1:] <= hi[1:] else hi
        else:
            lo = cursor if lo == "-" or cursor[1:] >= lo[1:] else lo
    return lo, hi
