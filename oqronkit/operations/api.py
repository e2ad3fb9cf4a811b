"""The public API of tracked bulk operations: create one over a filter, read and list
them, pause, resume and cancel. The leader's runner (:mod:`.runner`) does the work in
chunks; the board, its JSON API and the CLI call these methods, never the store.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..clock import now_ms
from ..durable import Page, RecordWrite
from ..errors import InvalidRecord, InvalidState, UnknownOperation
from ..namespaces import OPERATION_PROGRESS, OPERATIONS, queue_of
from ..queues.queue import check_queue_name
from .records import (
    DEAD_LETTER_ACTIONS,
    MAX_HISTORY,
    TARGET_DEAD_LETTERS,
    TRANSITIONS,
    DeadLetterFilter,
    Operation,
    Progress,
    check_texts,
    new_operation,
)

if TYPE_CHECKING:
    from ..planes import Planes

logger = logging.getLogger(__name__)


class Operations:
    """Tracked bulk operations of one engine's (project, environment)."""

    def __init__(self, engine: Planes) -> None:
        self.engine = engine

    def create(self, action: str, *, user: str, source: str = "api", queue: str = "", fingerprint: str = "",
               search: str = "", died_from: int | None = None, died_to: int | None = None,
               name: str = "") -> Operation:
        """Start retrying or deleting every dead letter that matches, in chunks, on the
        leader. The window ends at ``died_to`` or now, whichever is earlier, frozen here:
        a dead letter that dies later is never touched. Returns the new operation."""
        if action not in DEAD_LETTER_ACTIONS:
            raise InvalidRecord(f"Unknown bulk action {action!r} on dead letters: use one of "
                                f"{', '.join(DEAD_LETTER_ACTIONS)} (replay and resend have their own methods).")
        check_texts(user=user, fingerprint=fingerprint, search=search, name=name)
        if queue:
            check_queue_name(queue)
        now = now_ms()
        window = DeadLetterFilter(queue=queue, fingerprint=fingerprint, search=search, died_from=died_from,
                                  died_to=now if died_to is None else min(int(died_to), now))
        depths = {queue_of(ns) or "": n for ns, n in self.engine.durable.count_by_namespace("dlq").items()}
        queues = [queue] if queue else sorted(q for q in depths if q)
        value = new_operation(action, TARGET_DEAD_LETTERS, window.to_value(), user=user, source=source, now=now,
                              name=name or _default_name(action, window), queues=queues,
                              planned=sum(depths.get(q, 0) for q in queues))
        return self.start(value)

    def create_replay(self, *, user: str, handler: str, status: str | None = "completed",
                      started_from: int | None = None, started_to: int | None = None, last: int | None = None,
                      planned: int | None = None, source: str = "api", name: str = "") -> Operation:
        """Start replaying every run of ``handler`` (declared ``replayable=True``, else
        :class:`~oqronkit.replay.ReplayRefused`) with ``status`` (None: any) that started in
        ``[started_from, started_to)``, newest first, at most ``last``; the window's end is
        ``started_to`` or now, frozen here. Its replay set (``op.replay_set``) pairs each
        run with its replay as chunks are done. ``planned``: a count made elsewhere (the
        board's), shown beside the progress; the runs are not counted here."""
        from .replaying import create_replay  # replay's modules load for a replay, not for every leader

        return create_replay(self, user=user, handler=handler, status=status, started_from=started_from,
                             started_to=started_to, last=last, planned=planned, source=source, name=name)

    def create_replay_ids(self, *, user: str, run_ids: Sequence[str], source: str = "api",
                          name: str = "") -> Operation:
        """Start replaying ``run_ids`` (any number, deduplicated, in the order given) in
        chunks: the list is stored with the operation as its frozen selection. A run that is
        gone, not a queue job's, or of a handler not declared ``replayable=True`` counts as
        failed with the reason; ``planned`` is the number of ids. Its replay set
        (``op.replay_set``) pairs each run with its replay as chunks are done."""
        from .replaying_ids import create_id_replay  # as create_replay's

        return create_id_replay(self, user=user, run_ids=run_ids, source=source, name=name)

    def create_resend(self, *, user: str, since: int, before: int | None = None, webhook: str = "",
                      endpoint: str = "", event: str = "", status: str = "", planned: int | None = None,
                      source: str = "api", name: str = "") -> Operation:
        """Start sending again every webhook delivery with an attempt that the delivery
        log's filters match (``webhook``, ``endpoint``, ``event``, run ``status``) and that
        started in ``[since, before)``; ``before`` is frozen here (at most now). Each
        delivery is sent once, as the board's resend does: a dead letter retried, a
        completed delivery added again from its newest attempt's input, a queued one left."""
        from .resending import create_resend  # webhooks' modules load for a resend, not for every leader

        return create_resend(self, user=user, since=since, before=before, webhook=webhook, endpoint=endpoint,
                             event=event, status=status, planned=planned, source=source, name=name)

    def start(self, value: dict[str, Any], *writes: RecordWrite) -> Operation:
        """Store a new operation's record (:func:`new_operation`), its empty progress and
        ``writes`` (a replay's set) in one write: the runner picks it up from there."""
        op_id = value["id"]
        self.engine.durable.apply(puts=[RecordWrite(OPERATIONS, op_id, value), *writes, RecordWrite(
            OPERATION_PROGRESS, op_id, Progress(updated_at=value["createdAt"]).to_value())])
        logger.info("operation %s created by %s: %s", op_id, value["createdBy"], value["name"],
                    extra={"action": "operations.create", "operation": op_id})
        return Operation.from_values(value, None)

    def get(self, op_id: str) -> Operation:
        """The operation and its progress; :class:`UnknownOperation` if there is none."""
        record = self.engine.durable.get(OPERATIONS, op_id)
        if record is None:
            raise UnknownOperation(f"No bulk operation {op_id!r} here: list them with `oqron ops list`.")
        progress = self.engine.durable.get(OPERATION_PROGRESS, op_id)
        return Operation.from_values(record.value, progress.value if progress else None)

    def list(self, *, status: str | None = None, limit: int = 50, cursor: str | None = None
             ) -> tuple[builtins.list[Operation], str | None]:
        """A page of operations, newest first, and the next page's cursor."""
        page: Page = self.engine.durable.list(OPERATIONS, status=status, order="inserted", descending=True,
                                              limit=limit, cursor=cursor)
        found = {r.id: r.value for r in self.engine.durable.get_many(OPERATION_PROGRESS,
                                                                      [r.id for r in page.records])}
        return [Operation.from_values(r.value, found.get(r.id)) for r in page.records], page.next_cursor

    def running_ids(self, limit: int = 100) -> builtins.list[str]:
        """Ids of the operations the runner has work for, oldest first."""
        page = self.engine.durable.list(OPERATIONS, status="running", order="inserted", limit=limit)
        return [r.id for r in page.records]

    def pause(self, op_id: str, *, user: str) -> Operation:
        """Stop after the chunk in flight; :meth:`resume` goes on where it stopped."""
        return self.transition(op_id, "pause", user=user)

    def resume(self, op_id: str, *, user: str) -> Operation:
        return self.transition(op_id, "resume", user=user)

    def cancel(self, op_id: str, *, user: str) -> Operation:
        """Stop for good after the chunk in flight; what was done stays done."""
        return self.transition(op_id, "cancel", user=user)

    def transition(self, op_id: str, verb: str, *, user: str, error: str | None = None) -> Operation:
        """Move the status by ``verb`` (pause, resume, cancel; finish and fail for the
        runner), compare-and-set on the status read, so two writers never overwrite each
        other; :class:`InvalidState` names the status that refused it."""
        to, allowed = TRANSITIONS.get(verb) or _RUNNER_TRANSITIONS[verb]
        for _ in range(5):
            record = self.engine.durable.get(OPERATIONS, op_id)
            if record is None:
                raise UnknownOperation(f"No bulk operation {op_id!r} here: list them with `oqron ops list`.")
            current = record.value.get("status")
            if current not in allowed:
                raise InvalidState(f"Operation {op_id} is {current}: it cannot {verb}.")
            now = now_ms()
            entry = {"at": now, "by": user, "status": to, "note": error or verb}
            value = {**record.value, "status": to, "history": [*record.value.get("history", []), entry][-MAX_HISTORY:]}
            if to in ("cancelled", "done", "failed"):
                value["finishedAt"] = now
            if error is not None:
                value["error"] = error
            if self.engine.durable.compare_and_set(OPERATIONS, op_id, expect={"status": current}, value=value):
                logger.info("operation %s %s by %s", op_id, to, user, extra={"action": f"operations.{verb}",
                                                                            "operation": op_id})
                return self.get(op_id)
        raise InvalidState(f"Operation {op_id} kept changing while it was asked to {verb}: try again.")


_RUNNER_TRANSITIONS: dict[str, tuple[str, frozenset[str]]] = {
    "finish": ("done", frozenset({"running"})),
    "fail": ("failed", frozenset({"running", "paused"})),
}


def _default_name(action: str, window: DeadLetterFilter) -> str:
    where = f"queue {window.queue}" if window.queue else "every queue"
    extra = "".join(f", {label} {text!r}" for label, text in (("fingerprint", window.fingerprint),
                                                               ("matching", window.search)) if text)
    return f"{action.capitalize()} dead letters of {where}{extra}"

