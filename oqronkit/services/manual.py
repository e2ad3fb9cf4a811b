"""The reconciler run by an operator (the board's "Reconcile now", ``oqron reconcile``).

Two passes :data:`GAP_S` apart over every known queue, as the leader's reconciler: a
waiting or delayed job missing from the hot plane on both is signalled again (one pass
cannot tell a lost job from one stored a moment ago and signalled the next). Active jobs
missing their lease are never counted stalled here: a live worker's heartbeat re-creates
its lease within a third of a lease, longer than the gap, so only the leader's passes
(which wait that out) may stall them. Signalling is idempotent, so running beside the
leader's reconciler is safe. The pass is recorded (services/passes.py) with who asked.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

from ..clock import now_ms
from .leader import known_queues
from .passes import ServicePass, record_pass
from .reconciler import Reconciler

if TYPE_CHECKING:
    from ..engine import Engine

logger = logging.getLogger(__name__)
GAP_S = 1.0
_running: set[tuple[str, str]] = set()
_lock = threading.Lock()


def reconcile_now(engine: Engine, *, by: str, gap_s: float = GAP_S) -> ServicePass:
    """Run the reconciler's two passes now; what the second one repaired."""
    report = ServicePass("reconcile", started_at=now_ms(), by=by, manual=True)
    reconciler = Reconciler(engine)
    try:
        queues = known_queues(engine)
        reconciler.run(queues, stall_queues=set())
        time.sleep(gap_s)
        reconciler.run(queues, stall_queues=set(), report=report)
    except Exception as exc:
        report.error = f"{type(exc).__name__}: {exc}"[:500]
        raise
    finally:
        record_pass(engine, report)
    logger.info("reconciler run by %s: %d job(s) signalled again", by, report.total,
                extra={"action": "reconciler.manual"})
    return report


def start_reconcile(engine: Engine, *, by: str, gap_s: float = GAP_S) -> bool:
    """:func:`reconcile_now` on a thread of its own (a request must not wait out a big
    queue's walk); False when this process runs one for the scope already."""
    key = (engine.config.project, engine.config.environment)
    with _lock:
        if key in _running:
            return False
        _running.add(key)

    def run() -> None:
        try:
            reconcile_now(engine, by=by, gap_s=gap_s)
        except Exception:  # recorded as the pass's error; a thread has no caller to raise to
            logger.exception("reconciler run by %s failed", by, extra={"action": "reconciler.manual_failed"})
        finally:
            with _lock:
                _running.discard(key)

    threading.Thread(target=run, name="oqron-reconcile-now", daemon=True).start()
    return True


def reconcile_running(engine: Engine) -> bool:
    """Whether this process runs an operator's reconciler pass for the engine's scope now."""
    with _lock:
        return (engine.config.project, engine.config.environment) in _running
