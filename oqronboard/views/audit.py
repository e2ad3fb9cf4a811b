"""The audit page: every operator action, newest first."""

from __future__ import annotations

from urllib.parse import urlencode

from django import forms
from django.http import HttpResponse

from oqronboard.base.templating import render
from oqronboard.definitions.queries import audit_entries
from oqronkit.namespaces import AUDIT

from ..base.filters import TextFilter, clean_or_400
from ..base.pages import BoardRequest, board_view, scope_of


class AuditForm(forms.Form):
    before = TextFilter(max_length=40, label="before")


@board_view
def audit(request: BoardRequest) -> HttpResponse:
    data = clean_or_400(AuditForm(request.GET))
    rows, next_before = audit_entries(scope_of(request), AUDIT, before=data["before"] or None)
    context = {"rows": rows, "next_query": urlencode({"before": next_before}) if next_before else ""}
    if request.htmx and data["before"]:
        return render(request, "oqronboard/audit.html#rows", context)
    return render(request, "oqronboard/audit.html", context)
