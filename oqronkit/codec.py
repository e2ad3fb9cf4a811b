"""JSON encoding of record values: one canonical form, size-checked."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from .bounds import MAX_ID_LENGTH
from .errors import InvalidJob, InvalidRecord, RecordTooLarge

try:
    import orjson
except ImportError:  # pragma: no cover - a dependency (requirements.txt); the stdlib does the same, slower
    orjson = None  # type: ignore[assignment]  # mypy cannot type a module that may be missing


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _make_dumps() -> Callable[[Any], str]:
    """Compact JSON encoding without JSONEncoder.encode's per-call set-up: that builds a
    new C encoder on every call and tracks the containers it enters to detect cycles;
    the C encoder made once, without that tracking, encodes a run record in 2.9 instead
    of 4.0 us (a cycle still ends, in RecursionError). Where the C accelerator is
    missing, a plain JSONEncoder with the same settings."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has the accelerator
        return json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
    encode = make(None, _refuse, json.encoder.encode_basestring, None, ":", ",", False, False, False)
    return lambda value: encode(value, 0)[0]


_dumps = _make_dumps()


class NestingTooDeep(ValueError):
    """A value nests deeper than :data:`MAX_JSON_DEPTH` (or refers to itself): what
    the encoder's own recursion limit says varies with the Python version, this not."""


def dumps_compact(value: Any) -> str:
    """Compact JSON text of ``value`` (UTF-8 kept, no NaN or infinity); TypeError or
    ValueError for what JSON cannot hold, :class:`NestingTooDeep` for a cycle or nesting
    past the encoder's recursion limit."""
    try:
        return _dumps(value)
    except RecursionError as exc:
        raise NestingTooDeep(
            f"the value nests deeper than {MAX_JSON_DEPTH} levels or refers to itself (nesting too deep for JSON)"
        ) from exc


# orjson refuses what the stdlib refuses (datetimes, dataclasses and subclasses of str,
# int, dict and list go to _refuse, as the stdlib sends them to its default) except
# NaN and infinity, which it writes as null, and UUIDs and enums, which it writes.
_ORJSON_OPTIONS = (orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
                   | orjson.OPT_PASSTHROUGH_SUBCLASS) if orjson is not None else 0


def dumps_checked(value: Any) -> str:
    """:func:`dumps_compact` for values already known to hold only what JSON holds: a
    record built from decoded JSON and checked values, like the worker's run records
    (the payload was decoded, the return value passed dumps_compact). orjson encodes a
    run record in 0.7 instead of 4.1 us; it writes NaN as null, hence only for such
    values. What orjson refuses (an int dict key, an integer beyond 64 bits, a str
    subclass) goes to dumps_compact, which decides."""
    if orjson is not None:
        try:
            return orjson.dumps(value, default=_refuse, option=_ORJSON_OPTIONS).decode()
        except TypeError:  # orjson.JSONEncodeError is one
            pass
    return dumps_compact(value)


def json_fragment(text: str) -> Any:
    """Compact JSON ``text``, already checked, to place in a value that
    :func:`dumps_checked` encodes: orjson embeds a Fragment as is, instead of encoding
    the value it came from a second time; without orjson, the decoded value."""
    return orjson.Fragment(text) if orjson is not None else json.loads(text)


def encode_value(value: Any, *, limit: int, what: str, checked: bool = False) -> str:
    """Encode a record value (a JSON object) to compact text, refusing non-objects,
    non-JSON values and anything over ``limit`` bytes of UTF-8. ``checked``: the value
    holds only what JSON holds (see :func:`dumps_checked`)."""
    if not isinstance(value, dict):
        raise InvalidRecord(f"{what}: a record value must be a dict (JSON object), got {type(value).__name__}.")
    try:
        text = dumps_checked(value) if checked else dumps_compact(value)
    except NestingTooDeep as exc:
        raise InvalidRecord(f"{what}: the value cannot be stored: {exc}.") from exc
    except (TypeError, ValueError) as exc:
        raise InvalidRecord(f"{what}: the value is not JSON-serialisable ({exc}).") from exc
    problem = storage_problem(text)
    if problem is not None:
        raise InvalidRecord(f"{what}: the value cannot be stored: {problem}.")
    return check_size(text, limit=limit, what=what)


# Deeper than this, a value is refused (records) or fails the attempt (a handler's
# output): the stdlib's decoder recurses per level, and orjson stops at 255.
MAX_JSON_DEPTH = 200
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def storage_problem(text: str, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why the compact JSON ``text`` cannot be stored alike in every durable plane, or
    None: a NUL character (PostgreSQL's jsonb refuses \\u0000), a lone surrogate (not
    UTF-8: no backend can encode it), or nesting deeper than :data:`MAX_JSON_DEPTH`.
    Three C-speed scans of the text; the exact checks run only on a hit."""
    if "\\u0000" in text and _NUL_ESCAPE.search(text):
        return "a string holds a NUL character (\\u0000), which PostgreSQL cannot store"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"a string holds a lone surrogate ({text[exc.start]!r}), which is not valid Unicode text"
    if text.count("[") + text.count("{") > max_depth and json_depth(text) > max_depth:
        return f"the value nests deeper than {max_depth} levels"
    return None


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in JSON ``text`` (strings skipped)."""
    return max((depth for depth, _match in _nesting(text)), default=0)


_BRACKETS_OUTSIDE_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|([\[\]{}])')


def _nesting(text: str) -> Iterator[tuple[int, re.Match[str]]]:
    """Each bracket of JSON ``text`` outside strings with the depth inside it: an
    opening bracket's new depth, a closing one's depth before it closes."""
    depth = 0
    for match in _BRACKETS_OUTSIDE_STRINGS.finditer(text):
        char = match.group(1)
        if char is None:
            continue
        if char in "[{":
            depth += 1
            yield depth, match
        else:
            yield depth, match
            depth -= 1
TOO_DEEP_MARKER = "… nested too deep"


def shallow_json(text: str, max_depth: int) -> str:
    """JSON ``text`` with every array or object nested deeper than ``max_depth``
    replaced by the string :data:`TOO_DEEP_MARKER`: for reading rows written before
    the depth limit (or by hand) with a decoder that recurses per level."""
    parts: list[str] = []
    cut_from, kept_to = -1, 0
    for depth, match in _nesting(text):
        if depth != max_depth + 1:
            continue
        if match.group(1) in "[{":
            cut_from = match.start()
        else:  # the cut subtree's own closing bracket
            parts += [text[kept_to:cut_from], json.dumps(TOO_DEEP_MARKER)]
            kept_to = match.end()
    parts.append(text[kept_to:])
    return "".join(parts)


def text_problem(text: str) -> str | None:
    """Why a name or id cannot be stored alike in every plane (a NUL or another control
    character, a lone surrogate), or None."""
    if text.isprintable():
        return None  # the common case: one C scan (a surrogate is not printable)
    for char in text:
        if 0xD800 <= ord(char) <= 0xDFFF:
            return f"it holds a lone surrogate ({char!r}), which is not valid Unicode text"
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return f"it holds the control character {char!r}"
    return None


def clean_text(text: str) -> str:
    """``text`` with what no durable plane stores alike (NUL, lone surrogates) replaced
    by U+FFFD: for diagnostics (error messages, tracebacks, log lines) that must be
    recorded whatever a handler put in them."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            text = text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def utf8_size(text: str) -> int:
    """Bytes of ``text`` in UTF-8, without encoding it when it is ASCII (nearly always)."""
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def check_size(text: str, *, limit: int, what: str) -> str:
    """``text`` when it is at most ``limit`` bytes of UTF-8; RecordTooLarge otherwise."""
    size = utf8_size(text)
    if size > limit:
        raise RecordTooLarge(
            f"{what}: the record is {size:,} bytes of JSON, over the {limit:,}-byte limit "
            "(OQRON max_record_bytes). Store large payloads elsewhere and keep a reference."
        )
    return text


def jsonb_key_order(key: str) -> tuple[int, bytes]:
    """Where Postgres's jsonb puts an object key: shorter UTF-8 first, then byte order.

    jsonb stores every object's keys sorted this way and sorts them while parsing; its
    sort first checks whether the keys already arrive in order. Records the engine writes
    on every job (runs, jobs) are built with their keys in this order, which measured
    ~11% of Postgres's CPU per run row (42.5 instead of 48 us, run inserts at 7 indexes).
    Other backends store the text as given, so only the key order changes there.
    """
    encoded = key.encode("utf-8")
    return len(encoded), encoded


_CONTAINERS = (dict, list)


def copy_json(value: Any) -> Any:
    """A copy of a decoded JSON value that shares nothing mutable with it: its dicts and
    lists are copied, its scalars (str, numbers, bool, None) shared. Several times
    faster than ``copy.deepcopy``, which it equals on what JSON decodes to."""
    kind = type(value)
    if kind is dict:
        return {k: copy_json(v) if type(v) in _CONTAINERS else v for k, v in value.items()}
    if kind is list:
        return [copy_json(v) if type(v) in _CONTAINERS else v for v in value]
    return value


# Nineteen digits in a row: maybe an integer orjson would read as a float (it reads
# those beyond 64 bits so); the stdlib reads it exactly. Found by mapping every digit
# to "0" and everything else to " ", then a substring search: 0.8 us on a job record,
# where the regular expression [0-9]{19} took 6.2 (longer than the stdlib's decoding).
_DIGITS_AS_ZEROS = bytes(0x30 if 0x30 <= c <= 0x39 else 0x20 for c in range(256))
_LONG_DIGIT_RUN = b"0" * 19


def _may_hold_a_long_integer(data: bytes | bytearray) -> bool:
    return _LONG_DIGIT_RUN in data.translate(_DIGITS_AS_ZEROS)


def decode_json(data: str | bytes | bytearray | memoryview) -> Any:
    """Decode JSON text exactly as ``json.loads`` does, with orjson (twice as fast on a
    job record, the guard included) wherever the two agree: not on integers beyond 64
    bits (orjson makes them floats: text with 19 digits in a row goes to the stdlib)
    nor on what orjson refuses and the stdlib reads (NaN, a lone surrogate: retried
    there). Also psycopg's JSON loader on the engine's connections."""
    if isinstance(data, memoryview):
        data = bytes(data)
    if orjson is not None:
        raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
        if not _may_hold_a_long_integer(raw):
            try:
                return orjson.loads(data)
            except orjson.JSONDecodeError:
                pass
    return json.loads(data)


#: The exact types whose JSON text decodes to an equal value of the same type (floats are
#: finite here: the encoder refuses NaN and infinity; subclasses such as enums are not).
_PLAIN_SCALARS = frozenset({str, int, float, bool, type(None)})


def read_back(value: Any, text: str) -> Any:
    """What decoding ``text``, :func:`dumps_compact`'s text of ``value``, gives: a copy of
    a scalar or of a flat dict of str keys and scalars without decoding (the common
    payload; 0.3 instead of 2.5 us), anything else decoded by :func:`decode_json`."""
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return value
    if kind is dict and all(type(k) is str and type(v) in _PLAIN_SCALARS for k, v in value.items()):
        return dict(value)
    return decode_json(text)


def decode_value(text: str | bytes) -> dict[str, Any]:
    """Decode stored JSON text."""
    value: dict[str, Any] = decode_json(text)
    return value


def check_text(value: Any, *, what: str) -> str:
    """A job id, correlation id, tag or dependency reference: a non-empty string of at
    most :data:`~oqronkit.bounds.MAX_ID_LENGTH` characters that every plane stores
    alike (no control character, no lone surrogate)."""
    if not isinstance(value, str) or not value or len(value) > MAX_ID_LENGTH:
        raise InvalidJob(f"{what} must be a non-empty string of at most {MAX_ID_LENGTH} characters, got {value!r}.")
    problem = text_problem(value)
    if problem is not None:
        raise InvalidJob(f"{what} {value!r} cannot be used: {problem}.")
    return value


def json_int(value: Any) -> int | None:
    """``value`` (read from a stored record, untrusted) as an int, or None for anything
    that is not a number (a bool is not)."""
    if isinstance(value, bool):
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None
