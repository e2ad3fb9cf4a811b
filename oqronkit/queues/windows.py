"""Which path an ``add`` takes: the items of ``add`` / ``add_bulk`` that carry
``unique_for`` or ``debounce`` go to :mod:`oqronkit.queues.uniqueness` or
:mod:`oqronkit.queues.debounce`, one by one; the rest to the queue's plain path."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..errors import InvalidJob
from .debounce import add_debounced
from .enqueue import BULK_OPTIONS
from .jobs import Job
from .uniqueness import WINDOW_OPTIONS, add_unique, window_of

__all__ = ["WINDOW_OPTIONS", "add_windowed", "add_with_windows"]


def add_with_windows(queue: Any, items: list[tuple[Any, Any]],
                     add_plain: Callable[[list[tuple[Any, Any]]], list[Job]]) -> list[Job]:
    """``add`` / ``add_bulk`` when some items have a window: those are added one by one
    (each its own atomic write, in order, so a key repeated in the batch returns the
    first), the others together through ``add_plain``; the jobs come back in order."""
    jobs: list[Job | None] = [None] * len(items)
    plain = [i for i, (_, options) in enumerate(items) if not WINDOW_OPTIONS.intersection(options)]
    for index, job in zip(plain, add_plain([items[i] for i in plain]) if plain else [], strict=True):
        jobs[index] = job
    for index, (data, options) in enumerate(items):
        if jobs[index] is None:
            jobs[index] = add_windowed(queue, data, options)
    return [job for job in jobs if job is not None]


def add_windowed(queue: Any, data: Any, given: Mapping[str, Any]) -> Job:
    """One add with ``unique_for`` or ``debounce``."""
    unknown = set(given) - BULK_OPTIONS
    if unknown:
        raise InvalidJob(f"Unknown add option(s): {', '.join(sorted(unknown))}.")
    options = dict(given)
    window = window_of(queue, data, options)
    if window is None:  # unreachable through add_with_windows; kept for direct callers
        raise InvalidJob("add_windowed needs unique_for or debounce.")
    if window.mode == "debounce":
        return add_debounced(queue, data, options, window)
    return add_unique(queue, data, options, window)
