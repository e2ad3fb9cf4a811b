"""The pub/sub pages: every topic with its groups (live), a topic's retained log
(newest first, keyset pages, filters on key, time and correlation id) and a message
with its deliveries per group. They read oqron_records, oqron_runs and oqron_jobs, so
they live above the apps; the group actions are :mod:`oqronboard.views.topic_actions`."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import Http404, HttpResponse

from oqronboard.base.templating import render
from oqronboard.definitions.topics import group_cursor, topic_records
from oqronboard.jobs.queries import find_jobs
from oqronboard.runs.topics import delivery_runs, get_message, message_page
from oqronkit.clock import now_ms
from oqronkit.namespaces import is_dead_letters
from oqronkit.topics.subscription import delivery_queue_name

from .. import topics
from ..base import conf
from ..base.audit import ACTION_CAP
from ..base.pages import BoardRequest, board_view, scope_of
from ..base.scope import BoardScope
from ..base.shared import shared
from ..topic_forms import LOG_WINDOWS, log_filters
from ..topic_links import topic_links

NO_TOPIC = "No topic of that name in this project and environment."


@board_view
def topics_page(request: BoardRequest) -> HttpResponse:
    """Every topic and its groups; ``?panel=live`` renders the live panel for htmx."""
    overview = shared_topics(scope_of(request))
    context = {"overview": overview, "topic_links": topic_links(overview.topics, back=request.path),
               "rendered_at": now_ms(), "action_cap": ACTION_CAP, "shared_seconds": conf.cache_seconds()}
    if request.htmx and request.GET.get("panel") == "live":
        return render(request, "oqronboard/topics.html#live", context)
    return render(request, "oqronboard/topics.html", context)


def shared_topics(scope: BoardScope, topic: str | None = None) -> topics.TopicsOverview:
    """:func:`topics.build`, shared by every viewer for a few seconds (``OQRON_BOARD_CACHE_SECONDS``,
    afresh after any action): its lags and counts. The pages say when it was read."""
    return shared(scope, f"topics:{topic or ''}", lambda: topics.build(scope, topic=topic))


def topic_or_404(scope: BoardScope, name: str, *, fresh: bool = True) -> topics.TopicRow:
    found = (topics.build(scope, topic=name) if fresh else shared_topics(scope, name)).get(name)
    if found is None:
        raise Http404(NO_TOPIC)
    return found


@board_view
def topic_log(request: BoardRequest, topic: str) -> HttpResponse:
    """A topic's retained log, newest first (the spec's dashboard query); its groups
    live above it (``?panel=live``)."""
    scope = scope_of(request)
    filters, data = log_filters(request.GET)
    if request.htmx and request.GET.get("panel") == "live":
        return render(request, "oqronboard/topic_log.html#live", _live_context(request, topic))
    more = bool(request.htmx and filters.cursor is not None)
    context: dict[str, Any] = {} if more else _live_context(request, topic)  # 404 for an unknown topic
    rows, next_cursor = message_page(scope, topic, filters)
    query = {k: v for k, v in request.GET.items() if k not in ("cursor", "panel") and v}
    context.update({
        "topic_name": topic, "rows": rows, "filters": data, "windows": LOG_WINDOWS,
        "next_query": urlencode({**query, "cursor": next_cursor}) if next_cursor else "",
        "filtered": any(data[k] for k in ("key", "correlation", "before")) or data["window"] != "all",
    })
    return render(request, "oqronboard/topic_log.html#rows" if more else "oqronboard/topic_log.html", context)


def _live_context(request: BoardRequest, topic: str) -> dict[str, Any]:
    row = topic_or_404(scope_of(request), topic, fresh=False)
    return {"t": row, "topic_links": topic_links([row], back=request.path), "topic_name": topic, "now": now_ms(),
            "rendered_at": now_ms(), "action_cap": ACTION_CAP, "shared_seconds": conf.cache_seconds()}


@board_view
def message_detail(request: BoardRequest, topic: str, message_id: str) -> HttpResponse:
    """One retained message in full, and its delivery to each group: the runs of its
    delivery jobs, and the job itself while it is in flight or dead (four queries)."""
    scope = scope_of(request)
    record = get_message(scope, topic, message_id)
    message = record.value if record is not None and isinstance(record.value, dict) else None
    found = topic_records(scope, topic=topic)[0].get(topic)
    runs = delivery_runs(scope, topic, message_id)
    group_names = sorted(set(found.groups if found else ()) | {r["group"] for r in runs if r.get("group")})
    queues = [delivery_queue_name(topic, g) for g in group_names]
    jobs = {j.queue: j for j in find_jobs(scope, message_id, queues)} if queues else {}
    if message is None and not runs and not jobs:
        raise Http404("No message with this id in this topic, project and environment (retention may have "
                      "pruned it).")
    deliveries = []
    for group in group_names:
        queue = delivery_queue_name(topic, group)
        job = jobs.get(queue)
        value = job.value if job is not None and isinstance(job.value, dict) else {}
        dead = job is not None and is_dead_letters(job.namespace)
        group_runs = [r for r in runs if r.get("group") == group]
        handed = _handed(message, found.groups.get(group) if found else None)
        deliveries.append({
            "group": group, "queue": queue, "runs": group_runs, "job": job is not None, "dead": dead,
            "job_status": "dead" if dead else value.get("status"), "job_error": (value.get("lastError") or {}),
            "state": _state(handed, job is not None, dead, group_runs),
        })
    context = {"topic_name": topic, "message_id": message_id, "message": message, "deliveries": deliveries,
               "headers": sorted((message or {}).get("headers", {}).items())
               if isinstance((message or {}).get("headers"), dict) else []}
    return render(request, "oqronboard/topic_message.html", context)


def _handed(message: dict[str, Any] | None, group: dict[str, Any] | None) -> bool | None:
    """Whether the group's cursor has passed the message (None when unknown)."""
    if message is None or group is None:
        return None
    partition, offset = message.get("partition"), message.get("offset")
    if not isinstance(partition, int) or not isinstance(offset, int):
        return None
    return offset <= group_cursor(group, partition)


def _state(handed: bool | None, has_job: bool, dead: bool, runs: list[dict[str, Any]]) -> tuple[str, str]:
    """A delivery's state: a short key (a CSS class) and what it means."""
    if dead:
        return "dead", "dead letter: it ran out of attempts"
    if has_job:
        return "active", "in flight"
    if runs:
        status = str(runs[0].get("status") or "unknown")
        return status, "delivered" if status == "completed" else status
    if handed is False:
        return "pending", "not yet handed over (the group lags behind it)"
    if handed:
        return "skipped", "handed over, no run kept (filtered out, or its runs pruned)"
    return "unknown", "unknown"
