"""Tracked bulk operations: a retry or delete of dead letters, a replay of runs or a
resend of webhook deliveries over a filter becomes a named record with a frozen time
window, counts and a status, done in chunks by the leader's runner, paused, resumed or
cancelled by an operator."""

from __future__ import annotations

from .api import Operations
from .filters import DeliveryFilter, RunFilter, RunIdsFilter
from .records import ACTIONS, DEAD_LETTER_ACTIONS, STATUSES, DeadLetterFilter, Operation, Progress
from .runner import DEFAULT_CHUNK, OperationRunner

__all__ = ["ACTIONS", "DEAD_LETTER_ACTIONS", "DEFAULT_CHUNK", "STATUSES", "DeadLetterFilter", "DeliveryFilter",
           "Operation", "OperationRunner", "Operations", "Progress", "RunFilter", "RunIdsFilter"]
