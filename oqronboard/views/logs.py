"""The Logs page: the engine's module logs, newest first, filtered by module, level,
time window and text, in keyset pages; the first page tails live (htmx)."""

from __future__ import annotations

from urllib.parse import urlencode

from django import forms
from django.http import HttpResponse

from oqronboard.base.templating import render
from oqronboard.definitions.logs import LEVELS, log_entries
from oqronkit.config import LOG_MODULES
from oqronkit.contrib.django import engine

from ..base.filters import WINDOWS, TextFilter, WindowField, clean_or_400, window_start
from ..base.pages import BoardRequest, board_view, scope_of


class LogsForm(forms.Form):
    module = forms.ChoiceField(choices=[("", "every module"), *((m, m) for m in LOG_MODULES)], required=False)
    level = forms.ChoiceField(choices=[("", "any level"), *((lv, lv) for lv in LEVELS)], required=False)
    window = WindowField(label="window")
    text = TextFilter(label="text")
    before = TextFilter(max_length=40, label="before")


@board_view
def logs(request: BoardRequest) -> HttpResponse:
    data = clean_or_400(LogsForm(request.GET))
    filters = {k: data[k] for k in ("module", "level", "window", "text") if data[k]}
    rows, next_before = log_entries(scope_of(request), module=data["module"] or None, level=data["level"] or None,
                                    since=window_start(data["window"]), text=data["text"] or None,
                                    before=data["before"] or None)
    context = {
        "rows": rows, "form": data, "levels": LEVELS, "modules": LOG_MODULES,
        "enabled": engine.get_config().module_logs,
        "windows": list(WINDOWS),
        "filter_query": urlencode(filters),
        "next_query": urlencode({**filters, "before": next_before}) if next_before else "",
    }
    if request.htmx and data["before"]:
        return render(request, "oqronboard/logs.html#rows", context)
    if request.htmx and request.GET.get("panel") == "live":
        return render(request, "oqronboard/logs.html#table", context)
    return render(request, "oqronboard/logs.html", context)
