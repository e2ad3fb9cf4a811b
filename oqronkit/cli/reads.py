"""The CLI's read commands: queues, runs, dead letters and schedules, through the engine's
planes only (no Django), each row a dict with the stable field names docs/how-to/json-api-and-cli.md documents."""

from __future__ import annotations

import argparse
from typing import Any

from ..engine import Engine
from ..errors import InvalidNamespace
from ..live import live_workers
from ..namespaces import CRON, QUEUE, RUNS, SCHEDULE, SCHEDULER_CONTROL, dlq_namespace, queue_of
from ..queues.jobs import Job
from .output import Result

#: The most queue records, schedules or rows a listing reads (the board's pages stop there too).
MAX_QUEUES = 1000
MAX_SCHEDULES = 500
#: The most dead letters or runs a filtered listing reads to find its matches.
SCAN_CAP = 10_000
PAGE = 500

QUEUE_COLUMNS = ("name", "paused", "waiting", "delayed", "active", "dead", "workers", "handler")
RUN_COLUMNS = ("started_at", "status", "module", "name", "attempts", "duration_ms", "job_id", "id", "error")
DEAD_COLUMNS = ("died_at", "queue", "id", "attempts", "error", "fingerprint")
GROUP_COLUMNS = ("last_died_at", "count", "fingerprint", "queues", "error")
SCHEDULE_COLUMNS = ("kind", "name", "paused", "done", "next_run_at", "last_fired_at", "queue", "timing")


def queue_names(engine: Engine) -> tuple[list[str], bool, dict[str, int]]:
    """Every queue this scope knows: a control record, a job or a dead letter (a queue
    with waiting jobs and no worker yet is listed too); whether the list was capped; and
    the dead letters per queue, counted on the way."""
    durable = engine.durable
    names = {r.id for r in durable.list(QUEUE, limit=MAX_QUEUES).records}
    names |= {q for ns in durable.count_by_namespace("job") if (q := queue_of(ns)) is not None}
    dead = {q: n for ns, n in durable.count_by_namespace("dlq").items() if (q := queue_of(ns)) is not None}
    ordered = sorted(names | set(dead))
    return ordered[:MAX_QUEUES], len(ordered) > MAX_QUEUES, dead


def queues(engine: Engine, args: argparse.Namespace) -> Result:
    """The overview's numbers: depths from the hot plane in one call, live workers from
    their heartbeats, dead letters counted per queue, pause state from the queue record."""
    names, capped, dead = queue_names(engine)
    if args.queue:
        names = [n for n in names if n == args.queue]
    records = {r.id: r.value for r in engine.durable.get_many(QUEUE, names)} if names else {}
    now = now_of(args)
    depths = engine.hot.depths_many(names, now) if names else {}
    consumers: dict[str, int] = {}
    for worker in live_workers(engine.hot, now=now):
        for name in worker.get("queues") or {}:
            consumers[name] = consumers.get(name, 0) + 1
    rows = []
    for name in names:
        depth = depths.get(name)
        record: dict[str, Any] = records.get(name) or {}
        rows.append({
            "name": name, "paused": bool(record.get("paused")), "waiting": depth.ready if depth else None,
            "delayed": depth.delayed if depth else None, "active": depth.active if depth else None,
            "dead": dead.get(name, 0), "workers": consumers.get(name, 0),
            "handler": record.get("handler"), "concurrency": record.get("concurrency"),
            "has_record": bool(record),
        })
    result = Result("queues", rows, QUEUE_COLUMNS)
    if capped:
        result.notes.append(f"only the first {MAX_QUEUES} queues are listed")
    unattended = [str(r["name"]) for r in rows
                  if not r["workers"] and not r["paused"] and (r["waiting"] or r["delayed"] or r["active"])]
    if unattended:
        result.notes.append(f"no worker consumes {', '.join(unattended)}: its jobs wait")
    return result


def runs(engine: Engine, args: argparse.Namespace) -> Result:
    """Newest first, with the board's filters: status, module, name (a queue's runs carry
    its name) and since on the indexes; worker, job and error text read the candidates,
    at most ``SCAN_CAP`` of them."""
    name = args.queue or args.name
    status = args.status or ("failed" if args.search else None)  # the board's rule: text search is in one status
    wanted = {"workerId": args.worker, "jobId": args.job}
    needle = args.search.lower() if args.search else None
    rows: list[dict[str, Any]] = []
    cursor: str | None = None
    scanned = 0
    more = False
    while True:
        size = args.limit + 1 if not (args.worker or args.job or needle) else PAGE
        page = engine.durable.list(RUNS, status=status, name=name, module=args.module, started_from=args.since,
                                   order="started", descending=True, limit=size, cursor=cursor)
        scanned += len(page.records)
        for record in page.records:
            value = record.value
            if any(v and value.get(k) != v for k, v in wanted.items()):
                continue
            if needle and needle not in str((value.get("error") or {}).get("message", "")).lower():
                continue
            if len(rows) == args.limit:
                more = True
                break
            rows.append(run_row(value))
        cursor = page.next_cursor
        if more or cursor is None or scanned >= SCAN_CAP:
            break
    result = Result("runs", rows, RUN_COLUMNS, extra={"more": more})
    if more:
        result.notes.append(f"more runs match: showing the newest {args.limit} (--limit, at most {args.limit_cap})")
    if cursor is not None and not more:
        result.notes.append(f"stopped after reading {SCAN_CAP:,} runs: narrow the filters")
    if args.search and not args.status:
        result.notes.append("--search looks in failed runs unless --status names another")
    return result


def run_row(value: dict[str, Any]) -> dict[str, Any]:
    error: dict[str, Any] = value.get("error") or {}
    return {
        "id": value.get("id"), "status": value.get("status"), "module": value.get("module"),
        "name": value.get("name"), "queue": value.get("queue", value.get("name") if value.get("module") == "queue"
                                                       else None),
        "job_id": value.get("jobId"), "attempts": value.get("attempts"), "worker_id": value.get("workerId"),
        "started_at": value.get("startedAt"), "ended_at": value.get("endedAt"),
        "duration_ms": value.get("durationMs"),
        "error": f"{error.get('type')}: {error.get('message')}" if error else None,
    }


def dead(engine: Engine, args: argparse.Namespace) -> Result:
    """Newest first; ``--queue``, ``--fingerprint``, ``--search`` (in the error message)
    and ``--since`` (died at or after) filter, reading at most ``SCAN_CAP`` rows."""
    if args.groups:
        return dead_groups(engine, args)
    rows, scanned_out = dead_letters(engine, queue=args.queue, fingerprint=args.fingerprint, search=args.search,
                                     since=args.since, limit=args.limit)
    result = Result("dead", [dead_row(job) for job in rows], DEAD_COLUMNS)
    if scanned_out:
        result.notes.append(f"stopped after reading {SCAN_CAP:,} dead letters: narrow the filters")
    return result


def dead_letters(engine: Engine, *, queue: str | None, fingerprint: str | None, search: str | None,
                 since: int | None, limit: int) -> tuple[list[Job], bool]:
    """Matching dead letters, newest first, at most ``limit``; and whether the scan stopped
    at its cap before finding them all."""
    namespace = dlq_namespace(queue) if queue else None
    found: list[Job] = []
    cursor: str | None = None
    scanned = 0
    needle = search.lower() if search else None
    while len(found) < limit:
        try:
            page = engine.durable.list(namespace, kind=None if namespace else "dlq", descending=True,
                                       limit=PAGE, cursor=cursor)
        except InvalidNamespace:
            return found, False
        for record in page.records:
            if since is not None and record.inserted_at < since:
                return found, False  # newest written first, and a letter is written when it dies: none left
            job = Job.from_value(record.value)
            if since is not None and (job.died_at or 0) < since:
                continue
            if fingerprint and job.error_fingerprint != fingerprint:
                continue
            if needle and needle not in str(dict(job.last_error or {}).get("message", "")).lower():
                continue
            found.append(job)
            if len(found) >= limit:
                break
        scanned += len(page.records)
        cursor = page.next_cursor
        if cursor is None:
            return found, False
        if scanned >= SCAN_CAP:
            return found, True
    return found, False


def dead_groups(engine: Engine, args: argparse.Namespace) -> Result:
    """The board's failure groups: dead letters by error fingerprint, most recent group
    first, counted over the newest ``SCAN_CAP`` matching dead letters."""
    jobs, capped = dead_letters(engine, queue=args.queue, fingerprint=args.fingerprint, search=args.search,
                                since=args.since, limit=SCAN_CAP)
    groups: dict[str, dict[str, Any]] = {}
    for job in jobs:  # newest first: a group's first job gives its latest error
        if not job.error_fingerprint:
            continue
        group = groups.get(job.error_fingerprint)
        if group is None:
            row = dead_row(job)
            group = groups[job.error_fingerprint] = {
                "fingerprint": job.error_fingerprint, "count": 0, "queues": [], "last_died_at": job.died_at,
                "first_died_at": job.died_at, "error": row["error"], "error_type": row["error_type"],
                "error_message": row["error_message"],
            }
        group["count"] += 1
        group["first_died_at"] = job.died_at
        if job.queue not in group["queues"]:
            group["queues"].append(job.queue)
    rows = list(groups.values())[: args.limit]
    result = Result("dead", rows, GROUP_COLUMNS, extra={"groups": True})
    if capped or len(jobs) >= SCAN_CAP:
        result.notes.append(f"counted over the newest {SCAN_CAP:,} dead letters: narrow the filters for exact counts")
    return result


def dead_row(job: Job) -> dict[str, Any]:
    error: dict[str, Any] = dict(job.last_error or {})
    return {
        "queue": job.queue, "id": job.id, "died_at": job.died_at, "attempts": job.attempts,
        "reason": job.dead_reason, "error_type": error.get("type"), "error_message": error.get("message"),
        "error": f"{error.get('type')}: {error.get('message')}" if error else job.dead_reason,
        "fingerprint": job.error_fingerprint, "created_at": job.created_at,
    }


def schedules(engine: Engine, args: argparse.Namespace) -> Result:
    rows = []
    capped = False
    for kind in (CRON, SCHEDULE):
        page = engine.durable.list(kind, limit=MAX_SCHEDULES)
        capped = capped or page.next_cursor is not None
        names = [r.id for r in page.records if not args.name or r.id == args.name]
        controls = {r.id: r.value for r in engine.durable.get_many(SCHEDULER_CONTROL[kind], names)} if names else {}
        for record in page.records:
            if record.id in names:
                rows.append(schedule_row(kind, record.id, record.value, controls.get(record.id) or {}))
    result = Result("schedules", rows, SCHEDULE_COLUMNS)
    if capped:
        result.notes.append(f"only the first {MAX_SCHEDULES} crons and {MAX_SCHEDULES} schedules are listed")
    return result


def schedule_row(kind: str, name: str, definition: dict[str, Any], control: dict[str, Any]) -> dict[str, Any]:
    counters = control.get("counters") or {}
    return {
        "kind": kind, "name": name, "paused": bool(control.get("paused")), "done": bool(control.get("done")),
        "next_run_at": control.get("nextRunAt"), "last_fired_at": control.get("lastFiredAt"),
        "queue": definition.get("queue"), "timing": definition.get("description"), "version": definition.get("version"),
        "runs": counters.get("run", 0), "missed": counters.get("missed", 0),
    }


def now_of(args: argparse.Namespace) -> int:
    now: int = args.now
    return now
