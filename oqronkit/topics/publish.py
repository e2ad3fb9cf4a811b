"""Turning what a caller publishes into drafts: the payload's JSON checked once, options
checked, the partition (by key, by idempotency key, or round robin) and the message id
(derived from the idempotency key, so a second publish of it finds the first message).

A payload with no options (the bulk of a ``publish_many``) takes a short path: no option
to check, the call's next id (ascending within a call) and the next partition round
robin; every message of one call shares its publish time.
"""

from __future__ import annotations

import hashlib
import itertools
import zlib
from collections.abc import Mapping
from typing import Any

from ..clock import now_ms
from ..codec import MAX_JSON_DEPTH, dumps_compact, storage_problem, text_problem, utf8_size
from ..correlation import current as current_correlation
from ..errors import InvalidJob
from ..ids import ascending_ids_at
from ..queues.backoff import to_ms
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


def message_id(topic: str, idempotency_key: str) -> str:
    digest = hashlib.sha256(f"{topic}\x00{idempotency_key}".encode("utf-8", "surrogatepass")).hexdigest()
    return "k" + digest[:31]


class Drafter:
    """Drafts the messages of one publish call (InvalidJob for a bad payload or option)."""

    def __init__(self, topic: str, *, partitions: int, max_bytes: int) -> None:
        self.topic, self.partitions, self.max_bytes = topic, partitions, max_bytes
        self.published = now_ms()
        self._new_id = ascending_ids_at(self.published)
        self._carried = current_correlation()  # a handler's or a request's id, once per call

    def __call__(self, item: Any) -> tuple[int, Draft]:
        """The partition and draft of one item: a payload, or ``{"payload": ..., **options}``."""
        if isinstance(item, Mapping) and "payload" in item:
            payload = item["payload"]
            if len(item) > 1:
                return self._with_options(payload, {k: v for k, v in item.items() if k != "payload"})
        else:
            payload = item
        text = self.payload_json(payload)
        partition = next(_round_robin) % self.partitions if self.partitions > 1 else 0
        carried = self._carried
        if carried is not None:
            return partition, Draft(self._new_id(), None, payload, {}, carried[0], None, self.published, None, text,
                                    carried[1])
        return partition, Draft(self._new_id(), None, payload, {}, None, None, self.published, None, text)

    def payload_json(self, payload: Any) -> str:
        """The payload's compact JSON, checked: storable in every plane, at most
        ``max_bytes``, and one level shallower than a record may be (it nests in one)."""
        try:
            text = dumps_compact(payload)
        except (TypeError, ValueError) as exc:
            raise InvalidJob(f"Topic {self.topic!r}: the payload is not JSON: {exc}") from exc
        problem = storage_problem(text, MAX_JSON_DEPTH - 1)
        if problem is not None:
            raise InvalidJob(f"Topic {self.topic!r}: the payload cannot be stored: {problem}.")
        size = utf8_size(text)
        if size > self.max_bytes:
            raise InvalidJob(f"Topic {self.topic!r}: a {size:,}-byte payload is over the {self.max_bytes:,}-byte "
                             "limit.")
        return text

    def _with_options(self, payload: Any, options: Mapping[str, Any]) -> tuple[int, Draft]:
        unknown = set(options) - PUBLISH_OPTIONS
        if unknown:
            raise InvalidJob(f"Unknown publish option(s): {', '.join(sorted(unknown))}.")
        key = _optional_text(options.get("key"), "key")
        idempotency_key = _optional_text(options.get("idempotency_key"), "idempotency_key")
        correlation_id = _optional_text(options.get("correlation_id"), "correlation_id")
        carried, caused_by = self._carried, None
        if carried is not None and correlation_id in (None, carried[0]):
            correlation_id, caused_by = carried
        headers = _headers(options.get("headers"))
        delay = to_ms(options.get("delay"), what="delay")
        text = self.payload_json(payload)
        id = self._new_id() if idempotency_key is None else message_id(self.topic, idempotency_key)
        return partition_for(key, idempotency_key, self.partitions), Draft(
            id=id, key=key, payload=payload, headers=headers, correlation_id=correlation_id,
            idempotency_key=idempotency_key, published_at=self.published,
            run_at=None if delay is None else self.published + delay, payload_json=text, caused_by=caused_by)


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
