"""The CLI's actions: retry, delete, cancel, promote, pause, resume and purge, through the
queue and scheduler APIs the board calls, with the board's cap (``ACTION_CAP`` per
command) and confirmations, each audited with the OS user as the actor (source ``cli``)."""

from __future__ import annotations

import argparse
import logging
import socket
from collections.abc import Callable
from typing import Any

from ..audit import ACTION_CAP, audit_entry, by_queue, save_audit
from ..engine import Engine
from ..errors import ConfigurationError, InvalidState, JobNotFound, OqronError, UnknownSchedule
from ..namespaces import SCHEDULER_CONTROL, dlq_namespace, job_namespace
from ..queues.queue import check_queue_name
from ..queues.records import queue_holds_jobs
from ..scheduler.control import set_paused
from .console import Console, UsageProblem
from .output import Result, iso
from .reads import dead_letters

logger = logging.getLogger(__name__)
SOURCE = "cli"
TARGET_COLUMNS = ("queue", "id", "ok", "message")
#: A table of per-job outcomes longer than this shows its first rows (--json has them all).
SHOWN_TARGETS = 20

Pairs = list[tuple[str, str]]


class Audited:
    """An action being performed; :meth:`finish` writes its audit record and builds the result."""

    def __init__(self, engine: Engine, console: Console, action: str, *, queue: str | None = None,
                 targets: Pairs | None = None, extra: dict[str, Any] | None = None) -> None:
        self.engine, self.console, self.action, self.queue = engine, console, action, queue
        self.targets = targets or []
        self.extra = {"host": socket.gethostname(), **(extra or {})}

    def finish(self, *, ok: bool, message: str, now: int, rows: list[dict[str, Any]] | None = None,
               counts: dict[str, Any] | None = None) -> Result:
        cfg = self.engine.config
        entry = audit_entry(at=now, user=self.console.user, action=self.action, source=SOURCE, queue=self.queue,
                            targets=self.targets, ok=ok, result=message, project=cfg.project,
                            environment=cfg.environment, extra=self.extra)
        saved = save_audit(self.engine, entry, self.targets)
        logger.info("%s by %s on %d job(s): %s", self.action, self.console.user, len(self.targets), message,
                    extra={"action": f"cli.{self.action}"})
        result = Result(self.action, rows or [], TARGET_COLUMNS if rows is not None else (), message=message, ok=ok,
                        extra={"audit_id": entry["id"] if saved else None, **(counts or {})}, shown=SHOWN_TARGETS)
        if not saved:
            result.notes.append("the audit record could not be written (see the log)")
        return result


def parse_target(text: str) -> tuple[str, str]:
    """``queue:job id`` (a queue name holds no ':', a job id may)."""
    queue, sep, job_id = text.partition(":")
    if not sep or not queue or not job_id:
        raise UsageProblem(f"{text!r} is not a job: write QUEUE:JOB_ID (e.g. emails:01J...).")
    try:
        check_queue_name(queue)
    except ConfigurationError as exc:
        raise UsageProblem(str(exc)) from None
    return queue, job_id


def explicit_targets(args: argparse.Namespace) -> Pairs:
    pairs = [parse_target(t) for t in args.targets]
    if len(pairs) > ACTION_CAP:
        raise UsageProblem(f"{len(pairs):,} jobs given: one command acts on at most {ACTION_CAP:,}.")
    return list(dict.fromkeys(pairs))  # the same job named twice is acted on once


def dead_selection(engine: Engine, args: argparse.Namespace) -> tuple[Pairs, str]:
    """The dead letters a retry or delete acts on: the named ones, or with ``--all`` what
    matches the filters now (at most ``ACTION_CAP``); and the mode for the audit record."""
    if args.all == bool(args.targets):
        raise UsageProblem("name the dead letters (QUEUE:JOB_ID ...) or pass --all with optional filters, not both.")
    if args.targets:
        return explicit_targets(args), "ids"
    jobs, _ = dead_letters(engine, queue=args.queue, fingerprint=args.fingerprint, search=args.search,
                           since=args.since, limit=ACTION_CAP)
    return [(job.queue, job.id) for job in jobs], "matching"


def capped_note(pairs: Pairs, mode: str) -> str:
    if mode == "matching" and len(pairs) >= ACTION_CAP:
        return (f" This command acts on at most {ACTION_CAP:,}; more may match: run it again, or "
                "`oqron ops create` for all of them.")
    return ""


def retry(engine: Engine, args: argparse.Namespace, console: Console) -> Result:
    pairs, mode = dead_selection(engine, args)
    if mode == "matching" and pairs:
        console.confirm(f"Retry {len(pairs):,} dead letter(s){_filters(args)}?", yes=args.yes)
    rows = []
    for queue, ids in by_queue(pairs).items():
        retried = {job.id for job in engine.controller(queue).retry_many(ids)}
        rows += [_row(queue, i, i in retried, "retried" if i in retried else "not a dead letter (any more)")
                 for i in ids]
    done = sum(r["ok"] for r in rows)
    message = f"Retried {done} of {len(pairs)} dead letter(s).{capped_note(pairs, mode)}"
    audit = Audited(engine, console, "retry", targets=pairs, extra={"mode": mode, "renderedAt": args.now})
    return audit.finish(ok=done > 0, message=message, now=args.now, rows=rows,
                        counts={"matched": len(pairs), "retried": done})


def delete(engine: Engine, args: argparse.Namespace, console: Console) -> Result:
    pairs, mode = dead_selection(engine, args)
    if pairs:
        console.confirm(f"Delete {len(pairs):,} dead letter(s){_filters(args)} for good?", yes=args.yes)
    rows = []
    for queue, ids in by_queue(pairs).items():
        present = {r.id for r in engine.durable.get_many(dlq_namespace(queue), ids)}
        engine.controller(queue).delete_dead(sorted(present))
        rows += [_row(queue, i, i in present, "deleted" if i in present else "not a dead letter") for i in ids]
    done = sum(r["ok"] for r in rows)
    message = f"Deleted {done} of {len(pairs)} dead letter(s).{capped_note(pairs, mode)}"
    audit = Audited(engine, console, "delete", targets=pairs, extra={"mode": mode, "renderedAt": args.now})
    return audit.finish(ok=done > 0, message=message, now=args.now, rows=rows,
                        counts={"matched": len(pairs), "deleted": done})


def cancel(engine: Engine, args: argparse.Namespace, console: Console) -> Result:
    pairs = explicit_targets(args)
    console.confirm(f"Cancel {len(pairs):,} job(s)?", yes=args.yes)
    reason = f"cancelled by {console.user} from the CLI"
    return _per_job(engine, console, "cancel", pairs, args.now,
                    lambda q, i: _outcome(engine.controller(q).cancel(i, reason=reason), "cancelled",
                                          "not cancelled: no such pending or active job"))


def promote(engine: Engine, args: argparse.Namespace, console: Console) -> Result:
    pairs = explicit_targets(args)
    return _per_job(engine, console, "promote", pairs, args.now,
                    lambda q, i: _outcome(engine.controller(q).promote(i), "promoted: it runs now",
                                          "not promoted: the job is not delayed"))


def _per_job(engine: Engine, console: Console, action: str, pairs: Pairs, now: int,
             act: Callable[[str, str], tuple[bool, str]]) -> Result:
    rows = []
    for queue, job_id in pairs:
        try:
            ok, message = act(queue, job_id)
        except (JobNotFound, InvalidState) as exc:
            ok, message = False, str(exc)
        rows.append(_row(queue, job_id, ok, message))
    done = sum(r["ok"] for r in rows)
    verb = {"cancel": "Cancelled", "promote": "Promoted"}[action]
    single = pairs[0][0] if len({q for q, _ in pairs}) == 1 else None
    audit = Audited(engine, console, action, queue=single, targets=pairs)
    return audit.finish(ok=done > 0, message=f"{verb} {done} of {len(pairs)} job(s).", now=now, rows=rows,
                        counts={"matched": len(pairs), "done": done})


def pause(engine: Engine, args: argparse.Namespace, console: Console) -> Result:
    return _set_paused(engine, args, console, True)


def resume(engine: Engine, args: argparse.Namespace, console: Console) -> Result:
    return _set_paused(engine, args, console, False)


def _set_paused(engine: Engine, args: argparse.Namespace, console: Console, paused: bool) -> Result:
    """A queue (``emails``) or a cron/schedule (``cron:nightly``, ``schedule:report``)."""
    verb, action = ("paused", "pause") if paused else ("resumed", "resume")
    kind, sep, name = args.target.partition(":")
    if sep:
        if kind not in SCHEDULER_CONTROL or not name:
            raise UsageProblem(f"{args.target!r}: write a queue name, cron:NAME or schedule:NAME.")
        try:
            set_paused(engine, kind, name, paused, now=args.now)
        except UnknownSchedule as exc:
            raise UsageProblem(str(exc)) from exc
        label = f"{kind} {name}"
        audit = Audited(engine, console, action, extra={"target": label, "kind": kind})
        return audit.finish(ok=True, message=f"{label[0].upper()}{label[1:]} {verb}.", now=args.now,
                            counts={"paused": paused})
    queue = args.target
    require_queue(engine, queue)
    controller = engine.controller(queue)
    controller.pause() if paused else controller.resume()
    audit = Audited(engine, console, action, queue=queue, extra={"target": f"queue {queue}"})
    return audit.finish(ok=True, message=f"Queue {queue} {verb}.", now=args.now, counts={"paused": paused})


def purge(engine: Engine, args: argparse.Namespace, console: Console) -> Result:
    """Delete a queue's waiting, delayed and blocked jobs (active ones finish), at most
    ``ACTION_CAP`` per command: the engine's bounded drain."""
    queue = args.queue_name
    require_queue(engine, queue)
    pending = engine.durable.count(job_namespace(queue))
    if pending:
        console.confirm(f"Delete up to {min(pending, ACTION_CAP):,} pending job(s) of queue {queue} for good?",
                        yes=args.yes)
    removed = engine.controller(queue).drain(limit=ACTION_CAP)
    message = f"Purged {removed} pending job(s) of queue {queue}."
    if removed >= ACTION_CAP:
        message += f" This command deletes at most {ACTION_CAP:,}; more may wait: run it again."
    audit = Audited(engine, console, "purge", queue=queue, extra={"target": f"queue {queue}", "removed": removed})
    return audit.finish(ok=removed > 0, message=message, now=args.now, counts={"purged": removed})


def require_queue(engine: Engine, queue: str) -> None:
    """An error for a queue that is nowhere (no record, no job, no dead letter): pausing
    it would invent one, as the board's 404 says."""
    try:
        known = engine.durable.get("queue", queue) is not None or queue_holds_jobs(engine, queue)
    except OqronError as exc:
        raise UsageProblem(str(exc)) from exc
    if not known:
        raise UsageProblem(f"No queue named {queue!r} in {engine.config.project}/{engine.config.environment}: "
                           "no queue record, job or dead letter.")


def _row(queue: str, job_id: str, ok: bool, message: str) -> dict[str, Any]:
    return {"queue": queue, "id": job_id, "ok": ok, "message": message}


def _outcome(done: bool, yes: str, no: str) -> tuple[bool, str]:
    return done, yes if done else no


def _filters(args: argparse.Namespace) -> str:
    given = [f"{k}={v}" for k in ("queue", "fingerprint", "search") if (v := getattr(args, k, None))]
    if getattr(args, "since", None) is not None:
        given.append("since=" + iso(args.since))
    return f" matching {', '.join(given)}" if given and args.all else (" (all)" if args.all else "")
