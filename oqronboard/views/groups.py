"""Groups (issue 26): the list of the scope's groups and one group's page: progress
(members by state, the pending ones by their job's live status), the callback's state
and every member linked to its job and run. Read through the engine's group data API
(:mod:`oqronkit.groups.ledger.records`) on the board's scoped engine; groups have no action."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

from django.http import Http404, HttpResponse
from django_htmx.http import HttpResponseStopPolling

from oqronboard.base.templating import render, render_to_string
from oqronboard.runs.queries import job_runs
from oqronkit.groups.records import (
    GroupInfo,
    GroupNotFound,
    MemberResult,
    first_members,
    member_counts,
    member_statuses,
    read_group,
)
from oqronkit.namespaces import QUEUE_GROUPS, dlq_namespace, job_namespace

from ..base.pages import BoardRequest, board_view, scope_of
from ..base.scope import BoardScope

NO_GROUP = "No group with that id in this project and environment."
#: Members listed on the page (the counts cover every member).
SHOWN = 200
UNFINISHED = ("waiting for the group", "waiting", "delayed", "active")
LISTED = 100


@board_view
def groups_page(request: BoardRequest) -> HttpResponse:
    """The scope's latest groups, newest first."""
    page = scope_of(request).engine.durable.list(QUEUE_GROUPS, order="inserted", descending=True, limit=LISTED)
    groups = [dict(r.value, id=r.id) for r in page.records]
    return render(request, "oqronboard/groups.html", {"groups": groups, "more": page.next_cursor is not None})


@board_view
def group_detail(request: BoardRequest, group_id: str) -> HttpResponse:
    """One group: its record, progress by state, callback, members; ``?panel=live``
    renders the progress and callbacks for htmx, 286 (stop polling) once all is done."""
    scope = scope_of(request)
    context = group_context(scope, group_id)
    if request.htmx and request.GET.get("panel") == "live":
        if context["polling"]:
            return render(request, "oqronboard/group.html#live", context)
        return HttpResponseStopPolling(render_to_string("oqronboard/group.html#live", context, request))
    context["members"] = first_member_rows(scope, group_id)
    return render(request, "oqronboard/group.html", context)


def group_context(scope: BoardScope, group_id: str) -> dict[str, Any]:
    """The group's record, progress and callbacks (the page's live panel; the API's
    group); 404 for a group this scope does not hold."""
    try:
        info = read_group(scope.engine.durable, group_id)
    except GroupNotFound as exc:
        raise Http404(NO_GROUP) from exc
    statuses = member_statuses(scope.engine.durable, group_id)
    counts = member_counts(statuses.values())
    live = live_states(scope, [member for member, status in statuses.items() if status == "pending"])
    total = info.total or len(statuses)
    callbacks = [callback_state(scope, info, role, ref) for role, ref in
                 (("on_complete", info.on_complete), ("on_failure", info.on_failure)) if ref]
    return {
        "group": info, "counts": counts, "live": sorted(live.items()), "total": total,
        "settled_pct": round(100 * (counts["completed"] + counts["dead"]) / total) if total else 0,
        "callbacks": callbacks, "hidden": max(0, len(statuses) - SHOWN),
        # Polled until the group is decided and its callback has run (or there is none to run).
        "polling": info.status in ("open", "firing") or any(c["state"] in UNFINISHED for c in callbacks),
    }


def first_member_rows(scope: BoardScope, group_id: str) -> list[dict[str, Any]]:
    return [member_row(m) for m in first_members(scope.engine.durable, group_id, limit=SHOWN)]


def live_states(scope: BoardScope, pending: list[tuple[str, str]]) -> dict[str, int]:
    """Pending members (``(queue, job id)``) counted by their job's status now (waiting,
    active, delayed ...; ``dead`` for one dead-lettered but not yet settled, ``gone`` for
    one that left unnoticed: the sweep settles both)."""
    by_queue: dict[str, list[str]] = defaultdict(list)
    for queue, job_id in pending:
        by_queue[queue].append(job_id)
    states: Counter[str] = Counter()
    for queue, ids in by_queue.items():
        for start in range(0, len(ids), 1000):
            chunk = ids[start:start + 1000]
            found = {r.id: str((r.value or {}).get("status")) for r in
                     scope.engine.durable.get_many(job_namespace(queue), chunk)}
            dead = {r.id for r in scope.engine.durable.get_many(dlq_namespace(queue), [i for i in chunk
                                                                                         if i not in found])}
            states.update(found.get(i) or ("dead" if i in dead else "gone") for i in chunk)
    return dict(states)


def callback_state(scope: BoardScope, info: GroupInfo, role: str, ref: tuple[str, str]) -> dict[str, Any]:
    """Where a callback stands: waiting for the group, enqueued (its job's status and
    latest run), not needed (the group took the other outcome), or dead-lettered."""
    queue, job_id = ref
    record = scope.engine.durable.get(job_namespace(queue), job_id)
    dead = scope.engine.durable.get(dlq_namespace(queue), job_id) if record is None else None
    runs = job_runs(scope, job_id, limit=5)
    fired = info.callback == ref
    if record is not None:
        status = str((record.value or {}).get("status"))
        state = "waiting for the group" if status == "waiting-dependencies" else status
    elif dead is not None:
        state = "dead"
    elif runs:
        state = str(runs[0].get("status"))
    elif info.outcome is not None and not fired:
        state = "not needed"
    else:
        state = "gone"
    return {"role": role, "queue": queue, "job_id": job_id, "state": state, "fired": fired,
            "in_queue": record is not None or dead is not None, "runs": runs}


def member_row(m: MemberResult) -> dict[str, Any]:
    return {"index": m.index, "queue": m.queue, "job_id": m.job_id, "status": m.status, "run_id": m.run_id,
            "output": m.output, "error": m.error, "too_large": m.output_too_large}
