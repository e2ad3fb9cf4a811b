"""A tracked bulk operation's two records and what they mean.

``operations/<id>`` (kind ``operation``) is what the operator asked for: the action, its
target and filter (dead letters here; runs and webhook deliveries in :mod:`.filters`), the
time window frozen at creation, who, how many items the walk covers, and the status,
which only :mod:`oqronkit.operations.api` changes (compare-and-set, so a pause never
overwrites a finish). ``operation_progress/<id>`` (kind ``state``) is where
the walk stands and what it did; the runner writes it in the same atomic write as each
chunk's effect, so a crash leaves both or neither.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol

from ..errors import InvalidRecord
from ..ids import new_id
from .filters import (
    TARGET_DELIVERIES,
    TARGET_RUN_IDS,
    TARGET_RUNS,
    DeliveryFilter,
    RunFilter,
    RunIdsFilter,
    window_percent,
)

if TYPE_CHECKING:
    from ..durable import RecordWrite
    from ..planes import Planes

Action = Literal["retry", "delete", "replay", "resend"]
Status = Literal["running", "paused", "cancelled", "done", "failed"]

ACTIONS: Final[tuple[Action, ...]] = ("retry", "delete", "replay", "resend")
#: The actions on dead letters (``Operations.create``); replay and resend have their own.
DEAD_LETTER_ACTIONS: Final[tuple[Action, ...]] = ("retry", "delete")
STATUSES: Final[tuple[Status, ...]] = ("running", "paused", "cancelled", "done", "failed")
FINISHED: Final = frozenset({"cancelled", "done", "failed"})
#: What an operator may ask of an operation in each status: (verb, status it moves to, from).
TRANSITIONS: Final[dict[str, tuple[Status, frozenset[str]]]] = {
    "pause": ("paused", frozenset({"running"})),
    "resume": ("running", frozenset({"paused"})),
    "cancel": ("cancelled", frozenset({"running", "paused"})),
}
TARGET_DEAD_LETTERS: Final = "dead_letters"
MAX_HISTORY = 50  # status changes kept on the record
MAX_ERRORS_KEPT = 20  # item errors kept on the progress record
MAX_TEXT = 500  # a search text, a fingerprint, a name, a user


@dataclass(frozen=True, slots=True, kw_only=True)
class DeadLetterFilter:
    """Which dead letters: of one queue (or every queue), of one error fingerprint, whose
    last error message contains ``search`` (case-insensitive), that died in the window
    ``[died_from, died_to]`` (``died_to`` is frozen at creation: later deaths are never touched)."""

    queue: str = ""
    fingerprint: str = ""
    search: str = ""
    died_from: int | None = None
    died_to: int = 0

    def matches(self, value: dict[str, Any]) -> bool:
        died = value.get("diedAt")
        if not isinstance(died, int | float) or isinstance(died, bool) or died > self.died_to:
            return False
        if self.died_from is not None and died < self.died_from:
            return False
        if self.fingerprint and value.get("errorFingerprint") != self.fingerprint:
            return False
        if self.search:
            error = value.get("lastError")
            message = error.get("message") if isinstance(error, dict) else None
            return isinstance(message, str) and self.search.casefold() in message.casefold()
        return True

    def to_value(self) -> dict[str, Any]:
        return {"queue": self.queue, "fingerprint": self.fingerprint, "search": self.search,
                "diedFrom": self.died_from, "diedTo": self.died_to}

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> DeadLetterFilter:
        return cls(queue=str(value.get("queue") or ""), fingerprint=str(value.get("fingerprint") or ""),
                   search=str(value.get("search") or ""), died_from=value.get("diedFrom"),
                   died_to=int(value.get("diedTo") or 0))


@dataclass(slots=True, kw_only=True)
class Progress:
    """Where the walk stands (the queue index and the cursor in it; for a walk of runs,
    ``position``, the start time it reached) and the counts."""

    queue_index: int = 0
    cursor: str | None = None
    scanned: int = 0
    done: int = 0
    failed: int = 0
    skipped: int = 0
    chunks: int = 0
    updated_at: int = 0
    errors: list[dict[str, Any]] = field(default_factory=list)
    position: int | None = None

    def to_value(self) -> dict[str, Any]:
        return {"queueIndex": self.queue_index, "cursor": self.cursor, "scanned": self.scanned, "done": self.done,
                "failed": self.failed, "skipped": self.skipped, "chunks": self.chunks, "updatedAt": self.updated_at,
                "errors": self.errors[:MAX_ERRORS_KEPT], "position": self.position}

    @classmethod
    def from_value(cls, value: dict[str, Any]) -> Progress:
        return cls(queue_index=int(value.get("queueIndex") or 0), cursor=value.get("cursor"),
                   scanned=int(value.get("scanned") or 0), done=int(value.get("done") or 0),
                   failed=int(value.get("failed") or 0), skipped=int(value.get("skipped") or 0),
                   chunks=int(value.get("chunks") or 0), updated_at=int(value.get("updatedAt") or 0),
                   errors=list(value.get("errors") or []), position=value.get("position"))


@dataclass(frozen=True, slots=True, kw_only=True)
class Operation:
    """A tracked bulk operation as its records say: read it with ``Operations.get``."""

    id: str
    name: str
    action: Action
    target: str
    filter: DeadLetterFilter | RunFilter | DeliveryFilter | RunIdsFilter
    queues: tuple[str, ...]
    planned: int | None  # None: not counted up front (a walk of runs the CLI started)
    status: Status
    created_by: str
    source: str
    created_at: int
    finished_at: int | None
    error: str | None
    history: tuple[dict[str, Any], ...]
    progress: Progress
    replay_set: str | None = None  # a replay's set, which its page shows the pairs of
    window_start: int | None = None  # where a walk of runs ends (its oldest start), for the percent

    @property
    def walks(self) -> int:
        """How many walks the operation makes: one per queue for dead letters, one per
        stored part of an id list, one for runs."""
        if isinstance(self.filter, RunIdsFilter):
            return self.filter.parts
        return len(self.queues) if self.target == TARGET_DEAD_LETTERS else 1

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def percent(self) -> int:
        """How far the walk is, 0-100: dead letters looked at of those planned; for runs
        and deliveries, how much of the frozen window the newest-first walk has passed;
        for an id list, the ids looked at of those listed."""
        if self.status == "done":
            return 100
        if isinstance(self.filter, RunFilter):
            return window_percent(self.window_start, self.filter.started_to, self.progress.position)
        if isinstance(self.filter, DeliveryFilter):
            return window_percent(self.filter.since, self.filter.before, self.progress.position)
        return min(99, self.progress.scanned * 100 // self.planned) if self.planned else 0

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape the board's API and the CLI print."""
        p = self.progress
        return {"id": self.id, "name": self.name, "action": self.action, "target": self.target,
                "filter": self.filter.to_value(), "queues": list(self.queues), "status": self.status,
                "createdBy": self.created_by, "source": self.source, "createdAt": self.created_at,
                "finishedAt": self.finished_at, "error": self.error, "percent": self.percent,
                "counts": {"planned": self.planned, "scanned": p.scanned, "done": p.done, "failed": p.failed,
                           "skipped": p.skipped},
                "chunks": p.chunks, "updatedAt": p.updated_at, "errors": p.errors, "history": list(self.history),
                "replaySet": self.replay_set}

    @classmethod
    def from_values(cls, value: dict[str, Any], progress: dict[str, Any] | None) -> Operation:
        target = str(value.get("target") or TARGET_DEAD_LETTERS)
        planned = value.get("planned")
        return cls(id=str(value["id"]), name=str(value.get("name") or ""), action=value["action"], target=target,
                   filter=_FILTERS.get(target, DeadLetterFilter).from_value(value.get("filter") or {}),
                   queues=tuple(value.get("queues") or ()), planned=int(planned) if planned is not None else None,
                   status=value["status"], created_by=str(value.get("createdBy") or ""),
                   source=str(value.get("source") or ""), created_at=int(value.get("createdAt") or 0),
                   finished_at=value.get("finishedAt"), error=value.get("error"),
                   history=tuple(value.get("history") or ()), progress=Progress.from_value(progress or {}),
                   replay_set=value.get("replaySet"), window_start=value.get("windowStart"))


_FILTERS: Final[dict[str, type[DeadLetterFilter] | type[RunFilter] | type[DeliveryFilter] | type[RunIdsFilter]]] = {
    TARGET_DEAD_LETTERS: DeadLetterFilter, TARGET_RUNS: RunFilter, TARGET_DELIVERIES: DeliveryFilter,
    TARGET_RUN_IDS: RunIdsFilter}


def check_texts(**texts: str) -> None:
    """Each text (a user, a filter, a name) bounded and without NUL; a user is required."""
    for label, text in texts.items():
        if not isinstance(text, str) or len(text) > MAX_TEXT or "\x00" in text:
            raise InvalidRecord(f"The {label} must be text of at most {MAX_TEXT} characters, without NUL.")
    if not texts.get("user"):
        raise InvalidRecord("An operation needs the user who asked for it.")


def new_operation(action: str, target: str, filter: dict[str, Any], *, user: str, source: str, now: int, name: str,
                  queues: list[str], planned: int | None, **extra: Any) -> dict[str, Any]:
    """A new operation's record, running."""
    return {"id": new_id(), "name": name, "action": action, "target": target, "filter": filter, "queues": queues,
            "planned": planned, "status": "running", "createdBy": user, "source": source, "createdAt": now,
            "finishedAt": None, "error": None, "history": [{"at": now, "by": user, "status": "running",
                                                             "note": "created"}], **extra}


class Starter(Protocol):
    """What creating a replay or resend needs of :class:`~.api.Operations` (a protocol,
    so their modules need not import the API that imports them)."""

    @property
    def engine(self) -> Planes: ...

    def start(self, value: dict[str, Any], *writes: RecordWrite) -> Operation: ...
