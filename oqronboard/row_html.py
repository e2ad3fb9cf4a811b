"""What the rows built in Python (overview_rows, topic_rows, dead_rows...) share with the
templates they stand in for: an int as ``{{ n }}`` prints it, and ``{% csrf_token %}``'s field."""

from __future__ import annotations

from html import escape  # the stdlib's: Django's lazy-aware wrapper costs ~10 us a call

from django.conf import settings
from django.utils.formats import number_format


def int_text(n: int) -> str:
    """An int as ``{{ n }}`` prints it: grouped only where the host asks for it."""
    return number_format(n) if settings.USE_THOUSAND_SEPARATOR else str(n)


def csrf_input(token: object) -> str:
    """``{% csrf_token %}``'s hidden field ("" when the context has no token)."""
    if not token or token == "NOTPROVIDED":
        return ""
    return f'<input type="hidden" name="csrfmiddlewaretoken" value="{escape(str(token))}">'
