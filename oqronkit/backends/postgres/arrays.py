"""The id, text and number arrays every batch statement sends, in binary, built fast.

psycopg adapts a Python ``list`` element by element in Python (its text and binary
list dumpers): measured in a busy worker, about 12% of its CPU went there, more than
the JSON encoding of the run records. A :class:`TextArray` or :class:`BigintArray`
is a plain list whose binary form is built in one pass here. The pools of both
PostgreSQL backends register these dumpers on every connection they open
(:func:`register`); a plain list still goes through psycopg's own dumpers.
"""

from __future__ import annotations

import struct
from typing import Any

import psycopg
from psycopg.abc import AdaptContext
from psycopg.adapt import Dumper
from psycopg.pq import Format

TEXT_OID, TEXT_ARRAY_OID = 25, 1009
INT8_OID, INT8_ARRAY_OID = 20, 1016
_NULL = b"\xff\xff\xff\xff"
_INT8 = struct.Struct("!iq")
_INT8_MIN, _INT8_MAX = -(2**63), 2**63 - 1


class TextArray(list[str | None]):
    """A list of ``str`` (or None) sent as ``text[]``."""


class BigintArray(list[int | None]):
    """A list of ``int`` (or None) sent as ``bigint[]``."""


def _header(count: int, has_null: bool, element_oid: int) -> bytes:
    # ndim, has-null flag, element type, then (length, lower bound) of the one dimension.
    if count == 0:
        return struct.pack("!iii", 0, 0, element_oid)
    return struct.pack("!iiiii", 1, int(has_null), element_oid, count, 1)


class _ArrayDumper(Dumper):
    format = Format.BINARY
    array_oid = 0

    def __init__(self, cls: type, context: AdaptContext | None = None) -> None:
        super().__init__(cls, context)
        # The oid is set per instance, not on the class: a class oid would also make
        # this dumper psycopg's choice for *any* value bound by that oid (COPY with
        # set_types), where it would receive plain lists.
        self.oid = self.array_oid


class TextArrayDumper(_ArrayDumper):
    array_oid = TEXT_ARRAY_OID

    def dump(self, obj: Any) -> bytes:
        try:
            if obj and type(obj[0]) is str and obj.count(obj[0]) == len(obj):
                # One value repeated (a batch's namespace, its record kind): encoded once.
                return _header(len(obj), False, TEXT_OID) + _text(obj[0]) * len(obj)
            if None in obj:
                parts = [_NULL if s is None else _text(s) for s in obj]
                return _header(len(obj), True, TEXT_OID) + b"".join(parts)
            encoded = [s.encode() for s in obj]
        except UnicodeEncodeError as exc:  # a lone surrogate: not text PostgreSQL can store
            raise psycopg.DataError(f"a string is not valid UTF-8 text: {exc}") from exc
        except AttributeError as exc:  # not a str (an int id, say): bad input, said as such
            wrong = next((v for v in obj if v is not None and not isinstance(v, str)), None)
            raise psycopg.DataError(f"a text array element is {wrong!r} ({type(wrong).__name__}), not a str") from exc
        return _header(len(obj), False, TEXT_OID) + b"".join(
            [len(e).to_bytes(4, "big") + e for e in encoded]
        )


def _text(value: str) -> bytes:
    encoded = value.encode()
    return len(encoded).to_bytes(4, "big") + encoded


class BigintArrayDumper(_ArrayDumper):
    array_oid = INT8_ARRAY_OID

    def dump(self, obj: Any) -> bytes:
        if obj and obj.count(None) == len(obj):  # a batch of rows without a TTL
            return _header(len(obj), True, INT8_OID) + _NULL * len(obj)
        try:
            if None in obj:
                body = b"".join([_NULL if n is None else _INT8.pack(8, n) for n in obj])
                return _header(len(obj), True, INT8_OID) + body
            return _header(len(obj), False, INT8_OID) + struct.pack(
                "!" + "iq" * len(obj), *[x for n in obj for x in (8, n)]
            )
        except struct.error as exc:
            # As psycopg's own dumper would: a DataError, which the pool reports as bad input.
            raise psycopg.DataError(f"a value does not fit in a bigint: {_out_of_range(obj)}") from exc


def _out_of_range(values: list[Any]) -> str:
    for n in values:
        if n is not None and not (isinstance(n, int) and _INT8_MIN <= n <= _INT8_MAX):
            return repr(n)
    return "?"


def register(conn: psycopg.Connection[Any] | psycopg.Cursor[Any]) -> None:
    """Use the fast dumpers for :class:`TextArray` and :class:`BigintArray` on ``conn``."""
    conn.adapters.register_dumper(TextArray, TextArrayDumper)
    conn.adapters.register_dumper(BigintArray, BigintArrayDumper)
