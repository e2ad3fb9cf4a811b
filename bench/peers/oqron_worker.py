"""A worker for our engine built from ``WorkerProcess`` directly, for what the CLI
cannot say: ``--no-record-runs`` (``WorkerProcess(record_runs=False)``).

Usage: ``python oqron_worker.py [--no-record-runs] [--concurrency N] [--no-services]`` with the
``OQRON_*`` variables set, like ``python -m oqronkit worker --import oqron_tasks``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal

import oqron_tasks

from oqronkit import get_engine
from oqronkit.config import worker_environment
from oqronkit.worker import WorkerProcess
from oqronkit.worker.affinity import pin_worker


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--no-record-runs", dest="record_runs", action="store_false")
    parser.add_argument("--concurrency", type=int, default=None)
    parser.add_argument("--no-services", dest="services", action="store_false",
                        help="diagnostics: no leader services (reconciler, rescuer, ...) in this process")
    args = parser.parse_args()
    # BENCH_LOG_LEVEL=INFO: the level `python -m oqronkit worker` runs at by default.
    logging.basicConfig(level=os.environ.get("BENCH_LOG_LEVEL", "WARNING").upper())
    engine = get_engine()
    settings = worker_environment()  # as the CLI does (OQRON_CPU_AFFINITY, default auto)
    pin_worker(settings.cpu_affinity, lock_dir=settings.cpu_lock_dir, slot=settings.worker_slot)
    process = WorkerProcess(engine, queues=[oqron_tasks.bench.name], concurrency=args.concurrency,
                            record_runs=args.record_runs, services=args.services)
    signals = {"count": 0}

    def on_signal(_signum: int, _frame: object) -> None:
        signals["count"] += 1
        if signals["count"] > 1:
            os._exit(1)
        process.request_stop()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        process.run()
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
