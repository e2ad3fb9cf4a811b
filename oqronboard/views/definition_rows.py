"""The definitions page's rows by namespace. A queue's row renders in the template (its
pause / resume / remove forms need the request's CSRF token); every other row, and each
record's summary and JSON, is built here with every value escaped: through a template
loop the bench's 181 records cost ~80 us a row (5 to 9 variable nodes each)."""

from __future__ import annotations

from collections import defaultdict
from html import escape  # the stdlib's: Django's lazy-aware wrapper costs ~10 us a call
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from oqronboard.base.templating import board_engine
from oqronboard.base.urlsafe import SegmentPattern
from oqronboard.definitions.models import Record
from oqronboard.row_html import value_text
from oqronboard.templatetags.board import pretty_json
from oqronkit.namespaces import QUEUE

from .. import queues


def definition_groups(records: list[Record], consumed: set[str] | None) -> list[dict[str, Any]]:
    """The records by namespace, sorted: a queue group's rows for the template (its link,
    control state, whether it is stale), any other group's rows as HTML."""
    grouped: dict[str, list[Record]] = defaultdict(list)
    for record in records:
        grouped[record.namespace].append(record)
    queue_jobs = SegmentPattern("oqronboard:queue-jobs")
    groups = []
    for namespace, members in sorted(grouped.items()):
        group: dict[str, Any] = {"namespace": namespace, "kind": members[0].record_kind,
                                 "queues": namespace == QUEUE, "rows": [], "rows_html": ""}
        if group["queues"]:
            group["rows"] = [{"id": r.id, "url": queue_jobs.fill(r.id), "record_cell": record_cell(r.value),
                              "control": r.value, "stale": queues.is_stale(r, consumed)} for r in members]
        else:
            group["rows_html"] = plain_rows(namespace, members)
        groups.append(group)
    return groups


def plain_rows(namespace: str, records: list[Record]) -> SafeString:
    """The rows of a namespace with no actions: id and record."""
    ns = escape(namespace)
    return mark_safe("\n".join(  # every value went through escape() or record_cell
        f'<tr data-row data-testid="definition-{ns}-{escape(r.id)}"><th scope="row">{escape(r.id)}</th>'
        f"{record_cell(r.value)}</tr>" for r in records))


def record_cell(value: Any) -> SafeString:
    """A record's summary (its handler or "JSON", its concurrency, a batch queue's
    options) over its indented JSON, folded."""
    fields = value if isinstance(value, dict) else {}
    summary = value_text(fields.get("handler") or "JSON")
    if fields.get("concurrency"):
        summary += f" · concurrency {value_text(fields['concurrency'])}"
    if fields.get("batch"):
        # The queue page includes the same template: one home for a batch queue's options.
        batch = board_engine().get_template("oqronboard/definitions/_queue_batch.html")
        summary += " · " + batch.render({"batch": fields["batch"]})
    return mark_safe(f'<td><details><summary class="small">{summary}</summary>\n'  # escaped above and here
                     f'<pre class="json">{escape(pretty_json(value))}</pre></details></td>')
