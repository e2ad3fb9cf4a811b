"""Queue depths the leader keeps counted while a board reads them.

A queue's depths (ready, delayed, active) are a count over every hot row of the scope in
postgres mode (30-130 ms at 180,000 rows): too slow to pay on every board poll. While a
reader asked within :data:`WANTED_MS`, the leader counts every queue asked for once per
:data:`KEEP_EVERY_S` and publishes the figures with the time it counted them, one
ephemeral key on the hot plane; a reader takes them when they are younger than its own
bound (the board's ``OQRON_BOARD_CACHE_SECONDS``) and cover its queues, and counts itself
otherwise. Nothing on the job path: claim, ack and add are untouched, and nobody counts
while no board looks. A Redis flush (or a hot-table reset) drops the key with the jobs,
so the next read counts for itself. An operator's action marks the time it changed the
queues (:func:`forget_kept`): figures counted before it are not taken.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from ..backends.hot_types import QueueDepths
from ..clock import now_ms
from ..hot import HotPlaneFacade

GROUP: Final = "queue-depths"
KEPT_KEY: Final = "kept"
WANTED_KEY: Final = "wanted"
CHANGED_KEY: Final = "changed"
#: The leader keeps counting this long after the last reader asked.
WANTED_MS: Final = 30_000
#: A reader renews its request when less than this is left of it (one write per 15 s, not per read).
RENEW_MS: Final = 15_000
#: How often the leader counts while wanted (the board's default bound is 2 s).
KEEP_EVERY_S: Final = 1.0
#: Kept figures expire on their own when the leader stops (a reader's bound is shorter anyway).
KEPT_TTL_MS: Final = 10_000
#: The most queues a request names (the overview's own cap is 1,000 queue records).
MAX_QUEUES: Final = 1000


@dataclass(frozen=True, slots=True)
class DepthsRead:
    """Depths of the queues asked for, when they were counted, and whether the leader
    counted them (``kept``) or the reader did."""

    depths: dict[str, QueueDepths]
    at: int
    kept: bool


def read_depths(hot: HotPlaneFacade, queues: Sequence[str], *, now: int | None = None,
                max_age_ms: int = 0, ask: bool = True) -> DepthsRead:
    """The depths of ``queues``: the leader's figures when they cover them and are at most
    ``max_age_ms`` old, else counted now (and the leader asked to keep them from now on,
    unless ``ask`` is False: a reader seldom enough that a count a second is waste, like
    a metrics scrape, takes the figures a board keeps counted). ``max_age_ms`` 0: always
    counted now, nothing asked."""
    at = now_ms() if now is None else now
    names = sorted(set(queues))
    if not names:
        return DepthsRead({}, at, False)
    if max_age_ms <= 0:
        return DepthsRead(hot.depths_many(names, at), at, False)
    found = hot.kv_get(GROUP, [KEPT_KEY, WANTED_KEY, CHANGED_KEY], at)
    wanted = _wanted(found.get(WANTED_KEY))
    kept = _kept(found.get(KEPT_KEY))
    changed = _int(found.get(CHANGED_KEY))
    missing = set(names) - set(wanted["queues"])
    if ask and (missing or wanted["until"] - at < RENEW_MS):
        asked = sorted(set(wanted["queues"]) | set(names))[:MAX_QUEUES]
        hot.kv_set(GROUP, {WANTED_KEY: json.dumps({"queues": asked, "until": at + WANTED_MS})},
                   ttl_ms=WANTED_MS, now=at)
    if kept is not None and abs(at - kept[0]) <= max_age_ms and kept[0] >= changed and set(names) <= set(kept[1]):
        return DepthsRead({name: kept[1][name] for name in names}, kept[0], True)
    return DepthsRead(hot.depths_many(names, at), at, False)


def keep_depths(hot: HotPlaneFacade, *, now: int | None = None) -> int:
    """The leader's pass: count the queues a reader asked for within WANTED_MS and publish
    them; returns how many queues it counted (0: nobody asked)."""
    at = now_ms() if now is None else now
    wanted = _wanted(hot.kv_get(GROUP, [WANTED_KEY], at).get(WANTED_KEY))
    if not wanted["queues"] or wanted["until"] < at:
        return 0
    depths = hot.depths_many(wanted["queues"], at)
    value = {"at": at, "depths": {name: [d.ready, d.delayed, d.active] for name, d in depths.items()}}
    hot.kv_set(GROUP, {KEPT_KEY: json.dumps(value)}, ttl_ms=KEPT_TTL_MS, now=at)
    return len(depths)


def forget_kept(hot: HotPlaneFacade, *, now: int | None = None) -> None:
    """After an action that changed the queues: figures counted before now are not taken
    (a leader's pass already counting may still publish them; its time gives it away)."""
    at = now_ms() if now is None else now
    hot.kv_set(GROUP, {CHANGED_KEY: str(at)}, ttl_ms=KEPT_TTL_MS, now=at)


def _wanted(raw: str | None) -> dict[str, Any]:
    value = _json(raw)
    queues = value.get("queues")
    until = value.get("until")
    return {"queues": [q for q in queues if isinstance(q, str)][:MAX_QUEUES] if isinstance(queues, list) else [],
            "until": until if isinstance(until, int) and not isinstance(until, bool) else 0}


def _kept(raw: str | None) -> tuple[int, dict[str, QueueDepths]] | None:
    value = _json(raw)
    at, depths = value.get("at"), value.get("depths")
    if not isinstance(at, int) or isinstance(at, bool) or not isinstance(depths, dict):
        return None
    found: dict[str, QueueDepths] = {}
    for name, counts in depths.items():
        if not (isinstance(counts, list) and len(counts) == 3 and all(isinstance(c, int) for c in counts)):
            return None  # not written by keep_depths: count afresh rather than trust part of it
        found[name] = QueueDepths(*counts)
    return at, found


def _int(raw: str | None) -> int:
    try:
        return int(raw) if raw else 0
    except ValueError:
        return 0


def _json(raw: str | None) -> Mapping[str, Any]:
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
