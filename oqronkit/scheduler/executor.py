"""Running handlers of runs without jobs on the leader's small thread pool.

A run is claimed (its record inserted as ``running``) before it gets here. While it
runs, its id is kept in the hot plane's live-run group (the board's live overlay) with
a short TTL; a claimed run missing from that group belongs to a leader that died, and
the next leader resolves it (:mod:`oqronkit.scheduler.recovery`). The final record is
written with a compare-and-set on ``status == running``, so a run already resolved
elsewhere is never overwritten.
"""

from __future__ import annotations

import inspect
import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import InvalidRecord, OqronError, RecordTooLarge
from ..live import LEADER_RUN_TTL_MS, forget_runs, live_run, publish_runs
from ..namespaces import RUNS
from ..queues.gates import Skip, skip_reason
from ..queues.runs import ErrorValue, RunValue, describe_error, finish_run, shed_parts
from ..queues.shedding import write_shedding
from .context import LeaderContext
from .definition import Definition
from .planner import retry_item
from .running import RunningRun

if TYPE_CHECKING:
    from ..engine import Engine

logger = logging.getLogger(__name__)
LIVE_EVERY_MS = 1_000
MAINTAIN_EVERY = 0.2


class Reruns(Protocol):
    """What settling a run needs from the scheduler (:class:`~.scheduler.Scheduler`,
    which builds the executor): a failed run's re-run booked durably, and its
    definition woken for the next tick."""

    def add_retry(self, definition: Definition, item: dict[str, Any], now: int) -> dict[str, Any] | None: ...

    def wake(self, key: tuple[str, str], state: dict[str, Any] | None = None) -> None: ...


class RunExecutor:
    """Executes claimed runs; settles each exactly once (completion, failure, timeout
    or cancellation, whichever comes first)."""

    def __init__(self, engine: Engine, reruns: Reruns, *, worker_id: str, clock: Callable[[], int], threads: int,
                 background: bool) -> None:
        self.engine = engine
        self.reruns = reruns
        self.worker_id = worker_id
        self.clock = clock
        self.running: dict[str, RunningRun] = {}
        self._per_key: Counter[tuple[str, str]] = Counter()
        self._finished: list[str] = []
        self._pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="oqron-cron")
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._background = background
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._last_live = 0

    # -- starting ----------------------------------------------------------------------------

    def start(self, batch: list[tuple[Definition, Callable[..., Any] | None, RunValue]]) -> None:
        """Start claimed runs (one live-group write for the whole batch)."""
        now = self.clock()
        started = []
        with self._lock:
            for definition, fn, run in batch:
                deadline = now + definition.timeout_ms if definition.timeout_ms else None
                running = RunningRun(definition, run, deadline)
                self.running[run["id"]] = running
                self._per_key[running.key] += 1
                started.append((running, fn))
        self._publish_live([running for running, _ in started], now)
        if self._background and self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="oqron-cron-maintain", daemon=True)
            self._thread.start()
        for running, fn in started:
            if fn is None:
                d = running.definition
                self.settle(running, "failed", error={
                    "type": "NoHandler", "ts": now,
                    "message": f"{d.kind} {d.declared_name!r} has no handler in the leader process "
                               f"({self.worker_id}); declare it with a handler in the modules workers "
                               "import."})
            else:
                self._pool.submit(self._call, running, fn)

    def _call(self, running: RunningRun, fn: Callable[..., Any]) -> None:
        ctx = LeaderContext(running, log_limit=self.engine.config.run_log_limit)
        try:
            output = fn(ctx)
            if inspect.isawaitable(output):  # async def handlers: one event loop per run, on this thread
                import asyncio  # only then: worker/executor.py says why

                output = asyncio.run(_await(output))
            json.dumps(output, allow_nan=False)
        except Skip as skip:  # its condition said no: recorded, never retried
            self.settle(running, "cancelled", reason=skip_reason(skip.reason))
            return
        except BaseException as exc:  # the handler's failure is the run's outcome
            self.settle(running, "failed", error=describe_error(exc))
            return
        if running.cancelled.is_set() and running.cancel_reason:
            self.settle(running, "cancelled", output=output, reason=running.cancel_reason)
        else:
            self.settle(running, "completed", output=output)

    # -- settling --------------------------------------------------------------------------

    def settle(self, running: RunningRun, status: str, *, output: Any = None, error: ErrorValue | None = None,
               reason: str | None = None) -> bool:
        with running.lock:
            if running.settled:
                return False
            running.settled = True
            run = running.run
            now = self.clock()
            finish_run(run, status, output=output, error=error, reason=reason,
                       limit=self.engine.config.run_timeline_limit, at=now)
            final = run.copy()
        self._write_final(final)
        with self._lock:  # dropped from the live group in batches by maintain() (or expire on their own)
            self._finished.append(final["id"])
        state = None
        if status == "failed":
            item = retry_item(running.definition, final, now, leader_lost=False)
            if item is not None:
                state = self.reruns.add_retry(running.definition, item, now)
        with self._lock:
            if self.running.pop(final["id"], None) is not None:
                self._per_key[running.key] -= 1
                if not self._per_key[running.key]:
                    del self._per_key[running.key]
            self._idle.notify_all()
        self.reruns.wake(running.key, state)
        return True

    def _write_final(self, run: RunValue) -> None:
        durable = self.engine.durable
        for attempt in range(5):
            try:
                stored = write_shedding(
                    lambda value: durable.compare_and_set(RUNS, run["id"], expect={"status": "running"}, value=value),
                    run, shed_parts)
                if not stored:
                    logger.warning("run %s was already resolved elsewhere (its leader was presumed dead); "
                                   "this outcome (%s) is not stored", run["id"], run["status"],
                                   extra={"action": "scheduler.run_already_resolved"})
                return
            except (InvalidRecord, RecordTooLarge) as exc:  # not even with less detail: retrying won't help
                logger.error("run %s cannot be stored at all, left out: %s", run["id"], exc,
                             extra={"action": "runs.unstorable"})
                return
            except OqronError as exc:
                logger.warning("could not store run %s (%s); retrying", run["id"], exc,
                               extra={"action": "scheduler.run_write_failed"})
                time.sleep(0.2 * (attempt + 1))

    # -- inspection and control ----------------------------------------------------------------

    def busy(self, key: tuple[str, str]) -> int:
        with self._lock:
            return self._per_key.get(key, 0)

    def cancel(self, key: tuple[str, str], reason: str) -> int:
        """Ask every running run of ``key`` to stop and record it as cancelled now."""
        with self._lock:
            targets = [r for r in self.running.values() if r.key == key]
        for running in targets:
            running.cancel_reason = reason
            running.cancelled.set()
            self.settle(running, "cancelled", reason=reason)
        return len(targets)

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Block until no run is executing (tests and graceful shutdown)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            while self.running:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._idle.wait(left)
        return True

    # -- maintenance: timeouts and the live group ----------------------------------------------

    def maintain(self, now: int) -> None:
        with self._lock:
            current = list(self.running.values())
        for running in current:
            if running.deadline is not None and now >= running.deadline and not running.settled:
                running.cancel_reason = "timeout"
                running.cancelled.set()
                ms = running.definition.timeout_ms
                self.settle(running, "failed", reason=f"timed out after {ms} ms",
                            error=describe_error(TimeoutError(f"timed out after {ms} ms"), kind="Timeout"))
        if current and now - self._last_live >= LIVE_EVERY_MS:
            self._publish_live([r for r in current if not r.settled], now)
        self._drop_finished()

    def _drop_finished(self) -> None:
        with self._lock:
            finished, self._finished = self._finished, []
        if finished:
            try:
                forget_runs(self.engine.hot, finished)
            except OqronError:
                pass  # they expire on their own within LEADER_RUN_TTL_MS

    def _publish_live(self, runs: list[RunningRun], now: int) -> None:
        live = []
        for running in runs:
            with running.lock:
                live.append(live_run(running.run))
        try:
            publish_runs(self.engine.hot, live, ttl_ms=LEADER_RUN_TTL_MS, now=now)
            self._last_live = now
        except OqronError as exc:
            logger.warning("could not refresh live cron runs: %s", exc, extra={"action": "scheduler.live_failed"})

    def _loop(self) -> None:
        while not self._stop.wait(MAINTAIN_EVERY):
            try:
                self.maintain(self.clock())
            except Exception:  # maintenance must outlive any single failure
                logger.exception("cron run maintenance failed", extra={"action": "scheduler.maintain_failed"})

    def shutdown(self, *, wait: float = 5.0) -> None:
        """Let running handlers finish for up to ``wait`` seconds; runs still going are
        left claimed (and drop out of the live group), so the next leader resolves them."""
        self.wait_idle(wait)
        self._stop.set()
        self._drop_finished()
        with self._lock:
            leftover = list(self.running)
        if leftover:
            try:
                forget_runs(self.engine.hot, leftover)
            except OqronError:
                pass
        self._pool.shutdown(wait=False, cancel_futures=True)


async def _await(awaitable: Any) -> Any:
    return await awaitable
