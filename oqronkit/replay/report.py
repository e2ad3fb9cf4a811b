"""Reading a replay set: each original run beside its replay, and the set's summary.

This module reads a set that holds its pairs (at most 1,000, made by ``replay``); a
tracked replay's set keeps them in chunks and is read a page at a time
(:mod:`oqronkit.replay.pages`, whose ``read_replay_set`` reads either). A replay's run
is found by its ``replaySet`` among the runs of its job's correlation id (the set's id,
or a tracked chunk's: a read of the correlation index, about one run per pair however
busy the handler is); a replay still waiting or running is read from its job, a dead one
from its dead letter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..backends.types import StoredRecord
from ..namespaces import RUNS, dlq_namespace, job_namespace
from ..planes import Planes
from .create import REPLAY_SETS
from .diff import Change, json_diff

#: A pair's state; every state but pending and running is final.
STATES = ("pending", "running", "identical", "changed", "failed")


@dataclass
class ReplayPair:
    """One original run and its replay."""

    queue: str
    job_id: str
    original_id: str
    original: dict[str, Any] | None
    replay: dict[str, Any] | None
    state: str
    changes: list[Change] = field(default_factory=list)

    def describe(self) -> dict[str, Any]:
        def side(run: dict[str, Any] | None, run_id: str | None) -> dict[str, Any]:
            run = run or {}
            return {"run": run.get("id", run_id), "status": run.get("status"), "durationMs": run.get("durationMs"),
                    "output": run.get("output"), "error": run.get("error")}

        return {"queue": self.queue, "job": self.job_id, "state": self.state,
                "original": side(self.original, self.original_id), "replay": side(self.replay, None),
                "changes": [c.describe() for c in self.changes]}


@dataclass
class ReplaySet:
    """A replay request as it stands: its record, its pairs and their summary."""

    id: str
    record: dict[str, Any]
    pairs: list[ReplayPair]
    page: int = 1
    pages: int = 1
    #: A tracked set's summary over every page (its tally); None: the pairs' own.
    totals: dict[str, int] | None = None
    #: A tracked set: its operation finished and every chunk's outcome is final and tallied.
    finished: bool | None = None

    @property
    def summary(self) -> dict[str, int]:
        if self.totals is not None:
            return dict(self.totals)
        return count_states(self.pairs)

    @property
    def count(self) -> int:
        """How many runs the set replays (every page's)."""
        return sum(self.summary.values())

    @property
    def done(self) -> bool:
        if self.finished is not None:
            return self.finished
        return not any(p.state in ("pending", "running") for p in self.pairs)

    @property
    def ok(self) -> bool:
        """Done, and every replay completed with the original's output (a tracked replay
        that found no run to replay is no pass)."""
        return self.done and 0 < self.count == self.summary["identical"]

    def summary_text(self) -> str:
        s = self.summary
        text = f"{s['identical']} identical, {s['changed']} changed, {s['failed']} failed"
        waiting = s["pending"] + s["running"]
        return text + (f", {waiting} still running" if waiting else "")

    def describe(self) -> dict[str, Any]:
        r = self.record
        return {"id": self.id, "createdAt": r.get("createdAt"), "createdBy": r.get("createdBy"),
                "source": r.get("source"), "handlers": r.get("handlers", []), "selection": r.get("selection", {}),
                "operation": r.get("operation"), "page": self.page, "pages": self.pages,
                "count": self.count, "done": self.done, "ok": self.ok, "summary": self.summary,
                "summaryText": self.summary_text(), "pairs": [p.describe() for p in self.pairs]}


def list_replay_sets(engine: Planes, *, limit: int = 20) -> list[dict[str, Any]]:
    """The newest replay sets' records (newest first)."""
    page = engine.durable.list(REPLAY_SETS, order="inserted", descending=True, limit=limit)
    return [r.value for r in page.records]


def count_states(pairs: list[ReplayPair]) -> dict[str, int]:
    counts = dict.fromkeys(STATES, 0)
    for pair in pairs:
        counts[pair.state] += 1
    return counts


def read_listed_set(engine: Planes, set_id: str, record: dict[str, Any]) -> ReplaySet:
    """A set that holds its pairs (``record``), each pair's state read now."""
    pairs_in = [p for p in record.get("pairs") or [] if isinstance(p, dict)]
    # Its jobs carry the set's id as their correlation id (create_replay_set).
    return ReplaySet(set_id, record, resolve_pairs(engine, pairs_in, lambda: replay_runs(engine, set_id, set_id)))


def resolve_pairs(engine: Planes, pairs_in: list[dict[str, Any]],
                  read_replays: Callable[[], dict[str, dict[str, Any]]], *, diffs: bool = True) -> list[ReplayPair]:
    """Each pair (``run``, ``queue``, ``job``) with its original, its replay's newest run
    (``read_replays``: by job id, read after the jobs), its state and, with ``diffs``, a
    changed pair's changes (a chunk read only to count its states needs none)."""
    originals = {r.id: r.value for r in engine.durable.get_many(RUNS, [str(p.get("run")) for p in pairs_in])}
    queues = list(dict.fromkeys(str(p.get("queue")) for p in pairs_in))
    # Jobs before runs: a worker writes a run and deletes its job in one write, so a job
    # gone by now has its run stored by the time the runs are read.
    jobs: dict[str, str] = {}
    for queue in queues:
        ids = [str(p.get("job")) for p in pairs_in if p.get("queue") == queue]
        jobs.update({r.id: str(r.value.get("status")) for r in engine.durable.get_many(job_namespace(queue), ids)})
        live = [i for i in ids if i not in jobs]
        jobs.update({r.id: "dead" for r in engine.durable.get_many(dlq_namespace(queue), live)})
    replays = read_replays()
    pairs = []
    for p in pairs_in:
        original, job_id = originals.get(str(p.get("run"))), str(p.get("job"))
        run = replays.get(job_id)
        state = pair_state(original, run, jobs.get(job_id))
        # An identical pair has no change by definition: its outputs were compared once, in pair_state.
        changes = json_diff(original.get("output") if original else None, run.get("output")) \
            if diffs and state == "changed" and run is not None else []
        pairs.append(ReplayPair(str(p.get("queue")), job_id, str(p.get("run")), original, run, state, changes))
    return pairs


def pair_state(original: dict[str, Any] | None, run: dict[str, Any] | None, job_status: str | None) -> str:
    """pending or running while the replay's job is live; then identical, changed
    (another output, or an original that had not completed) or failed (the replay failed,
    died, or left neither job nor run)."""
    if job_status == "dead":
        return "failed"
    if job_status is not None:
        return "running" if job_status == "active" or (run and run.get("status") == "running") else "pending"
    if run is None or run.get("status") != "completed":
        return "failed"
    if original is None or original.get("status") != "completed":
        return "changed"
    return "identical" if not json_diff(original.get("output"), run.get("output"), limit=1) else "changed"


def replay_runs(engine: Planes, set_id: str, correlation: str) -> dict[str, dict[str, Any]]:
    """The newest run of each replay job of ``set_id`` among the runs carrying
    ``correlation``, by job id (one attempt each: about one run per pair, a stalled job's
    few more; runs of jobs a replay enqueued carry no ``replaySet`` and are skipped)."""
    newest: dict[str, dict[str, Any]] = {}
    cursor = None
    while True:
        page = engine.durable.list(table="runs", correlation=correlation, limit=1000, cursor=cursor)
        for record in page.records:
            _keep_newest(newest, record, set_id)
        if page.next_cursor is None:
            return newest
        cursor = page.next_cursor


def _keep_newest(newest: dict[str, dict[str, Any]], record: StoredRecord, set_id: str) -> None:
    value = record.value
    job_id = value.get("jobId")
    if value.get("replaySet") != set_id or not isinstance(job_id, str):
        return
    kept = newest.get(job_id)
    if kept is None or int(value.get("startedAt") or 0) >= int(kept.get("startedAt") or 0):
        newest[job_id] = value
