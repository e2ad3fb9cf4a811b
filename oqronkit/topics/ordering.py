"""``ordering="key"``: the messages of one key reach a group one at a time, in offset
order, across every process and every retry.

The dispatcher (one per group at a time) chains each message of a key to the previous
message of that key still in the group's queue, as a job dependency with
``parent_failure="ignore"``: the queue engine releases it only once its parent
completed or died, so a failing message holds back its key until it succeeds or is
dead-lettered, and other keys flow past it. A dispatcher taking a group over rebuilds
the chain heads from the jobs still in the queue.
"""

from __future__ import annotations

from typing import Any

from ..durable import DurablePlane

#: Jobs a takeover reads to find the chain heads (a group's queue holds about the
#: dispatcher's window of deliveries, plus what retries keep there).
REBUILD_LIMIT = 5000


class KeyChains:
    """The newest delivery per key of one group that may still be in its queue."""

    def __init__(self) -> None:
        self.heads: dict[str, tuple[int, str]] = {}  # key -> (offset, message id)

    def rebuild(self, durable: DurablePlane, namespace: str) -> None:
        self.heads.clear()
        cursor: str | None = None
        seen = 0
        while seen < REBUILD_LIMIT:
            page = durable.list(namespace, limit=500, cursor=cursor)
            for record in page.records:
                data = record.value.get("data") or {}
                key, offset = data.get("key"), data.get("offset")
                if isinstance(key, str) and isinstance(offset, int) and offset >= self.heads.get(key, (-1, ""))[0]:
                    self.heads[key] = (offset, record.id)
            seen += len(page.records)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor

    def chain(self, durable: DurablePlane, namespace: str, items: list[dict[str, Any]]) -> None:
        """Make each item depend on the previous item of its key still queued (in this
        batch, or a job of the queue), and note the items as the new heads."""
        parents = {head for _, head in self.heads.values()}
        present = {r.id for r in durable.get_many(namespace, sorted(parents))} if parents else set()
        self.heads = {k: v for k, v in self.heads.items() if v[1] in present}
        for item in items:
            data = item["data"]
            key = data.get("key")
            if key is None:
                continue
            head = self.heads.get(key)
            if head is not None:
                item["depends_on"] = [head[1]]
                item["parent_failure"] = "ignore"
            self.heads[key] = (data["offset"], item["job_id"])
