"""``/favicon.ico``: what a browser asks for on a page naming no icon, and what
crawlers and proxies ask for anyway; the board's icon, without a login."""

from __future__ import annotations

from django.contrib.auth.decorators import login_not_required
from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.views.decorators.http import require_GET


@login_not_required
@require_GET
def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    return HttpResponsePermanentRedirect(static("oqronboard/favicon.svg"))
