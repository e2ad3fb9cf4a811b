"""Tracked bulk operations: a retry or delete of dead letters over a filter becomes a
named record with a frozen time window, counts and a status, done in chunks by the
leader's runner, paused, resumed or cancelled by an operator."""

from __future__ import annotations

from .api import Operations
from .records import ACTIONS, STATUSES, DeadLetterFilter, Operation, Progress
from .runner import DEFAULT_CHUNK, OperationRunner

__all__ = ["ACTIONS", "DEFAULT_CHUNK", "STATUSES", "DeadLetterFilter", "Operation", "OperationRunner", "Operations",
           "Progress"]
