"""The standalone project's 403 and 404 pages, in the board's look (``handler403`` and
``handler404`` of ``oqronboard.project_urls``; a host project keeps its own)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from ..base.templating import render


def _message(exception: Exception | None) -> str:
    # Django's own handlers show an exception's message only when it is a plain string.
    message = exception.args[0] if exception is not None and exception.args else ""
    return message if isinstance(message, str) else ""


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "oqronboard/403.html", {"exception": _message(exception)}, status=403)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    return render(request, "oqronboard/404.html", {"exception": _message(exception)}, status=404)
