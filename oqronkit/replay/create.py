"""Replaying past runs: choosing them, refusing what may not run again, and adding
their stored input as new jobs grouped by one replay set record.

A replay set lives in the ``replay_sets`` namespace of ``oqron_records``; each of its
jobs carries ``replayOf`` (the original run) and ``replaySet``, and so does every run
of it, which is how :mod:`oqronkit.replay.report` pairs them. The set record and its
jobs are inserted in one durable write, so a set never names jobs that were not added.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..audit import ACTION_CAP
from ..backends.types import StoredRecord
from ..clock import now_ms
from ..durable import RecordWrite
from ..errors import OqronError
from ..ids import new_id
from ..namespaces import QUEUE, RUNS
from ..planes import Planes
from ..queues.enqueue import build_job
from ..queues.jobs import Job

REPLAY_SETS = "replay_sets"
#: One replay request replays at most this many runs (the board's and the CLI's cap).
MAX_REPLAYS = ACTION_CAP
#: Modules whose runs belong to a queue job, and so have an input a job can replay.
QUEUE_MODULES = ("queue", "worker")


class ReplayRefused(OqronError, ValueError):
    """A replay that cannot be done: a handler not declared ``replayable=True``, a run
    that is not a queue job's, or nothing selected. The message names the handler or run."""


def is_replayable(engine: Any, queue: str) -> bool:
    """Whether ``queue``'s handler is declared ``replayable=True``: the declaration in
    this process when it has the handler, else the definition its workers recorded."""
    declared = engine.registry.queues.get(queue)
    if declared is not None and declared.fn is not None:
        return bool(declared.replayable)
    record = engine.durable.get(QUEUE, queue)
    return record is not None and record.value.get("replayable") is True


def select_runs(engine: Planes, *, run_ids: Sequence[str] = (), handler: str | None = None,
                last: int | None = None, status: str | None = "completed", started_from: int | None = None,
                started_to: int | None = None) -> list[StoredRecord]:
    """The runs to replay: ``run_ids`` in order, or the ``last`` (newest first) runs of
    ``handler`` with ``status`` (completed by default; None: any) in the time window,
    replays left out."""
    if run_ids:
        if len(run_ids) > MAX_REPLAYS:
            raise ReplayRefused(f"At most {MAX_REPLAYS:,} runs can be replayed at once, got {len(run_ids):,}.")
        found = {r.id: r for r in engine.durable.get_many(RUNS, list(dict.fromkeys(run_ids)))}
        missing = [i for i in run_ids if i not in found]
        if missing:
            raise ReplayRefused(f"No run {missing[0]!r} in this project and environment: nothing was replayed.")
        return [found[i] for i in dict.fromkeys(run_ids)]
    if not handler:
        raise ReplayRefused("Say what to replay: run ids, or a handler (with how many of its last runs).")
    wanted = min(last or MAX_REPLAYS, MAX_REPLAYS)
    runs: list[StoredRecord] = []
    cursor = None
    while len(runs) < wanted:
        page = engine.durable.list(RUNS, name=handler, status=status, order="started", descending=True,
                                   started_from=started_from, started_to=started_to,
                                   limit=min(1000, wanted - len(runs)), cursor=cursor)
        # Earlier replays are no baseline: a changed output would become the next check's reference.
        runs.extend(r for r in page.records if r.value.get("module") in QUEUE_MODULES and not r.value.get("replayOf"))
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    if not runs:
        what = f"{status} runs" if status else "runs"
        raise ReplayRefused(f"Handler {handler!r} has no {what} to replay in this project and environment.")
    return runs[:wanted]


def check_replayable(engine: Any, runs: Sequence[StoredRecord]) -> list[str]:
    """The handlers of ``runs``; refuses a run that is not a queue job's and a handler
    not declared ``replayable=True`` (naming them)."""
    handlers: list[str] = []
    for run in runs:
        value = run.value
        if value.get("module") not in QUEUE_MODULES or not isinstance(value.get("name"), str):
            raise ReplayRefused(f"Run {run.id!r} is a {value.get('module')!r} run, not a queue job's: only queue "
                                "jobs can be replayed.")
        if value["name"] not in handlers:
            handlers.append(value["name"])
    refused = [h for h in handlers if not is_replayable(engine, h)]
    if refused:
        names = ", ".join(repr(h) for h in refused)
        raise ReplayRefused(f"Handler {names} is not declared replayable=True: a replay runs the handler again "
                            "on a past input, so only handlers safe to run again can be replayed.")
    return handlers


def create_replay_set(engine: Any, runs: Sequence[StoredRecord], *, user: str, source: str,
                      selection: dict[str, Any] | None = None) -> str:
    """Add one job per run (its stored input, one attempt, marked as the run's replay)
    and the replay set grouping them; the set's id."""
    if not runs:
        raise ReplayRefused("No runs selected: nothing to replay.")
    if len(runs) > MAX_REPLAYS:
        raise ReplayRefused(f"At most {MAX_REPLAYS:,} runs can be replayed at once, got {len(runs):,}.")
    handlers = check_replayable(engine, runs)
    set_id, at = new_id(), now_ms()
    jobs: list[Job] = []
    for run in runs:
        queue = engine.controller(run.value["name"])
        # One attempt: a retried replay would hide the failure the replay is there to show.
        job = build_job(queue, run.value.get("input"), attempts=1, correlation_id=set_id)
        job.replay_of, job.replay_set = run.id, set_id
        jobs.append(job)
    record = {
        "id": set_id, "createdAt": at, "createdBy": user, "source": source, "handlers": handlers,
        "selection": selection or {}, "count": len(jobs),
        "pairs": [{"run": j.replay_of, "queue": j.queue, "job": j.id} for j in jobs],
    }
    engine.durable.insert_many([RecordWrite(REPLAY_SETS, set_id, record),
                                *(RecordWrite(j.namespace, j.id, j.to_value()) for j in jobs)])
    for name in handlers:
        queue = engine.controller(name)
        mine = [j for j in jobs if j.queue == name]
        queue._signal(mine)  # durable first, then the hot plane, as add does
        queue._enqueued(mine)
    return set_id


def replay(engine: Any, *, run_ids: Sequence[str] = (), handler: str | None = None, last: int | None = None,
           status: str | None = "completed", started_from: int | None = None, started_to: int | None = None,
           user: str = "", source: str = "api") -> str:
    """Select runs (:func:`select_runs`) and replay them (:func:`create_replay_set`); the set's id."""
    runs = select_runs(engine, run_ids=run_ids, handler=handler, last=last, status=status,
                       started_from=started_from, started_to=started_to)
    selection: dict[str, Any] = {"runIds": list(run_ids)} if run_ids else {
        "handler": handler, "last": last, "status": status, "startedFrom": started_from, "startedTo": started_to}
    return create_replay_set(engine, runs, user=user, source=source, selection=selection)
