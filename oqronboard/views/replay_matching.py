"""The runs page's "replay every match" (issue 37, item 5): every queue job's run the
page's filters match, up to the page's render time, replayed by id: at once when there
are at most ``MAX_REPLAYS`` (the replay's page), else as a tracked replay operation of
the id list, run by the leader in chunks (the operation's page). The ids come from the
runs index the filters pin, streamed; operators only, CSRF, audited."""

from __future__ import annotations

from dataclasses import replace
from itertools import islice
from urllib.parse import urlencode

from django import forms
from django.contrib import messages
from django.http import HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_POST

from oqronboard.runs.forms import run_filters
from oqronboard.runs.queries import replayable_run_ids
from oqronkit.operations import Operations
from oqronkit.operations.replaying_ids import MAX_IDS, replay_or_track
from oqronkit.replay import REPLAY_SETS, ReplayRefused

from ..base.audit import Action
from ..base.filters import clean_or_400
from ..base.pages import BadFilter, BoardRequest, board_view, scope_of
from ..base.roles import operator_required

FILTER_KEYS = ("status", "module", "name", "worker", "job", "window", "q")


class RenderedForm(forms.Form):
    rendered_at = forms.IntegerField(min_value=0, max_value=2**53, label="rendered_at")


@require_POST
@board_view
@operator_required
def replay_matching(request: BoardRequest) -> HttpResponse:
    """Replay every run the posted runs filters match that started before ``rendered_at``."""
    scope, user = scope_of(request), request.user.get_username()
    rendered = clean_or_400(RenderedForm(request.POST))["rendered_at"]
    filters, data = run_filters({k: request.POST.get(k, "") for k in FILTER_KEYS})
    filters = replace(filters, until=rendered + 1, cursor=None)
    shown = {k: data[k] for k in FILTER_KEYS if data.get(k)}
    back = f"{reverse('oqronboard:runs')}?{urlencode(shown)}"
    ids = list(islice(replayable_run_ids(scope, filters), MAX_IDS + 1))
    audit = Action(scope, user, "replay", source="board", queue=data["name"] or None,
                   extra={"selection": {"matching": shown, "renderedAt": rendered, "runIds": len(ids)}})
    if not ids:
        audit.save(ok=False, result="No queue job's run matches these filters: nothing replayed.")
        messages.warning(request, "No queue job's run matches these filters: nothing replayed.")
        return HttpResponseRedirect(back)
    if len(ids) > MAX_IDS:
        problem = (f"More than {MAX_IDS:,} runs match: narrow the filters, or replay a handler's runs with the "
                   "replay filter as a tracked operation (no bound).")
        audit.save(ok=False, result=problem)
        raise BadFilter(problem)
    try:
        set_id, op = replay_or_track(Operations(scope.engine), user=user, run_ids=ids, source="board")
    except ReplayRefused as exc:
        audit.save(ok=False, result=str(exc))
        messages.warning(request, str(exc))
        return HttpResponseRedirect(back)
    if op is not None:
        audit.action = "operation-replay"
        audit.extra.update(operation=op.id, replaySet=set_id, target=op.name)
        audit.save(ok=True, result=f"Operation {op.id} started: {op.name}.")
        messages.success(request, f"Operation started: {op.name}.")
        return redirect("oqronboard:operation", op.id)
    record = scope.engine.durable.get(REPLAY_SETS, set_id)
    audit.targets = [(p["queue"], p["job"]) for p in (record.value.get("pairs") or [])] if record else []
    audit.extra["replaySet"] = set_id
    audit.save(ok=True, result=f"Replay set {set_id}: {len(ids)} run(s) replayed.")
    messages.success(request, f"Replaying {len(ids)} run(s).")
    return redirect("oqronboard:replay", set_id)
