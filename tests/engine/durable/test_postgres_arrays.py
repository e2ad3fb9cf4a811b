"""The binary array dumpers the PostgreSQL backends send batches with: what the server
reads back must equal what psycopg's own (slow) list dumpers would have sent."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

from oqronkit import InvalidRecord
from oqronkit.backends.postgres.arrays import BigintArray, TextArray, register
from oqronkit.backends.postgres.pool import LazyPool
from tests.services import require_postgres


@pytest.fixture(scope="module")
def conn() -> Iterator[psycopg.Connection[Any]]:
    with psycopg.connect(require_postgres(), autocommit=True) as connection:
        register(connection)
        yield connection


TEXTS = [
    [],
    ["a"],
    ["job-1", "", "ünïcødé ✓", "x" * 70_000, '{"k":"v\\n"}', "emoji 🎉"],
    ["a", None, "b"],
    [None],
    ["runs"] * 3,  # one value repeated: encoded once
    ["ünï"] * 2 + ["ünï "],
]


@pytest.mark.parametrize("values", TEXTS, ids=lambda v: f"{len(v)} items")
def test_text_arrays_round_trip_with_nulls_and_multibyte_text(conn: psycopg.Connection[Any], values: list) -> None:
    for placeholder in ("%s", "%b"):
        got = conn.execute(f"SELECT {placeholder}::text[]", [TextArray(values)]).fetchone()[0]
        assert got == values
        # the same elements, in order, through unnest (how the batch statements read them)
        rows = conn.execute(f"SELECT x FROM unnest({placeholder}::text[]) WITH ORDINALITY AS t(x, i) ORDER BY i",
                            [TextArray(values)]).fetchall()
        assert [r[0] for r in rows] == values


@pytest.mark.parametrize("values", [[], [0], [1, -1, 2**63 - 1, -(2**63)], [5, None, 7], [None, None], [None] * 3],
                         ids=lambda v: f"{len(v)} items")
def test_bigint_arrays_round_trip(conn: psycopg.Connection[Any], values: list) -> None:
    assert conn.execute("SELECT %s::bigint[]", [BigintArray(values)]).fetchone()[0] == values
    # int8[] cast to integer[] server-side, as the hot plane's signal does with priorities
    small = [v if v is None or abs(v) < 2**31 else 0 for v in values]
    assert conn.execute("SELECT %s::integer[]", [BigintArray(small)]).fetchone()[0] == small


def test_same_bytes_on_the_server_as_psycopgs_own_list_dumper(conn: psycopg.Connection[Any]) -> None:
    values = ["b", "a", None, "ä"]
    ours = conn.execute("SELECT %s::text[]::text", [TextArray(values)]).fetchone()[0]
    theirs = conn.execute("SELECT %s::text[]::text", [values]).fetchone()[0]
    assert ours == theirs


def test_out_of_range_integers_and_lone_surrogates_are_bad_input_not_outages() -> None:
    pool = LazyPool(require_postgres(), "arrays-test", label="store", min_size=1, max_size=1, timeout=5)
    try:
        with pytest.raises(InvalidRecord, match="bigint"):
            with pool.connection() as c:
                c.execute("SELECT %s::bigint[]", [BigintArray([1, 2**63])])
        with pytest.raises(InvalidRecord, match=r"element is 7 \(int\), not a str"):
            with pool.connection() as c:
                c.execute("SELECT %s::text[]", [TextArray(["ok", 7])])
        with pytest.raises(InvalidRecord, match="UTF-8"):
            with pool.connection() as c:
                c.execute("SELECT %s::text[]", [TextArray(["ok", "\ud800"])])
        with pytest.raises(InvalidRecord, match="UTF-8"):  # repeated, so encoded once
            with pool.connection() as c:
                c.execute("SELECT %s::text[]", [TextArray(["\ud800"] * 2)])
        with pytest.raises(InvalidRecord):  # PostgreSQL text holds no NUL: the server refuses it
            with pool.connection() as c:
                c.execute("SELECT %s::text[]", [TextArray(["a\x00b"])])
        with pool.connection() as c:  # and the pooled connection is still usable afterwards
            assert c.execute("SELECT %s::text[]", [TextArray(["fine"])]).fetchone()[0] == ["fine"]
    finally:
        pool.close()


def test_plain_lists_still_use_psycopgs_dumpers(conn: psycopg.Connection[Any]) -> None:
    # Only our marker types are affected: a list of ints in text format is untouched.
    assert conn.execute("SELECT %s::int[]", [[1, 2, 3]]).fetchone()[0] == [1, 2, 3]
