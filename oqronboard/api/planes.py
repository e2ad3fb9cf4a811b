"""``/api/v1/planes/``: the plane drift as JSON (the Plane drift page's numbers), and
``/api/v1/planes/reconcile/``: an operator runs the reconciler now (audited)."""

from __future__ import annotations

from typing import Any

from oqronkit.services.manual import reconcile_running

from ..base.pages import BoardRequest, scope_of
from ..views.planes import run_reconciler, shared_drift
from .base import api_view

SOURCE = "api"


@api_view("GET")
def planes(request: BoardRequest) -> dict[str, Any]:
    """Every known queue's comparison of the two planes, the services' last passes and
    the passes kept that repaired something."""
    scope = scope_of(request)
    return {**shared_drift(scope).to_json(), "reconcile_running": reconcile_running(scope.engine)}


@api_view("POST", operator=True)
def reconcile(request: BoardRequest) -> dict[str, Any]:
    """Start the reconciler's two passes (about a second); ``started`` false when one runs already."""
    started, message = run_reconciler(scope_of(request), request.user.get_username(), source=SOURCE)
    return {"ok": True, "started": started, "message": message}
