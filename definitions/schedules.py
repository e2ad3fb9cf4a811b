"""The schedules page: every cron and schedule of the scope with its expression in words,
time zone, next five fires, last run, counters and pause state; pause, resume and run-now
for operators (through the engine's public scheduler API, audited); and each
definition's run history.

The live panel costs three queries: the definitions and control records (one
primary-key prefix read of four namespaces), the last runs by id, and the last hour's
late runs (a count bounded by ``startedAt``).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from oqronboard.base.audit import Action
from oqronboard.base.cursors import decode_cursor
from oqronboard.base.expressions import JsonNumber, JsonText, RunStarted
from oqronboard.base.pages import back, board_view, refresh_others, safe_next, scope_of
from oqronboard.base.roles import operator_required
from oqronboard.base.scope import BoardScope
from oqronkit import OqronError
from oqronkit.clock import now_ms
from oqronkit.errors import InvalidState, UnknownSchedule
from oqronkit.scheduler import Definition, preview, request_run, set_paused
from runs.queries import RUN_NAMESPACE, RunFilters, run_list, runs_of

from .queries import records_of

KINDS = ("cron", "schedule")
CONTROL_NAMESPACE = {"cron": "cron_durable", "schedule": "schedule_durable"}
ACTIONS = {"pause": "pause", "resume": "resume", "run-now": "run-now"}
MAX_SCHEDULES = 500
PREVIEW_FIRES = 5
# A fire later than this is a missed slot to the scheduler (oqronkit.scheduler): the
# page counts such late runs over the last hour.
LATE_MS = 2000
LATE_WINDOW_MS = 3600 * 1000
HISTORY_PAGE = 50


def _url_names(kind: str) -> tuple[str, str]:
    """The history and action URL names of a kind (``cron-history``, ``cron-action``)."""
    return f"{kind}-history", f"{kind}-action"


def _urls(kind: str, name: str) -> dict[str, str | None]:
    """The page's links of a definition (any name: ``<seg:...>`` escapes what a path
    cannot carry as it is, such as a ``/``)."""
    history, action = _url_names(kind)
    return {"history_url": reverse(history, args=[name]), "pause_url": reverse(action, args=[name, "pause"]),
            "resume_url": reverse(action, args=[name, "resume"]),
            "run_now_url": reverse(action, args=[name, "run-now"])}


def _fires(definition: Definition) -> list[dict[str, str]]:
    """The next fires in the definition's time zone, for ``<time>`` tags."""
    return [{"iso": dt.isoformat(), "text": dt.strftime("%Y-%m-%d %H:%M:%S %Z")}
            for dt in preview(definition, PREVIEW_FIRES)]


def _row(kind: str, name: str, value: Any, control: Any) -> dict[str, Any]:
    """One definition as the page shows it; a record the engine cannot read shows its problem."""
    value = value if isinstance(value, dict) else {}
    control = control if isinstance(control, dict) else {}
    counters = control.get("counters") if isinstance(control.get("counters"), dict) else {}
    row: dict[str, Any] = {
        "kind": kind, "name": name, "description": value.get("description") or "", "timezone":
        value.get("timezone") or "UTC", "dynamic": bool(value.get("dynamic")), "handler": value.get("handler"),
        "as_job": bool(value.get("asJob")), "missed": value.get("missed"), "overlap": value.get("overlap"),
        "version": value.get("version"), "paused": bool(control.get("paused")), "done": bool(control.get("done")),
        "next_run_at": control.get("nextRunAt"), "last_run_id": control.get("lastRunId"),
        "last_fired_at": control.get("lastFiredAt"), "paused_at": control.get("pausedAt"),
        "pending": len(control.get("manual") or []),
        "counters": {k: counters.get(k, 0) for k in ("missed", "skipped", "run", "manual")},
        "fires": [], "problem": "", **_urls(kind, name),
    }
    row["actionable"] = bool(value) and row["pause_url"] is not None
    if not value:
        row["problem"] = "The definition record is gone (a finished dynamic schedule expires)."
        return row
    try:
        definition = Definition.from_record(value)
        description = row["description"] or definition.timing.describe()
        zone = f" ({definition.timezone})"  # the zone has a column of its own
        row["description"] = description[: -len(zone)] if description.endswith(zone) else description
        if not row["done"]:
            row["fires"] = _fires(definition)
    except (OqronError, KeyError, TypeError, ValueError) as exc:
        row["problem"] = f"Cannot read this definition: {exc}"
    return row


def schedule_rows(scope: BoardScope, *, limit: int = MAX_SCHEDULES) -> tuple[list[dict[str, Any]], bool]:
    """Every cron and schedule (at most ``limit``) with its control state, last run and
    late count; and whether the list was capped."""
    namespaces = [*KINDS, *CONTROL_NAMESPACE.values()]
    records = (records_of(scope).filter(namespace__in=namespaces).order_by("namespace", "id")
               .values_list("namespace", "id", "value")[: 2 * limit + 1])
    found: dict[tuple[str, str], dict[str, Any]] = {}
    kind_of = {ns: kind for kind, ns in CONTROL_NAMESPACE.items()}
    for namespace, name, value in records:
        kind = kind_of.get(namespace, namespace)
        slot = found.setdefault((kind, name), {"value": None, "control": None})
        slot["control" if namespace in kind_of else "value"] = value
    capped = len(records) > 2 * limit or len(found) > limit
    rows = [_row(kind, name, parts["value"], parts["control"])
            for (kind, name), parts in sorted(found.items())[:limit]]
    last = _last_runs(scope, [r["last_run_id"] for r in rows if isinstance(r["last_run_id"], str)])
    late = _late_counts(scope) if rows else {}
    for row in rows:
        row["last_run"] = last.get(row["last_run_id"]) if isinstance(row["last_run_id"], str) else None
        row["recent"], row["late"] = late.get((row["kind"], row["name"]), (0, 0))
    return rows, capped


def _last_runs(scope: BoardScope, ids: list[str]) -> dict[str, dict[str, Any]]:
    """Status, start and lateness of the given runs: one primary-key read."""
    if not ids:
        return {}
    rows = runs_of(scope).filter(namespace=RUN_NAMESPACE, id__in=ids).values(
        "id", status=JsonText("status"), started=JsonText("startedAt"), late_ms=JsonText("lateMs"))
    return {row["id"]: row for row in rows}


def _late_counts(scope: BoardScope) -> dict[tuple[str, str], tuple[int, int]]:
    """Per (module, name): runs started in the last hour and how many of them fired late."""
    since = now_ms() - LATE_WINDOW_MS
    rows = (
        runs_of(scope).filter(namespace=RUN_NAMESPACE)
        .alias(started=RunStarted(), module=JsonText("module"), late_ms=JsonNumber("lateMs"))
        .filter(started__gte=since, module__in=KINDS)
        .values(kind=JsonText("module"), run_name=JsonText("name"))
        .annotate(total=Count("*"), late=Count("id", filter=Q(late_ms__gt=LATE_MS))).order_by()
    )
    return {(row["kind"], row["run_name"]): (row["total"], row["late"]) for row in rows}


@board_view
def schedules_page(request: HttpRequest) -> HttpResponse:
    """Crons and schedules; ``?panel=list`` for the live panel."""
    rows, capped = schedule_rows(scope_of(request))
    context = {"rows": rows, "capped": capped, "limit": MAX_SCHEDULES, "late_ms": LATE_MS}
    if request.htmx and request.GET.get("panel") == "list":
        return render(request, "definitions/schedules.html#schedules", context)
    return render(request, "definitions/schedules.html", context)


def _definition_row(scope: BoardScope, kind: str, name: str) -> dict[str, Any] | None:
    """One definition and its control record (one primary-key read), None when neither exists."""
    records = records_of(scope).filter(namespace__in=[kind, CONTROL_NAMESPACE[kind]], id=name) \
        .values_list("namespace", "value")
    parts = dict(records)
    if not parts:
        return None
    row = _row(kind, name, parts.get(kind), parts.get(CONTROL_NAMESPACE[kind]))
    last = _last_runs(scope, [row["last_run_id"]]) if isinstance(row["last_run_id"], str) else {}
    row["last_run"] = last.get(row["last_run_id"])
    return row


@board_view
def schedule_history(request: HttpRequest, kind: str, id: str) -> HttpResponse:
    """One cron or schedule: its state and its runs, newest first, keyset paged
    (``?cursor=``); ``?panel=state`` for the live state panel."""
    scope, name = scope_of(request), id
    raw_cursor = request.GET.get("cursor", "")
    cursor = decode_cursor(raw_cursor)
    row = _definition_row(scope, kind, name)
    context: dict[str, Any] = {"row": row, "kind": kind, "name": name, "late_ms": LATE_MS}
    if request.htmx and request.GET.get("panel") == "state":
        if row is None:
            raise Http404(f"No {kind} named {name!r} in this project and environment.")
        return render(request, "definitions/schedule_detail.html#state", context)
    runs, next_cursor = run_list(scope, RunFilters(since=0, module=kind, name=name, cursor=cursor),
                                 limit=HISTORY_PAGE)
    if row is None and not runs and cursor is None:
        raise Http404(f"No {kind} named {name!r} in this project and environment.")
    context.update(runs=runs, cursor=raw_cursor, next_query=urlencode({"cursor": next_cursor}) if next_cursor else "",
                   runs_url=reverse("runs") + "?" + urlencode({"module": kind, "name": name, "window": "30d"}))
    if request.htmx and cursor is not None:
        return render(request, "definitions/schedule_detail.html#rows", context)
    return render(request, "definitions/schedule_detail.html", context)


@require_POST
@board_view
@operator_required
def schedule_action(request: HttpRequest, kind: str, id: str, action: str) -> HttpResponse:
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
        context = {"row": row, "message": message, "failed": not ok, "next": safe_next(request, reverse("schedules"))}
        response = render(request, "definitions/schedules.html#control", context)
        return refresh_others(response)
    (messages.success if ok else messages.error)(request, message)
    return back(request, reverse("schedules"))
