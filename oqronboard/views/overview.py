"""The overview: the first page an operator sees during an incident."""

from __future__ import annotations

import logging

from django.http import HttpResponse

from oqronboard.base.templating import render
from oqronkit import OqronError
from oqronkit.backends.db_health import DEAD_ROWS_WARNING, DatabaseHealth
from oqronkit.config import redact_url
from oqronkit.contrib.django import engine
from oqronkit.history.buckets import ALL_KEY

from ..base.pages import BoardRequest, board_view, scope_of
from ..history import OVERVIEW_SPAN
from ..overview import build
from ..overview_rows import queue_rows_html
from .history_later import history_response, later_panel, wants_history

logger = logging.getLogger(__name__)


def database_health() -> DatabaseHealth | None:
    """The health panel's figures (PostgreSQL only); None when the server cannot say."""
    try:
        return engine.get_engine().database_health()
    except OqronError as exc:
        logger.warning("overview: the database's health could not be read: %s", exc,
                       extra={"action": "board.db_health_failed"})
        return None


@board_view(needs_sql=False)
def home(request: BoardRequest) -> HttpResponse:
    """Queues, dead letters, the last hour and the workers; ``?panel=live`` renders
    just the live panel for htmx. Without a SQL durable plane it says what is missing."""
    config = engine.get_config()
    context: dict[str, object] = {
        "config": config, "problem": "",
        "database": redact_url(config.database_url) if config.database_url else "none",
        "needs_sql": config.mode in engine.NON_SQL_MODES,
    }
    try:
        engine.get_durable()
        if not context["needs_sql"]:
            if wants_history(request):
                return history_response(request, "all", ALL_KEY, OVERVIEW_SPAN, title="every queue")
            context["overview"] = overview = build(scope_of(request), include_internal=False)
            context["queue_rows"] = queue_rows_html(overview.queues)
            context["db_health"], context["dead_rows_warning"] = database_health(), DEAD_ROWS_WARNING
            if not request.htmx:  # the live panel's poll leaves the history (a minute's rollup) alone
                context["history_later"] = later_panel(request, OVERVIEW_SPAN)
    except OqronError as exc:
        # Shown, not raised: a misconfigured engine must not hide the board's own
        # diagnostics (manage.py check reports the same message as oqron.E001).
        context["problem"] = str(exc)
    if request.htmx and request.GET.get("panel") == "live":
        return render(request, "oqronboard/overview.html#live", context)
    return render(request, "oqronboard/overview.html", context)
