"""Rate limiters: declared once, checked in one atomic hot-plane round trip per call."""

from __future__ import annotations

from .definition import InvalidRateKey, RateLimitConfigError
from .limiter import Decision, RateLimiter, limiters_for, rate_limit

__all__ = ["Decision", "InvalidRateKey", "RateLimitConfigError", "RateLimiter", "limiters_for", "rate_limit"]
