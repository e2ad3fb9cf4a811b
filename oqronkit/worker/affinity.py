"""Pinning a worker process to one CPU that no other worker on the host holds.

A CPython process runs Python on one core at a time (the GIL), but its threads still
hop between cores: every handover of the GIL (a handler waiting on a socket, the
finisher writing a batch) wakes a thread on whichever core the scheduler picks, and a
cross-core wake-up costs an inter-processor interrupt and cold caches. With five
handler threads each doing a Redis call per job, a worker measured about 400 us of CPU
per job unpinned and about 265 us pinned (see bench/README.md), so a worker pins
itself by default.

Workers on one host spread over its CPUs without talking to each other: each takes a
non-blocking ``flock`` on ``oqron-cpu-<n>.lock`` in a shared directory, starting at its
supervisor slot, and pins to the first CPU whose lock it gets. The kernel drops the
lock when the process dies, however it dies. With more workers than CPUs the extra
ones stay unpinned. Pinning is wrong for handlers that spend their time in C code
that releases the GIL (compression, numpy, image work): those threads could run in
parallel, so turn it off with ``OQRON_CPU_AFFINITY=off`` or ``--cpu-affinity off``.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

logger = logging.getLogger(__name__)
# Kept open for the life of the process: closing it would release the CPU.
_held: list[int] = []


def pin_worker(setting: str, *, lock_dir: str | None = None, slot: int = 0) -> int | None:
    """Pin every thread of this process to a CPU no other worker holds; the CPU, or
    None when pinning is off, unsupported here, pointless (one CPU) or every CPU is taken.
    ``setting``, ``lock_dir`` and ``slot`` come from a checked
    :class:`~oqronkit.config.WorkerEnvironment`; ``lock_dir`` None is the temporary directory."""
    if setting == "off" or not hasattr(os, "sched_setaffinity") or _held:
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        return None
    import fcntl

    directory = Path(lock_dir or tempfile.gettempdir())
    start = slot % len(allowed)
    for cpu in allowed[start:] + allowed[:start]:
        try:
            fd = os.open(directory / f"oqron-cpu-{cpu}.lock", os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            logger.warning("not pinning to a CPU: cannot open a lock file in %s: %s", directory, exc,
                           extra={"action": "worker.affinity_skipped"})
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        _held.append(fd)
        _pin_all_threads({cpu})
        return cpu
    logger.info("every CPU already has a pinned worker; this one is not pinned",
                extra={"action": "worker.affinity_skipped"})
    return None


def _pin_all_threads(cpus: set[int]) -> None:
    """On Linux an affinity belongs to a thread; threads started later inherit it from
    the thread that starts them, so pin the ones already running (pool threads) too."""
    tasks = Path("/proc/self/task")
    ids = [int(t.name) for t in tasks.iterdir()] if tasks.is_dir() else [0]
    for tid in ids:
        try:
            os.sched_setaffinity(tid, cpus)
        except OSError:  # a thread that ended meanwhile
            pass
