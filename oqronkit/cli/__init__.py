"""The operator CLI: ``python -m oqronkit <command>`` (from ``OQRON_*`` variables and
flags) and ``python manage.py oqron <command>`` (from Django's settings) share it.

Commands: queues, runs, dead, schedules, planes, trace, history (reads); retry, delete, cancel,
promote, pause, resume, purge, reconcile (actions, audited); ops (tracked bulk operations:
list, show, create, pause, resume, cancel); replay (past runs again, their outputs diffed).
Human tables by default, ``--json`` for one JSON document. Exit status: 0 done, 1 an error
or nothing done, 2 a usage error (including a destructive command without ``--yes`` where
nobody can confirm it).
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable, Sequence
from typing import Any

from ..clock import now_ms
from ..config import config_from_env, config_from_mapping
from ..engine import Engine
from ..errors import BackendUnavailable, ConfigurationError, OqronError
from . import actions, history, planes, reads, trace
from .args import LIMIT_CAP, add_commands
from .console import Console, NotConfirmed, UsageProblem
from .operations import ops
from .output import Result, render_human, render_json
from .replay import replay_command

__all__ = ["COMMANDS", "Console", "add_commands", "build_parser", "execute", "main"]

Handler = Callable[[Engine, argparse.Namespace, Console], Result]
COMMANDS: dict[str, Handler] = {
    "queues": lambda engine, args, _console: reads.queues(engine, args),
    "runs": lambda engine, args, _console: reads.runs(engine, args),
    "dead": lambda engine, args, _console: reads.dead(engine, args),
    "schedules": lambda engine, args, _console: reads.schedules(engine, args),
    "trace": lambda engine, args, _console: trace.trace(engine, args),
    "history": lambda engine, args, _console: history.history(engine, args),
    "retry": actions.retry, "delete": actions.delete, "cancel": actions.cancel, "promote": actions.promote,
    "pause": actions.pause, "resume": actions.resume, "purge": actions.purge, "ops": ops,
    "planes": lambda engine, args, _console: planes.planes(engine, args), "reconcile": planes.reconcile,
    "replay": replay_command,
}


def build_parser(prog: str, *, connection_options: bool) -> argparse.ArgumentParser:
    """The whole CLI's parser (``manage.py oqron`` takes its connection from settings)."""
    parser = argparse.ArgumentParser(prog=prog, description="Inspect and operate oqronkit queues.")
    add_commands(parser.add_subparsers(dest="command", required=True, metavar="COMMAND"),
                 connection_options=connection_options)
    return parser


def execute(args: argparse.Namespace, engine: Engine, console: Console) -> int:
    """Run the parsed command on ``engine`` and print its result; the exit status.
    Every engine error becomes one line on stderr, never a traceback."""
    args.now = now_ms()
    args.limit_cap = LIMIT_CAP
    try:
        if args.project or args.environment:
            engine = engine.scoped(project=args.project or engine.config.project,
                                   environment=args.environment or engine.config.environment)
        result = COMMANDS[args.command](engine, args, console)
    except UsageProblem as exc:
        return fail(console, args, str(exc), 2)
    except NotConfirmed as exc:
        return fail(console, args, str(exc), 1)
    except BackendUnavailable as exc:
        return fail(console, args, f"cannot reach a backend: {exc}", 1)
    except ConfigurationError as exc:
        return fail(console, args, str(exc), 2)
    except OqronError as exc:
        return fail(console, args, str(exc), 1)
    if args.json:
        render_json(result, console.stdout)
    else:
        render_human(result, console.stdout, now=args.now)
    return 0 if result.ok else 1


def fail(console: Console, args: argparse.Namespace, message: str, code: int) -> int:
    """An error: one line on stderr; with ``--json`` also ``{"ok": false, "error": ...}`` on stdout."""
    message = " ".join(message.split())  # a driver's message spans lines; an error is one line
    console.stderr.write(f"error: {message}\n")
    if getattr(args, "json", False):
        render_json(Result(args.command, ok=False, extra={"error": message, "exit_code": code}), console.stdout)
    return code


def engine_from(args: argparse.Namespace) -> Engine:
    """An engine from ``OQRON_*`` and the connection flags (flags win)."""
    overrides: dict[str, Any] = {k: v for k in ("mode", "database_url", "redis_url")
                                 if (v := getattr(args, k, None))}
    if overrides.get("mode") in ("memory", "redis") and "database_url" not in overrides:
        overrides["database_url"] = None
    base = config_from_env()
    config = config_from_mapping(overrides, base=base) if overrides else base
    if config.mode == "memory":
        raise ConfigurationError("OQRON mode 'memory' keeps jobs inside one process: a command run from another "
                                 "process sees none. Use the sqlite, postgres or redis-postgres settings of the "
                                 "workers.")
    if config.mode == "sqlite" and not os.path.exists(config.sqlite_path):
        # Opening would create an empty database: an operator in the wrong directory would see "(none)".
        raise BackendUnavailable(f"no SQLite database at {os.path.abspath(config.sqlite_path)} "
                                 "(check OQRON_DATABASE_URL or --database-url, and the working directory).")
    return Engine(config)


def main(argv: Sequence[str] | None = None, *, console: Console | None = None,
         prog: str = "python -m oqronkit") -> int:
    """``python -m oqronkit <command> ...`` without Django; the exit status."""
    parser = build_parser(prog, connection_options=True)
    args = parser.parse_args(argv)
    return run(args, console or Console())


def run(args: argparse.Namespace, console: Console, engine: Engine | None = None) -> int:
    """Run parsed arguments; ``engine`` is built from the environment when not given
    (and then closed)."""
    own = engine is None
    # Only errors by default: a driver's connection warnings would repeat our one error line.
    level = getattr(args, "log_level", "error").upper()
    logging.basicConfig(level=level, stream=console.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("psycopg").setLevel(level)  # psycopg sets its own WARNING level
    try:
        engine = engine if engine is not None else engine_from(args)
    except ConfigurationError as exc:
        return fail(console, args, f"bad configuration: {exc}", 2)
    except BackendUnavailable as exc:
        return fail(console, args, f"cannot reach a backend: {exc}", 1)
    try:
        return execute(args, engine, console)
    finally:
        if own:
            engine.close()
