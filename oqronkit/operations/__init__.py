"""Tracked bulk operations: a retry or delete of dead letters, a replay of runs or a
resend of webhook deliveries over a filter becomes a named record with a frozen time
window, counts and a status, done in chunks by the leader's runner, paused, resumed or
cancelled by an operator."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .api import Operations
from .filters import DeliveryFilter, RunFilter, RunIdsFilter
from .records import ACTIONS, DEAD_LETTER_ACTIONS, STATUSES, DeadLetterFilter, Operation, Progress
from .runner import DEFAULT_CHUNK, OperationRunner

if TYPE_CHECKING:
    from .replaying_ids import replay_or_track


def __getattr__(name: str) -> Any:
    # An id-list replay loads replay's modules: on first use, not with every leading worker.
    if name == "replay_or_track":
        from .replaying_ids import replay_or_track

        return replay_or_track
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = ["ACTIONS", "DEAD_LETTER_ACTIONS", "DEFAULT_CHUNK", "STATUSES", "DeadLetterFilter", "DeliveryFilter",
           "Operation", "OperationRunner", "Operations", "Progress", "RunFilter", "RunIdsFilter", "replay_or_track"]
