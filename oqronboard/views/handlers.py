"""A handler's page and a topic group's (issue 37, item 4): the metrics history of the runs
of one name (a queue's handler, a cron, a schedule, a webhook) or of one consumer group's
deliveries, from the leader's rollups, with links to their runs and jobs."""

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


@board_view
def topic_group_page(request: BoardRequest, topic: str, group: str) -> HttpResponse:
    """The history panel of consumer group ``group`` of ``topic`` (the rollups' ``topic`` scope)."""
    if not (0 < len(topic) <= MAX_NAME and 0 < len(group) <= MAX_NAME):
        raise BadFilter(f"A topic or group name is 1-{MAX_NAME} characters.")
    panel = history_panel(scope_of(request), "topic", f"{topic}/{group}", span_of(request.GET))
    return render(request, "oqronboard/topic_group.html", {"topic": topic, "group": group, "history": panel})
