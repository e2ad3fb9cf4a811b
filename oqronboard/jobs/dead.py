"""The dead-letter page: depth per queue, failures grouped by error fingerprint, the
dead letters themselves; retry (one, selected, a group, all matching), delete
(confirmed) and export (JSON or CSV, streamed and capped).

"All matching" and a group act only on dead letters that died at or before the page's
render time, carried in the form (``rendered_at``): never on failures that arrived
after the operator looked. Every request acts on at most ``ACTION_CAP`` jobs.
"""

from __future__ import annotations

import csv
import json
import unicodedata
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponse, StreamingHttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import trigger_client_event

from oqronboard.base import conf
from oqronboard.base.audit import ACTION_CAP, Action, by_queue
from oqronboard.base.pages import BadFilter, BoardRequest, back, board_view, refresh_others, safe_next, scope_of
from oqronboard.base.roles import operator_required
from oqronboard.base.scope import BoardScope
from oqronboard.base.shared import shared_at, shared_fresh
from oqronboard.base.templating import render
from oqronboard.base.urlsafe import SegmentPattern
from oqronkit.clock import now_ms
from oqronkit.namespaces import queue_of

from .forms import dead_filters, selection
from .queries import COUNT_CAP, DeadFilters, dead_export_rows, dead_groups, dead_list, dead_targets, dlq_depths

EXPORT_CAP = 10_000
EXPORT_COLUMNS = ("queue", "id", "died", "attempts", "error_type", "error_message", "fingerprint", "reason")
LIST_EVENT = "dead:list"
# Each error group's dead letters are counted up to this ("1000+" past it): see dead_groups.
GROUP_COUNT_CAP = COUNT_CAP
# What makes a spreadsheet read an exported cell as a formula (_csv_safe).
FORMULA_SIGNS = frozenset("=+-@")
FORMULA_CONTROLS = frozenset("\t\r")


@board_view
def dead_letters(request: BoardRequest) -> HttpResponse:
    """The page, or one of its live panels (``?panel=depth|groups|list``) for htmx;
    ``?panel=groups`` without htmx is a page of the groups alone."""
    scope = scope_of(request)
    filters, data = dead_filters(request.GET)
    panel = request.GET.get("panel", "") if request.htmx else ""
    context: dict = {"filters": data, "rendered_at": now_ms(), "action_cap": ACTION_CAP,
                     "filter_query": urlencode({k: v for k, v in data.items() if v and k != "cursor"})}
    if panel == "depth":
        return render(request, "oqronboard/jobs/dead.html#depth", {**context, **dead_depths(scope)})
    if request.GET.get("panel") == "groups":  # without htmx: a page of its own, the page's link for no script
        template = "oqronboard/jobs/dead.html#groups" if request.htmx else "oqronboard/jobs/dead_groups.html"
        return render(request, template, {**context, **dead_groups_shared(scope, filters.queue)})
    rows, next_cursor = dead_list(scope, filters)
    _add_job_urls(rows)
    query = {k: v for k, v in request.GET.items() if k not in ("cursor", "panel") and v}
    context.update(rows=rows, next_query=urlencode({**query, "cursor": next_cursor}) if next_cursor else "")
    if panel == "list" or (request.htmx and filters.cursor is not None):
        return render(request,
                      "oqronboard/jobs/dead.html#rows" if filters.cursor else "oqronboard/jobs/dead.html#list", context)
    context.update({**dead_depths(scope), **(dead_groups_held(scope, filters.queue) or {"groups_later": True})})
    return render(request, "oqronboard/jobs/dead.html", context)


def _add_job_urls(rows: list[dict]) -> None:
    """Each row's job page URL, the pattern reversed once (per row in the template,
    ``{% url %}`` cost ~40 us a row)."""
    job = SegmentPattern("oqronboard:job", 2)
    for row in rows:
        row["url"] = job.fill(row["queue"] or "", row["id"])


# The depth and the groups count every dead letter: shared by every viewer for a few
# seconds (OQRON_BOARD_CACHE_SECONDS, read afresh after any action); the panels say when.
def dead_depths(scope: BoardScope) -> dict[str, Any]:
    depths, at = shared_at(scope, "dead:depths", lambda: sorted(dlq_depths(scope).items()))
    return {"depths": depths, "depths_at": at, "shared_seconds": conf.cache_seconds()}


def _groups_name(queue: str) -> str:
    return f"dead:groups:{queue}"


def dead_groups_shared(scope: BoardScope, queue: str) -> dict[str, Any]:
    groups, at = shared_at(scope, _groups_name(queue), lambda: dead_groups(scope, queue=queue, cap=GROUP_COUNT_CAP))
    return _groups_context(groups, at)


def _groups_context(groups: list[dict[str, Any]], at: int) -> dict[str, Any]:
    # A capped group's count reads "1000+": the panel says so once, under the table.
    return {"groups": groups, "groups_at": at, "shared_seconds": conf.cache_seconds(),
            "groups_capped": any(g["capped"] for g in groups), "group_count_cap": GROUP_COUNT_CAP}


def dead_groups_held(scope: BoardScope, queue: str) -> dict[str, Any] | None:
    """The groups another viewer's read left fresh, or None: the page then loads them
    after itself (their count reads every dead letter, as long again as the list)."""
    held = shared_fresh(scope, _groups_name(queue))
    if held is None:
        return None
    groups, at = held
    return _groups_context(groups, at)


def selection_targets(scope: BoardScope, data: dict) -> list[tuple[str, str]]:
    """The ``(queue, job id)`` a cleaned selection acts on, at most ``ACTION_CAP``."""
    if data["mode"] == "ids":
        return data["ids"]
    filters = DeadFilters(queue=data["queue"], fingerprint=data["fingerprint"], search=data["q"],
                          died_before=data["rendered_at"])
    return dead_targets(scope, filters, limit=ACTION_CAP)


def retry_selected(scope: BoardScope, user: str, data: dict, *, source: str = "board"
                   ) -> tuple[list[tuple[str, str]], int, str]:
    """Retry what a cleaned selection picks (at most ``ACTION_CAP``), audited: the
    targets, how many were retried and the message (the board's and the JSON API's)."""
    pairs = selection_targets(scope, data)
    retried = 0
    for queue, ids in by_queue(pairs).items():
        retried += len(scope.queue(queue).retry_many(ids))
    message = f"Retried {retried} of {len(pairs)} dead letter(s)."
    if data["mode"] == "matching" and len(pairs) >= ACTION_CAP:
        message += (f" This request acts on at most {ACTION_CAP}; more may match: run it again, or start "
                    "a tracked operation (Operations) for all of them.")
    Action(scope, user, "retry", source=source, targets=pairs,
           extra={"mode": data["mode"], "renderedAt": data["rendered_at"]}).save(ok=retried > 0, result=message)
    return pairs, retried, message


def delete_selected(scope: BoardScope, user: str, data: dict, pairs: list[tuple[str, str]], *,
                    source: str = "board") -> tuple[int, str]:
    """Delete the confirmed targets for good, audited: how many, and the message."""
    deleted = sum(scope.queue(queue).delete_dead(ids) for queue, ids in by_queue(pairs).items())
    message = f"Deleted {deleted} of {len(pairs)} dead letter(s)."
    Action(scope, user, "delete", source=source, targets=pairs,
           extra={"mode": data["mode"], "renderedAt": data["rendered_at"]}).save(ok=deleted > 0, result=message)
    return deleted, message


@require_POST
@board_view
@operator_required
def retry(request: BoardRequest) -> HttpResponse:
    """Retry the selected dead letters, a group, or all matching (up to the cap)."""
    data = selection(request.POST)
    pairs, retried, message = retry_selected(scope_of(request), request.user.get_username(), data)
    if request.htmx:
        single = data["mode"] == "ids" and len(pairs) == 1
        template = "oqronboard/jobs/dead.html#retried-row" if single else "oqronboard/jobs/dead.html#result"
        context = {"message": message, "ok": retried > 0, "pair": pairs[0] if pairs else None}
        response = refresh_others(render(request, template, context))
        return response if single else trigger_client_event(response, LIST_EVENT)
    (messages.success if retried else messages.warning)(request, message)
    return back(request, reverse("oqronboard:dead-letters"))


@require_POST
@board_view
@operator_required
def delete(request: BoardRequest) -> HttpResponse:
    """Delete dead letters for good, after a confirmation page that names how many."""
    scope = scope_of(request)
    data = selection(request.POST)
    pairs = selection_targets(scope, data)
    if not data["confirmed"]:
        fields = [(key, value) for key in ("mode", "queue", "fingerprint", "q", "rendered_at")
                  if (value := data.get(key)) not in (None, "")]
        return render(request, "oqronboard/jobs/confirm_delete.html", {
            "count": len(pairs), "pairs": pairs[:20], "all_pairs": pairs if data["mode"] == "ids" else [],
            "fields": fields, "action_url": request.path, "back_url": safe_next(request,
                                                                                reverse("oqronboard:dead-letters")),
            "capped": len(pairs) >= ACTION_CAP,
        })
    deleted, message = delete_selected(scope, request.user.get_username(), data, pairs)
    (messages.success if deleted else messages.warning)(request, message)
    return back(request, reverse("oqronboard:dead-letters"))


@board_view
def export(request: BoardRequest) -> StreamingHttpResponse:
    """The filtered dead letters as CSV or JSON, streamed, at most ``EXPORT_CAP`` rows."""
    fmt = request.GET.get("format", "csv")
    if fmt not in ("csv", "json"):
        raise BadFilter("format must be csv or json.")
    filters, _ = dead_filters(request.GET)
    filters = DeadFilters(queue=filters.queue, fingerprint=filters.fingerprint, search=filters.search)
    rows = _export_rows(dead_export_rows(scope_of(request), filters, limit=EXPORT_CAP))
    stamp = now_ms()
    if fmt == "json":
        response = StreamingHttpResponse(_json_stream(rows), content_type="application/json")
    else:
        response = StreamingHttpResponse(_csv_stream(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="dead-letters-{stamp}.{fmt}"'
    response["X-Export-Cap"] = str(EXPORT_CAP)
    return response


def _export_rows(rows: Iterator[dict]) -> Iterator[dict]:
    for row in rows:
        out = {**row, "queue": queue_of(row["namespace"])}
        for key in ("died", "attempts"):
            try:
                out[key] = int(float(out[key])) if out.get(key) is not None else None
            except (TypeError, ValueError):
                out[key] = None
        yield {column: out.get(column) for column in EXPORT_COLUMNS}


def _json_stream(rows: Iterator[dict]) -> Iterator[str]:
    yield "["
    for index, row in enumerate(rows):
        yield ("," if index else "") + "\n" + json.dumps(row, ensure_ascii=False)
    yield "\n]\n"


class _Echo:
    def write(self, value: str) -> str:
        return value


def _csv_safe(value: object) -> object:
    """Neutralise spreadsheet formulas in exported text (OWASP's CSV injection rule): a
    value that starts with tab or CR, or whose first non-whitespace character is ``=``,
    ``+``, ``-`` or ``@``, gets a leading ``'``. Judged after NFKC, because spreadsheets
    skip leading blanks and read the fullwidth signs (U+FF1D, U+FF0B, U+FF0D, U+FF20) as the ASCII ones."""
    if not isinstance(value, str) or not value:
        return value
    folded = unicodedata.normalize("NFKC", value)
    if folded[:1] in FORMULA_CONTROLS or folded.lstrip()[:1] in FORMULA_SIGNS:
        return "'" + value
    return value


def _csv_stream(rows: Iterator[dict]) -> Iterator[str]:
    writer = csv.writer(_Echo())
    yield writer.writerow(EXPORT_COLUMNS)
    for row in rows:
        yield writer.writerow([_csv_safe(row[c]) for c in EXPORT_COLUMNS])
