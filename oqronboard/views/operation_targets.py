"""Starting a tracked replay or resend (issue 37, item 5): the runs page's replay filter
and the delivery log's resend-all, "as a tracked operation", with no 1,000-item cap.
The board counts what the filter matches with the ORM (``planned``, shown beside the
progress bar) and starts the operation through the engine's
:class:`~oqronkit.operations.Operations`; audited as the dead letters' operations are."""

from __future__ import annotations

from typing import Any

from django import forms
from django.db.models import Q

from oqronboard.runs.queries import runs_of
from oqronboard.runs.webhooks import AttemptFilters, attempts
from oqronkit.errors import InvalidRecord
from oqronkit.operations import Operation, Operations
from oqronkit.operations.replaying_ids import clean_ids
from oqronkit.queues.runs import RUN_STATUSES
from oqronkit.replay import ReplayRefused
from oqronkit.replay.create import QUEUE_MODULES

from ..base.audit import Action
from ..base.expressions import JsonText, RunStarted
from ..base.filters import TextFilter, WindowField, window_start
from ..base.pages import BadFilter
from ..base.scope import BoardScope

MAX_LAST = 10_000_000  # a tracked replay's "last N": any count, bounded for the form


class ReplayOperationForm(forms.Form):
    """A handler's runs (the runs page's filter): ``name``, ``status``, ``window``, and
    optionally only the ``last`` N of them."""

    name = TextFilter(max_length=100, label="handler")
    status = forms.ChoiceField(choices=[("", "any status")] + [(s, s) for s in RUN_STATUSES], required=False)
    window = WindowField(label="window")
    last = forms.IntegerField(min_value=1, max_value=MAX_LAST, required=False)


def count_replayable(scope: BoardScope, handler: str, status: str | None, started_from: int) -> int:
    """How many runs a tracked replay will walk (its ``planned``): queue jobs' runs of
    ``handler``, not replays, started since ``started_from`` (the runs' name index)."""
    qs = (runs_of(scope).alias(f_name=JsonText("name"), f_module=JsonText("module"), f_replay=JsonText("replayOf"),
                               started=RunStarted())
          .filter(f_name=handler, f_module__in=QUEUE_MODULES, started__gte=started_from)
          .filter(Q(f_replay__isnull=True) | Q(f_replay="")))
    if status:
        qs = qs.alias(f_status=JsonText("status")).filter(f_status=status)
    return int(qs.count())


def start_replay(scope: BoardScope, user: str, data: dict[str, Any], *, source: str = "board",
                 name: str = "") -> Operation:
    """A tracked replay of a cleaned :class:`ReplayOperationForm`, audited; a refusal (a
    handler not declared replayable) is a 400 naming it, audited as refused."""
    if not data["name"]:
        raise BadFilter("Say which handler's runs to replay (name).")
    started_from, status = window_start(data["window"]), data["status"] or None
    selection = {"handler": data["name"], "status": status, "window": data["window"], "last": data["last"]}
    audit = Action(scope, user, "operation-replay", source=source, queue=data["name"], extra={"selection": selection})
    planned = count_replayable(scope, data["name"], status, started_from)
    try:
        op = Operations(scope.engine).create_replay(
            user=user, handler=data["name"], status=status, started_from=started_from, last=data["last"],
            planned=min(planned, data["last"]) if data["last"] else planned, source=source, name=name)
    except ReplayRefused as exc:
        audit.save(ok=False, result=str(exc))
        raise BadFilter(str(exc)) from exc
    audit.extra.update(operation=op.id, replaySet=op.replay_set, target=op.name, filter=op.filter.to_value())
    audit.save(ok=True, result=f"Operation {op.id} started: {op.name}, {op.planned:,} run(s) to replay.")
    return op


def start_id_replay(scope: BoardScope, user: str, run_ids: list[str], *, source: str = "board") -> Operation:
    """A tracked replay of an explicit list of run ids (any length), audited; a bad list is a 400."""
    try:
        ids = clean_ids(run_ids)
    except InvalidRecord as exc:
        raise BadFilter(str(exc)) from exc
    op = Operations(scope.engine).create_replay_ids(user=user, run_ids=ids, source=source)
    Action(scope, user, "operation-replay", source=source, extra={
        "operation": op.id, "replaySet": op.replay_set, "selection": {"runIds": len(ids)}, "target": op.name}).save(
        ok=True, result=f"Operation {op.id} started: {op.name}.")
    return op


def count_deliveries(scope: BoardScope, filters: AttemptFilters) -> int:
    """How many deliveries the log's filters match (a tracked resend's ``planned``)."""
    return int(attempts(scope, filters).values(w=JsonText("webhook"), job=JsonText("jobId")).order_by()
               .distinct().count())


def start_resend(scope: BoardScope, user: str, filters: AttemptFilters, shown: dict[str, Any], *,
                 source: str = "board", name: str = "") -> Operation:
    """A tracked resend of the deliveries the log's ``filters`` match (``before``: the
    page's render time), audited with the filters as the page showed them (``shown``)."""
    op = Operations(scope.engine).create_resend(
        user=user, since=filters.since, before=filters.before, webhook=filters.webhook, endpoint=filters.endpoint,
        event=filters.event, status=filters.status, planned=count_deliveries(scope, filters), source=source,
        name=name)
    Action(scope, user, "operation-resend", source=source, extra={
        "operation": op.id, "filters": shown, "filter": op.filter.to_value(), "target": op.name}).save(
        ok=True, result=f"Operation {op.id} started: {op.name}, {op.planned:,} delivery(ies) to send again.")
    return op
