"""Reading any replay set; a tracked replay's a page at a time, its summary from a tally.

A tracked replay (``Operations.create_replay``) keeps its pairs in chunks of up to 1,000
(``replay_pairs:<set>/<chunk>``, written with each chunk of the operation), and each
chunk's jobs carry the correlation id ``<set>.<chunk>``, so one page's replay runs are
one read of the runs' correlation index, whatever the set's size. Once every pair of a
chunk is final (one attempt each: a final state never changes), its counts go into the
set's tally (``replay_tallies/<set>``, keyed by chunk, compare-and-set: a chunk counted
twice is the same key written twice). A read shows its page's pairs, settles at most
``SETTLE_BUDGET`` more chunks (the oldest untallied), and sums the tally; pairs of
chunks not tallied yet count as pending. So a view of a 100,000-run set reads a page and
a few chunks, never every pair, and polling it (the board, ``oqron replay --wait``) tallies
the whole set.
"""

from __future__ import annotations

from typing import Any

from ..durable import ABSENT
from ..namespaces import OPERATIONS, REPLAY_TALLIES, replay_pairs_namespace
from ..planes import Planes
from .create import REPLAY_SETS
from .report import STATES, ReplayPair, ReplaySet, count_states, read_listed_set, replay_runs, resolve_pairs

#: Chunks a read settles beyond the page it shows.
SETTLE_BUDGET = 3
_FINAL = frozenset(STATES) - {"pending", "running"}
_OVER = frozenset({"done", "cancelled", "failed"})


def read_replay_set(engine: Planes, set_id: str, *, page: int = 1) -> ReplaySet | None:
    """The replay set ``set_id`` with each pair's state (a tracked replay's: page ``page``
    of its pairs, from 1), or None."""
    found = engine.durable.get(REPLAY_SETS, set_id)
    if found is None:
        return None
    if not found.value.get("operation"):
        return read_listed_set(engine, set_id, found.value)
    return _read_tracked(engine, set_id, found.value, page)


def _chunk_id(number: int) -> str:
    return f"{number:06d}"


def _chunk_pairs(engine: Planes, set_id: str, chunk: dict[str, Any], *, diffs: bool = True) -> list[ReplayPair]:
    """A chunk's pairs with their states (and, with ``diffs``, their changes); its
    replays' runs by its correlation id."""
    queue, correlation = str(chunk.get("queue")), str(chunk.get("correlation"))
    # A filter's chunk names its one queue; an id list's pairs each name theirs.
    pairs_in = [{**p, "queue": p.get("queue") or queue} for p in chunk.get("pairs") or [] if isinstance(p, dict)]

    return resolve_pairs(engine, pairs_in, lambda: replay_runs(engine, set_id, correlation), diffs=diffs)


def _final_counts(pairs: list[ReplayPair]) -> dict[str, int] | None:
    """The pairs' counts when every state is final, else None."""
    return count_states(pairs) if all(p.state in _FINAL for p in pairs) else None


def _read_tracked(engine: Planes, set_id: str, record: dict[str, Any], page: int) -> ReplaySet:
    durable = engine.durable
    chunks = int(record.get("chunks") or 0)
    page = min(max(1, page), max(1, chunks))
    tally_record = durable.get(REPLAY_TALLIES, set_id)
    tally: dict[str, dict[str, int]] = dict((tally_record.value.get("chunks") or {}) if tally_record else {})
    namespace = replay_pairs_namespace(set_id)
    shown = durable.get(namespace, _chunk_id(page)) if chunks else None
    pairs = _chunk_pairs(engine, set_id, shown.value) if shown is not None else []
    settled: dict[str, dict[str, int]] = {}
    if shown is not None and _chunk_id(page) not in tally and (counts := _final_counts(pairs)) is not None:
        settled[_chunk_id(page)] = counts
    budget = SETTLE_BUDGET
    for number in range(1, chunks + 1):
        key = _chunk_id(number)
        if budget == 0:
            break
        if key in tally or key in settled or number == page:
            continue
        chunk = durable.get(namespace, key)
        # Settled for its counts only, never shown: no diffs.
        counts = _final_counts(_chunk_pairs(engine, set_id, chunk.value, diffs=False)) if chunk is not None else None
        budget -= 1
        if counts is None:
            break  # the oldest chunk still running: later ones are no further on
        settled[key] = counts
    if settled:
        _save_tally(engine, set_id, tally_record.value if tally_record else None, settled)
    tally.update(settled)
    totals = dict.fromkeys(STATES, 0)
    for counts in tally.values():
        for state, n in counts.items():
            totals[state] = totals.get(state, 0) + int(n)
    if shown is not None and _chunk_id(page) not in tally:
        for state, n in count_states(pairs).items():
            totals[state] += n
    totals["pending"] += max(0, int(record.get("count") or 0) - sum(totals.values()))
    operation = durable.get(OPERATIONS, str(record["operation"]))
    over = operation is None or operation.value.get("status") in _OVER
    return ReplaySet(set_id, record, pairs, page=page, pages=max(1, chunks), totals=totals,
                     finished=over and len(tally) >= chunks)


def _save_tally(engine: Planes, set_id: str, current: dict[str, Any] | None,
                settled: dict[str, dict[str, int]]) -> None:
    """Add ``settled`` chunks' counts to the tally; a lost race is left to the next read."""
    if current is None:
        engine.durable.compare_and_set(REPLAY_TALLIES, set_id, expect=ABSENT,
                                       value={"version": 1, "chunks": settled})
        return
    version = int(current.get("version") or 0)
    engine.durable.compare_and_set(REPLAY_TALLIES, set_id, expect={"version": version},
                                   value={"version": version + 1, "chunks": {**current.get("chunks", {}), **settled}})
