"""The schedules pages: every cron and schedule of the scope with its expression in
words, time zone, next five fires, last run, counters and pause state; pause, resume and
run-now for operators (through the engine's public scheduler API, audited); and each
definition's run history. They read oqron_records and oqron_runs, so they live above
the apps.

The live panel costs three queries: the definitions and control records (one
primary-key prefix read of four namespaces), the last runs by id, and the last hour's
late runs (a count bounded by ``startedAt``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from oqronboard.base.templating import render
from oqronboard.definitions import schedules
from oqronboard.runs.queries import RunFilters, late_counts, run_list, runs_by_id
from oqronkit.clock import now_ms
from oqronkit.errors import InvalidState, UnknownSchedule
from oqronkit.scheduler import request_run, set_paused

from ..base.audit import Action
from ..base.cursors import decode_cursor
from ..base.pages import BoardRequest, back, board_view, refresh_others, safe_next, scope_of
from ..base.roles import operator_required
from ..base.scope import BoardScope

ACTIONS = {"pause": "pause", "resume": "resume", "run-now": "run-now"}
HISTORY_PAGE = 50


def schedule_rows(scope: BoardScope) -> tuple[list[dict[str, Any]], bool]:
    """Every cron and schedule with its control state, last run and late count (three
    queries); and whether the list was capped."""
    rows, capped = schedules.schedule_rows(scope)
    last = runs_by_id(scope, [r["last_run_id"] for r in rows if isinstance(r["last_run_id"], str)])
    late = late_counts(scope, schedules.KINDS, since=now_ms() - schedules.LATE_WINDOW_MS,
                       late_ms=schedules.LATE_MS) if rows else {}
    for row in rows:
        row["last_run"] = last.get(row["last_run_id"]) if isinstance(row["last_run_id"], str) else None
        row["recent"], row["late"] = late.get((row["kind"], row["name"]), (0, 0))
    return rows, capped


@board_view
def schedules_page(request: BoardRequest) -> HttpResponse:
    """Crons and schedules; ``?panel=list`` for the live panel."""
    rows, capped = schedule_rows(scope_of(request))
    context = {"rows": rows, "capped": capped, "limit": schedules.MAX_SCHEDULES, "late_ms": schedules.LATE_MS}
    if request.htmx and request.GET.get("panel") == "list":
        return render(request, "oqronboard/definitions/schedules.html#schedules", context)
    return render(request, "oqronboard/definitions/schedules.html", context)


def _definition_row(scope: BoardScope, kind: str, name: str) -> dict[str, Any] | None:
    """One definition, its control record and its last run; None when neither record exists."""
    row = schedules.definition_row(scope, kind, name)
    if row is None:
        return None
    last = runs_by_id(scope, [row["last_run_id"]]) if isinstance(row["last_run_id"], str) else {}
    row["last_run"] = last.get(row["last_run_id"])
    return row


@board_view
def schedule_history(request: BoardRequest, kind: str, id: str) -> HttpResponse:
    """One cron or schedule: its state and its runs, newest first, keyset paged
    (``?cursor=``); ``?panel=state`` for the live state panel."""
    scope, name = scope_of(request), id
    raw_cursor = request.GET.get("cursor", "")
    cursor = decode_cursor(raw_cursor)
    row = _definition_row(scope, kind, name)
    context: dict[str, Any] = {"row": row, "kind": kind, "name": name, "late_ms": schedules.LATE_MS}
    if request.htmx and request.GET.get("panel") == "state":
        if row is None:
            raise Http404(f"No {kind} named {name!r} in this project and environment.")
        return render(request, "oqronboard/definitions/schedule_detail.html#state", context)
    runs, next_cursor = run_list(scope, RunFilters(since=0, module=kind, name=name, cursor=cursor),
                                 limit=HISTORY_PAGE)
    if row is None and not runs and cursor is None:
        raise Http404(f"No {kind} named {name!r} in this project and environment.")
    context.update(runs=runs, cursor=raw_cursor, next_query=urlencode({"cursor": next_cursor}) if next_cursor else "",
                   runs_url=reverse("oqronboard:runs") + "?" + urlencode({"module": kind, "name": name,
                                                                          "window": "30d"}))
    if request.htmx and cursor is not None:
        return render(request, "oqronboard/definitions/schedule_detail.html#rows", context)
    return render(request, "oqronboard/definitions/schedule_detail.html", context)


@require_POST
@board_view
@operator_required
def schedule_action(request: BoardRequest, kind: str, id: str, action: str) -> HttpResponse:
    """Pause, resume or run a cron or schedule now, through the engine's scheduler API."""
    if action not in ACTIONS:
        raise Http404("Unknown action.")
    scope, name = scope_of(request), id
    label = f"{kind} {name}"
    audit = Action(scope, request.user.get_username(), ACTIONS[action],
                   extra={"target": label, "module": kind, "name": name})
    ok, run_id = True, None
    try:
        if action == "run-now":
            run_id = request_run(scope.engine, kind, name, None, use_default=True)
            message = f"Run of {label} requested ({run_id}); the leader starts it within a tick."
        else:
            set_paused(scope.engine, kind, name, action == "pause")
            message = f"{label.capitalize()} {'paused' if action == 'pause' else 'resumed'}."
    except UnknownSchedule as exc:
        raise Http404(str(exc)) from exc
    except InvalidState as exc:
        ok, message = False, str(exc)
    audit.extra["runId"] = run_id
    audit.save(ok=ok, result=message)
    if request.htmx:
        row = _definition_row(scope, kind, name)
        if row is None:
            raise Http404(f"No {kind} named {name!r} in this project and environment.")
        context = {"row": row, "message": message, "failed": not ok, "next": safe_next(request,
                                                                                       reverse("oqronboard:schedules"))}
        response = render(request, "oqronboard/definitions/schedules.html#control", context)
        return refresh_others(response)
    (messages.success if ok else messages.error)(request, message)
    return back(request, reverse("oqronboard:schedules"))
