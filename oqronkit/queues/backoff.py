"""Retry delays: exponential (default), fixed, or a user function, with jitter."""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypedDict

from ..bounds import MAX_DURATION_S
from ..errors import InvalidJob

DEFAULT_BASE_MS = 2_000
DEFAULT_MAX_MS = 60_000
DEFAULT_JITTER = 0.2

_custom: dict[str, Callable[[int], float]] = {}


class BackoffValue(TypedDict):
    """A backoff as stored on jobs and definitions (:meth:`Backoff.to_value`)."""

    type: str
    delayMs: int
    maxMs: int
    jitter: float


def to_ms(value: float | timedelta | None, *, what: str) -> int | None:
    """Seconds (int/float) or a timedelta as integer milliseconds; InvalidJob for a
    negative, NaN or infinite value or one over :data:`~oqronkit.bounds.MAX_DURATION_S`."""
    if value is None:
        return None
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:  # an int beyond a double: past the bound below anyway
            seconds = math.inf
    else:
        raise InvalidJob(f"{what} must be seconds (a number) or a timedelta, got {value!r}.")
    if math.isnan(seconds):
        raise InvalidJob(f"{what} must be a finite number of seconds, got {value!r}.")
    if seconds < 0:
        raise InvalidJob(f"{what} must not be negative, got {value!r}.")
    if seconds > MAX_DURATION_S:
        raise InvalidJob(f"{what} must be at most {MAX_DURATION_S:,} seconds (100 years), got {value!r}.")
    return round(seconds * 1000)


@dataclass(frozen=True, slots=True)
class Backoff:
    """How long to wait before attempt ``n + 1`` after attempt ``n`` failed."""

    kind: str = "exponential"  # exponential | fixed | custom:<name>
    base_ms: int = DEFAULT_BASE_MS
    max_ms: int = DEFAULT_MAX_MS
    jitter: float = DEFAULT_JITTER

    def delay_ms(self, attempt: int, rng: random.Random | None = None) -> int:
        if self.kind.startswith("custom:"):
            fn = _custom.get(self.kind[7:])
            # A job may outlive its function's registration: fall back to the base delay.
            raw = float(self.base_ms) if fn is None else self._custom_ms(fn, attempt)
        elif self.kind == "fixed":
            raw = float(self.base_ms)
        else:
            raw = self.base_ms * (2 ** max(attempt - 1, 0))
        raw = min(raw, float(self.max_ms))
        if self.jitter:
            spread = raw * self.jitter
            raw += (rng or random).uniform(-spread, spread)
        return max(int(raw), 0)

    def _custom_ms(self, fn: Callable[[int], float], attempt: int) -> float:
        try:
            return float(to_ms(fn(attempt), what="custom backoff") or 0)
        except InvalidJob:  # a NaN, infinite or negative answer must not fail the retry: wait the default cap
            return float(min(self.max_ms, DEFAULT_MAX_MS))

    def to_value(self) -> BackoffValue:
        return {"type": self.kind, "delayMs": self.base_ms, "maxMs": self.max_ms, "jitter": self.jitter}

    @classmethod
    def from_value(cls, value: Mapping[str, Any] | None) -> Backoff:
        if not value:
            return cls()
        return cls(value.get("type", "exponential"), int(value.get("delayMs", DEFAULT_BASE_MS)),
                   int(value.get("maxMs", DEFAULT_MAX_MS)), float(value.get("jitter", DEFAULT_JITTER)))


def make_backoff(spec: Any) -> Backoff:
    """Accept a Backoff, None (default), a number of seconds (fixed), a mapping
    ``{"type": "fixed"|"exponential", "delay": s, "max": s, "jitter": f}``, or a
    function ``attempt -> seconds`` (registered under its qualified name so any worker
    that imported it can compute the delay)."""
    if spec is None:
        return Backoff()
    if isinstance(spec, Backoff):
        return spec
    if callable(spec):
        name = f"{spec.__module__}.{spec.__qualname__}"
        _custom[name] = spec
        # The function's answer is the delay: the default exponential's 60 s cap is not its.
        return Backoff(kind=f"custom:{name}", max_ms=MAX_DURATION_S * 1000, jitter=0.0)
    if isinstance(spec, (int, float, timedelta)) and not isinstance(spec, bool):
        delay_ms = to_ms(spec, what="backoff") or 0
        return Backoff(kind="fixed", base_ms=delay_ms, max_ms=delay_ms, jitter=0.0)
    if isinstance(spec, Mapping):
        kind = spec.get("type", "exponential")
        if kind not in ("exponential", "fixed"):
            raise InvalidJob(f"backoff type must be 'exponential' or 'fixed', got {kind!r}.")
        jitter = spec.get("jitter", DEFAULT_JITTER)
        if not isinstance(jitter, (int, float)) or isinstance(jitter, bool) or not 0 <= jitter <= 1:
            raise InvalidJob(f"backoff jitter must be a number between 0 and 1, got {jitter!r}.")
        unknown = set(spec) - {"type", "delay", "max", "jitter"}
        if unknown:
            raise InvalidJob(f"Unknown backoff key(s): {', '.join(sorted(map(str, unknown)))}.")
        return Backoff(
            kind,
            to_ms(spec.get("delay", DEFAULT_BASE_MS / 1000), what="backoff delay") or 0,
            to_ms(spec.get("max", DEFAULT_MAX_MS / 1000), what="backoff max") or 0,
            float(jitter),
        )
    raise InvalidJob(f"Unsupported backoff {spec!r}: use seconds, a dict, a function or None.")
