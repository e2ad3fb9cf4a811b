"""The run lists' filters (every one a bookmarkable GET parameter)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from oqronboard.base.cursors import CursorField, decode_cursor
from oqronboard.base.filters import TextFilter, WindowField, clean_or_400, window_start
from oqronkit.queues.runs import RUN_STATUSES

from .queries import RunFilters

MODULES = ("queue", "worker", "topic", "cron", "schedule", "webhook")


class RunFilterForm(forms.Form):
    status = forms.ChoiceField(choices=[("", "any status")] + [(s, s) for s in RUN_STATUSES], required=False)
    module = forms.ChoiceField(choices=[("", "any module")] + [(m, m) for m in MODULES], required=False)
    name = TextFilter(max_length=100, label="name")
    worker = TextFilter(label="worker")
    job = TextFilter(label="job id")
    window = WindowField(label="window")
    q = TextFilter(label="error message contains")
    cursor = CursorField(label="cursor")


def run_filters(params: Mapping[str, Any], *, status: str | None = None, now: int | None = None
                ) -> tuple[RunFilters, dict[str, Any]]:
    """Validated :class:`RunFilters` from GET ``params`` (``status`` forces one, for
    the failed-runs page), and the cleaned values to echo in the form."""
    data = clean_or_400(RunFilterForm(params))
    if status is not None:
        data["status"] = status
    # A free-text search reads every candidate row's error message, so it is bounded to
    # one status (the status index): failed runs unless the operator picked another.
    data["search_status_implied"] = bool(data["q"] and not data["status"])
    if data["search_status_implied"]:
        data["status"] = "failed"
    filters = RunFilters(
        since=window_start(data["window"], now=now), status=data["status"], module=data["module"],
        name=data["name"], worker=data["worker"], job=data["job"], search=data["q"],
        cursor=decode_cursor(data["cursor"]),
    )
    return filters, data
