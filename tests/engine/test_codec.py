"""The JSON codec: orjson where it agrees with the stdlib, the stdlib where it doesn't,
and the same answers with orjson missing."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math

import pytest

from oqronkit import codec
from oqronkit.errors import InvalidRecord, RecordTooLarge


@pytest.fixture(params=["orjson", "stdlib"])
def fast(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "stdlib":
        monkeypatch.setattr(codec, "orjson", None)
    else:
        assert codec.orjson is not None, "orjson is in requirements.txt"
    return request.param


DECODABLE = [
    '{"a":1,"b":[1.5,-0.0,1E2,null,true,false],"c":{"d":"é\\u00e9 日本"}}',
    '{"big":123456789012345678901234567890,"neg":-9223372036854775809}',  # beyond 64 bits: exact
    '{"u64":18446744073709551615,"i64":-9223372036854775808,"f":1.7976931348623157e308}',
    '{"a":1,"a":2}',
    '{"lone":"\\ud800"}',  # orjson refuses it, the stdlib reads it
    '{"x":NaN,"y":Infinity}',  # not JSON, but the stdlib reads it, so nothing is lost on old rows
    "[]",
    '"text"',
]


@pytest.mark.parametrize("text", DECODABLE)
def test_decode_json_reads_what_the_stdlib_reads_exactly(fast: str, text: str):
    expected = json.loads(text)
    for data in (text, text.encode(), memoryview(text.encode()), bytearray(text.encode())):
        got = codec.decode_json(data)
        assert repr(got) == repr(expected)  # repr: ints stay ints, NaN compares by text


def test_decode_json_reads_a_str_holding_a_lone_surrogate(fast: str):
    text = '{"raw":"\ud800","n":12345678901234567890123}'  # the character itself, not an escape
    assert repr(codec.decode_json(text)) == repr(json.loads(text))
    assert repr(codec.decode_json(text[:10] + "}")) == repr(json.loads(text[:10] + "}"))


def test_decode_json_refuses_what_the_stdlib_refuses(fast: str):
    for bad in ('{"a":', "{'a':1}", ""):
        with pytest.raises(json.JSONDecodeError):
            codec.decode_json(bad)


class Colour(enum.Enum):
    RED = "red"


class Label(str):
    pass


@dataclasses.dataclass
class Point:
    x: int


def test_dumps_checked_writes_what_dumps_compact_writes(fast: str):
    values = [
        {"id": "r1", "input": {"to": "a@x.com", "n": [1, 2.5, None, True]}, "logs": [], "output": None},
        {"nested": {"é": "日本", "quote": 'say "hi"\n', "ctl": "\x00\x1f"}},
        {"big": 2**70, "neg": -(2**64)},  # orjson refuses these ints: the stdlib writes them
        {1: "int key", None: "none key"},  # so too for non-str keys
        {"label": Label("x")},  # a str subclass: the stdlib's way
    ]
    for value in values:
        assert json.loads(codec.dumps_checked(value)) == json.loads(codec.dumps_compact(value))
    assert codec.dumps_checked(values[0]) == codec.dumps_compact(values[0])


def test_dumps_checked_refuses_what_json_cannot_hold(fast: str):
    for value in ({"when": datetime.datetime.now()}, {"p": Point(1)}, {"o": object()}, {"s": {1, 2}}):
        with pytest.raises(TypeError):
            codec.dumps_checked(value)
    circular: dict = {}
    circular["self"] = circular
    with pytest.raises(ValueError):
        codec.dumps_checked(circular)


def test_only_checked_values_take_the_fast_encoder(fast: str):
    """The unchecked path refuses what orjson would write (NaN as null, enums): values
    from users go there."""
    for value in ({"x": math.nan}, {"x": math.inf}, {"c": Colour.RED}):
        with pytest.raises(InvalidRecord):
            codec.encode_value(value, limit=1000, what="t/1")
    assert codec.encode_value({"a": 1}, limit=1000, what="t/1", checked=True) == '{"a":1}'
    with pytest.raises(RecordTooLarge):
        codec.encode_value({"a": "x" * 2000}, limit=1000, what="t/1", checked=True)
    with pytest.raises(InvalidRecord):
        codec.encode_value({"when": datetime.date.today()}, limit=1000, what="t/1", checked=True)


def test_copy_json_shares_nothing_mutable():
    value = {"a": [1, {"b": [2]}], "c": "s", "d": None}
    copied = codec.copy_json(value)
    assert copied == value
    copied["a"][1]["b"].append(3)
    copied["a"].append(4)
    assert value == {"a": [1, {"b": [2]}], "c": "s", "d": None}
    assert codec.copy_json([1, [2]]) == [1, [2]] and codec.copy_json("x") == "x"


def test_shallow_json_cuts_what_nests_past_the_depth():
    from oqronkit.codec import TOO_DEEP_MARKER, shallow_json

    text = '{"a":[[1,[2,{"x":"[[{"}]],3],"b":{},"c":"]"}'
    assert json.loads(shallow_json(text, 2)) == {"a": [TOO_DEEP_MARKER, 3], "b": {}, "c": "]"}
    assert json.loads(shallow_json(text, 10)) == json.loads(text)
    deep = '{"v":' + "[" * 100_000 + "]" * 100_000 + ',"w":1}'
    assert json.loads(shallow_json(deep, 32))["w"] == 1


def test_nesting_past_the_encoders_limit_says_so_on_every_version():
    from oqronkit.codec import MAX_JSON_DEPTH, NestingTooDeep

    value: list = []
    for _ in range(100_000):
        value = [value]
    with pytest.raises(NestingTooDeep, match=f"deeper than {MAX_JSON_DEPTH} levels"):
        codec.dumps_compact(value)


class _Level(enum.IntEnum):
    HIGH = 1


class _Text(str):
    pass


@pytest.mark.parametrize("value", [
    {"i": 7, "to": "user-7@example.com"}, {"f": 1.5, "z": -0.0, "big": 10**30, "t": True, "n": None, "s": "é\u2028"},
    {}, "text", 3, 2.5e300, None, False, {"nested": {"a": 1}}, {"list": [1, (2, 3)]}, (1, 2), {"e": _Level.HIGH},
    {"s": _Text("x")}, _Level.HIGH,
])
def test_read_back_is_what_decoding_the_text_gives(value):
    text = codec.dumps_compact(value)
    got, want = codec.read_back(value, text), json.loads(text)
    assert got == want and type(got) is type(want)
    if isinstance(want, dict):
        assert list(got) == list(want)  # the same key order
        assert [type(v) for v in got.values()] == [type(v) for v in want.values()]  # no enum, no str subclass kept


def test_read_back_shares_no_container_with_the_value():
    value = {"i": 1}
    got = codec.read_back(value, codec.dumps_compact(value))
    value["i"] = 2
    assert got == {"i": 1}
