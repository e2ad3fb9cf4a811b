"""The Plane drift page: where the hot plane disagrees with the durable plane, per queue
(:func:`oqronkit.services.drift.plane_drift`, a bounded sample of both), the
reconciler's and the rescuer's last passes and what they repaired, live; an operator
runs the reconciler now (audited; :func:`oqronkit.services.manual.start_reconcile`)."""

from __future__ import annotations

import logging
from typing import Any

from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from oqronboard.base.templating import render
from oqronkit.errors import OqronError
from oqronkit.services.drift import GRACE_MS, PlaneDrift, plane_drift
from oqronkit.services.manual import reconcile_running, start_reconcile

from ..base import conf
from ..base.audit import Action
from ..base.pages import BoardRequest, board_view, refresh_others, scope_of
from ..base.roles import operator_required
from ..base.scope import BoardScope
from ..base.shared import kept_depths_ms, shared

logger = logging.getLogger(__name__)
FINDINGS = (
    ("unsignalled", "Not signalled", "durable jobs waiting or delayed that the hot plane does not hold"),
    ("orphans", "Hot without job", "hot entries with no durable job"),
    ("leaseless", "Active without lease", "durable active jobs with no lease on the hot plane"),
    ("lapsed", "Lapsed leases", "leases past their expiry, not rescued yet"),
    ("lapsing", "Lapsing leases", "leases that lapse within one heartbeat interval"),
    ("workerless", "Worker gone", "active jobs whose worker is not in the live registry"),
)


def shared_drift(scope: BoardScope) -> PlaneDrift:
    """The comparison (three to six plane calls a queue), shared by every viewer for
    ``OQRON_BOARD_CACHE_SECONDS`` and read afresh after any action (running the reconciler
    is one); the page and the API give its time (``at``)."""
    return shared(scope, "planes", lambda: plane_drift(scope.engine, depths_age_ms=kept_depths_ms()))


def drift_context(scope: BoardScope) -> dict[str, Any]:
    """The page's numbers, or the reason the planes could not be compared."""
    try:
        report: PlaneDrift | None = shared_drift(scope)
        problem = None
    except OqronError as exc:
        logger.warning("plane drift: %s", exc, extra={"action": "board.planes_failed"})
        report, problem = None, str(exc)
    rows = [{"q": q, "cells": [(key, label, getattr(q, key)) for key, label, _help in FINDINGS]}
            for q in (report.queues if report else [])]
    return {"report": report, "rows": rows, "problem": problem, "findings": FINDINGS, "grace_ms": GRACE_MS,
            "running": reconcile_running(scope.engine), "shared_seconds": conf.cache_seconds()}


@board_view
def planes_page(request: BoardRequest) -> HttpResponse:
    """The comparison; ``?panel=live`` renders the live panel for htmx."""
    context = drift_context(scope_of(request))
    if request.htmx and request.GET.get("panel") == "live":
        return render(request, "oqronboard/planes.html#live", context)
    return render(request, "oqronboard/planes.html", context)


def run_reconciler(scope: BoardScope, user: str, *, source: str) -> tuple[bool, str]:
    """Start the reconciler for an operator, audited; (started, message)."""
    started = start_reconcile(scope.engine, by=f"{source}:{user}")
    message = ("Reconciler started: lost waiting and delayed jobs are signalled again in about a second; "
               "its pass shows below." if started else "The reconciler is running already; its pass shows below.")
    Action(scope, user, "reconcile", source=source, queue=None,
           extra={"target": "every queue's hot plane"}).save(ok=started, result=message)
    return started, message


@require_POST
@board_view
@operator_required
def planes_reconcile(request: BoardRequest) -> HttpResponse:
    started, message = run_reconciler(scope_of(request), request.user.get_username(), source="board")
    if request.htmx:
        return refresh_others(render(request, "oqronboard/planes.html#result", {"ok": started, "message": message}))
    (messages.success if started else messages.warning)(request, message)
    return HttpResponseRedirect(reverse("oqronboard:planes"))
