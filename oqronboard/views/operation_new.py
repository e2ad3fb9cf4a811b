"""``/operations/new/``: the form that starts any tracked bulk operation (issue 37, item 5):
a retry or delete of dead letters (queue, error group, message text), a replay of a
handler's runs (status, window, the newest N) or a resend of webhook deliveries (the
delivery log's filters). Each action's fields carry its prefix (``dead-``, ``replay-``,
``resend-``), so one page holds them all; a bad value or a refusal (a handler not
declared replayable) comes back on the form with 400, never a 500. The dead letters
page's own unprefixed POST (retry or delete all matching) is served as before.
Operators only, CSRF, audited by the functions that start each operation."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from oqronboard.jobs.forms import FingerprintField, QueueField
from oqronboard.jobs.queries import dlq_depths
from oqronkit.errors import OqronError
from oqronkit.operations import ACTIONS, Operation

from ..base.filters import TextFilter, clean_or_400
from ..base.pages import BadFilter, BoardRequest, board_view, scope_of
from ..base.roles import operator_required
from ..base.scope import BoardScope
from ..base.templating import render
from ..webhook_forms import FILTER_KEYS, DeliveryFilterForm, delivery_filters
from .operation_targets import ReplayOperationForm, start_replay, start_resend
from .operations import OperationForm, create_operation

#: Marks a POST from this page (prefixed fields) rather than the dead letters page's.
FORM_MARK = "new"
ACTION_LABELS = (("retry", "retry dead letters"), ("delete", "delete dead letters"), ("replay", "replay runs"),
                 ("resend", "resend webhook deliveries"))


class NewOperationForm(forms.Form):
    """What every action shares: which one, an optional name, a delete's confirmation."""

    action = forms.ChoiceField(choices=[(a, a) for a in ACTIONS])
    name = TextFilter(max_length=200, label="name")
    confirmed = forms.BooleanField(required=False, label="deleting is for good")


class DeadLetterFields(forms.Form):
    queue = QueueField()
    fingerprint = FingerprintField()
    q = TextFilter(label="message contains")


def _forms(data: Any = None, initial: Any = None) -> dict[str, forms.Form]:
    return {"form": NewOperationForm(data, initial=initial or {"action": "retry"}),
            "dead": DeadLetterFields(data, prefix="dead"),
            "replay": ReplayOperationForm(data, prefix="replay", initial={"status": "completed"}),
            "resend": DeliveryFilterForm(data, prefix="resend")}


@board_view
@operator_required
def operation_new(request: BoardRequest) -> HttpResponse:
    """GET: the form (``?action=`` preselects one); POST: start the operation and go to
    its page, or show the form again with what was wrong (400)."""
    if request.method == "GET":
        action = request.GET.get("action")
        return _page(request, _forms(initial={"action": action if action in ACTIONS else "retry"}))
    if request.method != "POST":
        return HttpResponse(status=405, headers={"Allow": "GET, POST"})
    if request.POST.get("form") != FORM_MARK:
        return _from_dead_letters(request)
    bound = _forms(request.POST)
    try:
        op = _start(scope_of(request), request.user.get_username(), bound)
    except (BadFilter, OqronError) as exc:  # a refusal the fields' own checks could not see
        if not isinstance(exc, BadFilter | ValueError):
            raise  # a backend down: the board's 503
        bound["form"].add_error(None, str(exc))
        return _page(request, bound, status=400)
    if op is None:
        return _page(request, bound, status=400)
    messages.success(request, f"Operation started: {op.name}.")
    return redirect("oqronboard:operation", op.id)


def _start(scope: BoardScope, user: str, bound: dict[str, forms.Form]) -> Operation | None:
    """The operation the bound forms ask for, started; None when a field is invalid (its
    form then holds the errors)."""
    form = bound["form"]
    if not form.is_valid():
        return None
    action, name = form.cleaned_data["action"], form.cleaned_data["name"]
    fields = bound["dead" if action in ("retry", "delete") else action]
    if not fields.is_valid():
        return None
    data = fields.cleaned_data
    if action == "replay":
        return start_replay(scope, user, data, name=name)
    if action == "resend":
        filters, shown = delivery_filters({k: data.get(k) or "" for k in FILTER_KEYS if k != "before"})
        return start_resend(scope, user, filters, {k: shown[k] for k in FILTER_KEYS if shown.get(k)}, name=name)
    if action == "delete" and not form.cleaned_data["confirmed"]:
        form.add_error("confirmed", "Deleting is for good: tick the box to confirm it.")
        return None
    return create_operation(scope, user, {**data, "action": action, "rendered_at": None, "name": name,
                                          "confirmed": form.cleaned_data["confirmed"]})


def _page(request: BoardRequest, bound: dict[str, forms.Form], *, status: int = 200) -> HttpResponse:
    form = bound["form"]
    chosen = form.data.get("action") if form.is_bound else form.initial.get("action")
    return render(request, "oqronboard/operation_new.html", {**bound, "chosen": chosen, "mark": FORM_MARK,
                                                            "actions": ACTION_LABELS},
                  status=status)


def _from_dead_letters(request: BoardRequest) -> HttpResponse:
    """The dead letters page's retry or delete of all matching (a delete after a
    confirmation page that says how many dead letters it will look at)."""
    scope = scope_of(request)
    data = clean_or_400(OperationForm(request.POST))
    if data["action"] == "delete" and not data["confirmed"]:
        depths = dlq_depths(scope)
        hidden = [(key, data[key]) for key in ("queue", "fingerprint", "q", "rendered_at", "name")
                  if data[key] not in (None, "")]
        return render(request, "oqronboard/operation_confirm.html", {
            "data": data, "hidden": hidden,
            "candidates": depths.get(data["queue"], 0) if data["queue"] else sum(depths.values())})
    op = create_operation(scope, request.user.get_username(), data)
    url = reverse("oqronboard:operation", args=[op.id])
    if request.htmx:
        return HttpResponseClientRedirect(url)
    messages.success(request, f"Operation started: {op.name}.")
    return redirect(url)
