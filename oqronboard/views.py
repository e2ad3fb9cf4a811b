"""The board shell: function-based views (pages per record kind arrive with their apps)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from oqronkit import OqronError
from oqronkit.config import redact_url

from . import engine


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """The board's start page: which engine configuration this board reads, and whether
    its durable plane is ready (opening it creates the tables on first use)."""
    context: dict[str, object] = {"config": None, "database": "", "problem": ""}
    try:
        config = engine.get_config()
        context["config"] = config
        context["database"] = redact_url(config.database_url or "") if config.database_url else "none"
        engine.get_durable()
    except OqronError as exc:
        # Shown, not raised: a misconfigured engine must not hide the board's own
        # diagnostics (manage.py check reports the same message as oqron.E001).
        context["problem"] = str(exc)
    return render(request, "oqronboard/home.html", context)
