"""The runs of the last minutes by outcome, from the rollup's minute buckets: what the
overview's last hour reads instead of counting every run of the hour (a heap page a run).

Only the minutes the rollup closed are served (before its watermark); the caller counts
the runs after it (one or two minutes behind a leader rolling every minute, the whole
range when no leader rolls). A closed minute's runs still running or queued when it was
rolled are listed in its manifest: each is read by id and counted under its status now,
as a count of the runs would; a minute whose open runs were too many to list ends the
served range there. Demo buckets (history/backfill.py) are never served.

The closed minutes' buckets change only with the rollup's state (each pass writes its
buckets before the state), so a read whose state matches the last one's reuses its counts
(:class:`_ClosedMinutes`): a poll reads the state and settles the open runs, not ~500
records; the open runs are read by id every time. A read racing a pass may mix its
buckets, as it could before; it is remembered under a state the pass then replaces.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..durable import DurablePlane
from ..namespaces import METRICS_MINUTE, RUNS
from .buckets import MINUTE_MS, bucket_id, floor_to, keys_of_run, manifest_id, run_facts
from .rollup import read_state

#: The scopes a reader may ask for (a handler's or a topic group's minutes are for charts).
SERVED_SCOPES: Final = frozenset({"all", "queue"})
_LOOKUP: Final = 1000
#: Reads remembered per store (a board asks for a window or two; the window moves every 5 minutes).
_REMEMBERED: Final = 8


@dataclass
class RecentOutcomes:
    """Runs by outcome per (scope, key) and minute start, for the minutes in
    ``[since, until)``; the runs started from ``until`` on are not in it. ``open``: the
    runs counted under the status they had when their minute was rolled (run id ->
    (minute, that status)), until :meth:`settle` moves them to their status now."""

    since: int
    until: int
    counts: dict[tuple[str, str], dict[int, dict[str, int]]] = field(default_factory=dict)
    open: dict[str, tuple[int, str]] = field(default_factory=dict)
    scopes: frozenset[str] = SERVED_SCOPES

    def add(self, scope: str, key: str, minute: int, status: str, by: int) -> None:
        outcomes = self.counts.setdefault((scope, key), {}).setdefault(minute, {})
        left = outcomes.get(status, 0) + by
        if left:
            outcomes[status] = left
        else:
            outcomes.pop(status, None)

    def cut(self, minute: int) -> None:
        """Serve only the minutes before ``minute`` (the caller counts the runs from there)."""
        self.until = min(self.until, max(minute, self.since))
        for minutes in self.counts.values():
            for start in [m for m in minutes if m >= self.until]:
                del minutes[start]
        self.open = {id: entry for id, entry in self.open.items() if entry[0] < self.until}

    def settle(self, runs: Mapping[str, Mapping[str, Any]]) -> None:
        """Count each open run under its status now (``runs``: id -> the run's value, or
        its name, module, status, jobId and queue at least); a run not among them is
        gone, and the minutes from its own are cut off (a count of the runs misses it too)."""
        gone = [minute for id, (minute, _) in self.open.items() if id not in runs]
        if gone:
            self.cut(min(gone))
        for id, (minute, old) in self.open.items():
            run = runs[id]
            status = run_facts(run)[0]
            if status == old:
                continue
            for scope, key in keys_of_run(run):
                if scope in self.scopes:
                    self.add(scope, key, minute, old, -1)
                    self.add(scope, key, minute, status, 1)
        self.open = {}

    def copy(self) -> RecentOutcomes:
        counts = {pair: {minute: dict(outcomes) for minute, outcomes in minutes.items()}
                  for pair, minutes in self.counts.items()}
        return RecentOutcomes(self.since, self.until, counts, dict(self.open), self.scopes)


class _ClosedMinutes:
    """The last reads of closed minutes per store, keyed by everything they depend on:
    the scope, the window, the scopes asked for and the rollup's whole state."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_store: weakref.WeakKeyDictionary[Any, OrderedDict[Hashable, RecentOutcomes]] = \
            weakref.WeakKeyDictionary()

    def get(self, store: Any, key: Hashable) -> RecentOutcomes | None:
        with self._lock:
            found = self._by_store.get(store, OrderedDict()).get(key)
        return None if found is None else found.copy()

    def put(self, store: Any, key: Hashable, read: RecentOutcomes) -> None:
        with self._lock:
            reads = self._by_store.setdefault(store, OrderedDict())
            reads[key] = read.copy()
            while len(reads) > _REMEMBERED:
                reads.popitem(last=False)


_CLOSED: Final = _ClosedMinutes()


def recent_outcomes(durable: DurablePlane, since: int, now: int, scopes: Iterable[str] = ("all", "queue"), *,
                    read_open: bool = True) -> RecentOutcomes:
    """Outcomes of the runs started from ``since`` (a minute start) in the minutes the
    rollup closed before ``now``, for the (scope, key) pairs of ``scopes``. The runs
    still open when their minute was rolled are read by id and settled (``read_open``),
    or left in ``open`` for the caller to settle from a read of its own."""
    wanted = frozenset(scopes) & SERVED_SCOPES
    since = floor_to(since, "minute")
    state = read_state(durable)
    rolled = min(int(state.get("next") or 0), floor_to(now, "minute"))
    if rolled <= since or not wanted:
        return RecentOutcomes(since, since, scopes=wanted)
    key = (durable.scope, since, rolled, wanted, json.dumps(state, sort_keys=True, default=str))
    found = _CLOSED.get(durable.store, key)
    if found is None:
        found = _read_closed(durable, since, rolled, wanted)
        _CLOSED.put(durable.store, key, found)
    if read_open and found.open:
        found.settle({r.id: r.value for r in _get_many(durable, sorted(found.open), RUNS)})
    return found


def _read_closed(durable: DurablePlane, since: int, rolled: int, wanted: frozenset[str]) -> RecentOutcomes:
    """The closed minutes ``[since, rolled)``' buckets and the runs open when each was rolled."""
    found = RecentOutcomes(since, since, scopes=wanted)
    minutes = list(range(since, rolled, MINUTE_MS))
    manifests = {int(r.value.get("start") or 0): r.value for r in _get_many(durable, [manifest_id(m) for m in minutes])}
    # Served up to the first minute whose open runs were too many to list.
    found.until = min([rolled, *(m for m, value in manifests.items() if not isinstance(value.get("open"), list))])
    ids = [bucket_id(minute, str(scope), str(key)) for minute, value in sorted(manifests.items())
           if minute < found.until for scope, key in value.get("keys") or [] if scope in wanted]
    for record in _get_many(durable, ids):
        value = record.value
        if value.get("synthetic") is True:
            continue
        for status, count in (value.get("outcomes") or {}).items():
            if isinstance(count, int):
                found.add(str(value.get("scope")), str(value.get("key")), int(value.get("start") or 0), str(status),
                          count)
    found.open = {str(e[0]): (minute, str(e[1])) for minute, value in manifests.items() if minute < found.until
                  for e in value.get("open") or [] if isinstance(e, list) and len(e) == 2}
    return found


def _get_many(durable: DurablePlane, ids: list[str], namespace: str = METRICS_MINUTE) -> list[Any]:
    records: list[Any] = []
    for offset in range(0, len(ids), _LOOKUP):
        records += durable.get_many(namespace, ids[offset:offset + _LOOKUP])
    return records
