"""What a replay or a resend operation walks: a run filter (a replayable handler's runs)
and a delivery filter (the webhook delivery log's). Both walk the runs table newest first
on its ``startedAt`` index, in a window frozen at creation (``started_to`` is exclusive,
as the board's ``before``), so a run that starts later is never touched. Dead letters'
filter is :class:`~oqronkit.operations.records.DeadLetterFilter`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

TARGET_RUNS: Final = "runs"
TARGET_DELIVERIES: Final = "deliveries"
TARGET_RUN_IDS: Final = "run_ids"


def _int_or_none(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunFilter:
    """The runs of one handler (queue) with ``status`` (None: any) that started in
    ``[started_from, started_to)``, replays of replays left out; at most ``last`` of them
    (the newest), every one when None."""

    handler: str
    status: str | None = "completed"
    started_from: int | None = None
    started_to: int = 0
    last: int | None = None

    def to_value(self) -> dict[str, Any]:
        return {"handler": self.handler, "status": self.status, "startedFrom": self.started_from,
                "startedTo": self.started_to, "last": self.last}

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> RunFilter:
        status = value.get("status")
        return cls(handler=str(value.get("handler") or ""), status=status if isinstance(status, str) else None,
                   started_from=_int_or_none(value.get("startedFrom")),
                   started_to=_int_or_none(value.get("startedTo")) or 0, last=_int_or_none(value.get("last")))

    def list_options(self) -> dict[str, Any]:
        """The durable plane's ``list`` filters that serve this walk from an index."""
        return {"name": self.handler, "status": self.status, "started_from": self.started_from,
                "started_to": self.started_to}


@dataclass(frozen=True, slots=True, kw_only=True)
class RunIdsFilter:
    """An explicit list of run ids, frozen at creation in ``parts`` records of up to
    1,000 ids each (``operation_items:<op>/part.<n>``): ``count`` ids in all."""

    count: int
    parts: int

    def to_value(self) -> dict[str, Any]:
        return {"runIds": self.count, "parts": self.parts}

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> RunIdsFilter:
        return cls(count=_int_or_none(value.get("runIds")) or 0, parts=_int_or_none(value.get("parts")) or 0)


@dataclass(frozen=True, slots=True, kw_only=True)
class DeliveryFilter:
    """The delivery log's filters: attempts of one webhook (or every webhook), of one
    endpoint, event and run status (each optional), that started in ``[since, before)``.
    The deliveries of those attempts are what a resend sends again, each once."""

    since: int
    before: int
    webhook: str = ""
    endpoint: str = ""
    event: str = ""
    status: str = ""

    def matches(self, run: dict[str, Any]) -> bool:
        """The filters the runs index does not serve (endpoint and event)."""
        if self.endpoint and run.get("endpointId") != self.endpoint:
            return False
        return not self.event or run.get("event") == self.event

    def to_value(self) -> dict[str, Any]:
        return {"webhook": self.webhook, "endpoint": self.endpoint, "event": self.event, "status": self.status,
                "since": self.since, "before": self.before}

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> DeliveryFilter:
        return cls(since=_int_or_none(value.get("since")) or 0, before=_int_or_none(value.get("before")) or 0,
                   **{k: str(value.get(k) or "") for k in ("webhook", "endpoint", "event", "status")})

    def list_options(self, delivery_queue: str | None) -> dict[str, Any]:
        """One webhook's attempts by its delivery queue's name, every webhook's by module."""
        return {"name": delivery_queue, "module": None if delivery_queue else "webhook",
                "status": self.status or None, "started_from": self.since, "started_to": self.before}


def window_percent(first: int | None, last: int, position: int | None) -> int:
    """How far a newest-first walk of ``[first, last)`` is, by the start time it reached, 0-99."""
    if position is None:
        return 0
    if first is None or last <= first:
        return 50
    return max(0, min(99, (last - position) * 100 // (last - first)))
