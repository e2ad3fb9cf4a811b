"""The rows of a replay set's pairs table, built here with every value escaped: through a
template loop (three ``{% url %}``, four filters and a dozen lookups a pair) the bench's
100 pending pairs cost ~25 ms a view, and a page holds up to 1,000."""

from __future__ import annotations

from html import escape  # the stdlib's: Django's lazy-aware wrapper costs ~10 us a call
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from oqronboard.base.urlsafe import SegmentPattern
from oqronboard.row_html import cut_text
from oqronboard.templatetags.board import duration, pretty_json
from oqronkit.replay.report import ReplayPair

GONE = '<span class="muted">gone</span>'


def pairs_html(pairs: list[ReplayPair]) -> SafeString:
    """One ``<tr>`` a pair: the original run and its replay (status, duration), the
    outcome, and the output diff (or a failed replay's error)."""
    run, job = SegmentPattern("oqronboard:run"), SegmentPattern("oqronboard:job", 2)
    rows = []
    for p in pairs:
        original, again = p.original or {}, p.replay or {}
        if again.get("id"):
            replay_cell = f'<a href="{escape(run.fill(again["id"]))}"><code>{cut_text(again["id"], 14)}</code></a>'
        else:
            replay_cell = f'<a href="{escape(job.fill(p.queue, p.job_id))}">job</a>'
        rows.append(
            f'<tr data-testid="replay-pair" data-state="{escape(p.state)}">'
            f'<td><a href="{escape(run.fill(p.original_id))}"><code>{cut_text(p.original_id, 14)}</code></a></td>'
            f'<td>{_status(original.get("status")) or GONE}</td>'
            f'<td class="num">{escape(duration(original.get("durationMs")))}</td>'
            f"<td>{replay_cell}</td><td>{_status(again.get('status'))}</td>"
            f'<td class="num">{escape(duration(again.get("durationMs")))}</td>'
            f'<td><span class="status status-{escape(p.state)}" data-testid="pair-state">{escape(p.state)}</span></td>'
            f"<td>{_outcome(p, again)}</td></tr>")
    return mark_safe("\n".join(rows))  # every value above went through escape()


def _outcome(pair: ReplayPair, again: dict[str, Any]) -> str:
    """The pair's output diff, or a failed replay's error."""
    if pair.changes:
        items = []
        for change in pair.changes:
            c = change.describe()
            before = f" <code>{cut_text(pretty_json(c['before']), 80)}</code>" if c["kind"] != "added" else ""
            after = f" <code>{cut_text(pretty_json(c['after']), 80)}</code>" if c["kind"] != "removed" else ""
            arrow = " →" if c["kind"] == "changed" else ""
            items.append(f'<li><span class="status">{escape(c["kind"])}</span> <code>{escape(c["path"])}</code>'
                         f"{before}{arrow}{after}</li>")
        return f'<ul class="diff" data-testid="pair-diff">{"".join(items)}</ul>'
    error = again.get("error")
    if pair.state == "failed" and error:
        error = error if isinstance(error, dict) else {}
        message = str(error["message"]) if "message" in error else ""
        return f"<code>{_text(error, 'type')}: {cut_text(message, 200)}</code>"
    return ""


def _status(status: Any) -> str:
    return f'<span class="status status-{escape(str(status))}">{escape(str(status))}</span>' if status else ""


def _text(value: dict[str, Any], key: str) -> str:
    """``{{ value.key }}``: the escaped text, empty when the key is missing."""
    return escape(str(value[key])) if key in value else ""
