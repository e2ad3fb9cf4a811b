"""What the rows built in Python (overview_rows, topic_rows, dead_rows...) share with the
templates they stand in for: a value as ``{{ value }}`` prints it, ``truncatechars``, an
instant as "3m 05s ago" in a ``<time>``, and ``{% csrf_token %}``'s field; each escaped."""

from __future__ import annotations

from html import escape  # the stdlib's: Django's lazy-aware wrapper costs ~10 us a call
from typing import Any

from django.conf import settings
from django.utils.formats import localize, number_format
from django.utils.text import Truncator

from oqronboard.templatetags.board import ago, ms_iso, ms_time


def int_text(n: int) -> str:
    """An int as ``{{ n }}`` prints it: grouped only where the host asks for it."""
    return number_format(n) if settings.USE_THOUSAND_SEPARATOR else str(n)


def value_text(value: Any) -> str:
    """Any value as ``{{ value }}`` prints it: localized, escaped."""
    return escape(str(localize(value)))


def cut_text(value: Any, length: int) -> str:
    """``{{ value|truncatechars:length }}``, escaped."""
    return escape(Truncator(str(value)).chars(length))


def ago_time(ms: Any) -> str:
    """An epoch-ms instant as ``<time>`` saying how long ago, its exact time as the title."""
    return f'<time datetime="{escape(ms_iso(ms))}" title="{escape(ms_time(ms))}">{escape(ago(ms))}</time>'


def ago_or_none(ms: int | None) -> str:
    """:func:`ago_time`, or a muted "none" when there is no instant."""
    return ago_time(ms) if ms else '<span class="muted">none</span>'


def csrf_input(token: object) -> str:
    """``{% csrf_token %}``'s hidden field ("" when the context has no token)."""
    if not token or token == "NOTPROVIDED":
        return ""
    return f'<input type="hidden" name="csrfmiddlewaretoken" value="{escape(str(token))}">'
