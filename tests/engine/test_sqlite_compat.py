"""Python 3.12.0/3.12.1 get the connection class that binds numbered placeholders from
a mapping; every other version the plain one (the contract suites run both)."""

from __future__ import annotations

import sqlite3

import pytest

from oqronkit.backends.sqlite_compat import NumberedParamsConnection, as_mapping, connection_factory


@pytest.mark.parametrize(("version", "cls"), [
    ((3, 12, 0), NumberedParamsConnection), ((3, 12, 1), NumberedParamsConnection),
    ((3, 12, 2), sqlite3.Connection), ((3, 13, 0), sqlite3.Connection),
])
def test_the_class_follows_the_version(version, cls):
    assert connection_factory(version) is cls


def test_numbered_statements_bind_from_a_mapping_and_qmark_ones_as_given():
    conn = sqlite3.connect(":memory:", factory=NumberedParamsConnection)
    try:
        assert conn.execute("SELECT ?1, ?2, ?1", (1, "a")).fetchall() == [(1, "a", 1)]
        assert conn.execute("SELECT ?, ?", (2, "b")).fetchall() == [(2, "b")]
        conn.execute("CREATE TABLE t (a, b)")
        conn.executemany("INSERT INTO t VALUES (?1, ?2)", ((i, i * 2) for i in range(3)))
        assert conn.execute("SELECT sum(a), sum(b) FROM t").fetchall() == [(3, 6)]
    finally:
        conn.close()
    assert as_mapping({"1": 1}) == {"1": 1} and as_mapping([5, 6]) == {"1": 5, "2": 6}
