"""The memory hot plane's rate-limit states: lock-striped by key, so checks of different
keys never wait for each other and no lock is global."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from .rate_step import State, step, ttl_ms
from .rate_types import RateAnswer, RateRequest
from .types import Scope

_STRIPES = 64
_SWEEP_EVERY = 1024  # writes per stripe between sweeps of its expired keys

Key = tuple[Scope, str, str]


class _Stripe:
    __slots__ = ("lock", "states", "writes")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.states: dict[Key, tuple[State, int]] = {}  # key -> (state, expires at)
        self.writes = 0

    def live(self, key: Key, now: int) -> State:
        found = self.states.get(key)
        return found[0] if found is not None and found[1] > now else {}

    def put(self, key: Key, state: State, expires_at: int, now: int) -> None:
        old = self.states.get(key)
        self.states[key] = (state, max(expires_at, old[1]) if old is not None and old[1] > now else expires_at)
        self.writes += 1
        if self.writes % _SWEEP_EVERY == 0:
            for gone in [k for k, (_, at) in self.states.items() if at <= now]:
                del self.states[gone]


class MemoryRates:
    """Rate-limit states of every scope, ``(scope, limiter, key)`` -> state."""

    def __init__(self) -> None:
        self._stripes = tuple(_Stripe() for _ in range(_STRIPES))

    def _stripe(self, key: Key) -> _Stripe:
        return self._stripes[hash(key) % _STRIPES]

    def hit(self, scope: Scope, request: RateRequest, now: int) -> RateAnswer:
        key = (scope, request.name, request.key)
        stripe = self._stripe(key)
        with stripe.lock:
            answer, new = step(stripe.live(key, now), request, now)
            if new is not None:
                stripe.put(key, new, now + ttl_ms(request), now)
        return answer

    def drop(self, scope: Scope, name: str, key: str, fields: Sequence[str]) -> None:
        full = (scope, name, key)
        stripe = self._stripe(full)
        with stripe.lock:
            found = stripe.states.get(full)
            if found is not None:
                state = {f: v for f, v in found[0].items() if f not in fields}
                stripe.states[full] = (state, found[1])

    def override(self, scope: Scope, name: str, key: str, limits: Sequence[int], *, ttl_ms: int, now: int) -> None:
        full = (scope, name, key)
        stripe = self._stripe(full)
        with stripe.lock:
            stripe.put(full, {**stripe.live(full, now), "ov": list(limits)}, now + ttl_ms, now)
