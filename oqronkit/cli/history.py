"""``oqron history``: the metrics history the board's charts draw, through the engine's
API (``Engine.metrics_history``), one row per bucket that had runs (``--json``: every
bucket, empty ones too, with the deploy markers)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ..engine import Engine
from ..history.buckets import ALL_KEY
from ..history.read import RANGES
from .output import Result

HISTORY_COLUMNS = ("started_at", "runs", "completed", "failed", "retries", "p50_ms", "p95_ms", "p99_ms",
                   "wait_p95_ms")


def add_command(command: Callable[[str, str], argparse.ArgumentParser], text: Callable[..., Any]) -> None:
    parser = command("history", "runs per minute, hour or day of a queue, handler or topic group, from the rollups")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--queue", type=text("--queue", 100), help="one queue's runs")
    which.add_argument("--handler", type=text("--handler", 100), help="the runs of one name (queue, cron, ...)")
    which.add_argument("--topic", type=text("--topic", 201), metavar="TOPIC/GROUP", help="one consumer group's")
    parser.add_argument("--range", choices=list(RANGES), default="24h", help="how far back (default 24h)")


def history(engine: Engine, args: argparse.Namespace) -> Result:
    """Every run when no queue, handler or topic is named."""
    kind, key = next(((k, getattr(args, k)) for k in ("queue", "handler", "topic") if getattr(args, k)),
                     ("all", ALL_KEY))
    found = engine.metrics_history(kind, key, args.range)
    rows = [{"started_at": p.start, "runs": p.runs, "completed": p.outcomes.get("completed", 0),
             "failed": p.outcomes.get("failed", 0), "retries": p.retries, "p50_ms": p.duration["p50"],
             "p95_ms": p.duration["p95"], "p99_ms": p.duration["p99"], "wait_p95_ms": p.wait["p95"],
             "outcomes": p.outcomes} for p in found.points if args.json or p.runs]
    body = found.to_json()
    result = Result("history", rows, HISTORY_COLUMNS,
                    extra={k: body[k] for k in ("kind", "key", "range", "resolution", "start", "end", "totals",
                                                "deploys")})
    result.notes.append(f"{found.resolution} buckets of {kind} {key} over {args.range}: "
                        + (", ".join(f"{n} {o}" for o, n in found.totals().items()) or "no run"))
    result.notes += [f"deploy {d.version} at {datetime.fromtimestamp(d.at / 1000, UTC).isoformat(timespec='seconds')}"
                     for d in found.deploys]
    return result
