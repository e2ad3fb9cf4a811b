"""The webhook pages' input: the delivery log's filters (GET, also carried by the
resend-all form) and an endpoint's disable reason (POST). A bad value is a
:class:`~oqronboard.base.pages.BadFilter`: 400 with a message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from oqronboard.runs.webhooks import AttemptFilters
from oqronkit.queues.runs import RUN_STATUSES

from .base.cursors import CursorField, decode_cursor
from .base.filters import InstantField, TextFilter, WindowField, clean_or_400, window_start
from .base.pages import BadFilter

FILTER_KEYS = ("webhook", "endpoint", "event", "status", "window", "before")
MAX_REASON = 500  # the engine's bound on a disable reason


class DeliveryFilterForm(forms.Form):
    webhook = TextFilter(max_length=100, label="webhook")
    endpoint = TextFilter(max_length=64, label="endpoint")
    event = TextFilter(max_length=200, label="event")
    status = forms.ChoiceField(choices=[("", "any status")] + [(s, s) for s in RUN_STATUSES], required=False,
                               label="status")
    window = WindowField(label="window")
    before = InstantField(label="started before")
    cursor = CursorField(label="cursor")


def delivery_filters(params: Mapping[str, Any], *, now: int | None = None,
                     rendered_at: int | None = None) -> tuple[AttemptFilters, dict[str, Any]]:
    """Validated filters of the delivery log and the cleaned values to echo in the form;
    ``rendered_at`` bounds them to the attempts a page rendered then could show."""
    data = clean_or_400(DeliveryFilterForm(params))
    before: int | None = data["before"]
    if rendered_at is not None:
        before = min(before, rendered_at + 1) if before is not None else rendered_at + 1
    filters = AttemptFilters(since=window_start(data["window"], now=now), webhook=data["webhook"],
                             endpoint=data["endpoint"], event=data["event"], status=data["status"], before=before,
                             cursor=decode_cursor(data["cursor"]))
    return filters, data


class ReasonForm(forms.Form):
    reason = forms.CharField(max_length=MAX_REASON, strip=True, label="reason")


def disable_reason(params: Mapping[str, Any]) -> str:
    """The operator's reason for disabling an endpoint (required, at most 500 characters)."""
    return str(clean_or_400(ReasonForm(params))["reason"])


def rendered_at(params: Mapping[str, Any]) -> int:
    raw = str(params.get("rendered_at", ""))
    if not raw.isdigit() or len(raw) > 15:
        raise BadFilter("rendered_at: the page's render time (epoch ms) is missing or malformed; reload the page.")
    return int(raw)
