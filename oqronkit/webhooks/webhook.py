"""``oqronkit.webhook``: declare a webhook, fire events to its endpoints, manage the
endpoints at run time, pause and resume it.

A webhook's deliveries are jobs of its delivery queue ``webhook/<name>`` (job namespace
``queue_job:webhook/<name>``, dead letters ``queue_dlq:webhook/<name>``): claims, leases,
retries, dead letters and the run per attempt are the queue engine's. A delivery's job
id is ``<message id>@<endpoint id>``; its data names the webhook, event, endpoint and
message and holds the event's data (never a secret). Each attempt's run has ``module``
and ``trigger`` ``webhook``, names ``webhook``, ``event``, ``endpointId`` and
``messageId``, and holds the ``request`` and ``response`` (see delivery.py).
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import Any

from ..clock import now_ms
from ..codec import text_problem
from ..declared import DeclaredByName, OnEngine
from ..errors import ConfigurationError, InvalidJob, JobNotFound
from ..ids import new_id
from ..namespaces import WEBHOOK, WEBHOOK_CB, webhook_endpoints_namespace
from ..queues.jobs import Job
from ..queues.queue import Queue, QueueHost, Registry
from ..topics.subscription import check_name
from . import endpoints as records
from .breaker import Breaker, BreakerSettings
from .delivery import Deliverer, DeliverySettings
from .endpoints import Endpoint
from .patterns import check_event, matches_any
from .policy import check_timeout, header_secret_values, schedule_ms, secret_keys

ENDPOINT_CACHE_SECONDS = 1.0  # how stale a worker's view of an endpoint may be (a disable takes this long)
_WEBHOOKS: DeclaredByName[Webhook] = DeclaredByName()


def delivery_queue_name(webhook: str) -> str:
    """``webhook/<name>``: '/' is in no topic or webhook name, so no other queue takes it."""
    return f"webhook/{webhook}"


class Webhook(OnEngine):
    """Events fired to HTTP endpoints, signed, retried on a schedule, behind a circuit
    breaker per endpoint. See docs/how-to/webhooks.md."""

    def __init__(self, name: str, *, endpoints: Sequence[Mapping[str, Any]] = (), timeout: float | timedelta = 10,
                 retries: int | None = None, schedule: Sequence[float | timedelta] | None = None,
                 secret: str | None = None, secrets: Mapping[str, str] | None = None,
                 header_secrets: Mapping[str, str] | None = None, breaker: Any = None,
                 concurrency: int = 10, allow_private: bool = False, engine: QueueHost | None = None,
                 declares: bool = True) -> None:
        self.name = check_name(name, "Webhook")
        self.timeout_ms = check_timeout(timeout, name)
        self.schedule_ms = schedule_ms(schedule, retries, name)
        self.keys = secret_keys(secret, secrets, name)
        # Secret header values by id, held like the keys; declared endpoints add theirs.
        self.header_secrets = header_secret_values(header_secrets, name)
        self.breaker_settings = BreakerSettings.from_option(breaker, name)
        if not isinstance(allow_private, bool):
            raise ConfigurationError(f"Webhook {name!r}: allow_private must be True or False.")
        self.allow_private = allow_private
        self.declared_endpoints = [self._declared(spec) for spec in endpoints]
        self._engine = engine
        # declares=False: an operator's handle (the board) on a webhook the workers own,
        # which never rewrites its control record or declared endpoints.
        self._declared_once = not declares
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[float, Endpoint | None]] = {}
        self._breaker: Breaker | None = None
        deliverer = Deliverer(DeliverySettings(name, self.timeout_ms, self.schedule_ms, self.keys, allow_private,
                                               self.header_secrets),
                              endpoint=self._cached_endpoint, breaker=self.breaker)
        # The job's timeout and backoff only back the client's timeout and the schedule up
        # (a handler stuck elsewhere, a worker lost mid-delivery).
        fallback_delay = (self.schedule_ms[1] if len(self.schedule_ms) > 1 else 5_000) / 1000
        self.queue = Queue(delivery_queue_name(name), handler=_named(deliverer, name), engine=engine,
                           concurrency=concurrency, retries=len(self.schedule_ms) - 1, backoff=fallback_delay,
                           timeout=self.timeout_ms / 1000 + 10, dead_letter=True)
        self.queue.module = "webhook"
        self.queue.trigger = "webhook"
        self.queue.run_fields = _run_fields
        webhooks_for(self.registry)[name] = self

    def __repr__(self) -> str:
        return f"<Webhook {self.name!r}>"

    def breaker(self) -> Breaker:
        """The webhook's circuit breakers (one per endpoint), on this engine's planes."""
        if self._breaker is None:
            engine = self.engine
            self._breaker = Breaker(self.name, self.breaker_settings, hot=engine.hot, durable=engine.durable,
                                    disable=self.disable_endpoint)
        return self._breaker

    # -- firing ------------------------------------------------------------------------

    def fire(self, event: str, data: Any = None, *, idempotency_key: str | None = None,
             correlation_id: str | None = None) -> list[str]:
        """One delivery per enabled endpoint whose patterns match ``event``; their job ids
        (``<message id>@<endpoint id>``). A second fire with the same ``idempotency_key``
        makes no new delivery for an endpoint that has one already."""
        check_event(event)
        for value, what in ((idempotency_key, "idempotency_key"), (correlation_id, "correlation_id")):
            if value is not None and (not isinstance(value, str) or not 0 < len(value) <= 200
                                      or text_problem(value) is not None):
                raise InvalidJob(f"{what} must be a storable string of 1-200 characters, got {value!r}.")
        self._declare()
        targets = [e for e in records.load_all(self.engine.durable, self.name)
                   if e.enabled and matches_any(e.events, event)]
        if not targets:
            return []
        message_id = self._message_id(idempotency_key)
        fired = now_ms()
        first_delay = self.schedule_ms[0] / 1000 or None
        items = [{"data": {"webhook": self.name, "event": event, "endpointId": e.id, "messageId": message_id,
                           "firedAt": fired, "data": data},
                  "job_id": f"{message_id}@{e.id}", "correlation_id": correlation_id, "delay": first_delay}
                 for e in targets]
        return [job.id for job in self.queue.add_bulk(items)]

    def fire_on_commit(self, event: str, data: Any = None, *, using: str | None = None, **options: Any) -> None:
        """Fire once the surrounding Django transaction commits (nothing if it rolls back)."""
        from django.db import transaction  # only meaningful inside a Django project

        transaction.on_commit(lambda: self.fire(event, data, **options), using=using)

    def _message_id(self, idempotency_key: str | None) -> str:
        if idempotency_key is None:
            return "msg_" + new_id()
        digest = hashlib.sha256(f"{self.name}\x00{idempotency_key}".encode("utf-8", "surrogatepass")).hexdigest()
        return "msg_k" + digest[:31]

    # -- endpoints -----------------------------------------------------------------------

    def add_endpoint(self, url: str, *, id: str | None = None, **fields: Any) -> Endpoint:
        """Add an endpoint (enabled). Fields: ``events`` (patterns, default ``["**"]``),
        ``secret_ids`` (default: every secret of the webhook), ``headers`` (a secret one's
        value a :class:`~oqronkit.webhooks.HeaderSecret`), ``rate_limit=(count, seconds)``,
        ``allow_private``, ``description``."""
        value = records.new_endpoint_value(self.name, id, {"url": url, **fields})
        self._declare()
        if not self.engine.durable.insert(webhook_endpoints_namespace(self.name), value["id"], value):
            raise ConfigurationError(f"Webhook {self.name!r} already has an endpoint {value['id']!r}; "
                                     "change it with update_endpoint.")
        return Endpoint.from_value(value)

    def update_endpoint(self, endpoint_id: str, **fields: Any) -> Endpoint:
        """Change an endpoint's fields (those of :meth:`add_endpoint`)."""
        return self._change(endpoint_id, records.check_fields(self.name, endpoint_id, fields))

    def enable_endpoint(self, endpoint_id: str) -> Endpoint:
        """Enable an endpoint again; its breaker closes and its failure streak is forgotten."""
        endpoint = self._change(endpoint_id, records.ENABLED_CHANGES)
        self.breaker().reset(endpoint_id)
        return endpoint

    def disable_endpoint(self, endpoint_id: str, reason: str = "disabled by an operator") -> Endpoint:
        """Disable an endpoint with the reason (kept on its record): no new deliveries,
        and those waiting go to the dead letters when their turn comes."""
        return self._change(endpoint_id, records.disabled_changes(reason))

    def remove_endpoint(self, endpoint_id: str) -> bool:
        """Delete an endpoint's record (and its breaker record)."""
        self._cache.pop(endpoint_id, None)
        self.engine.durable.delete(WEBHOOK_CB, self.breaker().record_id(endpoint_id))
        return self.engine.durable.delete(webhook_endpoints_namespace(self.name), endpoint_id)

    def endpoints(self) -> list[Endpoint]:
        self._declare()
        return records.load_all(self.engine.durable, self.name)

    def endpoint(self, endpoint_id: str) -> Endpoint | None:
        return records.load(self.engine.durable, self.name, endpoint_id)

    def breaker_state(self, endpoint_id: str) -> dict[str, Any] | None:
        """The endpoint's durable ``webhook_cb`` record (None before its first transition)."""
        record = self.engine.durable.get(WEBHOOK_CB, self.breaker().record_id(endpoint_id))
        return None if record is None else dict(record.value)

    def _change(self, endpoint_id: str, changes: Mapping[str, Any]) -> Endpoint:
        self._declare()
        endpoint = records.change(self.engine.durable, self.name, endpoint_id, changes)
        self._cache.pop(endpoint_id, None)
        return endpoint

    def _cached_endpoint(self, endpoint_id: str) -> Endpoint | None:
        found = self._cache.get(endpoint_id)
        if found is not None and found[0] > time.monotonic():
            return found[1]
        self._declare()
        endpoint = records.load(self.engine.durable, self.name, endpoint_id)
        self._cache[endpoint_id] = (time.monotonic() + ENDPOINT_CACHE_SECONDS, endpoint)
        return endpoint

    # -- control ---------------------------------------------------------------------------

    def pause(self) -> None:
        """Stop delivering (fired events wait in the delivery queue), cluster-wide."""
        self._set_paused(True)
        self.queue.pause()

    def resume(self) -> None:
        self._set_paused(False)
        self.queue.resume()

    def resend(self, delivery_id: str, *, delivered: Mapping[str, Any] | None = None) -> Job:
        """Deliver again, with a fresh schedule and the same ``webhook-id``: a dead-lettered
        delivery is retried; one still queued is returned as it is; one that completed
        (its job is gone) needs ``delivered``, the ``input`` of one of its runs."""
        job = self.queue.get_job(delivery_id)
        if job is not None:
            return self.queue.retry(delivery_id) if job.status == "dead" else job
        if delivered is None:
            raise JobNotFound(f"Delivery {delivery_id!r} of webhook {self.name!r} is neither queued nor dead: "
                              "pass the input of one of its runs as delivered= to send it again.")
        data = resendable_data(self.name, delivery_id, delivered)
        return self.queue.add(data, job_id=delivery_id)

    def _set_paused(self, paused: bool) -> None:
        self._declare()
        durable = self.engine.durable
        for _ in range(20):
            current = durable.get(WEBHOOK, self.name)
            assert current is not None  # _declare wrote it
            value = {**current.value, "paused": paused, "version": current.value.get("version", 1) + 1,
                     "updatedAt": now_ms()}
            if durable.compare_and_set(WEBHOOK, self.name, expect={"version": current.value.get("version", 1)},
                                       value=value):
                return

    def _declare(self) -> None:
        """Write the webhook's control record and its declared endpoints (those not
        stored yet: a change made at run time outlives a restart) once per process."""
        if self._declared_once:
            return
        with self._lock:
            if self._declared_once:
                return
            durable, now = self.engine.durable, now_ms()
            current = durable.get(WEBHOOK, self.name)
            previous: Mapping[str, Any] = current.value if current is not None else {}
            settings = self.breaker_settings
            value = {"name": self.name, "paused": previous.get("paused", False),
                     "version": previous.get("version", 1), "deliveryQueue": self.queue.name,
                     "timeoutMs": self.timeout_ms, "scheduleMs": list(self.schedule_ms),
                     "secretIds": sorted(self.keys), "allowPrivate": self.allow_private,
                     "breaker": {"failures": settings.failures, "cooldownMs": settings.cooldown_ms,
                                 "maxCooldownMs": settings.max_cooldown_ms,
                                 "disableAfterMs": settings.disable_after_ms},
                     "createdAt": previous.get("createdAt", now), "updatedAt": now}
            if value != {**previous, "updatedAt": now}:
                durable.put(WEBHOOK, self.name, value)
            namespace = webhook_endpoints_namespace(self.name)
            for endpoint in self.declared_endpoints:
                if not durable.insert(namespace, endpoint["id"], {**endpoint, "createdAt": now, "updatedAt": now}):
                    records.move_declared_secrets(durable, self.name, endpoint, self.header_secrets)
            self._declared_once = True

    def _declared(self, spec: Mapping[str, Any]) -> records.EndpointValue:
        if not isinstance(spec, Mapping) or "id" not in spec or "url" not in spec:
            raise ConfigurationError(f"Webhook {self.name!r}: each declared endpoint is a dict with an 'id' and "
                                     f"a 'url' (and the options of add_endpoint), got {spec!r}.")
        return records.new_endpoint_value(self.name, spec["id"], {k: v for k, v in spec.items() if k != "id"},
                                          declared=self.header_secrets)


def resendable_data(webhook: str, delivery_id: str, delivered: Mapping[str, Any]) -> dict[str, Any]:
    """A completed delivery's data, from a run's input, checked against its id."""
    keys = ("webhook", "event", "endpointId", "messageId", "firedAt", "data")
    if not isinstance(delivered, Mapping) or set(delivered) != set(keys) or delivered["webhook"] != webhook \
            or f"{delivered['messageId']}@{delivered['endpointId']}" != delivery_id \
            or not isinstance(delivered["firedAt"], int):
        raise InvalidJob(f"delivered= must be the input of a run of delivery {delivery_id!r} of webhook "
                         f"{webhook!r} (keys {', '.join(keys)}).")
    check_event(delivered["event"])
    return {key: delivered[key] for key in keys}


def _named(deliverer: Deliverer, webhook: str) -> Callable[[Any], dict[str, Any]]:
    """The deliverer as a plain function, named as queue definitions record handlers."""
    def deliver(ctx: Any) -> dict[str, Any]:
        return deliverer(ctx)

    deliver.__qualname__ = f"deliver[{delivery_queue_name(webhook)}]"
    return deliver


def _run_fields(job: Job) -> dict[str, Any]:
    data = job.data if isinstance(job.data, dict) else {}
    return {"webhook": data.get("webhook"), "event": data.get("event"), "endpointId": data.get("endpointId"),
            "messageId": data.get("messageId")}


def webhooks_for(registry: Registry) -> dict[str, Webhook]:
    """The webhooks declared against ``registry``, by name."""
    return _WEBHOOKS.of(registry)


def webhook(name: str, **options: Any) -> Webhook:
    """Declare (or look up) a webhook on the default engine."""
    return _WEBHOOKS.declare_or_get(Webhook, name, options)
