"""The API's reads: the board pages' queries, answered as JSON. A list is a keyset page
like the page's "load more": ``next_cursor`` (null at the end) goes back as ``?cursor=``."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any
from urllib.parse import urlencode

from django.http import Http404
from django.urls import reverse

from oqronboard.definitions.queries import audit_entries, definitions, queue_control
from oqronboard.jobs.dead import dead_depths, dead_groups_held, dead_groups_shared
from oqronboard.jobs.forms import JobListForm, check_queue, dead_filters
from oqronboard.jobs.queries import dead_list, queue_jobs
from oqronboard.jobs.views import job_context, job_or_404, read_queue_counts
from oqronboard.runs.forms import run_filters
from oqronboard.runs.queries import job_runs
from oqronboard.runs.queries import run_list as query_runs
from oqronboard.runs.views import run_or_404
from oqronkit.namespaces import job_audit_namespace
from oqronkit.webhooks.header_secrets import masked_attempt

from .. import overview, queues
from ..base.cursors import decode_cursor
from ..base.filters import clean_or_400
from ..base.pages import BoardRequest, scope_of
from ..views import groups, trace
from ..views.runs import run_detail_context
from ..views.schedules import schedule_rows
from .base import api_view


def _page(rows: list[dict], cursor: str | None, **more: Any) -> dict[str, Any]:
    return {**more, "results": rows, "next_cursor": cursor}


@api_view("GET")
def queue_list(request: BoardRequest) -> dict[str, Any]:
    """Every queue of the scope with the overview's numbers, and the live workers."""
    data = overview.build(scope_of(request), charts=False)
    internal = overview.internal_queues()
    rows = []
    for row in data.queues:
        fields = asdict(row)
        fields.pop("chart", None)
        # internal: the overview page leaves it out (OQRON_INTERNAL_QUEUES); listed here.
        rows.append({**fields, "failure_rate": row.failure_rate, "unattended": row.unattended,
                     "internal": row.name in internal})
    return {"queues": rows, "workers": len(data.workers), "hot_problem": data.hot_problem,
            "status_counts_last_hour": data.status_counts}


@api_view("GET")
def queue_detail(request: BoardRequest, queue: str) -> dict[str, Any]:
    """One queue's counts by status and its control record; ``?status=&cursor=`` pages
    its jobs in one status (waiting by default), newest first. 404 for a queue with no
    record, job, dead letter or run that no live worker consumes."""
    check_queue(queue)
    scope = scope_of(request)
    if not queues.queue_seen(scope, queue):
        raise Http404("No queue of that name in this project and environment.")
    data = clean_or_400(JobListForm(request.GET))
    status = data["status"] or "waiting"
    rows, next_cursor = queue_jobs(scope, queue, status, cursor=decode_cursor(data["cursor"]))
    return _page(rows, next_cursor, queue=queue, status=status, **read_queue_counts(scope, queue),
                 control=queue_control(scope, queue) or {"paused": False})


@api_view("GET")
def job_detail(request: BoardRequest, queue: str, job_id: str) -> dict[str, Any]:
    """A job or dead letter, its latest runs and the operator actions taken on it."""
    record = job_or_404(request, queue, job_id)
    scope = scope_of(request)
    audit, _ = audit_entries(scope, job_audit_namespace(queue, job_id), limit=20)
    context = job_context(record, queue, job_runs(scope, job_id), audit)
    return {key: context[key] for key in ("job_id", "queue", "status", "dead", "job", "runs", "audit")}


@api_view("GET")
def run_list(request: BoardRequest) -> dict[str, Any]:
    """The runs page's list: the same filters (status, module, name, worker, job,
    window, q) and cursor."""
    filters, data = run_filters(request.GET)
    rows, next_cursor = query_runs(scope_of(request), filters)
    return _page(rows, next_cursor, status_implied_by_search=data["search_status_implied"])


@api_view("GET")
def run_detail(request: BoardRequest, run_id: str) -> dict[str, Any]:
    """One run in full (a webhook attempt's secret headers masked), its job's status and
    every run of its job."""
    run = run_or_404(request, run_id)
    context = run_detail_context(request, run)
    return {"id": run.id, "run": masked_attempt(context["run"]), "queue": context["queue"],
            "job_status": context["job_status"], "siblings": context["siblings"]}


@api_view("GET")
def dead_letter_list(request: BoardRequest) -> dict[str, Any]:
    """Dead letters newest first (filters queue, fingerprint, q); on the first page the
    depth per queue, and the error groups when a read in the last few seconds left them
    counted (else null: ``groups_url`` counts them, as the page's panel loads after it)."""
    scope = scope_of(request)
    filters, _ = dead_filters(request.GET)
    rows, next_cursor = dead_list(scope, filters)
    more: dict[str, Any] = {}
    if filters.cursor is None:
        # Shared with the page's panels for OQRON_BOARD_CACHE_SECONDS (they count every
        # dead letter); *_read_at says when they were counted.
        depth, held = dead_depths(scope), dead_groups_held(scope, filters.queue)
        more = {"depths": dict(depth["depths"]), "depths_read_at": depth["depths_at"],
                "groups": held["groups"] if held else None, "groups_read_at": held["groups_at"] if held else None,
                "groups_url": _groups_url(request, filters.queue)}
    return _page(rows, next_cursor, **more)


@api_view("GET")
def dead_letter_groups(request: BoardRequest) -> dict[str, Any]:
    """Dead letters grouped by error fingerprint (filter: queue), shared with the page's
    panel for OQRON_BOARD_CACHE_SECONDS; ``groups_read_at`` says when they were counted."""
    filters, _ = dead_filters(request.GET)
    by_error = dead_groups_shared(scope_of(request), filters.queue)
    return {"groups": by_error["groups"], "groups_read_at": by_error["groups_at"]}


def _groups_url(request: BoardRequest, queue: str) -> str:
    """The groups endpoint for the same queue and scope as ``request``."""
    query = {k: v for k, v in (("queue", queue), ("scope", request.GET.get("scope", ""))) if v}
    return reverse("oqronboard:api-dead-groups") + (f"?{urlencode(query)}" if query else "")


@api_view("GET")
def definition_list(request: BoardRequest) -> dict[str, Any]:
    """Every definition and control record; a queue record with no job, no dead letter
    and no live worker consuming it is ``stale``."""
    scope = scope_of(request)
    records = definitions(scope, annotate=queues.usage_annotations(scope))
    consumed = queues.consumed_queues(scope)
    return {"definitions": [
        {"namespace": r.namespace, "kind": r.record_kind, "id": r.id, "value": r.value,
         "stale": queues.is_stale(r, consumed)}
        for r in records
    ]}


@api_view("GET")
def schedule_list(request: BoardRequest) -> dict[str, Any]:
    """Every cron and schedule with its next fires, last run and counters."""
    rows, capped = schedule_rows(scope_of(request))
    return {"schedules": rows, "capped": capped}


@api_view("GET")
def group_detail(request: BoardRequest, group_id: str) -> dict[str, Any]:
    """A group (docs/how-to/groups-and-batches.md): its record, progress, callbacks and first members."""
    scope = scope_of(request)
    context = groups.group_context(scope, group_id)
    return {"group": asdict(context["group"]), "counts": context["counts"], "pending_now": dict(context["live"]),
            "callbacks": context["callbacks"], "members": groups.first_member_rows(scope, group_id),
            "more_members": context["hidden"]}


@api_view("GET")
def trace_detail(request: BoardRequest, correlation_id: str) -> dict[str, Any]:
    """One correlation id's timeline (README "Traces"): entries depth first, each with
    its cause (``parent``), nesting ``depth`` and the ``url`` of its board page."""
    found = scope_of(request).engine.trace(correlation_id)
    if not found.entries:
        raise Http404(trace.NO_TRACE)
    body = found.to_json()
    links = trace.Links()
    for entry, row in zip(found.entries, body["entries"], strict=True):
        row["url"] = links.of(entry)
    return body
