"""An operator's handle on a webhook the workers own: built from its stored control
record (schedule, timeout, breaker, secret ids), so a resent delivery gets the workers'
schedule. Its secrets are placeholders: an operator's handle never signs, and it never
rewrites the control record (``declares=False``). The board's webhook actions and the
resend operations (:mod:`oqronkit.operations.resending`) both use it; in a worker the
latter takes the webhook the worker declared, or a handle on a registry of its own."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from ..codec import json_int
from ..config import OqronConfig
from ..durable import DurablePlane
from ..hot import HotPlaneFacade
from ..queues.queue import Queue, QueueHost, Registry
from .breaker import BreakerSettings
from .signing import new_secret
from .webhook import Webhook, webhooks_for


def operator_webhook(engine: QueueHost, name: str, control: Mapping[str, Any]) -> Webhook:
    """The webhook ``name`` on ``engine`` with the settings of its stored ``control`` record."""
    secret_ids = [s for s in control.get("secretIds") or [] if isinstance(s, str)] or ["default"]
    schedule = [json_int(ms) for ms in control.get("scheduleMs") or []]
    stored = control.get("breaker")
    breaker: Mapping[str, Any] = stored if isinstance(stored, Mapping) else {}
    settings = [json_int(breaker.get(k)) for k in ("failures", "cooldownMs", "maxCooldownMs", "disableAfterMs")]
    timeout = json_int(control.get("timeoutMs"))
    whole = [s for s in settings if s is not None]
    return Webhook(
        name, secrets={s: new_secret() for s in secret_ids},
        timeout=timedelta(milliseconds=timeout) if timeout else 10,
        schedule=[timedelta(milliseconds=ms or 0) for ms in schedule] if schedule else None,
        breaker=BreakerSettings(*whole) if len(whole) == len(settings) else None,
        allow_private=control.get("allowPrivate") is True, engine=engine, declares=False)


@dataclass(frozen=True)
class _Detached:
    """An engine's planes and configuration with a registry of its own: a handle built on
    it joins no worker's registry (a worker would deliver with its placeholder secrets)."""

    host: QueueHost
    registry: Registry = field(default_factory=Registry)

    @property
    def config(self) -> OqronConfig:
        return self.host.config

    @property
    def durable(self) -> DurablePlane:
        return self.host.durable

    @property
    def hot(self) -> HotPlaneFacade:
        return self.host.hot


def delivery_queue(engine: QueueHost, name: str, control: Mapping[str, Any]) -> Queue:
    """The delivery queue a resend adds to: the declared webhook's in a process that
    declares it, else an operator's handle's, kept out of ``engine``'s registry."""
    declared = webhooks_for(engine.registry).get(name)
    if declared is not None:
        return declared.queue
    return operator_webhook(_Detached(engine), name, control).queue
