"""Replay and resend as tracked operations on the board (issue 37, item 5): started from
the runs page's replay filter and the delivery log's resend confirmation "as a tracked
operation" (operators, CSRF, audited, the count made with the ORM as ``planned``), run
by the leader's runner, the operation's page per target, the replay set paged, and the
JSON API's ``action`` replay and resend."""

from __future__ import annotations

import json

from django.test import Client
from django.urls import reverse

from oqronkit.clock import now_ms
from oqronkit.namespaces import dlq_namespace, job_namespace
from oqronkit.operations import OperationRunner, Operations
from tests.board.seed import Board, put_runs, queue_control, run_value
from tests.board.webhook_seed import attempt, declare, fire, settle


def seed_pricing(board: Board, count: int) -> None:
    queue_control(board.plane, "pricing")
    record = board.plane.get("queue", "pricing").value
    board.plane.put("queue", "pricing", {**record, "replayable": True})
    at = now_ms() - 60_000
    put_runs(board.plane, [run_value(f"p{n:03d}", name="pricing", job_id=f"j{n}", input={"n": n},
                                     output={"net": n}, started=at + n) for n in range(count)])


def audit(board: Board, action: str) -> list[dict]:
    return [r.value for r in board.plane.list("audit").records if r.value["action"] == action]


def drain(board: Board, chunk: int = 1000) -> None:
    OperationRunner(board.scope.engine, owner="test", chunk=chunk).drain()


def test_a_tracked_replay_from_the_runs_filter_has_no_cap_and_pages_its_set(board: Board):
    seed_pricing(board, 25)
    page = board.operator.get(reverse("oqronboard:runs"), {"name": "pricing"}).content.decode()
    assert 'data-testid="replay-tracked"' in page
    created = board.operator.post(reverse("oqronboard:replay-create"),
                                  {"name": "pricing", "status": "completed", "window": "24h", "tracked": "on"})
    (op,), _ = Operations(board.scope.engine).list()
    assert created.status_code == 302 and created["Location"] == reverse("oqronboard:operation", args=[op.id])
    assert (op.action, op.planned, op.created_by) == ("replay", 25, board.users["operator"].username)
    body = board.viewer.get(created["Location"]).content.decode()
    assert "replay runs of" in body and 'data-testid="operation-replay-set"' in body and "25 runs matched" in body
    drain(board, chunk=10)
    done = board.viewer.get(created["Location"] + "?panel=live", headers={"HX-Request": "true"})
    assert done.status_code == 286 and "25 replayed, 0 failed" in done.content.decode()
    assert board.plane.count(job_namespace("pricing")) == 25
    replay_url = reverse("oqronboard:replay", args=[op.replay_set])
    first = board.viewer.get(replay_url).content.decode()
    assert 'data-testid="replay-pages"' in first and "Page 1 of 3" in first
    assert first.count('data-testid="replay-pair"') == 10 and "25 still running" in first
    third = board.viewer.get(replay_url, {"page": "3"}).content.decode()
    assert third.count('data-testid="replay-pair"') == 5
    assert board.viewer.get(replay_url, {"page": "x"}).status_code == 400
    api = board.viewer.get(reverse("oqronboard:api-replay", args=[op.replay_set]), {"page": "2"}).json()
    assert (api["page"], api["pages"], api["count"], len(api["pairs"])) == (2, 3, 25, 10)
    (entry,) = audit(board, "operation-replay")
    assert entry["operation"] == op.id and entry["replaySet"] == op.replay_set and entry["ok"] is True


def test_the_replays_page_form_offers_a_tracked_replay_beyond_the_cap(board: Board):
    seed_pricing(board, 3)
    assert 'data-testid="replays-tracked"' in board.operator.get(reverse("oqronboard:replays")).content.decode()
    url = reverse("oqronboard:replay-create")
    created = board.operator.post(url, {"name": "pricing", "status": "completed", "last": "5000", "tracked": "on"})
    (op,), _ = Operations(board.scope.engine).list()
    assert created.status_code == 302 and (op.planned, op.filter.last) == (3, 5000)  # type: ignore[union-attr]
    unticked = board.operator.post(url, {"name": "pricing", "status": "completed", "last": "1001"})  # over the cap
    assert unticked.status_code == 302 and len(Operations(board.scope.engine).list()[0]) == 2
    assert board.operator.post(url, {"name": "pricing", "last": str(10**8)}).status_code == 400


def test_a_tracked_replay_is_refused_by_name_for_a_handler_not_replayable_and_needs_an_operator(board: Board):
    queue_control(board.plane, "emails")
    put_runs(board.plane, [run_value("e1", name="emails", job_id="j1")])
    url = reverse("oqronboard:replay-create")
    refused = board.operator.post(url, {"name": "emails", "tracked": "on"})
    assert refused.status_code == 400 and "not declared replayable" in refused.content.decode()
    assert [e["ok"] for e in audit(board, "operation-replay")] == [False]
    assert board.viewer.post(url, {"name": "emails", "tracked": "on"}).status_code == 403
    csrf = Client(enforce_csrf_checks=True)
    csrf.force_login(board.users["operator"])
    assert csrf.post(url, {"name": "emails", "tracked": "on"}).status_code == 403
    assert board.operator.post(url, {"name": "emails", "tracked": "on", "last": "0"}).status_code == 400
    assert Operations(board.scope.engine).list()[0] == []


def test_a_tracked_resend_from_the_confirmation_sends_every_match_once(board: Board):
    billing = declare(board)
    rendered = now_ms()
    deliveries = fire(billing) + fire(billing, "user.created")  # shop, crm; crm
    for d in deliveries:
        attempt(board, billing, d, status="failed", http=500, started=rendered - 5000)
        attempt(board, billing, d, status="failed", http=500, started=rendered - 4000, attempt_no=2)
        settle(board, billing, d, dead=True)
    late = fire(billing, "user.deleted")[0]
    attempt(board, billing, late, status="failed", http=500, started=rendered + 60_000)
    settle(board, billing, late, dead=True)
    url = reverse("oqronboard:webhook-resend-matching")
    confirm = board.operator.post(url, {"status": "failed", "rendered_at": rendered}).content.decode()
    assert 'data-testid="resend-tracked"' in confirm
    created = board.operator.post(url, {"status": "failed", "rendered_at": rendered, "confirmed": "on",
                                        "tracked": "on"})
    (op,), _ = Operations(board.scope.engine).list()
    assert created.status_code == 302 and created["Location"] == reverse("oqronboard:operation", args=[op.id])
    assert (op.action, op.planned, op.filter.before) == ("resend", 3, rendered + 1)  # type: ignore[union-attr]
    drain(board, chunk=2)
    done = Operations(board.scope.engine).get(op.id)
    assert (done.status, done.progress.done, done.progress.failed) == ("done", 3, 0)
    for d in deliveries:
        assert board.plane.get(dlq_namespace(billing.queue), d) is None
        assert board.plane.get(job_namespace(billing.queue), d).value["status"] == "waiting"  # type: ignore[union-attr]
    assert board.plane.get(dlq_namespace(billing.queue), late) is not None
    page = board.viewer.get(created["Location"]).content.decode()
    assert "3 sent again" in page and "resend deliveries of every webhook" in page
    (entry,) = audit(board, "operation-resend")
    assert entry["operation"] == op.id and entry["filters"] == {"status": "failed", "window": "24h"}
    assert board.viewer.post(url, {"rendered_at": rendered, "confirmed": "on", "tracked": "on"}).status_code == 403


def test_the_json_api_starts_a_replay_and_a_resend(board: Board):
    seed_pricing(board, 3)
    billing = declare(board, name="hooks")
    delivery = fire(billing)[0]
    attempt(board, billing, delivery, status="completed", started=now_ms() - 5000)
    settle(board, billing, delivery)
    create = reverse("oqronboard:api-operations")
    replayed = board.operator.post(create, json.dumps({"action": "replay", "name": "pricing", "last": 2}),
                                   content_type="application/json")
    assert replayed.status_code == 201 and replayed.json()["replaySet"] and replayed.json()["counts"]["planned"] == 2
    resent = board.operator.post(create, json.dumps({"action": "resend", "webhook": billing.name, "window": "1h"}),
                                 content_type="application/json")
    assert resent.status_code == 201 and resent.json()["target"] == "deliveries"
    assert board.operator.post(create, json.dumps({"action": "resend", "status": "nope"}),
                               content_type="application/json").status_code == 400
    assert board.viewer.post(create, json.dumps({"action": "replay", "name": "pricing"}),
                             content_type="application/json").status_code == 403
    listed = board.operator.post(create, json.dumps({"action": "replay", "run_ids": ["p000", "p001", "p000"]}),
                                 content_type="application/json")
    assert listed.status_code == 201 and (listed.json()["target"], listed.json()["counts"]["planned"]) == ("run_ids", 2)
    assert board.operator.post(create, json.dumps({"action": "replay", "run_ids": ["x" * 300]}),
                               content_type="application/json").status_code == 400
    drain(board)
    ops = {op.target: op for op in Operations(board.scope.engine).list()[0]}
    assert ops["runs"].progress.done == 2 and ops["deliveries"].progress.done == 1 and ops["run_ids"].progress.done == 2
    assert board.plane.get(job_namespace(billing.queue), delivery) is not None  # the completed delivery, again
