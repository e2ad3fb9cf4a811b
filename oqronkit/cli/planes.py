"""``oqron planes`` (the plane drift, per queue; exit status 1 when the planes disagree,
so a monitor can run it) and ``oqron reconcile`` (the reconciler's two passes now, audited)."""

from __future__ import annotations

import argparse

from ..engine import Engine
from ..services.drift import plane_drift
from ..services.manual import reconcile_now
from .actions import Audited
from .console import Console
from .output import Result

PLANES_COLUMNS = ("queue", "clean", "sampled", "unsignalled", "orphans", "leaseless", "lapsed", "lapsing",
                  "workerless")
REPAIR_COLUMNS = ("queue", "id", "action")


def planes(engine: Engine, args: argparse.Namespace) -> Result:
    report = plane_drift(engine, [args.queue] if args.queue else None)
    rows = [{"queue": q.queue, "clean": q.clean, "sampled": q.sampled, "complete": q.complete,
             **{name: getattr(q, name).count for name in q.FINDINGS},
             **{f"{name}_ids": getattr(q, name).ids for name in q.FINDINGS}} for q in report.queues]
    last = {k: None if v is None else v.to_value() for k, v in report.last.items()}
    result = Result("planes", rows, PLANES_COLUMNS, ok=report.clean,
                    message="The planes agree." if report.clean else "The planes disagree: see the counts above.",
                    extra={"last_passes": last, "leader": report.leader, "sample": report.sample,
                           "cost": {"ms": round(report.cost_ms, 2), "calls": report.calls}})
    for service, done in report.last.items():
        result.notes.append(f"last {service} pass: none recorded" if done is None else
                            f"last {service} pass by {done.by}: checked {done.checked}, repaired {done.total}")
    if any(not q.complete for q in report.queues):
        result.notes.append(f"queues with more than {report.sample} rows in a structure were sampled")
    return result


def reconcile(engine: Engine, args: argparse.Namespace, console: Console) -> Result:
    done = reconcile_now(engine, by=f"cli:{console.user}")
    rows = [{"queue": j["queue"], "id": j["job"], "action": j["action"]} for j in done.jobs]
    message = (f"Reconciler: {done.total} lost job(s) signalled again." if done.total
               else "Reconciler: nothing to repair.")
    result = Audited(engine, console, "reconcile", extra={"target": "every queue's hot plane"}).finish(
        ok=True, message=message, now=args.now, counts={"repaired": done.repaired, "checked": done.checked})
    result.rows, result.columns = rows, REPAIR_COLUMNS
    return result
