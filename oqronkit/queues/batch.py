"""Batch handlers: ``queue(..., batch=Batch(size=100, max_wait=2.0, group_by=None))``.

A batch queue's handler is called once with a list of job contexts (see
:mod:`oqronkit.worker.batching`, which runs it); every job keeps its own lease, run and
outcome. This module holds the declaration: its options, checked once, the group key of
a payload, and how the queue's definition record describes it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from ..codec import dumps_compact, text_problem
from ..errors import ConfigurationError

#: The largest batch: one handler call's jobs are claimed, leased and settled together.
MAX_BATCH_SIZE = 10_000
#: The longest wait for a batch to fill, in seconds (held jobs keep their leases meanwhile).
MAX_BATCH_WAIT = 3_600.0

GroupBy = str | Callable[[Any], Any] | None


@dataclass(frozen=True, kw_only=True, slots=True)
class Batch:
    """How a queue's jobs are handed to its handler in batches.

    ``size``: at most this many jobs per handler call (1-10,000). ``max_wait``: seconds
    a worker waits for a batch to fill once its oldest held job arrived (0-3,600; 0
    hands over whatever is there). ``group_by``: None (any jobs together), the name of a
    payload field (jobs whose payload has the same value there; a payload that is not
    an object, or lacks it, groups under None) or a function of the payload returning
    the key. One call never mixes keys.
    """

    size: int = 100
    max_wait: float = 2.0
    group_by: GroupBy = None

    def __post_init__(self) -> None:
        size, wait, group_by = self.size, self.max_wait, self.group_by
        if not isinstance(size, int) or isinstance(size, bool) or not 1 <= size <= MAX_BATCH_SIZE:
            raise ConfigurationError(f"Batch size must be an integer from 1 to {MAX_BATCH_SIZE:,}, got {size!r}.")
        if not isinstance(wait, (int, float)) or isinstance(wait, bool) or not math.isfinite(wait) \
                or not 0 <= wait <= MAX_BATCH_WAIT:
            raise ConfigurationError(
                f"Batch max_wait must be a number of seconds from 0 to {MAX_BATCH_WAIT:,.0f}, got {wait!r}.")
        if isinstance(group_by, str):
            problem = text_problem(group_by)
            if not group_by or len(group_by) > 200 or problem is not None:
                raise ConfigurationError(
                    f"Batch group_by {group_by!r} must be a payload field name of 1-200 characters"
                    f"{f' ({problem})' if problem else ''}, or a function of the payload.")
        elif group_by is not None and not callable(group_by):
            raise ConfigurationError(
                f"Batch group_by must be None, a payload field name or a function of the payload, got {group_by!r}.")

    def key_of(self, data: Any) -> Hashable:
        """The group key of a payload (None without ``group_by``). A function's key
        that is not hashable (a list, a dict) is keyed by its JSON text. Raises what
        the function raises."""
        group_by = self.group_by
        if group_by is None:
            return None
        key = group_by(data) if callable(group_by) else data.get(group_by) if isinstance(data, dict) else None
        try:
            hash(key)
        except TypeError:
            return dumps_compact(key)
        return key

    def describe(self) -> dict[str, Any]:
        """The options as the queue's definition record stores them (the board shows them)."""
        group_by = self.group_by
        if group_by is None or isinstance(group_by, str):
            named = group_by
        else:
            named = f"{getattr(group_by, '__module__', '?')}.{getattr(group_by, '__qualname__', repr(group_by))}"
        return {"size": self.size, "maxWait": self.max_wait, "groupBy": named}


def check_batch(queue: str, batch: Any) -> Batch | None:
    """A queue's ``batch`` option: None or a :class:`Batch`."""
    if batch is None or isinstance(batch, Batch):
        return batch
    raise ConfigurationError(
        f"Queue {queue!r}: batch must be oqronkit.Batch(size=..., max_wait=..., group_by=...), got {batch!r}.")
