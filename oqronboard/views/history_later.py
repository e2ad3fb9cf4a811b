"""The metrics history panel after its page: a page that shows other things first (the
overview, a queue's jobs) renders a placeholder that loads the panel with htmx
(``?panel=history``); without script its link opens the panel as a page of its own.
A queue's 24 h are 1,440 minute buckets read by id: ~16 ms the page no longer waits for."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpResponse

from ..base.pages import BoardRequest, scope_of
from ..base.templating import render
from ..history import history_panel, span_of

PANEL = "history"


def wants_history(request: BoardRequest) -> bool:
    return request.GET.get("panel") == PANEL


def later_panel(request: BoardRequest, default_span: str) -> dict[str, Any]:
    """The placeholder's context: the range it will show and the URL that reads it (a
    range the query names wrongly is a 400 here, as it was when the page drew it)."""
    span = span_of(request.GET, default_span)
    return {"span": span, "url": "?" + urlencode({"panel": PANEL, "range": span})}


def history_response(request: BoardRequest, kind: str, key: str, default_span: str, *, title: str) -> HttpResponse:
    """The panel for htmx, or a page of the panel alone (with the way back) without it."""
    span = span_of(request.GET, default_span)
    panel = history_panel(scope_of(request), kind, key, span)
    if request.htmx:
        return render(request, "oqronboard/_history.html", {"panel": panel})
    back = f"{request.path}?{urlencode({'range': span})}"
    return render(request, "oqronboard/history_page.html",
                  {"panel": panel, "standalone": True, "title": title, "back": back})
