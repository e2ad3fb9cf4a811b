"""Replays on the board and the JSON API (issue 37 item 2): operators replay a run or a
runs-page filter (audited, CSRF), a handler not declared replayable is refused by name,
the set's page pairs each original with its replay (status, duration, the diff) live,
escaped, and another scope's set is a 404."""

from __future__ import annotations

import json
from unittest import mock

from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from oqronkit.clock import now_ms
from oqronkit.namespaces import job_namespace
from oqronkit.replay import read_replay_set, replay, report
from tests.board.seed import Board, put_runs, queue_control, run_value

HOSTILE = "<script>alert(1)</script>"


def seed(board: Board) -> None:
    queue_control(board.plane, "emails")
    queue_control(board.plane, "pricing")
    record = board.plane.get("queue", "pricing").value
    board.plane.put("queue", "pricing", {**record, "replayable": True})
    put_runs(board.plane, [
        run_value("p1", name="pricing", job_id="j1", input={"n": 1}, output={"net": 100}),
        run_value("p2", name="pricing", job_id="j2", input={"n": 2}, output={"net": 200, "note": "x"}),
        run_value("e1", name="emails", job_id="j3", output={"sent": True}),
    ])


def finish_replays(board: Board, set_id: str, outputs: dict[str, object]) -> None:
    """What a worker does: write each replay's run (with its job's replay fields and
    correlation id) and delete its job."""
    found = read_replay_set(board.scope.engine, set_id)
    assert found is not None
    for pair in found.pairs:
        run = run_value(f"r-{pair.original_id}", name=pair.queue, job_id=pair.job_id, started=now_ms(),
                        output=outputs[pair.original_id])
        job = board.plane.get(job_namespace(pair.queue), pair.job_id).value
        run.update(replayOf=job["replayOf"], replaySet=job["replaySet"], correlationId=job["correlationId"])
        put_runs(board.plane, [run])
        board.plane.delete(job_namespace(pair.queue), pair.job_id)


def newest_set(board: Board) -> str:
    return board.plane.list("replay_sets", order="inserted", descending=True, limit=1).records[0].id


def test_an_operator_replays_a_filter_and_the_set_page_diffs_each_pair(board: Board):
    seed(board)
    runs_page = board.operator.get(reverse("oqronboard:runs"), {"name": "pricing", "status": "completed"})
    assert 'data-testid="replay-filter-form"' in runs_page.content.decode()
    created = board.operator.post(reverse("oqronboard:replay-create"),
                                  {"name": "pricing", "status": "completed", "window": "24h", "last": "10"})
    set_id = newest_set(board)
    assert created.status_code == 302 and created["Location"] == reverse("oqronboard:replay", args=[set_id])
    pending = board.viewer.get(reverse("oqronboard:replay", args=[set_id])).content.decode()
    assert "0 identical, 0 changed, 0 failed, 2 still running" in pending and "data-poll" in pending
    finish_replays(board, set_id, {"p1": {"net": 100}, "p2": {"net": 250, "tag": HOSTILE}})
    live = board.viewer.get(reverse("oqronboard:replay", args=[set_id]), {"panel": "live"}, HTTP_HX_REQUEST="true")
    assert live.status_code == 286  # htmx stops polling: every replay finished
    body = live.content.decode()
    assert "1 identical, 1 changed, 0 failed" in body and HOSTILE not in body and "&lt;script&gt;" in body
    for path in ("$.net", "$.note", "$.tag"):
        assert f"<code>{path}</code>" in body
    audit = [r.value for r in board.plane.list("audit").records if r.value["action"] == "replay"]
    assert len(audit) == 1 and audit[0]["replaySet"] == set_id and audit[0]["idCount"] == 2
    listed = board.viewer.get(reverse("oqronboard:replays")).content.decode()
    assert reverse("oqronboard:replay", args=[set_id]) in listed


def test_a_handler_not_declared_replayable_is_refused_by_name_and_viewers_cannot_replay(board: Board):
    seed(board)
    refused = board.operator.post(reverse("oqronboard:replay-create"), {"run": "e1"}, follow=True)
    assert "Handler &#x27;emails&#x27; is not declared replayable=True" in refused.content.decode()
    assert not board.plane.list("replay_sets").records
    assert board.viewer.post(reverse("oqronboard:replay-create"), {"run": "p1"}).status_code == 403
    detail = board.viewer.get(reverse("oqronboard:run", args=["p1"])).content.decode()
    assert 'data-testid="replay-run"' not in detail  # a viewer is offered no action
    assert 'data-testid="replay-run"' in board.operator.get(reverse("oqronboard:run", args=["p1"])).content.decode()
    operator = get_user_model().objects.get(username=f"olivia-{board.db.project[-6:]}")
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(operator)
    assert strict.post(reverse("oqronboard:replay-create"), {"run": "p1"}).status_code == 403
    assert not board.plane.list("replay_sets").records


def test_the_api_creates_and_reads_a_replay_set(board: Board):
    seed(board)
    url = reverse("oqronboard:api-replay-create")
    made = board.operator.post(url, json.dumps({"run_ids": ["p1"]}), content_type="application/json")
    assert made.status_code == 201
    doc = made.json()
    assert doc["count"] == 1 and doc["done"] is False and doc["pairs"][0]["original"]["run"] == "p1"
    finish_replays(board, doc["id"], {"p1": {"net": 101}})
    read = board.viewer.get(reverse("oqronboard:api-replay", args=[doc["id"]])).json()
    assert read["done"] and not read["ok"] and read["summaryText"] == "0 identical, 1 changed, 0 failed"
    assert read["pairs"][0]["changes"] == [{"kind": "changed", "path": "$.net", "before": 100, "after": 101}]
    refused = board.operator.post(url, json.dumps({"handler": "emails", "last": 5}), content_type="application/json")
    assert refused.status_code == 400 and "'emails' is not declared replayable=True" in refused.json()["error"]
    assert board.viewer.post(url, json.dumps({"run_ids": ["p1"]}), content_type="application/json").status_code == 403
    assert [s["id"] for s in board.viewer.get(reverse("oqronboard:api-replays")).json()["results"]] == [doc["id"]]


def test_another_scopes_replay_set_is_a_404(board: Board):
    seed(board)
    other = board.scope.engine.scoped(project="other-shop", environment="production")
    other.durable.put("replay_sets", "secret-set", {"id": "secret-set", "createdAt": now_ms(), "pairs": []})
    assert board.viewer.get(reverse("oqronboard:replay", args=["secret-set"])).status_code == 404
    assert board.viewer.get(reverse("oqronboard:api-replay", args=["secret-set"])).status_code == 404
    assert "secret-set" not in board.viewer.get(reverse("oqronboard:replays")).content.decode()


def test_outputs_are_diffed_once_a_pair_and_not_at_all_for_counts_only(board: Board):
    seed(board)
    put_runs(board.plane, [run_value("p3", name="pricing", job_id="j4", output={"net": 300})])
    set_id = replay(board.scope.engine, run_ids=["p1", "p2", "p3"], user="olivia")
    finish_replays(board, set_id, {"p1": {"net": 100}, "p2": {"net": 200, "note": "x"}, "p3": {"net": 301}})
    with mock.patch.object(report, "json_diff", wraps=report.json_diff) as diffing:
        found = read_replay_set(board.scope.engine, set_id)
    assert found is not None and [p.state for p in found.pairs] == ["identical", "identical", "changed"]
    assert [len(p.changes) for p in found.pairs] == [0, 0, 1]
    assert diffing.call_count == 4  # one comparison a pair, and the changed pair's full diff
    pairs_in = found.record["pairs"]
    counted = report.resolve_pairs(board.scope.engine, pairs_in, lambda: report.replay_runs(
        board.scope.engine, set_id, set_id), diffs=False)
    assert [(p.state, p.changes) for p in counted] == [("identical", []), ("identical", []), ("changed", [])]
