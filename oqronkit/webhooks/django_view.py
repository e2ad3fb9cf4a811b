"""A Django view decorator for receivers of Standard Webhooks: the view runs only for a
request whose signature verifies; a request without the headers gets 400, one whose
signature or timestamp is wrong 401. Nothing in the engine imports this module."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

from .signing import DEFAULT_TOLERANCE, WebhookVerificationError, verify


def verified_webhook(secrets: str | Sequence[str], *, tolerance: int = DEFAULT_TOLERANCE,
                     ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``@verified_webhook(settings.WEBHOOK_SECRETS)`` over a view taking the request."""

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(fn)
        def view(request: Any, *args: Any, **kwargs: Any) -> Any:
            from django.http import HttpResponse  # the receiver's project is a Django one

            headers = {name: value for name, value in request.headers.items()}
            try:
                verify(headers, request.body, secrets, tolerance=tolerance)
            except WebhookVerificationError as exc:
                missing = str(exc).startswith("missing")
                return HttpResponse(str(exc), status=400 if missing else 401, content_type="text/plain")
            return fn(request, *args, **kwargs)

        return view

    return decorate
