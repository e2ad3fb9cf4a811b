"""The CLI's arguments: one subcommand per command, shared options, and the argparse types
that turn bad input into a usage error (exit status 2) naming what was wrong."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from ..clock import now_ms
from ..config import MODES
from ..errors import ConfigurationError
from ..queues.queue import check_queue_name
from ..queues.runs import RUN_STATUSES
from .history import add_command as add_history
from .operations import add_ops_command
from .replay import add_replay_command
from .trace import add_command as add_trace

#: The most rows a listing prints (the board's pages and exports are bounded too).
LIMIT_CAP = 1000
DEFAULT_LIMIT = 50
RUN_MODULES = ("queue", "worker", "topic", "cron", "schedule", "webhook")
_DURATION = re.compile(r"^(\d{1,9})([smhdw])$")
_UNIT_MS = {"s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, "w": 604_800_000}


def since_ms(text: str) -> int:
    """``15m``, ``2h``, ``7d`` (ago) or an ISO 8601 time (UTC unless it says otherwise)."""
    match = _DURATION.match(text.strip())
    if match:
        return now_ms() - int(match.group(1)) * _UNIT_MS[match.group(2)]
    try:
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration (30s, 15m, 2h, 7d, 1w) or an ISO time (2026-12-04T10:00:00Z)") from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return int(when.timestamp() * 1000)


def limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= LIMIT_CAP:
        raise argparse.ArgumentTypeError(f"must be an integer from 1 to {LIMIT_CAP:,}, got {text!r}")
    return value


def queue_name(text: str) -> str:
    try:
        return check_queue_name(text)
    except ConfigurationError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def short_text(label: str, longest: int = 200) -> Callable[[str], str]:
    def parse(text: str) -> str:
        if not text.strip() or len(text) > longest or not text.isprintable():
            raise argparse.ArgumentTypeError(f"{label} must be 1-{longest} printable characters")
        return text

    return parse


def common_options(*, connection_options: bool) -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument("--json", action="store_true", help="print one JSON document (stable field names)")
    parent.add_argument("--project", type=short_text("--project", 100), help="another project than configured")
    parent.add_argument("--environment", type=short_text("--environment", 100),
                        help="another environment than configured")
    if connection_options:
        where = parent.add_argument_group("connection (default: the OQRON_* variables)")
        where.add_argument("--mode", choices=MODES, help="OQRON_MODE")
        where.add_argument("--database-url", help="OQRON_DATABASE_URL (prefer the variable: argv is visible in ps)")
        where.add_argument("--redis-url", help="OQRON_REDIS_URL")
        parent.add_argument("--log-level", choices=("debug", "info", "warning", "error"), default="error",
                            help="the engine's log lines on stderr (default: errors only)")
    return parent


def add_commands(sub: Any, *, connection_options: bool) -> None:
    """Add every command to an argparse subparsers object (``python -m oqronkit``'s, or
    ``manage.py oqron``'s)."""
    common = [common_options(connection_options=connection_options)]

    def command(name: str, help: str) -> argparse.ArgumentParser:
        parser: argparse.ArgumentParser = sub.add_parser(name, help=help, description=help, parents=common)
        return parser

    queues = command("queues", "queues with their counts, pause state and workers")
    queues.add_argument("--queue", type=queue_name, help="only this queue")

    runs = command("runs", "runs, newest first")
    runs.add_argument("--status", choices=RUN_STATUSES)
    runs.add_argument("--module", choices=RUN_MODULES)
    runs.add_argument("--name", type=short_text("--name", 100), help="a queue's, cron's or topic's name")
    runs.add_argument("--queue", type=queue_name, help="a queue's runs (the same as --name QUEUE)")
    runs.add_argument("--worker", type=short_text("--worker"), help="one worker's runs (its id)")
    runs.add_argument("--job", type=short_text("--job"), help="one job's runs (its id)")
    runs.add_argument("--search", type=short_text("--search"), help="in the error message (failed runs by default)")
    _listing(runs)

    dead = command("dead", "dead letters, newest first")
    dead.add_argument("--groups", action="store_true", help="failure groups (by error fingerprint) instead")
    _dead_filters(dead)
    _listing(dead, since=False)

    command("schedules", "crons and schedules with their pause state and next fire").add_argument(
        "--name", type=short_text("--name", 100), help="only this cron or schedule")

    command("planes", "where the hot plane disagrees with the durable plane, per queue (exit 1 if it does)"
            ).add_argument("--queue", type=queue_name, help="only this queue")
    command("reconcile", "signal again every waiting or delayed job the hot plane lost")
    add_trace(command("trace", "one correlation id's jobs, runs, messages, log lines and audit entries, nested"))
    add_history(command, short_text)

    for name, help in (("retry", "bring dead letters back with fresh attempts"),
                       ("delete", "delete dead letters for good")):
        action = command(name, help)
        action.add_argument("targets", nargs="*", metavar="QUEUE:JOB_ID", help="the dead letters")
        action.add_argument("--all", action="store_true",
                            help=f"every dead letter matching the filters (at most {LIMIT_CAP:,} per command)")
        _dead_filters(action)
        _yes(action)

    for name, help in (("cancel", "cancel waiting, delayed or active jobs"), ("promote", "run delayed jobs now")):
        action = command(name, help)
        action.add_argument("targets", nargs="+", metavar="QUEUE:JOB_ID")
        if name == "cancel":
            _yes(action)

    for name, help in (("pause", "stop workers claiming a queue's jobs, or a cron/schedule firing"),
                       ("resume", "undo pause")):
        command(name, help).add_argument("target", type=short_text("the target", 200),
                                         metavar="QUEUE|cron:NAME|schedule:NAME")

    add_ops_command(command, queue_name, short_text, limit, DEFAULT_LIMIT, since_ms)
    add_replay_command(command)

    purge = command("purge", f"delete a queue's pending jobs for good (at most {LIMIT_CAP:,} per command)")
    purge.add_argument("queue_name", type=queue_name, metavar="QUEUE")
    _yes(purge)


def _listing(parser: argparse.ArgumentParser, *, since: bool = True) -> None:
    if since:
        parser.add_argument("--since", type=since_ms, help="started within: 15m, 2h, 7d or an ISO time")
    parser.add_argument("--limit", type=limit, default=DEFAULT_LIMIT, help=f"rows, 1-{LIMIT_CAP:,}")


def _dead_filters(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--queue", type=queue_name)
    parser.add_argument("--fingerprint", type=short_text("--fingerprint", 100), help="one failure group")
    parser.add_argument("--search", type=short_text("--search"), help="in the last error's message")
    parser.add_argument("--since", type=since_ms, help="died within: 15m, 2h, 7d or an ISO time")


def _yes(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", "-y", action="store_true", help="do not ask (needed when not on a terminal)")
