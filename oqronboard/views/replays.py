"""Replays (issue 37 item 2): the scope's replay sets, one set's pairs side by side
(status, duration, the structural diff of the outputs) live while its replays run, and
the operator's action that replays one run or the runs a runs-page filter shows. All
through the engine's replay API (:mod:`oqronkit.replay`) on the board's scoped engine."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import Http404, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from oqronboard.base.templating import render, render_to_string
from oqronkit.queues.runs import RUN_STATUSES
from oqronkit.replay import MAX_REPLAYS, ReplayRefused, list_replay_sets, read_replay_set, replay

from ..base.audit import Action
from ..base.filters import TextFilter, WindowField, clean_or_400, window_start
from ..base.pages import BoardRequest, board_view, scope_of
from ..base.roles import operator_required
from ..base.scope import BoardScope
from .operation_targets import MAX_LAST, ReplayOperationForm, start_replay
from .replay_rows import pairs_html

NO_SET = "No replay set with that id in this project and environment."
LISTED = 50


class ReplayForm(forms.Form):
    """One run (``run``), or a runs-page filter: a handler's last runs in a window."""

    run = TextFilter(label="run id")
    name = TextFilter(max_length=100, label="handler")
    status = forms.ChoiceField(choices=[("", "any status")] + [(s, s) for s in RUN_STATUSES], required=False)
    window = WindowField(label="window")
    last = forms.IntegerField(min_value=1, max_value=MAX_LAST, required=False)


class PageForm(forms.Form):
    """A tracked replay's page of pairs (one chunk of up to 1,000)."""

    page = forms.IntegerField(min_value=1, max_value=10**9, required=False)


@board_view
def replays_page(request: BoardRequest) -> HttpResponse:
    """The scope's latest replay sets, newest first."""
    sets = list_replay_sets(scope_of(request).engine, limit=LISTED)
    return render(request, "oqronboard/replays.html", {"sets": sets})


@board_view
def replay_detail(request: BoardRequest, set_id: str) -> HttpResponse:
    """One replay set (a tracked replay's ``?page=``); ``?panel=live`` renders its summary and pairs for htmx, 286
    (stop polling) once every replay has finished."""
    context = replay_context(scope_of(request), set_id, page=clean_or_400(PageForm(request.GET))["page"] or 1)
    if request.htmx and request.GET.get("panel") == "live":
        if context["polling"]:
            return render(request, "oqronboard/replay.html#live", context)
        return HttpResponseStopPolling(render_to_string("oqronboard/replay.html#live", context, request))
    return render(request, "oqronboard/replay.html", context)


def replay_context(scope: BoardScope, set_id: str, *, page: int = 1) -> dict[str, Any]:
    found = read_replay_set(scope.engine, set_id, page=page)
    if found is None:
        raise Http404(NO_SET)
    return {"replay": found, "record": found.record, "summary": found.summary, "pairs_html": pairs_html(found.pairs),
            "polling": not found.done}


def _over_cap(last: str | None) -> bool:
    return bool(last) and str(last).isdigit() and int(str(last)) > MAX_REPLAYS


@require_POST
@board_view
@operator_required
def replay_create(request: BoardRequest) -> HttpResponse:
    """Replay one run (``run``) or the last ``last`` runs of a handler the runs page's
    filter shows (``name``, ``status``, ``window``); audited. A refusal (a handler not
    declared replayable, nothing selected) comes back as a warning naming it. With
    ``tracked``, or a ``last`` above ``MAX_REPLAYS``, the filter's every run (or its
    ``last``, uncapped) is replayed by a tracked operation, whose page it opens."""
    scope = scope_of(request)
    if request.POST.get("tracked") or _over_cap(request.POST.get("last")):
        op = start_replay(scope, request.user.get_username(), clean_or_400(ReplayOperationForm(request.POST)))
        messages.success(request, f"Operation started: {op.name}.")
        return redirect("oqronboard:operation", op.id)
    data = clean_or_400(ReplayForm(request.POST))
    user = request.user.get_username()
    selection = {"run": data["run"]} if data["run"] else {
        "handler": data["name"], "status": data["status"] or None, "window": data["window"], "last": data["last"]}
    audit = Action(scope, user, "replay", queue=None if data["run"] else data["name"] or None,
                   extra={"selection": selection})
    try:
        if data["run"]:
            set_id = replay(scope.engine, run_ids=[data["run"]], user=user, source="board")
        else:
            set_id = replay(scope.engine, handler=data["name"] or None, last=data["last"] or 100,
                            status=data["status"] or None, started_from=window_start(data["window"]),
                            user=user, source="board")
    except ReplayRefused as exc:
        audit.save(ok=False, result=str(exc))
        messages.warning(request, str(exc))
        where = reverse("oqronboard:run", args=[data["run"]]) if data["run"] else reverse("oqronboard:replays")
        return HttpResponseRedirect(where)
    found = read_replay_set(scope.engine, set_id)
    count = len(found.pairs) if found else 0
    audit.targets = [(p.queue, p.job_id) for p in found.pairs] if found else []
    audit.extra["replaySet"] = set_id
    audit.save(ok=True, result=f"Replay set {set_id}: {count} run(s) replayed.")
    messages.success(request, f"Replaying {count} run(s).")
    return redirect("oqronboard:replay", set_id)
