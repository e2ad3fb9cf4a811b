"""Scheduler-side services that run on the elected leader only: the rescuer (expired
leases), the reconciler (durable jobs the hot plane lost), the dependency sweep and
retention. Every one is idempotent, so a brief double leader during failover is safe."""

from __future__ import annotations

from .leader import Services

__all__ = ["Services"]
