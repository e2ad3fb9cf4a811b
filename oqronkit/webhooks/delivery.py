"""One delivery attempt: the handler of a webhook's delivery queue.

It looks the endpoint up (disabled or removed: dead at once), asks the breaker (open:
postponed, the attempt not counted), signs and POSTs the body, records the request (its
secret headers masked: their values go on the wire only) and the response on the
attempt's run (``ctx.annotate``, so a failed attempt keeps them too), tells the breaker,
and answers the queue engine: done, retry after the schedule's (or Retry-After's) delay,
or dead at once.
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

from ..clock import now_ms
from ..codec import clean_text, dumps_compact
from ..errors import ConfigurationError, Discard, MissingDependency, Postpone, RetryAfter
from .breaker import Breaker, Gate
from .endpoints import Endpoint, RateLimitValue
from .header_secrets import scrubbed
from .policy import RETRY_AFTER_STATUSES, next_delay_ms, retry_after_ms, verdict
from .signing import ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

KEPT_REQUEST_BODY = 64 * 1024
logger = logging.getLogger(__name__)


class AttemptContext(Protocol):
    """The worker's job context, as a delivery uses it."""

    data: Any
    attempt: int
    max_attempts: int
    run_id: str

    def annotate(self, fields: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True, slots=True)
class DeliverySettings:
    webhook: str
    timeout_ms: int
    schedule_ms: tuple[int, ...]
    keys: Mapping[str, bytes]
    allow_private: bool
    header_secrets: Mapping[str, str]


def body_of(data: Mapping[str, Any]) -> bytes:
    """The request body of a delivery: the Standard Webhooks envelope, one encoding for
    every attempt (the same bytes, so a retry carries the same payload)."""
    fired = datetime.fromtimestamp(data["firedAt"] / 1000, tz=UTC).isoformat(timespec="milliseconds")
    return dumps_compact({"type": data["event"], "timestamp": fired.replace("+00:00", "Z"),
                          "data": data.get("data")}).encode("utf-8")


class Deliverer:
    """Delivers for one webhook: ``endpoint(id)`` reads an endpoint (briefly cached),
    ``breaker()`` the webhook's breaker."""

    def __init__(self, settings: DeliverySettings, *, endpoint: Callable[[str], Endpoint | None],
                 breaker: Callable[[], Breaker]) -> None:
        self.settings = settings
        self._endpoint = endpoint
        self._breaker = breaker
        self._sent: dict[str, collections.deque[float]] = {}
        self._sent_lock = threading.Lock()
        self._warned: set[tuple[str, str]] = set()

    def __call__(self, ctx: AttemptContext) -> dict[str, Any]:
        data = ctx.data
        endpoint = self._endpoint(data["endpointId"])
        if endpoint is None:
            raise Discard(f"endpoint {data['endpointId']} was removed")
        if not endpoint.enabled:
            raise Discard(f"endpoint {endpoint.id} is disabled: {endpoint.disabled_reason or 'no reason given'}")
        keys = self._keys(endpoint)
        secret = self._secret_headers(endpoint)
        self._within_rate_limit(endpoint.id, endpoint.rate_limit)
        gate = self._breaker().before(endpoint.id, ctx.run_id, probe_ttl_ms=self.settings.timeout_ms + 30_000)
        try:
            return self._send(ctx, endpoint, keys, secret, gate)
        except BaseException:
            if gate.probe:  # a probe that neither succeeded nor failed (refused, crashed): the next one may go
                self._breaker().abandon(gate)
            raise

    def _send(self, ctx: AttemptContext, endpoint: Endpoint, keys: list[bytes], secret: dict[str, str],
              gate: Gate) -> dict[str, Any]:
        # httpx (with the guard and the client) loads with the first delivery, not with `import oqronkit`.
        try:
            import httpx

            from . import client
            from .guard import TargetRefused
        except ImportError as exc:
            raise MissingDependency(f"Delivering webhooks needs httpx ({exc.name} is missing): "
                                    'pip install "oqronkit[webhooks]"') from exc

        data, settings = ctx.data, self.settings
        body = body_of(data)
        timestamp = int(time.time())
        shown = {"content-type": "application/json", **endpoint.headers, ID_HEADER: data["messageId"],
                 TIMESTAMP_HEADER: str(timestamp)}
        request = {"method": "POST", "url": endpoint.url, "headers": shown,
                   "body": body[:KEPT_REQUEST_BODY].decode("utf-8", "replace"), "bodyBytes": len(body),
                   "bodyTruncated": len(body) > KEPT_REQUEST_BODY}
        # The stored request shows the mask (endpoint.headers); only the wire gets the values.
        headers = {**shown, **secret, SIGNATURE_HEADER: sign(data["messageId"], timestamp, body, keys)}
        try:
            answer = client.post(endpoint.url, body, headers, timeout=settings.timeout_ms / 1000,
                                 allow_private=endpoint.allow_private or settings.allow_private)
        except TargetRefused as exc:  # the address will not change by waiting: dead at once
            ctx.annotate({"request": request, "response": None})
            raise Discard(str(exc)) from exc
        except httpx.HTTPError as exc:
            ctx.annotate({"request": request, "response": None})
            message = scrubbed(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, secret.values())
            self._breaker().failed(gate, {"at": now_ms(), "status": None, "error": message[:500]})
            # The client's error may quote a header's value: with secret headers its traceback
            # stays out of the run (the scrubbed message says what failed).
            raise RetryAfter(next_delay_ms(settings.schedule_ms, ctx.attempt) / 1000, message) from (
                None if secret else exc)
        answered = _headers(answer.headers)
        response = {"status": answer.status, "headers": answered,
                    "body": clean_text(answer.body.decode("utf-8", "replace")), "bodyTruncated": answer.truncated,
                    "durationMs": answer.duration_ms}
        ctx.annotate({"request": request, "response": response})
        outcome = verdict(answer.status)
        if outcome == "delivered":
            self._breaker().succeeded(gate)
            return {"status": answer.status, "durationMs": answer.duration_ms}
        if outcome == "dead":  # the endpoint answers: the breaker counts it as alive
            self._breaker().succeeded(gate)
            raise Discard(f"HTTP {answer.status} from the endpoint: not retried")
        self._breaker().failed(gate, {"at": now_ms(), "status": answer.status, "error": f"HTTP {answer.status}"})
        delay = None
        if answer.status in RETRY_AFTER_STATUSES:
            delay = retry_after_ms(answered.get("retry-after"), now_ms())
        if delay is None:
            delay = next_delay_ms(settings.schedule_ms, ctx.attempt)
        raise RetryAfter(delay / 1000, f"HTTP {answer.status} from the endpoint")

    def _keys(self, endpoint: Endpoint) -> list[bytes]:
        ids = endpoint.secret_ids if endpoint.secret_ids is not None else tuple(self.settings.keys)
        missing = [i for i in ids if i not in self.settings.keys]
        if missing:
            raise ConfigurationError(f"endpoint {endpoint.id} signs with secret id(s) {missing} that webhook "
                                     f"{self.settings.webhook!r} does not have in this process")
        return [self.settings.keys[i] for i in ids]

    def _secret_headers(self, endpoint: Endpoint) -> dict[str, str]:
        """The secret headers' values, from this process's header secrets (and, for a
        record an older version wrote, from the record itself, with a warning)."""
        values = dict(endpoint.left_in_record)
        for name in values:
            if (endpoint.id, name) in self._warned:
                continue
            self._warned.add((endpoint.id, name))
            logger.warning("webhook %s endpoint %s: header %s holds a credential in its record (written by an older "
                           "version); it is sent and shown masked: move it to header_secrets and set the headers "
                           "again with HeaderSecret", self.settings.webhook, endpoint.id, name,
                           extra={"action": "webhook.header_in_record"})
        missing = []
        for name, secret_id in endpoint.secret_headers.items():
            value = self.settings.header_secrets.get(secret_id)
            if value is None:
                missing.append(secret_id)
            else:
                values[name] = value
        if missing:
            raise ConfigurationError(f"endpoint {endpoint.id} sends header secret(s) {sorted(missing)} that webhook "
                                     f"{self.settings.webhook!r} does not have in this process: declare them in "
                                     "header_secrets in every process that delivers")
        return values

    def _within_rate_limit(self, endpoint_id: str, limit: RateLimitValue | None) -> None:
        """The endpoint's rate limit, in this process: over it, the delivery waits (no attempt spent)."""
        if limit is None:
            return
        now = time.monotonic()
        with self._sent_lock:
            sent = self._sent.setdefault(endpoint_id, collections.deque())
            while sent and sent[0] <= now - limit["seconds"]:
                sent.popleft()
            if len(sent) >= limit["count"]:
                raise Postpone(sent[0] + limit["seconds"] - now, f"rate limit of endpoint {endpoint_id} reached")
            sent.append(now)


def _headers(pairs: list[tuple[str, str]]) -> dict[str, str]:
    """Response headers as one string per lower-cased name (repeated ones joined)."""
    joined: dict[str, str] = {}
    for name, value in pairs:
        key = clean_text(name.lower())
        joined[key] = f"{joined[key]}, {clean_text(value)}" if key in joined else clean_text(value)
    return joined
