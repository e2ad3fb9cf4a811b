"""What one plane drift report costs on the board bench's seed: statements, stored jobs
looked up, the client's CPU and the wall time (``oqronkit.services.drift.plane_drift``,
as the board calls it: the leader's kept depths, so no depth count of its own).

    .venv/bin/python bench/drift_cost.py [--database-url URL] [--reports 15] [--profile]

Needs a seeded bench database (``board_pages.py`` seeds it; this never seeds or writes
jobs). Counts do not move with the machine's load; the times do (compare arms
interleaved). ``--profile`` prints the cProfile of one more report.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from board_pages import start_django  # bench/board_pages.py, beside this file

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/oqron_cold_bench"
#: As the board reads them (OQRON_BOARD_CACHE_SECONDS): the leader's count, not the report's.
DEPTHS_AGE_MS = 2_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database-url", default=DEFAULT_URL)
    parser.add_argument("--reports", type=int, default=15)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    start_django(args.database_url)
    from oqronkit.contrib.django import engine as django_engine
    from oqronkit.services.drift import plane_drift
    from oqronkit.services.kept_depths import keep_depths

    engine = django_engine.get_engine()
    statements: list[str] = []
    real_execute = psycopg.Connection.execute

    def counted(conn: Any, query: Any, params: Any = None, **kwargs: Any) -> Any:
        if threading.current_thread() is threading.main_thread():
            statements.append(" ".join(str(query).split())[:60])
        return real_execute(conn, query, params, **kwargs)

    psycopg.Connection.execute = counted  # type: ignore[method-assign]
    walls, cpus, counts = [], [], []
    for n in range(args.reports + 3):  # three to warm the pools and the statement caches
        keep_depths(engine.hot)  # the leader's pass, between the board's reads
        statements.clear()
        wall, cpu = time.perf_counter(), time.process_time()
        report = plane_drift(engine, depths_age_ms=DEPTHS_AGE_MS)
        if n >= 3:
            walls.append((time.perf_counter() - wall) * 1000)
            cpus.append((time.process_time() - cpu) * 1000)
            counts.append(len(statements))
    findings = {q.queue: {k: getattr(q, k).count for k in q.FINDINGS if getattr(q, k).count} for q in report.queues}
    print(f"{len(report.queues)} queues, {report.calls} plane calls, statements a report: "
          f"{statistics.median(counts):g} (min {min(counts)}, max {max(counts)})")
    print(f"wall ms: median {statistics.median(walls):.1f}; client CPU ms: median {statistics.median(cpus):.2f} "
          f"over {args.reports} reports")
    print("findings:", findings)
    for text, times in Counter(statements).most_common():
        print(f"  {times:3d}  {text}")
    if args.profile:
        keep_depths(engine.hot)
        profile = cProfile.Profile()
        profile.enable()
        plane_drift(engine, depths_age_ms=DEPTHS_AGE_MS)
        profile.disable()
        pstats.Stats(profile).sort_stats("cumulative").print_stats(20)


if __name__ == "__main__":
    main()
