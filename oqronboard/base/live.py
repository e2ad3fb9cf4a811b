"""Live updates: the user's polling interval and the htmx trigger each panel uses.

The interval (off, 2, 5 or 15 s; default 5 s) is a cookie that static/js/board.js sets,
so the server renders every panel with the chosen ``hx-trigger`` and a reload keeps
it. The script also skips polls while the tab is hidden or a poll is in flight.
"""

from __future__ import annotations

from django.http import HttpRequest

from .pages import REFRESH_EVENT

POLL_COOKIE = "oqron_poll"
POLL_CHOICES = ("off", "2", "5", "15")
DEFAULT_POLL = "5"
REFRESH_TRIGGER = f"{REFRESH_EVENT} from:body"


def poll_interval(request: HttpRequest) -> str:
    value = request.COOKIES.get(POLL_COOKIE, DEFAULT_POLL)
    return value if value in POLL_CHOICES else DEFAULT_POLL


def poll_trigger(interval: str) -> str:
    """The ``hx-trigger`` of a live panel: the timer (unless off) and the refresh event
    actions send (``HX-Trigger: board:refresh``)."""
    if interval == "off":
        return REFRESH_TRIGGER
    return f"every {interval}s, {REFRESH_TRIGGER}"
