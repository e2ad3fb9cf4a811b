"""The leader-side scheduler: one instance per worker process, active while that
process holds the leader lease (:mod:`oqronkit.services.leader` calls :meth:`tick`).

A tick never evaluates every definition: definitions sit in a heap keyed by their next
due time, so a tick pops only what is due (plus definitions woken by a finished run or
an operator's change). For each, :func:`~.planner.decide` says what to fire; the tick
then

1. **claims** every fire at once: one ``insert_many`` of run records whose ids are
   deterministic (``cron:<name>:<slot ms>``, ``#<attempt>`` for re-runs): insert-if-absent
   is race-free on every backend, so a slot fires once even with two leaders;
2. **advances the pointer** (compare-and-set on the control record, after the claim);
3. **starts** what it claimed: a handler on the leader's thread pool, or a job.

A leader that dies between 1 and 2 leaves the pointer behind: the next leader plans the
same slots, finds them claimed and only advances. One that dies during 3 leaves a run
``running`` that :mod:`.recovery` resolves.
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections.abc import Callable
from typing import Any

from ..clock import now_ms
from ..durable import RecordWrite
from ..engine import Engine
from ..errors import OqronError
from ..namespaces import RUNS
from ..queues.runs import RunValue, new_run
from . import jobmode
from .control import signal_change, store_definition, update_control
from .declare import registry_for
from .definition import Definition
from .executor import RunExecutor
from .index import DefinitionIndex, Entry
from .planner import Decision, Fire, decide
from .recovery import recover

logger = logging.getLogger(__name__)
DONE_RETENTION_MS = 7 * 24 * 3600 * 1000  # finished dynamic schedules are pruned by retention after a week


class Scheduler(DefinitionIndex):
    """Fires the crons and schedules declared in this process while it leads.

    ``clock`` (epoch ms) is injectable so tests drive time; ``late_after_ms`` is the
    lateness from which a slot counts as missed.
    """

    def __init__(
        self,
        engine: Engine,
        *,
        worker_id: str,
        clock: Callable[[], int] = now_ms,
        threads: int = 8,
        background: bool = True,
        late_after_ms: int = 2_000,
        recover_every_ms: int = 5_000,
        recover_idle_ms: int = 60_000,
        sweep_every_ms: int = 30_000,
        discover_every_ms: int = 300_000,
    ) -> None:
        self.engine = engine
        self.worker_id = worker_id
        self.clock = clock
        self.late_after_ms = late_after_ms
        self.recover_every_ms = recover_every_ms
        self.recover_idle_ms = recover_idle_ms
        self.sweep_every_ms = sweep_every_ms
        self.discover_every_ms = discover_every_ms
        self.executor = RunExecutor(engine, self, worker_id=worker_id, clock=clock, threads=threads,
                                    background=background)
        self.entries: dict[tuple[str, str], Entry] = {}
        self.leading = False
        self.loaded = False
        self._heap: list[tuple[int, int, tuple[str, str]]] = []
        self._tokens = 0
        self._prepared = -1  # how many declared definitions were stored (-1: none yet)
        self._ignored: set[tuple[str, str]] = set()
        self._wakes: dict[tuple[str, str], dict[str, Any] | None] = {}
        self._wake_lock = threading.Lock()
        self._seen_counter: int | None = None
        self._missing_since: int | None = None
        self._next_recover = 0
        self._next_sweep = 0
        self._next_discover = 0
        self._sweep: list[tuple[str, str]] | None = None

    # -- lifecycle -------------------------------------------------------------------------

    def prepare(self, *, force: bool = False) -> None:
        """Store this process's declared definitions under the version rules: once, and
        again when more are declared (each new one is signalled to the leader)."""
        declared = list(registry_for(self.engine.registry).values())
        if len(declared) == self._prepared and not force:
            return
        now = self.clock()
        for item in declared:
            store_definition(self.engine, item.definition, now)
        self._prepared = len(declared)

    def set_leader(self, leading: bool) -> None:
        """Called when this process gains or loses the leader lease. Losing it drops the
        in-memory index (runs already executing here still finish and are recorded)."""
        self.leading = leading
        self.loaded = False
        self.entries.clear()
        self._heap.clear()

    def shutdown(self, *, wait: float = 5.0) -> None:
        self.set_leader(False)
        self.executor.shutdown(wait=wait)

    def wake(self, key: tuple[str, str], state: dict[str, Any] | None = None) -> None:
        """Process ``key`` on the next tick (a run finished; ``state`` is its newer
        control record, if the caller just wrote one)."""
        with self._wake_lock:
            if state is not None or key not in self._wakes:
                self._wakes[key] = state

    def add_retry(self, definition: Definition, item: dict[str, Any], now: int) -> dict[str, Any] | None:
        """Record a pending re-run durably (any future leader will run it)."""
        state = update_control(self.engine, definition.kind, definition.name,
                               lambda value: value.setdefault("retries", []).append(item), now=now)
        if not self.leading:
            signal_change(self.engine, definition.kind, definition.name, now)
        return state

    # -- the tick --------------------------------------------------------------------------

    def tick(self) -> int:
        """Fire whatever is due; returns how many runs this tick started."""
        if not self.leading:
            return 0
        now = self.clock()
        if not self.loaded:
            self._load(now)
        else:
            self.prepare()
            self._poll_changes(now)
            self._sweep_step(now)
        keys = self._take_wakes()
        while self._heap and self._heap[0][0] <= now:
            _, token, key = heapq.heappop(self._heap)
            entry = self.entries.get(key)
            if entry is not None and entry.token == token:
                entry.due = None
                keys.add(key)
        return self._process(sorted(keys), now) if keys else 0

    def recover(self) -> int:
        """Resolve the claims a dead leader left (:mod:`.recovery`); the leader's services
        run this on its own interval, apart from the tick, because it queries the runs
        table. Orphans appear only when a leader dies and a new leader looks at once;
        after that it looks often only while some foreign claim is still undecided."""
        if not self.leading or not self.loaded:
            return 0
        now = self.clock()
        if now < self._next_recover:
            return 0
        pending = recover(self, now)
        self._next_recover = now + (self.recover_every_ms if pending else self.recover_idle_ms)
        return pending

    def _process(self, keys: list[tuple[str, str]], now: int) -> int:
        work: list[tuple[Entry, Decision, list[RunValue]]] = []
        for key in keys:
            entry = self.entries.get(key)
            if entry is None:
                continue
            dec = decide(entry.definition, entry.state, now, busy=self._busy(entry), late_after_ms=self.late_after_ms)
            if not dec.changes():
                self._push(entry, now)
                continue
            work.append((entry, dec, [self._claim_record(entry.definition, fire, now) for fire in dec.fires]))
        claims = [RecordWrite(RUNS, run["id"], run) for _, _, runs in work for run in runs]
        inserted = self.engine.durable.insert_many(claims) if claims else set()
        local: list[tuple[Definition, Callable[..., Any] | None, RunValue]] = []
        enqueued = 0
        for entry, dec, runs in work:
            d = entry.definition
            # Count only what this leader claimed: under split brain the other one counts the rest.
            ran = [f for f in dec.fires if (RUNS, f.run_id) in inserted]
            dec.counters["run"] = sum(1 for f in ran if f.counts_as_run)
            dec.counters["manual"] = sum(1 for f in ran if f.trigger == "manual")
            dec.counters = {k: v for k, v in dec.counters.items() if v}
            previous = entry.state.get("lastRunId")
            state = update_control(self.engine, d.kind, d.name,
                                   dec.apply, now=now, current=entry.state)
            if state is None:  # the control record was deleted: forget the definition
                self.entries.pop(d.key, None)
                continue
            entry.state = state
            if dec.cancel_previous:
                self._cancel_previous(entry, previous)
            for run in runs:
                if (RUNS, run["id"]) not in inserted:
                    logger.info("%s already claimed (a previous leader fired it); not run again", run["id"],
                                extra={"action": "scheduler.already_claimed"})
                elif d.as_job:
                    self._enqueue(d, run)
                    enqueued += 1
                else:
                    local.append((d, entry.fn, run))
            if state.get("done") and d.base is not None and not state.get("expiresAt"):
                self._expire(entry, now)
            self._push(entry, now)
        if local:
            self.executor.start(local)
        return len(local) + enqueued

    def _claim_record(self, d: Definition, fire: Fire, now: int) -> RunValue:
        cfg = self.engine.config
        run = new_run(name=d.name, module=d.kind, trigger=fire.trigger, input=fire.payload, attempts=fire.attempt,
                      app=cfg.project, environment=cfg.environment, worker_id=self.worker_id,
                      job_id=fire.run_id if d.as_job else None, started_at=now)
        run["id"], run["claimId"], run["slotAt"] = fire.run_id, fire.claim, fire.slot
        run["definition"] = d.declared_name
        run["lateMs"] = max(now - fire.slot, 0) if fire.slot is not None else None
        opening = run["timeline"][0]
        opening.update({"from": "scheduled", "reason": f"{fire.trigger} (attempt {fire.attempt})"})
        if d.as_job:
            run["status"], run["queue"] = "queued", d.queue_name
            opening["to"] = "queued"
        return run

    def _enqueue(self, d: Definition, run: RunValue) -> None:
        try:
            jobmode.enqueue(self.engine, d, run)
        except OqronError as exc:  # the claim stays queued; recovery adds the job later
            logger.error("could not add the job of %s: %s", run["id"], exc,
                         extra={"action": "scheduler.enqueue_failed"})

    def _busy(self, entry: Entry) -> int:
        d = entry.definition
        if d.as_job:
            return jobmode.job_busy(self.engine, d, entry.state.get("lastRunId"))
        return self.executor.busy(d.key)

    def _cancel_previous(self, entry: Entry, previous: str | None) -> None:
        d = entry.definition
        if d.as_job:
            jobmode.cancel_previous(self.engine, d, previous)
        else:
            self.executor.cancel(d.key, "cancelled: a newer slot started (overlap=cancel-previous)")

    def _expire(self, entry: Entry, now: int) -> None:
        d, until = entry.definition, now + DONE_RETENTION_MS
        record = self.engine.durable.get(d.kind, d.name)
        if record is not None:
            self.engine.durable.put(d.kind, d.name, record.value, expires_at=until)
        entry.state = update_control(self.engine, d.kind, d.name, lambda v: v.update(expiresAt=until), now=now,
                                     expires_at=until) or entry.state

    def _push(self, entry: Entry, now: int) -> None:
        """(Re)index ``entry`` by the earliest time it has something to do."""
        st, d = entry.state, entry.definition
        due: list[int] = [now] if st.get("manual") else []
        if not st.get("paused"):
            due += [item["dueAt"] for item in st.get("retries", [])]
            pointer = st.get("nextRunAt")
            if not st.get("done") and pointer is not None:
                due.append(pointer + d.jitter_for(pointer))
            if st.get("backlog"):  # finished runs wake it at once; this is the safety net
                due.append(now + (1000 if self._busy(entry) else 0))
        when = min(due) if due else None
        if when is not None and when == entry.due:
            return  # already indexed at that time: don't grow the heap with duplicates
        self._tokens += 1
        entry.token, entry.due = self._tokens, when
        if when is not None:
            heapq.heappush(self._heap, (when, entry.token, d.key))

    def _take_wakes(self) -> set[tuple[str, str]]:
        with self._wake_lock:
            wakes, self._wakes = self._wakes, {}
        keys = set()
        for key, state in wakes.items():
            entry = self.entries.get(key)
            if entry is None:
                continue
            if state is not None and state.get("rev", 0) > entry.state.get("rev", 0):
                entry.state = state
            if state is not None or entry.state.get("backlog"):  # a finished run matters only then
                keys.add(key)
        return keys
