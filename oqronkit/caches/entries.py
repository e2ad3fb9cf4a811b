"""A cache entry as the hot plane stores it: the value, when it stops being fresh, how
long it may still be served stale, and the generations it was written under.

An entry is one JSON text in the cache's ephemeral group (``kv_set``), so every hot
plane stores it alike. Invalidation never touches entries: it bumps a generation counter
(the whole cache, a key prefix, a tag), and an entry whose recorded generations differ
from the current ones is treated as absent (see :func:`generation_names`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from ..codec import NestingTooDeep, decode_json, dumps_compact, storage_problem, utf8_size
from ..errors import ConfigurationError, OqronError

#: Longest key a cache accepts: keys are hash fields or primary-key columns on every plane.
MAX_KEY_CHARS = 512
#: Prefix invalidation works on these boundaries: "user:42:name" has the prefixes
#: "user:" and "user:42:", so a read checks a bounded set of counters, never a scan.
PREFIX_SEPARATOR = ":"


class InvalidCacheValue(OqronError, ValueError):
    """A value cannot be cached: not JSON, unstorable text, or over ``max_value_bytes``;
    nothing was written."""


class InvalidCacheKey(OqronError, ValueError):
    """A cache key is empty, not a string, too long or holds a NUL character."""


def entries_group(cache: str) -> str:
    """The hot plane's ephemeral group holding one cache's entries."""
    return f"cache:{cache}"


def generation_names(cache: str, key: str, tags: tuple[str, ...]) -> list[str]:
    """The counters whose values an entry of ``key`` carrying ``tags`` records: the
    cache's own (``clear``), one per key prefix, one per tag."""
    names = [f"cache:{cache}:gen"]
    end = key.find(PREFIX_SEPARATOR)
    while end != -1:
        names.append(f"cache:{cache}:prefix:{key[:end + 1]}")
        end = key.find(PREFIX_SEPARATOR, end + 1)
    names.extend(f"cache:{cache}:tag:{tag}" for tag in tags)
    return names


def prefix_counter(cache: str, prefix: str) -> str:
    return f"cache:{cache}:prefix:{prefix}"


def tag_counter(cache: str, tag: str) -> str:
    return f"cache:{cache}:tag:{tag}"


def check_key(cache: str, key: Any) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidCacheKey(f"Cache {cache!r}: a key must be a non-empty string, got {key!r}.")
    if len(key) > MAX_KEY_CHARS or "\x00" in key:
        raise InvalidCacheKey(f"Cache {cache!r}: a key must be at most {MAX_KEY_CHARS} characters, without NUL.")
    return key


def check_tags(cache: str, tags: Any) -> tuple[str, ...]:
    items = [] if isinstance(tags, str) else list(tags)  # a lone string is a mistake, not its letters
    if isinstance(tags, str) or not all(isinstance(t, str) and t and "\x00" not in t for t in items):
        raise ConfigurationError(f"Cache {cache!r}: tags must be a list of non-empty strings, got {tags!r}.")
    return tuple(dict.fromkeys(items))


def encode_value(cache: str, value: Any, limit: int) -> str:
    """The value's JSON text, or :class:`InvalidCacheValue` (never a silent drop)."""
    try:
        text = dumps_compact(value)
    except NestingTooDeep as exc:
        raise InvalidCacheValue(f"Cache {cache!r}: the value cannot be stored: {exc}.") from exc
    except (TypeError, ValueError) as exc:
        raise InvalidCacheValue(f"Cache {cache!r}: the value is not JSON-serialisable ({exc}).") from exc
    problem = storage_problem(text)
    if problem is not None:
        raise InvalidCacheValue(f"Cache {cache!r}: the value cannot be stored: {problem}.")
    size = utf8_size(text)
    if size > limit:
        raise InvalidCacheValue(f"Cache {cache!r}: a {size:,}-byte value is over max_value_bytes ({limit:,}).")
    return text


@dataclass(frozen=True, slots=True)
class Entry:
    """One decoded entry. ``negative``: the fetcher found nothing (``negative_ttl``)."""

    value: Any
    fresh_until: int
    stale_until: int
    tags: tuple[str, ...]
    generations: tuple[int, ...]
    negative: bool = False

    def is_fresh(self, now: int) -> bool:
        return now < self.fresh_until


def jittered(ttl_ms: int, jitter: float) -> int:
    """``ttl_ms`` shortened by up to ``jitter`` of itself, so keys written together do
    not all expire in the same instant (and stampede together)."""
    return max(1, round(ttl_ms * (1 - jitter * random.random())))


def pack(value_text: str, *, fresh_until: int, stale_until: int, tags: tuple[str, ...],
         generations: list[int], negative: bool) -> str:
    """The stored text; the value's already checked JSON is spliced in, not re-encoded."""
    head = dumps_compact({"f": fresh_until, "s": stale_until, "t": list(tags), "g": generations,
                          "n": 1 if negative else 0})
    return f'{head[:-1]},"v":{value_text}}}'


def unpack(text: str) -> Entry | None:
    """The entry stored as ``text``; None for text this version cannot read (treated
    as a miss, then overwritten)."""
    try:
        raw = decode_json(text)
        return Entry(raw["v"], int(raw["f"]), int(raw["s"]), tuple(raw["t"]), tuple(raw["g"]), bool(raw["n"]))
    except (ValueError, KeyError, TypeError):
        return None
