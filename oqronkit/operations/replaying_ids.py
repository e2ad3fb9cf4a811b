"""Replaying an explicit list of run ids of any size: up to ``MAX_REPLAYS`` at once (a
replay set, :func:`oqronkit.replay.replay`), beyond that as a tracked operation.

Creating the operation stores the list, deduplicated and in the order given, as its
frozen selection: parts of ``PART_SIZE`` ids (``operation_items:<op>/part.<n>``), written
in one durable write with the operation, its progress and its replay set. The runner
walks the parts in order (``queueIndex`` the part, ``cursor`` the offset in it) and
writes each chunk as a filter-based replay's (:mod:`.replaying`): its jobs, its pairs
(``replay_pairs:<set>/<chunk>``, each pair naming its queue: a list may span handlers),
the set's count and the operation's cursor and counts, in one atomic write, so a crash
replays no run twice and skips none. A run that is gone, not a queue job's, or of a
handler not declared ``replayable=True`` is not refused up front (that would read the
whole list while the operator waits): it counts as failed with the reason, by name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..clock import now_ms
from ..durable import RecordWrite
from ..errors import InvalidRecord, OqronError
from ..ids import new_id
from ..namespaces import OPERATION_PROGRESS, RUNS, operation_items_namespace, replay_pairs_namespace
from ..queues.enqueue import build_job
from ..queues.jobs import Job
from ..replay.create import MAX_REPLAYS, QUEUE_MODULES, REPLAY_SETS, is_replayable, replay
from .filters import TARGET_RUN_IDS, RunIdsFilter
from .records import MAX_ERRORS_KEPT, Operation, Progress, Starter, check_texts, new_operation

#: Ids per stored part of the selection (a record of about 30 kB).
PART_SIZE = 1000
#: The most ids one operation takes: its creation is one write of every part (about 30 MB
#: here); a larger set is a filter's replay (``create_replay``), which has no bound.
MAX_IDS = 1_000_000
MAX_ID_LENGTH = 200


def part_key(number: int) -> str:
    """The key of part ``number`` (from 1) of an operation's selection."""
    return f"part.{number:06d}"


def clean_ids(run_ids: Sequence[Any]) -> list[str]:
    """``run_ids`` deduplicated in the order given; :class:`InvalidRecord` for a non-text
    or overlong id, an empty list or more than ``MAX_IDS``."""
    for run_id in run_ids:  # checked first: an unhashable value (a JSON object) must be a clear refusal
        if not isinstance(run_id, str) or not run_id or len(run_id) > MAX_ID_LENGTH or "\x00" in run_id:
            raise InvalidRecord(f"A run id is text of 1 to {MAX_ID_LENGTH} characters without NUL, got {run_id!r:.60}.")
    ids = list(dict.fromkeys(run_ids))
    if not ids:
        raise InvalidRecord("No run ids given: nothing to replay.")
    if len(ids) > MAX_IDS:
        raise InvalidRecord(f"At most {MAX_IDS:,} run ids in one operation, got {len(ids):,}.")
    return ids


def create_id_replay(ops: Starter, *, user: str, run_ids: Sequence[str], source: str = "api",
                     name: str = "") -> Operation:
    """See :meth:`Operations.create_replay_ids`."""
    check_texts(user=user, name=name)
    ids = clean_ids(run_ids)
    now = now_ms()
    parts = [ids[i:i + PART_SIZE] for i in range(0, len(ids), PART_SIZE)]
    window = RunIdsFilter(count=len(ids), parts=len(parts))
    set_id = new_id()
    value = new_operation("replay", TARGET_RUN_IDS, window.to_value(), user=user, source=source, now=now,
                          name=name or f"Replay {len(ids):,} selected runs", queues=[], planned=len(ids),
                          replaySet=set_id)
    items = operation_items_namespace(value["id"])
    replay_set = {"id": set_id, "createdAt": now, "createdBy": user, "source": source, "handlers": [],
                  "selection": {"runIds": len(ids)}, "count": 0, "chunks": 0, "operation": value["id"]}
    return ops.start(value, RecordWrite(REPLAY_SETS, set_id, replay_set),
                     *(RecordWrite(items, part_key(n), {"runIds": part}) for n, part in enumerate(parts, 1)))


def replay_or_track(ops: Starter, *, user: str, run_ids: Sequence[str], source: str = "api"
                    ) -> tuple[str, Operation | None]:
    """Replay ``run_ids`` at once when there are at most ``MAX_REPLAYS`` (refusing them all
    for one bad run, as :func:`~oqronkit.replay.replay` does), else start a tracked
    operation; the replay set's id and the operation (None when replayed at once)."""
    ids = clean_ids(run_ids)
    if len(ids) <= MAX_REPLAYS:
        return replay(ops.engine, run_ids=ids, user=user, source=source), None
    op = create_id_replay(ops, user=user, run_ids=ids, source=source)
    assert op.replay_set is not None, "a replay operation has its set"
    return op.replay_set, op


class _Refusals:
    """Why a run cannot be replayed (None: it can), each handler's declaration read once."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.replayable: dict[str, bool] = {}

    def reason(self, run_id: str, run: dict[str, Any] | None) -> str | None:
        if run is None:
            return f"No run {run_id!r} in this project and environment."
        handler = run.get("name")
        if run.get("module") not in QUEUE_MODULES or not isinstance(handler, str):
            return f"Run {run_id!r} is a {run.get('module')!r} run, not a queue job's: only queue jobs can be replayed."
        if handler not in self.replayable:
            self.replayable[handler] = is_replayable(self.engine, handler)
        if not self.replayable[handler]:
            return f"Handler {handler!r} is not declared replayable=True."
        return None


def replay_ids_chunk(engine: Any, op: Operation, chunk: int) -> Callable[[], None]:
    """The next ``chunk`` ids of an id-list replay, written; returns what signals its jobs."""
    window = op.filter
    assert isinstance(window, RunIdsFilter) and op.replay_set is not None, "an id-list replay walks its parts"
    progress = op.progress
    durable = engine.durable
    part = durable.get(operation_items_namespace(op.id), part_key(progress.queue_index + 1))
    replay_set = durable.get(REPLAY_SETS, op.replay_set)
    if part is None or replay_set is None:
        raise InvalidRecord(f"Part {progress.queue_index + 1} or the replay set of operation {op.id} is gone.")
    listed = list(part.value.get("runIds") or [])
    offset = int(progress.cursor or 0)
    batch = [str(i) for i in listed[offset:offset + chunk]]
    runs = {r.id: r.value for r in durable.get_many(RUNS, batch)}
    number = int(replay_set.value.get("chunks") or 0) + 1
    correlation = f"{op.replay_set}.{number:05d}"
    refusals = _Refusals(engine)
    jobs: list[Job] = []
    failed: list[dict[str, Any]] = []
    for run_id in batch:
        run = runs.get(run_id)
        reason = refusals.reason(run_id, run)
        try:
            if reason is not None or run is None:
                raise ValueError(reason)
            # One attempt: a retried replay would hide the failure the replay is there to show.
            job = build_job(engine.controller(run["name"]), run.get("input"), attempts=1, correlation_id=correlation)
        except (OqronError, TypeError, ValueError) as exc:  # refused, or an input too large for a job now
            failed.append({"queue": (run or {}).get("name") or "", "id": run_id,
                           "error": (reason or f"{type(exc).__name__}: {exc}")[:300]})
            continue
        job.replay_of, job.replay_set = run_id, op.replay_set
        jobs.append(job)
    puts = [RecordWrite(j.namespace, j.id, j.to_value()) for j in jobs]
    if jobs:
        handlers = list(dict.fromkeys([*replay_set.value.get("handlers", []), *(j.queue for j in jobs)]))
        pairs = {"chunk": number, "queue": "", "correlation": correlation,
                 "pairs": [{"run": j.replay_of, "job": j.id, "queue": j.queue} for j in jobs]}
        count = int(replay_set.value.get("count") or 0) + len(jobs)
        puts += [RecordWrite(replay_pairs_namespace(op.replay_set), f"{number:06d}", pairs),
                 RecordWrite(REPLAY_SETS, op.replay_set, {**replay_set.value, "count": count, "chunks": number,
                                                          "handlers": handlers})]
    over = offset + len(batch) >= len(listed)
    advanced = Progress(
        queue_index=progress.queue_index + over, cursor=None if over else str(offset + len(batch)),
        scanned=progress.scanned + len(batch), done=progress.done + len(jobs), failed=progress.failed + len(failed),
        skipped=progress.skipped, chunks=progress.chunks + 1, updated_at=now_ms(),
        errors=(progress.errors + failed)[:MAX_ERRORS_KEPT])
    durable.apply(puts=[*puts, RecordWrite(OPERATION_PROGRESS, op.id, advanced.to_value())])

    def signal() -> None:
        for handler in dict.fromkeys(j.queue for j in jobs):
            queue = engine.controller(handler)
            mine = [j for j in jobs if j.queue == handler]
            queue._signal(mine)  # durable first, then the hot plane, as add does
            queue._enqueued(mine)

    return signal
