"""Filters and selections of the jobs and dead-letter pages."""

from __future__ import annotations

import re
from typing import Any

from django import forms

from oqronboard.base.audit import ACTION_CAP
from oqronboard.base.cursors import CursorField, decode_cursor
from oqronboard.base.filters import TextFilter, clean_or_400
from oqronboard.base.pages import BadFilter

from .queries import JOB_STATUSES, DeadFilters

# The engine's rule for queue names: 1-100 characters, no ':' (oqronkit.queues.queue.Queue).
QUEUE_NAME = re.compile(r"^[^:\s](?:[^:]{0,98}[^:\s])?$")
FINGERPRINT = re.compile(r"^[0-9a-f]{1,64}$")


def check_queue(name: str) -> str:
    if not QUEUE_NAME.match(name or ""):
        raise BadFilter(f"{name!r} is not a queue name (1-100 characters, no ':').")
    return name


class QueueField(TextFilter):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=100, **kwargs)

    def clean(self, value: Any) -> str:
        value = super().clean(value)
        if value and not QUEUE_NAME.match(value):
            raise forms.ValidationError("not a queue name (1-100 characters, no ':').")
        return value


class FingerprintField(TextFilter):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=64, **kwargs)

    def clean(self, value: Any) -> str:
        value = super().clean(value)
        if value and not FINGERPRINT.match(value):
            raise forms.ValidationError("not an error fingerprint (hex digits).")
        return value


class JobListForm(forms.Form):
    status = forms.ChoiceField(choices=[(s, s) for s in JOB_STATUSES], required=False)
    cursor = CursorField(label="cursor")


class DeadFilterForm(forms.Form):
    queue = QueueField(label="queue")
    fingerprint = FingerprintField(label="error group")
    q = TextFilter(label="error message contains")
    cursor = CursorField(label="cursor")


def dead_filters(params: Any) -> tuple[DeadFilters, dict]:
    data = clean_or_400(DeadFilterForm(params))
    filters = DeadFilters(
        queue=data["queue"], fingerprint=data["fingerprint"], search=data["q"],
        cursor=decode_cursor(data["cursor"]),
    )
    return filters, data


class AnyChoices(forms.MultipleChoiceField):
    """Any submitted values: :meth:`SelectionForm.clean_ids` validates them, not choices."""

    def valid_value(self, value: Any) -> bool:
        return True


class SelectionForm(forms.Form):
    """What a dead-letter action acts on: the ``ids`` ticked (``queue:job id``), or
    every dead letter matching the filters that died at or before ``rendered_at``
    (the page's render time, so later arrivals are never touched)."""

    mode = forms.ChoiceField(choices=[("ids", "selected"), ("matching", "all matching")], required=False)
    ids = AnyChoices(required=False)
    queue = QueueField()
    fingerprint = FingerprintField()
    q = TextFilter()
    rendered_at = forms.IntegerField(required=False, min_value=0)
    confirmed = forms.BooleanField(required=False)

    def clean_ids(self) -> list[tuple[str, str]]:
        pairs = []
        for raw in self.cleaned_data.get("ids") or []:
            queue, sep, job_id = str(raw).partition(":")
            if not sep or not QUEUE_NAME.match(queue) or not job_id or len(job_id) > 200:
                raise forms.ValidationError(f"{raw!r} is not a dead letter (queue:job id).")
            pairs.append((queue, job_id))
        if len(pairs) > ACTION_CAP:
            raise forms.ValidationError(f"select at most {ACTION_CAP} dead letters at once.")
        return list(dict.fromkeys(pairs))

    def clean(self) -> dict[str, Any]:
        super().clean()
        data = self.cleaned_data  # what Form.clean returns
        mode = data.get("mode") or "ids"
        data["mode"] = mode
        if mode == "matching" and data.get("rendered_at") is None:
            raise forms.ValidationError("'all matching' needs the page's render time (rendered_at).")
        if mode == "ids" and not data.get("ids") and not self.errors:
            raise forms.ValidationError("Select at least one dead letter.")
        return data


def selection(params: Any) -> dict:
    return clean_or_400(SelectionForm(params))
