"""Turning what a caller publishes into drafts: checked options, the partition (by key,
by idempotency key, or round robin) and the message id (derived from the idempotency
key, so a second publish of it finds the first message)."""

from __future__ import annotations

import hashlib
import itertools
import zlib
from collections.abc import Mapping
from typing import Any

from ..backoff import to_ms
from ..clock import now_ms
from ..codec import text_problem
from ..errors import InvalidJob
from ..ids import new_id
from .log import Draft

_round_robin = itertools.count()
PUBLISH_OPTIONS = frozenset({"key", "idempotency_key", "headers", "correlation_id", "delay"})
MAX_HEADERS = 64


def partition_for(key: str | None, idempotency_key: str | None, partitions: int) -> int:
    """Messages of one key share a partition (crc32, stable across processes and
    versions); so do publishes of one idempotency key; others go round robin."""
    pick = key if key is not None else idempotency_key
    if pick is None:
        return next(_round_robin) % partitions
    return zlib.crc32(pick.encode("utf-8", "surrogatepass")) % partitions


def message_id(topic: str, idempotency_key: str | None) -> str:
    if idempotency_key is None:
        return new_id()
    digest = hashlib.sha256(f"{topic}\x00{idempotency_key}".encode("utf-8", "surrogatepass")).hexdigest()
    return "k" + digest[:31]


def draft(topic: str, payload: Any, options: Mapping[str, Any], *, partitions: int) -> tuple[int, Draft]:
    """The partition and draft of one message (InvalidJob for a bad option)."""
    unknown = set(options) - PUBLISH_OPTIONS
    if unknown:
        raise InvalidJob(f"Unknown publish option(s): {', '.join(sorted(unknown))}.")
    key = _optional_text(options.get("key"), "key")
    idempotency_key = _optional_text(options.get("idempotency_key"), "idempotency_key")
    correlation_id = _optional_text(options.get("correlation_id"), "correlation_id")
    headers = _headers(options.get("headers"))
    published = now_ms()
    delay = to_ms(options.get("delay"), what="delay")
    run_at = None if delay is None else published + delay
    partition = partition_for(key, idempotency_key, partitions)
    return partition, Draft(id=message_id(topic, idempotency_key), key=key, payload=payload, headers=headers,
                            correlation_id=correlation_id, idempotency_key=idempotency_key,
                            published_at=published, run_at=run_at)


def _optional_text(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > 200:
        raise InvalidJob(f"{what} must be a non-empty string of at most 200 characters, got {value!r}.")
    problem = text_problem(value)
    if problem is not None:
        raise InvalidJob(f"{what} {value!r} cannot be stored: {problem}.")
    return value


def _headers(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or len(value) > MAX_HEADERS or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise InvalidJob(f"headers must be a mapping of at most {MAX_HEADERS} str -> str, got {value!r}.")
    for text in (*value.keys(), *value.values()):
        problem = text_problem(text)
        if problem is not None:
            raise InvalidJob(f"the header text {text!r} cannot be stored: {problem}.")
    return dict(value)
