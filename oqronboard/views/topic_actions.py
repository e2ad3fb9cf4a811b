"""A consumer group's operator actions: pause, resume, replay (or seek) from an offset
or a time after a confirmation that says how many messages, and retry its dead
letters (beyond ``ACTION_CAP`` as a tracked operation). Each goes through the
engine's topic API (:class:`oqronkit.Topic` built with the topic's declared
partitions on the board's scoped engine), is permission checked and audited like
every other action."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from django.contrib import messages
from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect

from oqronboard.base.templating import render
from oqronboard.jobs.queries import DeadFilters, dead_targets
from oqronkit import Topic
from oqronkit.errors import InvalidState
from oqronkit.operations import Operations
from oqronkit.topics import groups
from oqronkit.topics.groups import GroupValue, Position

from ..base.audit import ACTION_CAP, Action, targets
from ..base.pages import BadFilter, BoardRequest, back, board_view, refresh_others, safe_next, scope_of
from ..base.roles import operator_required
from ..base.scope import BoardScope
from ..topic_forms import POSITION_HELP, describe, replay_position
from ..topics import GroupRow, TopicRow
from .topics import topic_or_404

NO_GROUP = "No consumer group of that name on this topic."


@dataclass
class Target:
    """The topic and group an action acts on, and the engine's topic object."""

    row: TopicRow
    group: GroupRow
    topic: Topic

    @property
    def label(self) -> str:
        return f"group {self.group.name} of topic {self.row.name}"


def target_or_404(scope: BoardScope, topic: str, group: str) -> Target:
    row = topic_or_404(scope, topic)
    found = next((g for g in row.groups if g.name == group), None)
    if found is None:
        raise Http404(NO_GROUP)
    return Target(row, found, Topic(topic, partitions=row.partitions, engine=scope.engine))


def _audit(request: BoardRequest, target: Target, action: str, **extra: Any) -> Action:
    return Action(scope_of(request), request.user.get_username(), action, queue=target.group.queue,
                  extra={"target": target.label, "topic": target.row.name, "group": target.group.name, **extra})


def _answer(request: BoardRequest, target: Target, ok: bool, message: str) -> HttpResponse:
    """htmx: the message for the page's result area, every live panel refreshed;
    otherwise a flash message and back to where the form was."""
    if request.htmx:
        return refresh_others(render(request, "oqronboard/topics.html#result", {"ok": ok, "message": message}))
    (messages.success if ok else messages.warning)(request, message)
    return back(request, reverse("oqronboard:topic-log", args=[target.row.name]))


@require_POST
@board_view
@operator_required
def group_pause(request: BoardRequest, topic: str, group: str, paused: bool) -> HttpResponse:
    """Pause (no message handed over, no delivery run) or resume a consumer group."""
    target = target_or_404(scope_of(request), topic, group)
    verb = "paused" if paused else "resumed"
    try:
        target.topic.pause(group) if paused else target.topic.resume(group)
        ok, message = True, f"{target.label.capitalize()} {verb}."
    except InvalidState as exc:
        ok, message = False, str(exc)
    _audit(request, target, "pause" if paused else "resume").save(ok=ok, result=message)
    return _answer(request, target, ok, message)


@require_POST
@board_view
@operator_required
def group_retry_dead(request: BoardRequest, topic: str, group: str) -> HttpResponse:
    """Retry the group's dead letters that had died when the page was rendered
    (``rendered_at``): at once up to ``ACTION_CAP``, else as a tracked retry operation
    over the group's queue (no cap: the leader's runner, in chunks), whose page opens."""
    target = target_or_404(scope_of(request), topic, group)
    rendered_at = _rendered_at(request)
    queue = target.group.queue
    ids = [job_id for _, job_id in dead_targets(scope_of(request), DeadFilters(queue=queue, died_before=rendered_at),
                                                 limit=ACTION_CAP + 1)]
    if len(ids) > ACTION_CAP:
        return _retry_tracked(request, target, rendered_at)
    retried = len(target.topic.group_queue(group).retry_many(ids)) if ids else 0
    message = f"Retried {retried} of {len(ids)} dead letter(s) of {target.label}."
    action = _audit(request, target, "retry", renderedAt=rendered_at)
    action.targets = targets(queue, ids)
    action.save(ok=retried > 0, result=message)
    return _answer(request, target, retried > 0, message)


def _retry_tracked(request: BoardRequest, target: Target, rendered_at: int) -> HttpResponse:
    op = Operations(scope_of(request).engine).create(
        "retry", user=request.user.get_username(), source="board", queue=target.group.queue, died_to=rendered_at,
        name=f"Retry dead letters of {target.label}")
    message = f"Operation {op.id} started: {op.name}, {op.planned:,} dead letter(s) to look at."
    _audit(request, target, "operation-retry", renderedAt=rendered_at, operation=op.id,
           filter=op.filter.to_value()).save(ok=True, result=message)
    url = reverse("oqronboard:operation", args=[op.id])
    if request.htmx:
        return HttpResponseClientRedirect(url)
    messages.success(request, message)
    return redirect(url)


def _rendered_at(request: BoardRequest) -> int:
    raw = request.POST.get("rendered_at", "")
    if not raw.isdigit() or len(raw) > 15:
        raise BadFilter("rendered_at: the page's render time (epoch ms) is missing or malformed; reload the page.")
    return int(raw)


@require_http_methods(["GET", "POST"])
@board_view
@operator_required
def group_replay(request: BoardRequest, topic: str, group: str) -> HttpResponse:
    """GET: the replay form. POST: a confirmation saying how many retained messages the
    group will receive from the position; POST confirmed: move the group there."""
    scope = scope_of(request)
    target = target_or_404(scope, topic, group)
    context: dict[str, Any] = {"t": target.row, "g": target.group, "help": POSITION_HELP,
                               "back_url": safe_next(request, reverse("oqronboard:topic-log", args=[topic]))}
    if request.method == "GET":
        return render(request, "oqronboard/topic_replay.html", context)
    nexts = [p.next for p in target.row.partition_rows]
    position, text, confirmed = replay_position(request.POST, nexts)
    if not confirmed:
        context.update(_preview(scope, target, position), position=text, described=describe(position))
        return render(request, "oqronboard/topic_replay.html", context)
    audit = _audit(request, target, "replay", position=text, cursorBefore=target.group.cursor)
    try:
        count = target.topic.replay(group, position)
        ok, message = True, f"{target.label.capitalize()} moved to {describe(position)}: {count} retained " \
                            f"message(s) to receive from there."
        audit.extra["count"] = count
    except InvalidState as exc:
        ok, message = False, str(exc)
    audit.save(ok=ok, result=message)
    (messages.success if ok else messages.warning)(request, message)
    return back(request, reverse("oqronboard:topic-log", args=[topic]))


def _preview(scope: BoardScope, target: Target, position: Position) -> dict[str, Any]:
    """How many retained messages a replay from ``position`` hands the group, computed
    with the engine's own rules and changing nothing; per partition, where it starts."""
    durable, row = scope.engine.durable, target.row
    cursor = groups.resolve(durable, row.name, row.partitions, position)
    moved = cast(GroupValue, {"topic": row.name, "group": target.group.name, "cursor": cursor})
    lag = groups.lag(durable, row.name, moved, row.partitions)
    partitions = [{"partition": p.partition, "from": cursor[str(p.partition)] + 1, "next": p.next,
                   "oldest": p.oldest, "count": lag[str(p.partition)],
                   "skips": cursor[str(p.partition)] + 1 > p.next} for p in row.partition_rows]
    return {"count": sum(lag.values()), "partitions": partitions, "current_lag": target.group.lag}
