"""The two planes as one thing to depend on: what operating a queue (and any other
module that only reads and writes records) needs from an engine.

A protocol, so such modules stand below :mod:`oqronkit.engine` instead of importing it:
an :class:`~oqronkit.engine.Engine` satisfies it, and so does a test's stand-in.
"""

from __future__ import annotations

from typing import Protocol

from .durable import DurablePlane
from .hot import HotPlaneFacade


class Planes(Protocol):
    """An engine's durable plane (records of jobs, runs, control) and hot plane
    (signals, leases, live data), both in the engine's (project, environment) scope."""

    @property
    def durable(self) -> DurablePlane: ...

    @property
    def hot(self) -> HotPlaneFacade: ...


def commit_together(planes: Planes) -> bool:
    """Whether both planes commit in one database (postgres mode), so one transaction
    can write a record and the hot state that goes with it."""
    domain = planes.hot.plane.transaction_domain
    return domain is not None and domain == planes.durable.store.transaction_domain


def signal_together(planes: Planes) -> bool:
    """Whether the durable store inserts a job and signals it on the hot plane in one
    atomic call (:class:`~oqronkit.backends.protocols.SignallingStore`): postgres mode,
    and redis mode on a standalone server."""
    domain = planes.hot.plane.signal_domain
    return domain is not None and domain == planes.durable.store.signal_domain
