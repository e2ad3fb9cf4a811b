"""What no durable plane stores alike (a NUL, a lone surrogate, nesting past
MAX_JSON_DEPTH, a control character in a key) is refused by the facade before any
backend sees it, with the same error in every mode: a refused record is bad input,
never an outage."""

from __future__ import annotations

import pytest

from oqronkit import DurablePlane, InvalidNamespace, InvalidRecord, RecordWrite
from oqronkit.codec import MAX_JSON_DEPTH, clean_text, dumps_compact, storage_problem


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


@pytest.mark.parametrize("value", [
    {"s": "a\x00b"}, {"k\x00": 1}, {"s": "\ud800"}, {"deep": nested(MAX_JSON_DEPTH + 5)},
])
def test_unstorable_values_are_refused_alike(durable: DurablePlane, value):
    with pytest.raises(InvalidRecord, match="cannot be stored"):
        durable.put("custom", "r1", value)
    with pytest.raises(InvalidRecord, match="cannot be stored"):
        durable.put_many([RecordWrite("custom", "ok", {"fine": 1}), RecordWrite("custom", "r2", value)])
    assert durable.get("custom", "ok") is None  # the batch wrote nothing
    with pytest.raises(InvalidRecord, match="cannot be stored"):
        durable.insert_new_json("queue_job:q", [("j1", dumps_compact(value))])
    assert durable.get("queue_job:q", "j1") is None


def test_storable_look_alikes_pass(durable: DurablePlane):
    value = {"escaped": "\\u0000", "brackets": "[[[[{{{{" * 100, "wide": [[1]] * 500,
             "deep": nested(MAX_JSON_DEPTH - 1), "text": "é✓ \u2028"}
    durable.put("custom", "r1", value)
    assert durable.get("custom", "r1").value == value


@pytest.mark.parametrize("key", ["a\x00b", "line\nbreak", "\ud800", "tab\there"])
def test_unstorable_ids_and_namespaces_are_refused(durable: DurablePlane, key):
    with pytest.raises(InvalidNamespace, match="cannot be stored"):
        durable.put("custom", key, {"v": 1})
    with pytest.raises(InvalidNamespace, match="cannot be stored"):
        durable.put(f"custom{key}", "r1", {"v": 1})


def test_storage_problem_and_clean_text():
    assert storage_problem(dumps_compact({"s": "ok"})) is None
    assert "NUL" in storage_problem(dumps_compact(["\x00"]))
    assert "surrogate" in storage_problem(dumps_compact(["\udfff"]))
    assert clean_text("a\x00b") == "a\ufffdb"
    assert storage_problem(dumps_compact([clean_text("x\ud800\x00y")])) is None
