"""What a processing phase left in our engine's durable plane, read through the engine
(for modes whose durable plane is not SQL, i.e. ``redis``).

Run with the phase's ``OQRON_*`` variables; prints one JSON line: run records, distinct
jobs among them, completed runs, and job rows left (queue jobs and dead letters).
"""

from __future__ import annotations

import json
import sys

from oqronkit import get_engine
from oqronkit.namespaces import RUNS


def main() -> int:
    engine = get_engine()
    durable = engine.durable
    runs = completed = 0
    jobs: set[str] = set()
    cursor = None
    while True:
        page = durable.list(RUNS, limit=1000, cursor=cursor)
        for record in page.records:
            runs += 1
            jobs.add(str(record.value.get("jobId")))
            completed += record.value.get("status") == "completed"
        cursor = page.next_cursor
        if cursor is None:
            break
    left = durable.count(kind="job") + durable.count(kind="dlq")
    sys.stdout.write(json.dumps({"runs": runs, "jobs": len(jobs), "completed": completed, "left": left,
                                 "count_runs": durable.count(RUNS)}) + "\n")
    engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
