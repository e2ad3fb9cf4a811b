"""The project/environment switcher."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_POST

from oqronboard.definitions.queries import known_scopes

from ..base.pages import BadFilter, BoardRequest, back, board_view
from ..base.roles import access_of
from ..base.scope import SESSION_KEY, BoardScope


@require_POST
@board_view(needs_scope=False)
def switch_scope(request: BoardRequest) -> HttpResponse:
    """Look at another (project, environment) that the database knows of and the user
    may see; one it may not is refused exactly as an unknown one (no existence told)."""
    chosen = BoardScope.parse(request.POST.get("scope", ""))
    if chosen is None or not access_of(request).can_see(chosen) or chosen not in known_scopes():
        raise BadFilter("Unknown project/environment: pick one from the list.")
    request.session[SESSION_KEY] = chosen.key
    messages.info(request, f"Now showing {chosen.project} / {chosen.environment}.")
    return back(request, reverse("oqronboard:home"))
