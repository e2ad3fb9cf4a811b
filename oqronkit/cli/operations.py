"""``oqron ops``: tracked bulk operations from the command line, through the engine's
:class:`~oqronkit.operations.Operations` as the board does. ``list``, ``show ID`` (and
``--wait``: until it finishes), ``create retry|delete`` over the dead letters' filters,
``create replay --handler NAME`` over a handler's runs, ``create resend`` over the
webhook delivery log's filters (no cap: the workers' leader does it in chunks),
``pause|resume|cancel ID``; every change audited with the OS user as the actor (source
``cli``)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..clock import now_ms
from ..engine import Engine
from ..operations import ACTIONS, DEAD_LETTER_ACTIONS, Operation, Operations
from ..queues.runs import RUN_STATUSES
from .actions import Audited
from .console import Console, UsageProblem
from .output import Result

VERBS = ("list", "show", "create", "pause", "resume", "cancel")
COLUMNS = ("id", "name", "status", "percent", "done", "failed", "planned", "created_by", "created_at")
WAIT_POLL_S = 1.0
DEFAULT_RESEND_SINCE_MS = 24 * 3600 * 1000  # the delivery log's default window


def add_ops_command(command: Any, queue_name: Any, short_text: Any, limit: Any, default_limit: int,
                    since_ms: Any) -> None:
    """The ``ops`` command's arguments (``command`` adds a subcommand with the shared options)."""
    ops = command("ops", "tracked bulk operations: list, show, create retry|delete|replay|resend, pause, resume, "
                         "cancel")
    ops.add_argument("verb", choices=VERBS)
    ops.add_argument("target", nargs="?", metavar="ID|ACTION",
                     help=f"the operation's id; for create, the action ({' or '.join(ACTIONS)})")
    ops.add_argument("--status", choices=("running", "paused", "cancelled", "done", "failed"), help="list only")
    ops.add_argument("--queue", type=queue_name, help="create: one queue's dead letters (default: every queue)")
    ops.add_argument("--fingerprint", type=short_text("--fingerprint", 100), help="create: one failure group")
    ops.add_argument("--search", type=short_text("--search"), help="create: in the last error's message")
    ops.add_argument("--name", type=short_text("--name"), help="create: a name (default: one from the filter)")
    ops.add_argument("--handler", type=queue_name, help="create replay: the replayable handler (queue) whose runs")
    ops.add_argument("--run-status", choices=(*RUN_STATUSES, "any"),
                     help="create replay: the runs' status (default completed); resend: the attempts' (default any)")
    ops.add_argument("--last", type=int, help="create replay: only the newest N runs (default: every one)")
    ops.add_argument("--since", type=since_ms,
                     help="create replay/resend: started within 15m, 2h, 7d or since an ISO time (resend: 24h)")
    ops.add_argument("--webhook", type=short_text("--webhook", 100), help="create resend: one webhook's deliveries")
    ops.add_argument("--endpoint", type=short_text("--endpoint", 64), help="create resend: one endpoint's")
    ops.add_argument("--event", type=short_text("--event", 200), help="create resend: one event's")
    ops.add_argument("--wait", action="store_true", help="show/create: until the operation finishes")
    ops.add_argument("--timeout", type=float, default=3600.0, help="--wait at most this many seconds")
    ops.add_argument("--limit", type=limit, default=default_limit, help="list: rows")
    ops.add_argument("--yes", "-y", action="store_true", help="do not ask (needed when not on a terminal)")


def ops(engine: Engine, args: argparse.Namespace, console: Console) -> Result:
    operations = Operations(engine)
    if args.verb == "list":
        found, _cursor = operations.list(status=args.status, limit=args.limit)
        return Result("ops", [_row(op) for op in found], COLUMNS)
    if not args.target:
        raise UsageProblem(f"ops {args.verb} needs {'an action' if args.verb == 'create' else 'an operation id'}.")
    if args.verb == "create":
        return _create(engine, operations, args, console)
    if args.verb == "show":
        op = _wait(operations, args.target, args.timeout) if args.wait else operations.get(args.target)
        return _shown(op, ok=op.status != "failed")
    op = getattr(operations, args.verb)(args.target, user=console.user)
    audit = Audited(engine, console, f"operation-{args.verb}", extra={"operation": op.id, "target": op.name})
    return audit.finish(ok=True, message=f"Operation {op.id} is {op.status}.", now=args.now, counts=op.to_dict())


def _create(engine: Engine, operations: Operations, args: argparse.Namespace, console: Console) -> Result:
    if args.target not in ACTIONS:
        raise UsageProblem(f"ops create needs an action: {' or '.join(ACTIONS)}, not {args.target!r}.")
    if args.target not in DEAD_LETTER_ACTIONS:
        op = _create_walk(operations, args, console)
        what = f"{op.planned:,} to look at" if op.planned is not None else "counted as it goes"
        audit = Audited(engine, console, f"operation-{op.action}", queue=args.handler,
                        extra={"operation": op.id, "filter": op.filter.to_value(), "target": op.name,
                               "replaySet": op.replay_set})
        return _finish(operations, audit, op, f"Operation {op.id} started: {op.name} ({what}).", args)
    if args.target == "delete":
        where = f" of queue {args.queue}" if args.queue else ""
        console.confirm(f"Delete every matching dead letter{where} that died by now, for good?", yes=args.yes)
    op = operations.create(args.target, user=console.user, source="cli", queue=args.queue or "",
                           fingerprint=args.fingerprint or "", search=args.search or "", died_to=args.now,
                           name=args.name or "")
    message = f"Operation {op.id} started: {op.name}, {op.planned:,} dead letter(s) to look at."
    audit = Audited(engine, console, f"operation-{op.action}", queue=args.queue,
                    extra={"operation": op.id, "filter": op.filter.to_value(), "target": op.name})
    return _finish(operations, audit, op, message, args)


def _create_walk(operations: Operations, args: argparse.Namespace, console: Console) -> Operation:
    """A replay of a handler's runs or a resend of the delivery log's deliveries."""
    status = None if args.run_status in (None, "any") else args.run_status
    if args.target == "replay":
        if not args.handler:
            raise UsageProblem("ops create replay needs --handler: the replayable handler whose runs to replay.")
        if args.last is not None and args.last < 1:
            raise UsageProblem(f"--last must be 1 or more, got {args.last}.")
        return operations.create_replay(user=console.user, handler=args.handler,
                                        status="completed" if args.run_status is None else status,
                                        started_from=args.since, last=args.last, source="cli",
                                        name=args.name or "")
    since = args.since if args.since is not None else now_ms() - DEFAULT_RESEND_SINCE_MS
    return operations.create_resend(user=console.user, since=since, webhook=args.webhook or "",
                                    endpoint=args.endpoint or "", event=args.event or "", status=status or "",
                                    source="cli", name=args.name or "")


def _finish(operations: Operations, audit: Audited, op: Operation, message: str, args: argparse.Namespace) -> Result:
    """The audited result of a create, after waiting for the operation with ``--wait``."""
    result = audit.finish(ok=True, message=message, now=args.now, counts=op.to_dict())
    if args.wait:
        done = _wait(operations, op.id, args.timeout)
        result.extra.update(done.to_dict())
        result.message = f"{message} {_summary(done)}"
        result.ok = done.status == "done"
    return result


def _wait(operations: Operations, op_id: str, timeout: float) -> Operation:
    """Poll until the operation is finished; a timeout is an error naming where it stands."""
    deadline = time.monotonic() + timeout
    while True:
        op = operations.get(op_id)
        if op.finished:
            return op
        if time.monotonic() >= deadline:
            raise UsageProblem(f"Operation {op_id} still {op.status} after {timeout:g} s: {_summary(op)}")
        time.sleep(WAIT_POLL_S)


def _summary(op: Operation) -> str:
    p = op.progress
    of = f" of {op.planned:,}" if op.planned is not None and op.target == "dead_letters" else ""
    return f"{op.status}: {p.done:,} done, {p.failed:,} failed, {p.skipped:,} skipped, {p.scanned:,}{of} looked at."


def _shown(op: Operation, *, ok: bool) -> Result:
    return Result("ops", [_row(op)], COLUMNS, message=f"{op.name}: {_summary(op)}", ok=ok, extra=op.to_dict())


def _row(op: Operation) -> dict[str, Any]:
    return {"id": op.id, "name": op.name, "status": op.status, "percent": op.percent, "done": op.progress.done,
            "failed": op.progress.failed, "planned": op.planned, "created_by": op.created_by,
            "created_at": op.created_at}
