"""Rolling a minute again when only its open runs may have changed: its manifest lists
them ([id, status]); a pass reads those runs by id, and moves each one that finished (or
changed status) in the buckets it counts in, from the bucket's stored value, writing the
buckets and the manifest (with the runs still open) in one write. No range read of the
minute's thousands of runs, so a minute holding a long run costs a few lookups a pass.

Replace-safe like the rest of the rollup: a pass derives the new value from the stored
one and the runs listed in it, and a run leaves the list in the same write that moves
it, so a pass run twice (or cut short, or by two leaders) never moves a run twice."""

from __future__ import annotations

from ..durable import DurablePlane
from ..namespaces import METRICS_MINUTE, RUNS
from .buckets import OPEN_STATUSES, Bucket, keys_of_run, manifest_id, run_facts, sketch_id
from .writes import Retention, RollupReport, roll_minute, write_buckets


def settle_minute(durable: DurablePlane, minute: int, retention: Retention, report: RollupReport) -> int:
    """Move the listed open runs of ``minute`` that changed; returns the runs still open.
    The minute is rolled whole instead when its manifest does not list them (too many),
    a listed run is gone, or a bucket is missing."""
    manifest = durable.get(METRICS_MINUTE, manifest_id(minute))
    listed = manifest.value.get("open") if manifest is not None else None
    if manifest is None or not isinstance(listed, list):
        return roll_minute(durable, minute, retention, report)
    entries = [(str(e[0]), str(e[1])) for e in listed if isinstance(e, list) and len(e) == 2]
    runs = {r.id: r.value for r in durable.get_many(RUNS, [id for id, _ in entries])} if entries else {}
    if len(runs) < len(entries):
        return roll_minute(durable, minute, retention, report)
    changed = [(id, old, runs[id]) for id, old in entries if runs[id].get("status") != old]
    if not changed:
        return len(entries)
    keys = {key for _, _, run in changed for key in keys_of_run(run)}
    found = [Bucket.from_value(r.value) for r in durable.get_many(METRICS_MINUTE,
                                                                  [sketch_id(minute, s, k) for s, k in keys])]
    buckets = {(b.scope, b.key): b for b in found}
    if set(buckets) != keys:
        return roll_minute(durable, minute, retention, report)
    for _, old, run in changed:
        facts = run_facts(run)
        for key in keys_of_run(run):
            buckets[key].forget_open(old)
            buckets[key].add_run(*facts)
    moved = {id for id, _, _ in changed}
    still_open: list[list[str]] = [[id, status] for id, status in entries if id not in moved]
    still_open += [[id, str(run.get("status"))] for id, _, run in changed if run.get("status") in OPEN_STATUSES]
    all_keys: list[list[str]] = [list(k) for k in manifest.value.get("keys") or []]
    write_buckets(durable, "minute", minute, buckets.values(), retention, open_runs=still_open, keys=all_keys)
    report.minutes += 1
    report.runs += len(changed)
    return len(still_open)
