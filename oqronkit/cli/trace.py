"""``oqron trace <correlation id>``: the timeline the board's trace page shows, through
the engine's API (``Engine.trace``), one row per entry, depth first, indented by cause."""

from __future__ import annotations

import argparse

from ..engine import Engine
from ..trace import DEFAULT_LIMIT
from .output import Result

TRACE_COLUMNS = ("offset_ms", "entry", "name", "status", "duration_ms", "id")
#: The most entries ``--limit`` may ask for, per table.
MAX_LIMIT = 100_000


def limit(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to {MAX_LIMIT:,}, got {text!r}")
    return int(text)


def add_command(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("correlation_id", metavar="CORRELATION_ID")
    parser.add_argument("--limit", type=limit, default=DEFAULT_LIMIT,
                        help=f"the most entries read per table (default {DEFAULT_LIMIT:,})")


def trace(engine: Engine, args: argparse.Namespace) -> Result:
    """Every entry of one correlation id; exit status 1 when nothing carries it."""
    found = engine.trace(args.correlation_id, limit=args.limit)
    start = found.started_at or 0
    rows = [{"at": e.at, "offset_ms": e.at - start, "entry": _indent(e.depth) + e.kind, "name": e.title,
             "status": e.status, "duration_ms": e.duration_ms, "id": e.id, "kind": e.kind, "depth": e.depth,
             "parent": e.parent, "key": e.key, "ended_at": e.ended_at, "ref": e.ref} for e in found.entries]
    result = Result("trace", rows, TRACE_COLUMNS, ok=bool(rows),
                    extra={"correlation_id": found.correlation_id, "truncated": found.truncated})
    if not rows:
        scope = f"{engine.config.project}/{engine.config.environment}"
        result.message = f"nothing in {scope} carries {args.correlation_id!r}"
    if found.truncated:
        result.notes.append(f"stopped at {args.limit:,} entries per table (--limit)")
    return result


def _indent(depth: int) -> str:
    """``└ `` under the entry's cause, two spaces per further level (a table strips plain spaces)."""
    return "" if depth == 0 else "  " * (depth - 1) + "└ "
