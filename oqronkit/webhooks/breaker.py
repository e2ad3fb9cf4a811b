"""A circuit breaker per endpoint, shared by every worker process on every machine.

Hot plane (fast, may be lost): in kv group ``webhook_cb:<webhook>``, key ``<endpoint>``
the state (JSON ``{"state": "closed"|"open", "since", "reopensAt", "cooldownMs"}``),
``<endpoint>.mark`` the failure counter's value at the last success and
``<endpoint>.streak`` (JSON ``{"since"}``) while failures run on; the counter
``webhook_cb:<webhook>:<endpoint>:failures`` (consecutive failures = counter - mark);
the lock ``webhook_probe:<webhook>:<endpoint>`` held by the one half-open probe.

Durable plane (what the board and a restarted cluster read): one ``state`` record per
endpoint in ``webhook_cb``, id ``<webhook>/<endpoint>``, written at each transition;
a hot plane that lost its state restores it from there.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypedDict

from ..clock import now_ms
from ..durable import DurablePlane
from ..errors import ConfigurationError, InvalidJob, Postpone
from ..hot import HotPlaneFacade
from ..namespaces import WEBHOOK_CB
from ..queues.backoff import to_ms

logger = logging.getLogger(__name__)
STATE_TTL_MS = 30 * 86_400_000  # refreshed at every transition; a lost state is restored from the record
PROBE_WAIT_MS = 2_000
# How long a process trusts a closed breaker without a failure streak before asking the
# hot plane again: another process's opening reaches it that much later.
HEALTHY_CACHE_SECONDS = 0.5
DEFAULT_FAILURES = 5
DEFAULT_COOLDOWN_MS = 30_000
DEFAULT_MAX_COOLDOWN_MS = 600_000
DEFAULT_DISABLE_AFTER_MS = 5 * 86_400_000  # how long deliveries step aside while the half-open probe runs


class BreakerValue(TypedDict):
    """The durable ``webhook_cb`` record of one endpoint."""

    webhook: str
    endpointId: str
    state: str  # closed | open | half-open
    since: int
    reopensAt: int | None
    cooldownMs: int
    consecutiveFailures: int
    failingSince: int | None
    lastFailure: dict[str, Any] | None
    updatedAt: int


@dataclass(frozen=True, slots=True)
class BreakerSettings:
    """``failures`` consecutive failures open the breaker for ``cooldown`` (doubling on a
    failed probe, up to ``max_cooldown``); an endpoint failing without a success for
    ``disable_after`` is disabled."""

    failures: int = DEFAULT_FAILURES
    cooldown_ms: int = DEFAULT_COOLDOWN_MS
    max_cooldown_ms: int = DEFAULT_MAX_COOLDOWN_MS
    disable_after_ms: int = DEFAULT_DISABLE_AFTER_MS

    @classmethod
    def from_option(cls, option: Any, webhook: str) -> BreakerSettings:
        if option is None:
            return cls()
        if isinstance(option, BreakerSettings):
            return option
        if not isinstance(option, Mapping) or set(option) - {"failures", "cooldown", "max_cooldown", "disable_after"}:
            raise ConfigurationError(f"Webhook {webhook!r}: breaker must be a dict of failures, cooldown, "
                                     f"max_cooldown and disable_after, got {option!r}.")
        failures = option.get("failures", DEFAULT_FAILURES)
        if not isinstance(failures, int) or isinstance(failures, bool) or not 1 <= failures <= 10_000:
            raise ConfigurationError(f"Webhook {webhook!r}: breaker failures must be 1-10,000, got {failures!r}.")
        try:
            durations = [_duration(option.get(key), default) for key, default in (
                ("cooldown", DEFAULT_COOLDOWN_MS), ("max_cooldown", DEFAULT_MAX_COOLDOWN_MS),
                ("disable_after", DEFAULT_DISABLE_AFTER_MS))]
        except InvalidJob as exc:
            raise ConfigurationError(f"Webhook {webhook!r}: breaker {exc}") from None
        cooldown, max_cooldown, disable_after = durations
        if not 0 < cooldown <= max_cooldown:
            raise ConfigurationError(f"Webhook {webhook!r}: breaker cooldown must be above 0 and at most max_cooldown.")
        return cls(failures, cooldown, max_cooldown, disable_after)


def _duration(value: float | timedelta | None, default: int) -> int:
    found = to_ms(value, what="duration")
    return default if found is None else found


def breaker_record_id(webhook: str, endpoint_id: str) -> str:
    """The id of an endpoint's ``webhook_cb`` record: ``<webhook>/<endpoint id>`` ('/' is in
    neither name; the record also holds both, so readers never split the id)."""
    return f"{webhook}/{endpoint_id}"


@dataclass(slots=True)
class Gate:
    """What the breaker said before a delivery: whether it is the half-open probe, and
    what the hot plane held (to settle the outcome without reading it again)."""

    endpoint_id: str
    probe: bool
    mark: int
    streak_since: int | None
    cooldown_ms: int
    owner: str


class Breaker:
    """One webhook's breakers. ``disable(endpoint_id, reason)`` disables an endpoint."""

    def __init__(self, webhook: str, settings: BreakerSettings, *, hot: HotPlaneFacade, durable: DurablePlane,
                 disable: Callable[[str, str], object]) -> None:
        self.webhook = webhook
        self.settings = settings
        self.hot = hot
        self.durable = durable
        self.disable = disable
        self.group = f"webhook_cb:{webhook}"
        # Endpoint -> (until, mark): a closed breaker with no failure streak, as this process
        # last read it; deliveries skip the hot plane until then (HEALTHY_CACHE_SECONDS).
        self._healthy: dict[str, tuple[float, int]] = {}

    def record_id(self, endpoint_id: str) -> str:
        return breaker_record_id(self.webhook, endpoint_id)

    def _counter(self, endpoint_id: str) -> str:
        return f"{self.group}:{endpoint_id}:failures"

    def _probe_lock(self, endpoint_id: str) -> str:
        return f"webhook_probe:{self.webhook}:{endpoint_id}"

    def before(self, endpoint_id: str, owner: str, *, probe_ttl_ms: int) -> Gate:
        """Let a delivery through (a Gate), or raise Postpone while the breaker is open
        or another delivery is its half-open probe."""
        healthy = self._healthy.get(endpoint_id)
        if healthy is not None and healthy[0] > time.monotonic():
            return Gate(endpoint_id, False, healthy[1], None, self.settings.cooldown_ms, owner)
        now = now_ms()
        keys = [endpoint_id, f"{endpoint_id}.mark", f"{endpoint_id}.streak"]
        found = self.hot.kv_get(self.group, keys, now)
        state = json.loads(found[endpoint_id]) if endpoint_id in found else self._restore(endpoint_id, now)
        mark = int(found[keys[1]]) if keys[1] in found else self._mark_now(endpoint_id, now)
        streak = json.loads(found[keys[2]])["since"] if keys[2] in found else None
        cooldown = int(state.get("cooldownMs") or self.settings.cooldown_ms)
        gate = Gate(endpoint_id, False, mark, streak, cooldown, owner)
        if state["state"] == "closed":
            if streak is None:  # nothing failing: this process need not ask again for a moment
                self._healthy[endpoint_id] = (time.monotonic() + HEALTHY_CACHE_SECONDS, mark)
            return gate
        reopens = int(state["reopensAt"])
        if now < reopens:
            raise Postpone((reopens - now + random.randint(0, 1000)) / 1000,
                           f"circuit breaker of endpoint {endpoint_id} open until {reopens}")
        if not self.hot.acquire_lock(self._probe_lock(endpoint_id), owner, ttl_ms=probe_ttl_ms, now=now):
            raise Postpone((PROBE_WAIT_MS + random.randint(0, 1000)) / 1000,
                           f"circuit breaker of endpoint {endpoint_id} half-open: another delivery probes")
        # Read again under the lock: a probe that failed between our read and our lock
        # reopened the breaker, then released the lock to us.
        current = self.hot.kv_get(self.group, [endpoint_id], now_ms()).get(endpoint_id)
        reopened = json.loads(current) if current is not None else state
        if reopened["state"] == "closed":  # the other probe got through: an ordinary delivery
            self.hot.release_lock(self._probe_lock(endpoint_id), owner)
            return gate
        if reopened["state"] == "open" and int(reopened["reopensAt"]) > now_ms():
            self.hot.release_lock(self._probe_lock(endpoint_id), owner)
            raise Postpone((int(reopened["reopensAt"]) - now_ms() + random.randint(0, 1000)) / 1000,
                           f"circuit breaker of endpoint {endpoint_id} open until {reopened['reopensAt']}")
        gate.probe = True
        self._write(endpoint_id, "half-open", now, reopens_at=None, cooldown=cooldown, failures=None, streak=streak)
        return gate

    def succeeded(self, gate: Gate) -> None:
        """A delivery got through: the failure streak ends; a probe closes the breaker."""
        if gate.streak_since is None and not gate.probe:
            return  # the common case: nothing failed since the last success
        now = now_ms()
        counter = self._counter(gate.endpoint_id)
        value = self.hot.get_counters([counter]).get(counter, 0)
        self.hot.kv_set(self.group, {f"{gate.endpoint_id}.mark": str(value)}, ttl_ms=STATE_TTL_MS, now=now)
        self.hot.kv_delete(self.group, [f"{gate.endpoint_id}.streak"])
        if gate.probe:
            self._set_state(gate.endpoint_id, {"state": "closed", "since": now, "reopensAt": None,
                                               "cooldownMs": self.settings.cooldown_ms}, now)
            self._write(gate.endpoint_id, "closed", now, reopens_at=None, cooldown=self.settings.cooldown_ms,
                        failures=0, streak=None)
            self.hot.release_lock(self._probe_lock(gate.endpoint_id), gate.owner)
            logger.info("webhook %s endpoint %s: breaker closed", self.webhook, gate.endpoint_id,
                        extra={"action": "webhook.breaker_closed"})

    def failed(self, gate: Gate, failure: dict[str, Any]) -> str | None:
        """A delivery failed (retryably): count it; open the breaker at the threshold,
        reopen it after a failed probe, disable the endpoint after failing for too long.
        What happened ("opened", "disabled"), or None."""
        now = now_ms()
        endpoint_id, settings = gate.endpoint_id, self.settings
        self._healthy.pop(endpoint_id, None)
        count = self.hot.incr(self._counter(endpoint_id))
        streak = gate.streak_since
        if streak is None:
            streak = now
            self.hot.kv_set(self.group, {f"{endpoint_id}.streak": json.dumps({"since": now})}, ttl_ms=STATE_TTL_MS,
                            now=now)
        consecutive = count - gate.mark
        if settings.disable_after_ms and now - streak >= settings.disable_after_ms:
            reason = (f"failing for {(now - streak) // 1000:,} s without a success ({consecutive} consecutive "
                      f"failures; last: {failure.get('error') or failure.get('status')})")
            self.disable(endpoint_id, reason)
            self._write(endpoint_id, "open", now, reopens_at=None, cooldown=gate.cooldown_ms, failures=consecutive,
                        streak=streak, failure=failure)
            return "disabled"
        if not gate.probe and consecutive < settings.failures:
            return None
        cooldown = min(gate.cooldown_ms * 2, settings.max_cooldown_ms) if gate.probe else settings.cooldown_ms
        self._set_state(endpoint_id, {"state": "open", "since": now, "reopensAt": now + cooldown,
                                      "cooldownMs": cooldown}, now)
        self._write(endpoint_id, "open", now, reopens_at=now + cooldown, cooldown=cooldown, failures=consecutive,
                    streak=streak, failure=failure)
        if gate.probe:
            self.hot.release_lock(self._probe_lock(endpoint_id), gate.owner)
        logger.warning("webhook %s endpoint %s: breaker open for %d ms after %d consecutive failure(s)",
                       self.webhook, endpoint_id, cooldown, consecutive, extra={"action": "webhook.breaker_open"})
        return "opened"

    def abandon(self, gate: Gate) -> None:
        """A probe that neither succeeded nor failed gives its turn to the next delivery."""
        self.hot.release_lock(self._probe_lock(gate.endpoint_id), gate.owner)

    def reset(self, endpoint_id: str) -> None:
        """Close the breaker and forget the streak (an operator enabled the endpoint again)."""
        now = now_ms()
        counter = self._counter(endpoint_id)
        value = self.hot.get_counters([counter]).get(counter, 0)
        self._set_state(endpoint_id, {"state": "closed", "since": now, "reopensAt": None,
                                      "cooldownMs": self.settings.cooldown_ms}, now)
        self.hot.kv_set(self.group, {f"{endpoint_id}.mark": str(value)}, ttl_ms=STATE_TTL_MS, now=now)
        self.hot.kv_delete(self.group, [f"{endpoint_id}.streak"])
        self._write(endpoint_id, "closed", now, reopens_at=None, cooldown=self.settings.cooldown_ms, failures=0,
                    streak=None)

    def _mark_now(self, endpoint_id: str, now: int) -> int:
        """No mark (a new endpoint, or a hot plane that forgot): failures count from here."""
        counter = self._counter(endpoint_id)
        value = self.hot.get_counters([counter]).get(counter, 0)
        self.hot.kv_set(self.group, {f"{endpoint_id}.mark": str(value)}, ttl_ms=STATE_TTL_MS, now=now)
        return value

    def _set_state(self, endpoint_id: str, state: dict[str, Any], now: int) -> None:
        self.hot.kv_set(self.group, {endpoint_id: json.dumps(state)}, ttl_ms=STATE_TTL_MS, now=now)

    def _restore(self, endpoint_id: str, now: int) -> dict[str, Any]:
        """The state from the durable record (closed when there is none), put back in the
        hot plane. A half-open record (its probe's process is gone) reopens at once."""
        record = self.durable.get(WEBHOOK_CB, self.record_id(endpoint_id))
        value = record.value if record is not None else {}
        if value.get("state") in ("open", "half-open"):
            state = {"state": "open", "since": value.get("since", now), "reopensAt": value.get("reopensAt") or now,
                     "cooldownMs": value.get("cooldownMs") or self.settings.cooldown_ms}
        else:
            state = {"state": "closed", "since": value.get("since", now), "reopensAt": None,
                     "cooldownMs": self.settings.cooldown_ms}
        self._set_state(endpoint_id, state, now)
        return state

    def _write(self, endpoint_id: str, state: str, now: int, *, reopens_at: int | None, cooldown: int,
               failures: int | None, streak: int | None, failure: dict[str, Any] | None = None) -> None:
        record_id = self.record_id(endpoint_id)
        current = self.durable.get(WEBHOOK_CB, record_id)
        previous: Mapping[str, Any] = current.value if current is not None else {}
        value: BreakerValue = {
            "webhook": self.webhook, "endpointId": endpoint_id, "state": state, "since": now,
            "reopensAt": reopens_at, "cooldownMs": cooldown,
            "consecutiveFailures": previous.get("consecutiveFailures", 0) if failures is None else failures,
            "failingSince": streak, "lastFailure": failure if failure is not None else previous.get("lastFailure"),
            "updatedAt": now}
        self.durable.put(WEBHOOK_CB, record_id, value)
