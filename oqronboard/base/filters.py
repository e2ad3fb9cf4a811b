"""Validating a page's GET filters: a bad value is a :class:`~oqronboard.base.pages.BadFilter`
(400 with a message), never a 500 and never a silently ignored filter."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django import forms

from oqronkit.clock import now_ms

from .pages import BadFilter

HOUR_MS = 3600 * 1000
WINDOWS = {"1h": HOUR_MS, "6h": 6 * HOUR_MS, "24h": 24 * HOUR_MS, "7d": 7 * 24 * HOUR_MS, "30d": 30 * 24 * HOUR_MS}
DEFAULT_WINDOW = "24h"
# An instant a form accepts: from 1970 to the year 9999 (epoch ms the engine stores alike).
INSTANT_HELP = "a date and time such as 2026-05-01T14:30 (UTC unless it names an offset, e.g. +02:00)"


def clean_or_400(form: forms.Form) -> dict:
    """The form's cleaned data, or :class:`BadFilter` naming every bad field."""
    if form.is_valid():
        return form.cleaned_data
    problems = []
    for field, errors in form.errors.items():
        text = " ".join(errors)  # type: ignore[arg-type]  # django-stubs: an ErrorList iterates as its messages
        if field in form.fields:
            text = f"{form.fields[field].label or field}: {text}"
        problems.append(text)
    raise BadFilter("Bad filter value. " + "; ".join(problems))


def window_start(window: str, *, now: int | None = None) -> int:
    """The epoch-ms start of a named window (``24h``...) ending now."""
    return (now_ms() if now is None else now) - WINDOWS[window]


class WindowField(forms.ChoiceField):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=[(w, w) for w in WINDOWS], required=False, **kwargs)

    def clean(self, value: object) -> str:
        return super().clean(value) or DEFAULT_WINDOW


class TextFilter(forms.CharField):
    """Free text of bounded length (Django already refuses NUL characters)."""

    def __init__(self, max_length: int = 200, **kwargs: Any) -> None:
        super().__init__(max_length=max_length, required=False, strip=True, **kwargs)


def parse_instant(text: str) -> int:
    """Epoch ms of an ISO 8601 date or date and time (UTC unless it names an offset);
    ``ValueError`` naming the expected form for anything else."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text[:40]!r} is not {INSTANT_HELP}.") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        ms = int(moment.timestamp() * 1000)
    except (OverflowError, OSError, ValueError):
        raise ValueError(f"{text[:40]!r} is out of range.") from None
    if not 0 <= ms < 253_402_300_800_000:
        raise ValueError(f"{text[:40]!r} is out of range: 1970 to 9999 only.")
    return ms


class InstantField(forms.CharField):
    """An optional instant (see :func:`parse_instant`), cleaned to epoch ms or None."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=40, required=False, strip=True, **kwargs)

    def clean(self, value: Any) -> int | None:  # epoch ms, not text
        text = super().clean(value)
        if not text:
            return None
        try:
            return parse_instant(text)
        except ValueError as exc:
            raise forms.ValidationError(str(exc)) from exc
