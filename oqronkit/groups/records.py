"""Reading groups back: a group's record, its members' states and outputs.

What a callback calls (``oqronkit.group_results(ctx.group_id)``) and what the board
shows; the writes are :mod:`oqronkit.groups.ledger`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..durable import DurablePlane
from ..errors import OqronError
from ..namespaces import QUEUE_GROUPS, group_members_namespace

_PAGE = 1000


class GroupNotFound(OqronError, LookupError):
    """No group with this id (never created, or pruned a week after it settled)."""


@dataclass(frozen=True, slots=True)
class MemberResult:
    """One member as its group's ledger has it: ``status`` is ``pending``, ``completed``
    (``output`` is what the handler returned) or ``dead`` (``error`` says why)."""

    index: int
    queue: str
    job_id: str
    status: str
    output: Any
    error: Any
    run_id: str | None
    output_too_large: bool = False


@dataclass(frozen=True, slots=True)
class GroupInfo:
    """A group's record: ``status`` is ``open``, ``firing`` (decided, callback being
    released), ``completed`` or ``failed``; callbacks are ``(queue, job id)``."""

    id: str
    name: str | None
    status: str
    outcome: str | None
    policy: str
    total: int
    created_at: int
    decided_at: int | None
    fired_at: int | None
    queues: list[str]
    on_complete: tuple[str, str] | None
    on_failure: tuple[str, str] | None

    @property
    def callback(self) -> tuple[str, str] | None:
        """The callback the outcome fires (None while open, or when none was given)."""
        if self.outcome == "completed":
            return self.on_complete
        return self.on_failure if self.outcome == "failed" else None


def read_group(durable: DurablePlane, group_id: str) -> GroupInfo:
    """The group ``group_id``; :class:`GroupNotFound` if there is none."""
    record = durable.get(QUEUE_GROUPS, group_id) if group_id else None
    if record is None:
        raise GroupNotFound(f"No group {group_id!r} (never created, or pruned after it settled).")
    v = record.value
    return GroupInfo(
        id=record.id, name=v.get("name"), status=str(v.get("status")), outcome=v.get("outcome"),
        policy=str(v.get("policy")), total=int(v.get("total") or 0), created_at=int(v.get("createdAt") or 0),
        decided_at=v.get("decidedAt"), fired_at=v.get("firedAt"), queues=list(v.get("queues") or []),
        on_complete=_pair(v.get("onComplete")), on_failure=_pair(v.get("onFailure")),
    )


def read_members(durable: DurablePlane, group_id: str) -> list[MemberResult]:
    """Every member of the group in the order they were given."""
    namespace, cursor = group_members_namespace(group_id), None
    members: list[MemberResult] = []
    while True:
        page = durable.list(namespace, limit=_PAGE, cursor=cursor)
        members += [_member(r.value) for r in page.records]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    return sorted(members, key=lambda m: m.index)


def member_statuses(durable: DurablePlane, group_id: str) -> dict[tuple[str, str], str]:
    """Every member's ledger status by ``(queue, job id)``, read without the outputs (a
    walk of ids and statuses, 1,000 a round trip): what progress needs."""
    found = durable.scan_statuses(group_members_namespace(group_id), ["pending", "completed", "dead"], page=_PAGE)
    return {(key.partition(":")[0], key.partition(":")[2]): status for key, status in found}


def first_members(durable: DurablePlane, group_id: str, *, limit: int) -> list[MemberResult]:
    """Up to ``limit`` members with their outputs (one page, in ledger order: by queue,
    then by creation), sorted as given."""
    page = durable.list(group_members_namespace(group_id), limit=limit)
    return sorted((_member(r.value) for r in page.records), key=lambda m: m.index)


def member_counts(statuses: Iterable[str]) -> dict[str, int]:
    """Members per ledger status, every status present (0 when none)."""
    counts = Counter(statuses)
    return {status: counts.get(status, 0) for status in ("pending", "completed", "dead")}


def group_results(durable: DurablePlane, group_id: str) -> list[MemberResult]:
    """The members of an existing group with their outputs; GroupNotFound otherwise."""
    read_group(durable, group_id)
    return read_members(durable, group_id)


def _member(v: dict[str, Any]) -> MemberResult:
    return MemberResult(index=int(v.get("index") or 0), queue=str(v.get("queue")), job_id=str(v.get("jobId")),
                        status=str(v.get("status")), output=v.get("output"), error=v.get("error"),
                        run_id=v.get("runId"), output_too_large=bool(v.get("outputTooLarge")))


def _pair(value: Any) -> tuple[str, str] | None:
    return (str(value[0]), str(value[1])) if isinstance(value, list) and len(value) == 2 else None
