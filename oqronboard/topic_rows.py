"""The consumer groups' rows of the topics panel, built in Python: through the template
engine each row was ~40 nodes, and 60 groups cost ~15 ms a page. Every value goes through
``escape`` (numbers as ``{{ n }}`` prints them); :mod:`.topic_section` puts them in its
panel's table."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape  # the stdlib's: Django's lazy-aware wrapper costs ~10 us a call

from django.utils.safestring import SafeString, mark_safe

from .row_html import csrf_input, int_text
from .topic_links import GroupLinks, TopicLinks
from .topics import GroupRow, TopicRow


@dataclass(frozen=True)
class Actions:
    """What an operator's action cells need: the page's path (forms come back to it),
    the CSRF token, and the instant and cap the retry of dead letters names."""

    path: str
    csrf_token: str
    rendered_at: int
    rendered_at_text: str
    action_cap: int


def group_rows(topic: TopicRow, links: TopicLinks, actions: Actions | None) -> SafeString:
    """One ``<tr>`` per group of ``topic``; the action cells only for an operator (``actions``)."""
    t = escape(topic.name)
    return mark_safe("\n".join(_row(t, g, links.groups[g.name], actions) for g in topic.groups))  # escaped below


def _row(t: str, g: GroupRow, link: GroupLinks, actions: Actions | None) -> str:
    name, test_id = escape(g.name), f"{t}-{escape(g.name)}"
    paused = f'<span class="badge warn" data-testid="paused-{test_id}">paused</span>' if g.paused else ""
    cells = (
        f'<tr data-row data-testid="group-{test_id}">'
        f'<th scope="row"><a href="{escape(link.queue)}" title="its delivery queue {escape(g.queue)}">{name}</a> '
        f'<a href="{escape(link.page)}" class="small" data-testid="history-{test_id}" title="its metrics history">'
        f"history</a> {paused}</th>"
        f'<td class="num{" warn-text" if g.lag else ""}" data-testid="lag-{test_id}" title="{escape(g.lag_title)}">'
        f"{int_text(g.lag)}</td>"
        f'<td class="num" data-testid="inflight-{test_id}"><a href="{escape(link.queue)}">'
        f"{int_text(g.in_flight)}</a></td>"
        f'<td class="num" data-testid="dead-{test_id}"><a href="{escape(link.dead)}"{' class="bad"' if g.dead else ""}>'
        f"{int_text(g.dead)}</a></td>"
        f'<td class="opt small">{escape(g.start_from)}</td>'
    )
    return cells + (_action_cell(test_id, g, link, actions) if actions is not None else "") + "</tr>"


def _action_cell(test_id: str, g: GroupRow, link: GroupLinks, a: Actions) -> str:
    csrf = csrf_input(a.csrf_token)
    back = f'<input type="hidden" name="next" value="{escape(a.path)}">'
    verb, url = ("resume", link.resume) if g.paused else ("pause", link.pause)
    cell = (
        f'<td class="nowrap"><form method="post" action="{escape(url)}" hx-post="{escape(url)}" '
        f'hx-target="#topic-result" class="inline">{csrf}{back}'
        f'<button type="submit" data-testid="{verb}-group-{test_id}">{verb.capitalize()}</button></form> '
        f'<a href="{escape(link.replay)}" data-testid="replay-{test_id}">Replay…</a>'
    )
    if g.dead:
        cell += (
            f' <form method="post" action="{escape(link.retry_dead)}" hx-post="{escape(link.retry_dead)}" '
            f'hx-target="#topic-result" class="inline">{csrf}'
            f'<input type="hidden" name="rendered_at" value="{a.rendered_at}">{back}'
            f'<button type="submit" data-testid="retry-dead-{test_id}" title="Only dead letters that died by '
            f"{escape(a.rendered_at_text)}; more than {int_text(a.action_cap)}: a tracked operation over the "
            f"group's queue\">Retry {int_text(g.dead)} dead</button></form>"
        )
    return cell + "</td>"
