"""Finding a job's completed run: a completed job leaves oqron_jobs, and only its run
says it existed (dependencies ask whether a parent completed; groups read its output)."""

from __future__ import annotations

import re

from ..backends.types import StoredRecord
from ..durable import DurablePlane
from ..namespaces import RUNS

# An engine-made id starts with its creation time (ids.new_id); nodes' clocks may differ.
_ENGINE_ID = re.compile(r"[0-9a-f]{26}")
_CLOCK_SKEW_MS = 60_000


def find_completed_run(durable: DurablePlane, queue: str, job_id: str, *, scan: int) -> StoredRecord | None:
    """The completed run of ``job_id`` of ``queue``, or None. Reads the queue's completed
    runs newest first, at most ``scan`` of them, and none started before an engine-made
    id was created."""
    started_from = int(job_id[:12], 16) - _CLOCK_SKEW_MS if _ENGINE_ID.fullmatch(job_id) else None
    cursor, seen = None, 0
    while seen < scan:
        page = durable.list(RUNS, name=queue, status="completed", order="started", descending=True,
                            started_from=started_from, limit=min(1000, scan - seen), cursor=cursor)
        for record in page.records:
            if record.value.get("jobId") == job_id:
                return record
        seen += len(page.records)
        if page.next_cursor is None:
            return None
        cursor = page.next_cursor
    return None
