"""Live data on the hot plane: running runs (the board's live overlay), the worker
registry and cancel requests.

This module is their one home: the group names, the JSON shapes and their TTLs are
defined here, and the worker, the scheduler, queue control and the board call these
functions instead of reading or writing the groups themselves. Every entry may be lost
with the hot plane: the durable run record stays the truth, and a reader treats a
missing or malformed entry as "nothing live".
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, TypedDict, cast

from .clock import now_ms
from .queues.runs import LogLine, RunValue

if TYPE_CHECKING:
    from .hot import HotPlaneFacade

RUNS_GROUP: Final = "runs"
WORKERS_GROUP: Final = "workers"
CANCEL_GROUP: Final = "cancel"

#: A worker's running run stays live this long after its last refresh: the heartbeat
#: republishes only runs that changed, so a quiet run must outlast a long handler step.
RUN_TTL_MS: Final = 60_000
#: A leader's running run (cron or schedule) lapses fast: a claimed run missing from the
#: group past this TTL lost its leader, and the next one resolves it.
LEADER_RUN_TTL_MS: Final = 5_000
#: A worker drops out of the registry after missing three heartbeats (every 5 s).
WORKER_TTL_MS: Final = 15_000
#: A cancel request waits this long for the worker holding the job to see it.
CANCEL_TTL_MS: Final = 24 * 3600 * 1000
#: Log lines a live run carries (the newest): the durable record keeps them all.
LIVE_LOG_LINES: Final = 20


class LiveRun(TypedDict, total=False):
    """A running run as the board follows it: the fields of its run record that change
    while it runs, with what identifies it. ``jobId`` only for a run of a job."""

    id: str
    jobId: str
    name: str
    module: str
    status: str
    progressPercent: float
    progressLabel: str | None
    logs: list[LogLine]
    startedAt: int
    workerId: str


class WorkerInfo(TypedDict, total=False):
    """A live worker as its heartbeat publishes it."""

    id: str
    host: str
    pid: int
    queues: dict[str, int]
    inflight: int
    startedAt: int
    lastClaimAt: int | None
    hotOk: bool
    stats: dict[str, Any]
    heartbeatAt: int
    paused: list[str]


def live_run(run: RunValue) -> LiveRun:
    """The live shape of a run record (call it under the lock that guards ``run``)."""
    live: LiveRun = {"id": run["id"], "name": run["name"], "module": run["module"], "status": run["status"],
                     "progressPercent": run["progressPercent"], "progressLabel": run.get("progressLabel"),
                     "logs": run["logs"][-LIVE_LOG_LINES:], "startedAt": run["startedAt"],
                     "workerId": run["workerId"]}
    if run.get("jobId") is not None:
        live["jobId"] = run["jobId"]
    return live


def publish_runs(hot: HotPlaneFacade, runs: Iterable[LiveRun], *, ttl_ms: int, now: int | None = None) -> None:
    """Write running runs (from :func:`live_run`) through, in one call; each lapses
    ``ttl_ms`` after this unless published again."""
    items = {run["id"]: json.dumps(run) for run in runs}
    hot.kv_set(RUNS_GROUP, items, ttl_ms=ttl_ms, now=now_ms() if now is None else now)


def forget_runs(hot: HotPlaneFacade, run_ids: Sequence[str]) -> None:
    """Drop finished runs (those never published cost nothing)."""
    hot.kv_delete(RUNS_GROUP, run_ids)


def read_run(hot: HotPlaneFacade, run_id: str, *, now: int | None = None) -> LiveRun | None:
    """The live state of a running run, or None when none is published or the entry is
    not a JSON object. Raises the hot plane's errors (the board says it is unavailable)."""
    raw = hot.kv_get(RUNS_GROUP, [run_id], now_ms() if now is None else now)
    return cast("LiveRun | None", _object(raw.get(run_id)))


def live_runs(hot: HotPlaneFacade, *, now: int | None = None) -> list[LiveRun]:
    """Every live run of the scope, malformed entries skipped, ordered by id."""
    found = hot.kv_all(RUNS_GROUP, now_ms() if now is None else now)
    runs = [cast(LiveRun, value) for key in sorted(found) if (value := _object(found[key])) is not None]
    return runs


def live_run_ids(hot: HotPlaneFacade, run_ids: Sequence[str], *, now: int) -> set[str]:
    """Which of ``run_ids`` some process still refreshes (an entry exists, whatever it holds)."""
    return set(hot.kv_get(RUNS_GROUP, run_ids, now))


def publish_worker(hot: HotPlaneFacade, info: WorkerInfo, *, ttl_ms: int = WORKER_TTL_MS,
                   now: int | None = None) -> None:
    """Register (or refresh) a live worker under ``info["id"]``."""
    hot.kv_set(WORKERS_GROUP, {info["id"]: json.dumps(info)}, ttl_ms=ttl_ms, now=now_ms() if now is None else now)


def forget_worker(hot: HotPlaneFacade, worker_id: str) -> None:
    """Drop a stopping worker from the registry at once (else it lapses by its TTL)."""
    hot.kv_delete(WORKERS_GROUP, [worker_id])


def alive_workers(hot: HotPlaneFacade, worker_ids: Iterable[str], *, now: int | None = None) -> set[str]:
    """The ids among ``worker_ids`` whose registry entry has not lapsed (a heartbeat in
    the last WORKER_TTL_MS): one read, only of those keys."""
    wanted = sorted({worker_id for worker_id in worker_ids if worker_id})
    return set(hot.kv_get(WORKERS_GROUP, wanted, now_ms() if now is None else now)) if wanted else set()


def live_workers(hot: HotPlaneFacade, *, now: int | None = None) -> list[WorkerInfo]:
    """Workers whose heartbeat has not lapsed, ordered by id; malformed entries skipped,
    an entry without an id gets its key."""
    workers = []
    for worker_id, raw in hot.kv_all(WORKERS_GROUP, now_ms() if now is None else now).items():
        info = _object(raw)
        if info is not None:
            info.setdefault("id", worker_id)
            workers.append(cast(WorkerInfo, info))
    return sorted(workers, key=lambda w: str(w.get("id")))


def request_cancel(hot: HotPlaneFacade, job_id: str, reason: str, *, now: int | None = None) -> None:
    """Ask the worker holding ``job_id`` to stop it (its heartbeat sets ``ctx.cancelled``)."""
    hot.kv_set(CANCEL_GROUP, {job_id: reason}, ttl_ms=CANCEL_TTL_MS, now=now_ms() if now is None else now)


def cancel_requests(hot: HotPlaneFacade, job_ids: Sequence[str], *, now: int | None = None) -> dict[str, str]:
    """The pending cancel requests among ``job_ids``: job id -> reason."""
    return hot.kv_get(CANCEL_GROUP, job_ids, now_ms() if now is None else now)


def forget_cancels(hot: HotPlaneFacade, job_ids: Sequence[str]) -> None:
    """Drop cancel requests once their jobs are settled as cancelled."""
    hot.kv_delete(CANCEL_GROUP, job_ids)


def _object(raw: str | None) -> dict[str, Any] | None:
    if raw is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:  # written by something else: read as nothing live, never an error page
        return None
    return value if isinstance(value, dict) else None
