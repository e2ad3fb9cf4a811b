"""``oqron ops``: tracked bulk operations from the command line, through the engine's
:class:`~oqronkit.operations.Operations` as the board does. ``list``, ``show ID`` (and
``--wait``: until it finishes), ``create retry|delete`` over the dead letters' filters
(no cap: the workers' leader does it in chunks), ``pause|resume|cancel ID``; every
change audited with the OS user as the actor (source ``cli``)."""

from __future__ import annotations

import argparse
import time
from typing import Any

from ..engine import Engine
from ..operations import ACTIONS, Operation, Operations
from .actions import Audited
from .console import Console, UsageProblem
from .output import Result

VERBS = ("list", "show", "create", "pause", "resume", "cancel")
COLUMNS = ("id", "name", "status", "percent", "done", "failed", "planned", "created_by", "created_at")
WAIT_POLL_S = 1.0


def add_ops_command(command: Any, queue_name: Any, short_text: Any, limit: Any, default_limit: int) -> None:
    """The ``ops`` command's arguments (``command`` adds a subcommand with the shared options)."""
    ops = command("ops", "tracked bulk operations: list, show, create retry|delete, pause, resume, cancel")
    ops.add_argument("verb", choices=VERBS)
    ops.add_argument("target", nargs="?", metavar="ID|ACTION",
                     help=f"the operation's id; for create, the action ({' or '.join(ACTIONS)})")
    ops.add_argument("--status", choices=("running", "paused", "cancelled", "done", "failed"), help="list only")
    ops.add_argument("--queue", type=queue_name, help="create: one queue's dead letters (default: every queue)")
    ops.add_argument("--fingerprint", type=short_text("--fingerprint", 100), help="create: one failure group")
    ops.add_argument("--search", type=short_text("--search"), help="create: in the last error's message")
    ops.add_argument("--name", type=short_text("--name"), help="create: a name (default: one from the filter)")
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
    if args.target == "delete":
        where = f" of queue {args.queue}" if args.queue else ""
        console.confirm(f"Delete every matching dead letter{where} that died by now, for good?", yes=args.yes)
    op = operations.create(args.target, user=console.user, source="cli", queue=args.queue or "",
                           fingerprint=args.fingerprint or "", search=args.search or "", died_to=args.now,
                           name=args.name or "")
    message = f"Operation {op.id} started: {op.name}, {op.planned:,} dead letter(s) to look at."
    audit = Audited(engine, console, f"operation-{op.action}", queue=args.queue,
                    extra={"operation": op.id, "filter": op.filter.to_value(), "target": op.name})
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
    return (f"{op.status}: {p.done:,} done, {p.failed:,} failed, {p.skipped:,} skipped, "
            f"{p.scanned:,} of {op.planned:,} looked at.")


def _shown(op: Operation, *, ok: bool) -> Result:
    return Result("ops", [_row(op)], COLUMNS, message=f"{op.name}: {_summary(op)}", ok=ok, extra=op.to_dict())


def _row(op: Operation) -> dict[str, Any]:
    return {"id": op.id, "name": op.name, "status": op.status, "percent": op.percent, "done": op.progress.done,
            "failed": op.progress.failed, "planned": op.planned, "created_by": op.created_by,
            "created_at": op.created_at}
