"""Replay as a tracked operation: every run of a replayable handler that a run filter
selects in a window frozen at creation, however many, replayed chunk by chunk.

Creating one writes the operation and its replay set (``replay_sets/<id>``, marked with
the operation) in one write. Each chunk reads the next page of the handler's runs, newest
first (the runs' ``name``/``startedAt`` index), and writes in one atomic durable write:
a replay job per kept run, the chunk's pairs (``replay_pairs:<set>/<chunk>``), the set's
count, and the operation's cursor and counts. A crash leaves the whole chunk or nothing,
so no run is replayed twice or skipped; the jobs are signalled after that write (a crash
in between is the reconciler's case). Each chunk's jobs carry a correlation id of their
own (``<set>.<chunk>``), which is how :mod:`oqronkit.replay.pages` finds their runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..clock import now_ms
from ..durable import RecordWrite
from ..errors import InvalidRecord, OqronError
from ..ids import new_id
from ..namespaces import OPERATION_PROGRESS, RUNS, replay_pairs_namespace
from ..queues.enqueue import build_job
from ..queues.jobs import Job
from ..queues.queue import check_queue_name
from ..queues.runs import RUN_STATUSES
from ..replay.create import QUEUE_MODULES, REPLAY_SETS, ReplayRefused, is_replayable
from .filters import TARGET_RUNS, RunFilter
from .records import MAX_ERRORS_KEPT, Operation, Progress, Starter, check_texts, new_operation


def create_replay(ops: Starter, *, user: str, handler: str, status: str | None = "completed",
                  started_from: int | None = None, started_to: int | None = None, last: int | None = None,
                  planned: int | None = None, source: str = "api", name: str = "") -> Operation:
    """See :meth:`Operations.create_replay`."""
    check_texts(user=user, handler=handler, name=name)
    check_queue_name(handler)
    if status is not None and status not in RUN_STATUSES:
        raise InvalidRecord(f"Unknown run status {status!r}: use one of {', '.join(RUN_STATUSES)}.")
    for label, number in (("last", last), ("planned", planned)):
        if number is not None and (isinstance(number, bool) or not isinstance(number, int) or number < 0):
            raise InvalidRecord(f"{label} must be a whole number, got {number!r}.")
    engine: Any = ops.engine
    if not is_replayable(engine, handler):
        raise ReplayRefused(f"Handler {handler!r} is not declared replayable=True: a replay runs the handler again "
                            "on a past input, so only handlers safe to run again can be replayed.")
    now = now_ms()
    # Exclusive end (the runs index's started_to): a run started at this very millisecond is in.
    window = RunFilter(handler=handler, status=status, started_from=started_from,
                       started_to=now + 1 if started_to is None else min(int(started_to), now + 1), last=last)
    set_id = new_id()
    value = new_operation("replay", TARGET_RUNS, window.to_value(), user=user, source=source, now=now,
                          name=name or _default_name(window), queues=[handler], planned=planned, replaySet=set_id,
                          windowStart=started_from if started_from is not None else _oldest_start(engine, window))
    replay_set = {"id": set_id, "createdAt": now, "createdBy": user, "source": source, "handlers": [handler],
                  "selection": {"handler": handler, "status": status, "startedFrom": started_from,
                                "startedTo": window.started_to, "last": last},
                  "count": 0, "chunks": 0, "operation": value["id"]}
    return ops.start(value, RecordWrite(REPLAY_SETS, set_id, replay_set))


def _oldest_start(engine: Any, window: RunFilter) -> int | None:
    """Where the walk will end: the oldest matching run's start (one index read)."""
    page = engine.durable.list(RUNS, **window.list_options(), order="started", limit=1)
    started = page.records[0].value.get("startedAt") if page.records else None
    return int(started) if isinstance(started, int | float) else None


def _default_name(window: RunFilter) -> str:
    status = f"{window.status} " if window.status else ""
    which = f"the last {window.last:,} {status}runs" if window.last else f"every {status}run"
    return f"Replay {which} of {window.handler}"


def replay_chunk(engine: Any, op: Operation, chunk: int) -> Callable[[], None]:
    """One chunk of a replay operation, written; returns what signals its jobs."""
    window = op.filter
    assert isinstance(window, RunFilter) and op.replay_set is not None, "a replay operation walks runs"
    progress = op.progress
    durable = engine.durable
    page = durable.list(RUNS, **window.list_options(), order="started", descending=True, limit=chunk,
                        cursor=progress.cursor)
    # Earlier replays are no baseline: a changed output would become the next check's reference.
    kept = [r for r in page.records if r.value.get("module") in QUEUE_MODULES and not r.value.get("replayOf")]
    if window.last is not None:
        kept = kept[:max(0, window.last - progress.done)]
    over = page.next_cursor is None or (window.last is not None and progress.done + len(kept) >= window.last)
    replay_set = durable.get(REPLAY_SETS, op.replay_set)
    if replay_set is None:
        raise InvalidRecord(f"Replay set {op.replay_set} of operation {op.id} is gone.")
    number = int(replay_set.value.get("chunks") or 0) + 1
    correlation = f"{op.replay_set}.{number:05d}"
    queue = engine.controller(window.handler)
    jobs: list[Job] = []
    failed: list[dict[str, Any]] = []
    for run in kept:
        try:
            # One attempt: a retried replay would hide the failure the replay is there to show.
            job = build_job(queue, run.value.get("input"), attempts=1, correlation_id=correlation)
        except (OqronError, TypeError, ValueError) as exc:  # an input too large for a job now, ...
            failed.append({"queue": window.handler, "id": run.id, "error": f"{type(exc).__name__}: {exc}"[:300]})
            continue
        job.replay_of, job.replay_set = run.id, op.replay_set
        jobs.append(job)
    puts = [RecordWrite(j.namespace, j.id, j.to_value()) for j in jobs]
    if jobs:
        pairs = {"chunk": number, "queue": window.handler, "correlation": correlation,
                 "pairs": [{"run": j.replay_of, "job": j.id} for j in jobs]}
        count = int(replay_set.value.get("count") or 0) + len(jobs)
        puts += [RecordWrite(replay_pairs_namespace(op.replay_set), f"{number:06d}", pairs),
                 RecordWrite(REPLAY_SETS, op.replay_set, {**replay_set.value, "count": count, "chunks": number})]
    walked = page.records
    started = walked[-1].value.get("startedAt") if walked else None
    advanced = Progress(
        queue_index=progress.queue_index + over, cursor=None if over else page.next_cursor,
        scanned=progress.scanned + len(walked), done=progress.done + len(jobs),
        failed=progress.failed + len(failed), skipped=progress.skipped + len(walked) - len(kept),
        chunks=progress.chunks + 1, updated_at=now_ms(), errors=(progress.errors + failed)[:MAX_ERRORS_KEPT],
        position=int(started) if isinstance(started, int | float) else progress.position)
    durable.apply(puts=[*puts, RecordWrite(OPERATION_PROGRESS, op.id, advanced.to_value())])

    def signal() -> None:
        queue._signal(jobs)  # durable first, then the hot plane, as add does
        queue._enqueued(jobs)

    return signal
