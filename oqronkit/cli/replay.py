"""``replay``: run past runs' input again and diff the outputs, the regression check of a
deploy pipeline. ``--wait`` exits 0 only when every replay completed with the original's
output, 1 when any output differs or any replay failed (or the wait timed out). A list
of run ids (``--run``, ``--run-ids-file``) longer than ``MAX_REPLAYS``, or a ``--last``
above it, becomes a tracked replay operation, which the workers' leader runs in chunks."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from ..clock import now_ms
from ..engine import Engine
from ..errors import InvalidRecord
from ..operations import Operation, Operations
from ..operations.replaying_ids import replay_or_track
from ..replay import MAX_REPLAYS, ReplaySet, read_replay_set, replay
from .console import Console, UsageProblem
from .output import Result

COLUMNS = ("queue", "original", "replay", "state", "original_ms", "replay_ms", "changes")
#: How often --wait reads the set again.
POLL_SECONDS = 0.5


def add_replay_command(command: Any) -> None:
    """The ``replay`` command's parser (``command`` makes a subparser with the common options)."""
    parser: argparse.ArgumentParser = command(
        "replay", "replay past runs' input as new jobs and diff the outputs (exit 1 when any differs or fails)")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--handler", help="replay this handler's (queue's) last runs")
    what.add_argument("--run", action="append", metavar="RUN_ID", help="replay this run (repeatable)")
    what.add_argument("--run-ids-file", metavar="PATH",
                      help=f"replay the run ids in this file, one a line ('-': standard input); more than "
                           f"{MAX_REPLAYS:,} become a tracked operation")
    what.add_argument("--set", metavar="SET_ID", help="read (or --wait for) an existing replay set")
    parser.add_argument("--last", type=int, default=100,
                        help=f"with --handler: how many completed runs; more than {MAX_REPLAYS:,}: a tracked operation")
    parser.add_argument("--page", type=int, default=1,
                        help="with --set: a tracked replay's page of pairs (1,000 each); the summary covers all")
    parser.add_argument("--wait", action="store_true", help="wait until every replay finished")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds --wait waits at most (default 600)")


def replay_command(engine: Engine, args: argparse.Namespace, console: Console) -> Result:
    if args.page < 1:
        raise UsageProblem(f"--page must be 1 or more, got {args.page}.")
    set_id = args.set or _start(engine, args, console)
    found = _wait(engine, set_id, args.timeout, args.page) if args.wait else read_replay_set(engine, set_id,
                                                                                              page=args.page)
    if found is None:
        raise UsageProblem(f"No replay set {set_id!r} in this project and environment.")
    return _result(found, waited=args.wait, created=not args.set)


def _start(engine: Engine, args: argparse.Namespace, console: Console) -> str:
    """Replay what the arguments select, audited: at once up to ``MAX_REPLAYS`` runs, else
    as a tracked operation (an id list, or a handler's ``--last`` N); the set's id."""
    from .actions import Audited  # actions imports the reads the other commands share

    if args.handler is not None and args.last < 1:
        raise UsageProblem(f"--last must be 1 or more, got {args.last}.")
    run_ids = _read_ids(args.run_ids_file) if args.run_ids_file else args.run or ()
    op: Operation | None = None
    if run_ids:
        try:
            set_id, op = replay_or_track(Operations(engine), user=console.user, run_ids=run_ids, source="cli")
        except InvalidRecord as exc:
            raise UsageProblem(str(exc)) from exc
    elif args.last > MAX_REPLAYS:
        op = Operations(engine).create_replay(user=console.user, handler=args.handler, last=args.last, source="cli")
        assert op.replay_set is not None, "a replay operation has its set"
        set_id = op.replay_set
    else:
        set_id = replay(engine, handler=args.handler, last=args.last, user=console.user, source="cli")
    if op is not None:
        Audited(engine, console, "operation-replay", queue=args.handler, extra={
            "operation": op.id, "replaySet": set_id, "filter": op.filter.to_value(), "target": op.name}).finish(
            ok=True, message=f"Operation {op.id} started: {op.name} (replay set {set_id}).", now=args.now)
        return set_id
    created = read_replay_set(engine, set_id)
    assert created is not None, "a replay set is readable once created"
    Audited(engine, console, "replay", targets=[(p.queue, p.job_id) for p in created.pairs],
            extra={"replaySet": set_id, "handlers": created.record.get("handlers", [])}).finish(
        ok=True, message=f"Replay set {set_id}: {len(created.pairs)} run(s) replayed.", now=args.now)
    return set_id


def _read_ids(path: str) -> list[str]:
    """The run ids of a file (or standard input for '-'), one a line, blank lines skipped."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageProblem(f"Cannot read the run ids from {path}: {exc}") from exc
    ids = [line.strip() for line in text.splitlines() if line.strip()]
    if not ids:
        raise UsageProblem(f"No run ids in {path}: one a line.")
    return ids


def _wait(engine: Engine, set_id: str, timeout: float, page: int = 1) -> ReplaySet | None:
    deadline = time.monotonic() + timeout
    while True:
        found = read_replay_set(engine, set_id, page=page)
        if found is None or found.done or time.monotonic() >= deadline:
            return found
        time.sleep(POLL_SECONDS)


def _result(found: ReplaySet, *, waited: bool, created: bool) -> Result:
    rows = [{"queue": p.queue, "original": p.original_id, "replay": (p.replay or {}).get("id"), "state": p.state,
             "original_ms": (p.original or {}).get("durationMs"), "replay_ms": (p.replay or {}).get("durationMs"),
             "changes": len(p.changes)} for p in found.pairs]
    if found.done:
        message, ok = f"Replay set {found.id}: {found.summary_text()}.", found.ok
    elif waited:
        message, ok = f"Replay set {found.id}: timed out waiting; {found.summary_text()}.", False
    else:
        message = f"Replay set {found.id}: {found.summary_text()} (pass --wait to wait for the outcome)."
        ok = created  # started is success; reading an unfinished set is not a verdict
    extra = {"replay_set": found.describe(), "at": now_ms()}
    return Result("replay", rows, COLUMNS, message=message, ok=ok, extra=extra, shown=20)
