"""The public group functions, on the default engine unless one is given."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..engine import Engine, get_engine
from .ledger import FailurePolicy
from .records import GroupInfo, MemberResult, read_group
from .records import group_results as _results


def group(
    members: Iterable[Any],
    *,
    on_complete: Any = None,
    on_failure: Any = None,
    on_failure_policy: FailurePolicy = "first",
    name: str | None = None,
    group_id: str | None = None,
    engine: Engine | None = None,
) -> str:
    """Add ``members`` (``job_spec(queue, data, **options)`` or ``(queue, data[, options])``)
    as one group and return its id. ``on_complete`` is enqueued once when every member
    has completed; ``on_failure`` once a member died (policy ``"first"``) or once all
    settled with at least one dead (``"after_all"``). See docs/how-to/groups-and-batches.md."""
    return (engine or get_engine()).group(
        members, on_complete=on_complete, on_failure=on_failure, on_failure_policy=on_failure_policy, name=name,
        group_id=group_id)


def group_results(group_id: str, *, engine: Engine | None = None) -> list[MemberResult]:
    """Every member of the group, in the order given, with its status and output."""
    return _results((engine or get_engine()).durable, group_id)


def get_group(group_id: str, *, engine: Engine | None = None) -> GroupInfo:
    """The group's record: status, outcome, counts given at creation, callbacks."""
    return read_group((engine or get_engine()).durable, group_id)
