"""The board's own template engine: its pages render the same in any host project.

A host's ``TEMPLATES`` may lack a context processor the board needs, turn autoescaping
off or set ``string_if_invalid``; none of that reaches the board, whose pages render
through this engine (Django's template language, autoescaping on, the board's context
processors). Templates live in the package's ``templates`` folder (the repository's
top-level ``templates/``), all under ``oqronboard/`` so a host's admin or ``base.html``
never meets them.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.backends.django import DjangoTemplates

CONTEXT_PROCESSORS = [
    "django.template.context_processors.request",
    "django.contrib.auth.context_processors.auth",
    "django.contrib.messages.context_processors.messages",
    "oqronboard.context_processors.board",
]


@cache
def board_engine() -> DjangoTemplates:
    return DjangoTemplates({
        "NAME": "oqronboard",
        "DIRS": [Path(__file__).resolve().parents[1] / "templates"],
        "APP_DIRS": False,
        "OPTIONS": {"context_processors": CONTEXT_PROCESSORS, "autoescape": True},
    })


def render_to_string(template_name: str, context: dict[str, Any] | None = None,
                     request: HttpRequest | None = None) -> str:
    """``template_name`` (``page.html`` or ``page.html#partial``) rendered by the board's engine."""
    return board_engine().get_template(template_name).render(context, request)


def render(request: HttpRequest, template_name: str, context: dict[str, Any] | None = None,
           content_type: str | None = None, status: int | None = None) -> HttpResponse:
    """Django's ``render`` shortcut on the board's engine."""
    return HttpResponse(render_to_string(template_name, context, request), content_type, status)
