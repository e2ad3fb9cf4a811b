"""The API's replays: create a replay set (operators, audited with source ``api``),
list the scope's sets, and read one with its pairs, diffs and summary. More than
``MAX_REPLAYS`` run ids, or a handler's ``last`` N above it, become a tracked replay
operation (202 with its URL)."""

from __future__ import annotations

from typing import Any

from django.http import Http404, JsonResponse
from django.urls import reverse

from oqronkit.operations import Operation, Operations
from oqronkit.replay import MAX_REPLAYS, ReplayRefused, list_replay_sets, read_replay_set, replay

from ..base.audit import Action
from ..base.filters import clean_or_400
from ..base.pages import BadFilter, BoardRequest, scope_of
from ..views.operation_targets import MAX_LAST, start_id_replay
from ..views.replays import NO_SET, PageForm
from .base import SOURCE, api_view, body


@api_view("GET")
def replay_list(request: BoardRequest) -> dict[str, Any]:
    """The scope's latest replay sets (their records, without pairs' outcomes)."""
    sets = list_replay_sets(scope_of(request).engine, limit=50)
    return {"results": [{k: v for k, v in s.items() if k != "pairs"} for s in sets]}


@api_view("GET")
def replay_detail(request: BoardRequest, set_id: str) -> dict[str, Any]:
    """One replay set: ``summary``, ``done``, ``ok`` and each pair with its diff (a
    tracked replay's: ``?page=`` of ``pages``, the summary over every page)."""
    page = clean_or_400(PageForm(request.GET))["page"] or 1
    found = read_replay_set(scope_of(request).engine, set_id, page=page)
    if found is None:
        raise Http404(NO_SET)
    return found.describe()


def _last(fields: Any) -> int:
    raw = fields.get("last", 100)
    try:
        last = int(raw)
    except (TypeError, ValueError):
        raise BadFilter(f"last must be an integer from 1 to {MAX_LAST:,}, got {raw!r}.") from None
    if not 1 <= last <= MAX_LAST:
        raise BadFilter(f"last must be an integer from 1 to {MAX_LAST:,}, got {last}.")
    return last


@api_view("POST", operator=True)
def replay_create(request: BoardRequest) -> JsonResponse:
    """Replay ``run_ids`` (repeated, or a list), or the ``last`` (default 100) runs of
    ``handler`` with ``status`` (default completed). 201 with the set; 400 with the
    refusal (naming the handler not declared replayable) otherwise. More than
    ``MAX_REPLAYS`` distinct run ids, or a ``last`` above it: 202 with the tracked
    operation that replays them."""
    fields = body(request)
    scope = scope_of(request)
    user = request.user.get_username()
    run_ids = [str(i) for i in fields.getlist("run_ids")]
    if len(dict.fromkeys(run_ids)) > MAX_REPLAYS:
        return _accepted(start_id_replay(scope, user, run_ids, source=SOURCE))
    handler = fields.get("handler") or None
    status = fields.get("status", "completed") or None
    last = None if run_ids else _last(fields)
    selection: dict[str, Any] = {"runIds": run_ids} if run_ids else {"handler": handler, "status": status,
                                                                     "last": last}
    tracked = handler is not None and last is not None and last > MAX_REPLAYS
    audit = Action(scope, user, "operation-replay" if tracked else "replay", source=SOURCE, queue=handler,
                   extra={"selection": selection})
    try:
        if tracked:
            op = Operations(scope.engine).create_replay(user=user, handler=str(handler), status=status, last=last,
                                                        source=SOURCE)
            audit.extra.update(operation=op.id, replaySet=op.replay_set, target=op.name)
            audit.save(ok=True, result=f"Operation {op.id} started: {op.name}.")
            return _accepted(op)
        set_id = replay(scope.engine, run_ids=run_ids, handler=handler, last=last, status=status, user=user,
                        source=SOURCE)
    except ReplayRefused as exc:
        audit.save(ok=False, result=str(exc))
        raise
    found = read_replay_set(scope.engine, set_id)
    assert found is not None, "a replay set is readable once created"
    audit.targets = [(p.queue, p.job_id) for p in found.pairs]
    audit.extra["replaySet"] = set_id
    audit.save(ok=True, result=f"Replay set {set_id}: {len(found.pairs)} run(s) replayed.")
    return JsonResponse(found.describe(), status=201)


def _accepted(op: Operation) -> JsonResponse:
    """A tracked replay started: 202 with the operation and where to poll it."""
    assert op.replay_set is not None, "a replay operation has its set"
    url = reverse("oqronboard:api-operation", args=[op.id])
    response = JsonResponse({"operation": op.to_dict(), "operationUrl": url, "replaySet": op.replay_set,
                             "replaySetUrl": reverse("oqronboard:api-replay", args=[op.replay_set])}, status=202)
    response["Location"] = url
    return response
