"""Running workers from a command line: one engine process, or N under a supervisor.

Django's ``manage.py runworker`` and ``python -m oqronkit worker`` both end here. The
supervisor re-executes the same command line once per child (``--processes 1``), so
each child sets itself up exactly like a single-process worker would.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from .bounds import MAX_CONCURRENCY
from .config import child_environment, redact_url, worker_environment
from .engine import Engine
from .errors import ConfigurationError, OqronError
from .telemetry.json_logs import LOG_FORMATS, use_json_logs
from .worker import WorkerProcess
from .worker.affinity import pin_worker

if TYPE_CHECKING:
    from .telemetry.worker_metrics import WorkerMetrics

logger = logging.getLogger(__name__)
RESTART_BACKOFF = (1, 2, 5, 10, 30)


def import_modules(names: Sequence[str]) -> None:
    """Import modules that declare queues (``--import`` / ``OQRON_IMPORTS``); a module
    that cannot be imported is a ConfigurationError naming it, not a traceback."""
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            raise ConfigurationError(f"cannot import the module {name!r} (--import / OQRON_IMPORTS): {exc}") from exc


def banner(engine: Engine, process: WorkerProcess, *, processes: int = 1, cpu: int | None = None) -> str:
    cfg = engine.config
    where = redact_url(cfg.database_url) if cfg.database_url else "in-process"
    queues = ", ".join(f"{q.name} (concurrency {process.concurrency[q.name]})" for q in process.queues)
    return (
        f"oqronkit worker {process.worker_id}\n"
        f"  mode:        {cfg.mode}\n  database:    {where}\n"
        f"  redis:       {redact_url(cfg.redis_url) if cfg.redis_url else '-'}\n"
        f"  scope:       {cfg.project} / {cfg.environment}\n"
        f"  queues:      {queues or 'none declared with a handler'}\n"
        f"  processes:   {processes}{'  (burst)' if process.burst else ''}\n"
        f"  cpu:         {'pinned to ' + str(cpu) if cpu is not None else 'not pinned'}"
    )


def run_single(engine: Engine, *, queues: Sequence[str] | None, concurrency: int | None, burst: bool,
               drain_timeout: float = 30.0, quiet: bool = False, cpu_affinity: str | None = None,
               metrics_port: int | None = None, metrics_addr: str = "127.0.0.1", log_format: str = "text") -> int:
    """Run one worker process until SIGTERM/SIGINT (graceful drain) or, with ``burst``,
    until nothing is ready. A second signal exits at once; leases then lapse and the
    rescuer returns the jobs. The process pins itself to a free CPU unless
    ``cpu_affinity`` (or ``OQRON_CPU_AFFINITY``) is "off" (see worker/affinity.py).
    ``metrics_port`` serves its Prometheus series (plus the supervisor slot: one port
    per child of ``--processes``)."""
    settings = worker_environment(cpu_affinity=cpu_affinity)
    cpu = pin_worker(settings.cpu_affinity, lock_dir=settings.cpu_lock_dir, slot=settings.worker_slot)
    metrics = serve_metrics(metrics_port + settings.worker_slot, metrics_addr) if metrics_port is not None else None
    process = WorkerProcess(engine, queues=list(queues) if queues else None, concurrency=concurrency,
                            burst=burst, drain_timeout=drain_timeout, metrics=metrics)
    if log_format == "json":  # stdout stays one JSON object per line
        logger.info("%s", banner(engine, process, cpu=cpu), extra={"action": "worker.banner"})
    elif not quiet:
        print(banner(engine, process, cpu=cpu), flush=True)
    signals = {"count": 0}

    def on_signal(signum: int, _frame: object) -> None:
        signals["count"] += 1
        if signals["count"] > 1:
            logger.warning("second signal: exiting without draining", extra={"action": "worker.hard_exit"})
            os._exit(1)
        logger.info("signal %s: draining (up to %.0f s)", signal.Signals(signum).name, drain_timeout,
                    extra={"action": "worker.draining"})
        process.request_stop()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
    try:
        process.run()
    finally:
        engine.close()  # pools close their threads now, not in a slow interpreter-exit __del__
        if metrics is not None:
            metrics.close()
    return process.exit_code  # 1: a thread kept failing, or outcomes were left unrecorded


def serve_metrics(port: int, addr: str) -> WorkerMetrics:
    """A worker's Prometheus series, served on ``addr:port`` (telemetry/worker_metrics.py)."""
    from .telemetry.worker_metrics import WorkerMetrics

    metrics = WorkerMetrics()
    metrics.serve(port, addr=addr)
    return metrics


def supervise(argv: Sequence[str], processes: int) -> int:
    """Start ``processes`` children running ``argv`` and keep them running; forward
    SIGTERM/SIGINT so each drains, and return when all have exited."""
    children: dict[int, subprocess.Popen[bytes]] = {}
    restarts = [0] * processes
    stopping = threading.Event()

    def spawn(slot: int) -> None:
        children[slot] = subprocess.Popen(list(argv), env=child_environment(slot))

    def on_signal(signum: int, _frame: object) -> None:
        stopping.set()
        for child in children.values():
            if child.poll() is None:
                child.send_signal(signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    for slot in range(processes):
        spawn(slot)
    while True:
        alive = False
        for slot, child in list(children.items()):
            code = child.poll()
            if code is None:
                alive = True
                continue
            if stopping.is_set() or code in (0, 2):  # 2: a usage error, which a restart repeats
                continue
            delay = RESTART_BACKOFF[min(restarts[slot], len(RESTART_BACKOFF) - 1)]
            restarts[slot] += 1
            logger.error("worker process %d exited with %s; restarting in %d s", slot, code, delay,
                         extra={"action": "supervisor.restart"})
            time.sleep(delay)
            if not stopping.is_set():
                spawn(slot)
                alive = True
        if not alive:
            return max((c.returncode or 0) for c in children.values())
        time.sleep(0.2)


def child_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with ``--processes N`` replaced by ``--processes 1``."""
    out: list[str] = []
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg == "--processes" and i + 1 < len(argv):
            skip = True
            continue
        if arg.startswith("--processes="):
            continue
        out.append(arg)
    return [*out, "--processes", "1"]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m oqronkit worker --import myjobs [--queues a,b] [--processes N]``, or an
    operator command (``queues``, ``dead``, ``retry``...: :mod:`oqronkit.cli`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # A worker needs none of the operator commands' modules (replay, operations, webhooks...).
    parser = build_parser(operator_commands=argv[:1] != ["worker"])
    args = parser.parse_args(argv)
    if args.command != "worker":
        from . import cli

        return cli.run(args, cli.Console())
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s %(message)s")
    if args.log_format == "json":
        use_json_logs()
    if args.processes > 1:
        return supervise([sys.executable, "-m", "oqronkit", *child_argv(sys.argv[1:])], args.processes)
    from .engine import get_engine

    try:
        import_modules([*args.imports, *worker_environment(cpu_affinity=args.cpu_affinity).imports])
        return run_single(get_engine(), queues=args.queues, concurrency=args.concurrency, burst=args.burst,
                          drain_timeout=args.drain_timeout, cpu_affinity=args.cpu_affinity,
                          metrics_port=args.metrics_port, metrics_addr=args.metrics_addr, log_format=args.log_format)
    except OqronError as exc:  # a bad setting or an unreachable plane: its message, not a traceback
        parser.exit(2, f"python -m oqronkit: error: {exc}\n")


def build_parser(*, operator_commands: bool = True) -> argparse.ArgumentParser:
    """``python -m oqronkit``'s whole parser: ``worker`` and the operator commands (the CLI
    reference page is generated from it); ``worker`` alone without ``operator_commands``."""
    parser = argparse.ArgumentParser(prog="python -m oqronkit", description="Run and operate oqronkit workers.")
    sub = parser.add_subparsers(dest="command", required=True)
    work = sub.add_parser("worker", help="run the worker engine and, when elected, the scheduler services",
                          description="Run the worker engine and, when elected, the scheduler services.")
    add_worker_arguments(work)
    if operator_commands:
        from . import cli

        cli.add_commands(sub, connection_options=True)
    return parser


def bounded_int(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer from ``low`` to ``high``, or a usage error (exit 2)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be an integer from {low} to {high:,}, got {text!r}")
        return value

    return parse


def bounded_seconds(high: float) -> Callable[[str], float]:
    """An argparse type: a finite number of seconds from 0 to ``high``, or a usage error."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not 0 <= value <= high:  # NaN fails this too
            raise argparse.ArgumentTypeError(f"must be a number of seconds from 0 to {high:,.0f}, got {text!r}")
        return value

    return parse


MAX_PROCESSES = 256
MAX_DRAIN_TIMEOUT_S = 86_400


def add_worker_arguments(parser: argparse.ArgumentParser) -> None:
    """The worker's options, shared by ``manage.py runworker`` and ``python -m oqronkit
    worker``; each is checked while parsing, so a bad value exits with status 2."""
    parser.add_argument("--queues", type=lambda s: [q for q in s.split(",") if q], default=None,
                        help="comma-separated queues to consume (default: every queue with a handler)")
    parser.add_argument("--concurrency", type=bounded_int(1, MAX_CONCURRENCY), default=None,
                        help=f"override each queue's concurrency (1 to {MAX_CONCURRENCY:,})")
    parser.add_argument("--processes", type=bounded_int(1, MAX_PROCESSES), default=1,
                        help=f"engine processes under one supervisor (1 to {MAX_PROCESSES})")
    parser.add_argument("--burst", action="store_true", help="exit when no job is ready or running")
    parser.add_argument("--import", dest="imports", action="append", default=[],
                        help="module declaring queues (repeatable)")
    parser.add_argument("--drain-timeout", type=bounded_seconds(MAX_DRAIN_TIMEOUT_S),
                        default=30.0, help="seconds running jobs get to finish on SIGTERM before they are "
                                           f"returned (0 to {MAX_DRAIN_TIMEOUT_S:,})")
    parser.add_argument("--cpu-affinity", choices=["auto", "off"], default=None,
                        help="auto (default, or OQRON_CPU_AFFINITY): pin each worker process to a CPU no other "
                             "worker on this host holds; off: let the OS move its threads between CPUs")
    parser.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    parser.add_argument("--log-format", default="text", choices=LOG_FORMATS,
                        help="json: one JSON object per line (time, level, logger, message, action, exception)")
    parser.add_argument("--metrics-port", type=bounded_int(0, 65_535), default=None,
                        help="serve this worker's Prometheus counters and histograms on this port "
                             "(plus the process slot under --processes; 0 picks a free port)")
    parser.add_argument("--metrics-addr", default="127.0.0.1",
                        help="the address --metrics-port listens on (default loopback only; 0.0.0.0 for all)")
