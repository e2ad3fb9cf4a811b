"""A handler's page (issue 37, item 4): the metrics history of the runs of one name (a
queue's handler, a cron, a schedule, a webhook) from the leader's rollups, with links
to its runs and, for a queue, its jobs."""

from __future__ import annotations

from django.http import HttpResponse

from oqronboard.base.templating import render

from ..base.pages import BadFilter, BoardRequest, board_view, scope_of
from ..history import history_panel, span_of

MAX_NAME = 100  # the runs page's name filter takes no longer one


@board_view
def handler_page(request: BoardRequest, name: str) -> HttpResponse:
    """The history panel of handler ``name`` over the chosen range (``?range=7d``)."""
    if not 0 < len(name) <= MAX_NAME:
        raise BadFilter(f"A handler name is 1-{MAX_NAME} characters.")
    panel = history_panel(scope_of(request), "handler", name, span_of(request.GET))
    return render(request, "oqronboard/handler.html", {"name": name, "history": panel})
