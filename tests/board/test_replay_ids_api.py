"""``POST /api/v1/replays/new/`` with more run ids than a replay at once takes (issue 37,
item 5): 202 with a tracked operation, audited; 5,000 ids replayed through it to the end
by the leader's runner, a chunk crashing after its write and resumed by another runner,
every run paired exactly once and the set's summary over every page."""

from __future__ import annotations

import json

from django.urls import reverse

from oqronkit.clock import now_ms
from oqronkit.namespaces import job_namespace
from oqronkit.operations import OperationRunner, Operations
from oqronkit.replay import MAX_REPLAYS
from tests.board.seed import Board, put_runs, run_value
from tests.board.test_operation_targets import audit, seed_pricing

COUNT = 5000


class Crash(BaseException):
    """A runner dying after a chunk's write (BaseException: no handler catches it)."""


def post(board: Board, ids: list[str], *, client: str = "operator"):
    return getattr(board, client).post(reverse("oqronboard:api-replay-create"), json.dumps({"run_ids": ids}),
                                       content_type="application/json")


def finish_every_replay(board: Board) -> int:
    """What workers do: each replay job's run (same output, so identical), its job deleted."""
    jobs = board.plane.list(job_namespace("pricing"), limit=1000)
    done = 0
    while True:
        runs = []
        for record in jobs.records:
            job = record.value
            run = run_value(f"r{record.id}", name="pricing", job_id=record.id, started=now_ms(),
                            output={"net": job["data"]["n"]})
            run.update(replayOf=job["replayOf"], replaySet=job["replaySet"], correlationId=job["correlationId"])
            runs.append(run)
        put_runs(board.plane, runs)
        board.plane.apply(deletes=[(job_namespace("pricing"), r.id) for r in jobs.records])
        done += len(runs)
        if jobs.next_cursor is None:
            return done
        jobs = board.plane.list(job_namespace("pricing"), limit=1000)


def test_5000_ids_become_a_tracked_replay_done_once_each_through_a_crash(board: Board):
    seed_pricing(board, COUNT)
    ids = [f"p{n:03d}" for n in range(COUNT)]
    made = post(board, [*ids, ids[0]])  # a repeated id is replayed once
    assert made.status_code == 202
    doc = made.json()
    op_id = doc["operation"]["id"]
    assert made["Location"] == doc["operationUrl"] == reverse("oqronboard:api-operation", args=[op_id])
    assert (doc["operation"]["target"], doc["operation"]["counts"]["planned"]) == ("run_ids", COUNT)
    (entry,) = audit(board, "operation-replay")
    assert (entry["operation"], entry["replaySet"], entry["selection"], entry["ok"]) == (
        op_id, doc["replaySet"], {"runIds": COUNT}, True)
    engine = board.scope.engine
    chunks: list[object] = []

    def crash_on_second(op: object) -> None:
        chunks.append(op)
        if len(chunks) == 2:
            raise Crash

    try:
        OperationRunner(engine, owner="doomed", chunk=700, lock_ttl_ms=1, after_write=crash_on_second).drain()
    except Crash:
        pass
    assert board.viewer.get(doc["operationUrl"]).json()["counts"]["done"] == 1000  # 700, then the part's last 300
    page = board.viewer.get(reverse("oqronboard:operation", args=[op_id])).content.decode()
    assert "1000 of 5000 selected runs looked at" in page and "replay 5000 selected runs" in page
    OperationRunner(engine, owner="heir", chunk=700).drain()
    op = board.viewer.get(doc["operationUrl"]).json()
    assert (op["status"], op["percent"], op["counts"]["done"], op["counts"]["failed"]) == ("done", 100, COUNT, 0)
    replayed = [r.value["replayOf"] for r in board.plane.list(job_namespace("pricing"), limit=1000).records]
    assert finish_every_replay(board) == COUNT
    pages = board.viewer.get(doc["replaySetUrl"]).json()["pages"]
    pairs = [pair for page in range(1, pages + 1)
             for pair in board.viewer.get(doc["replaySetUrl"], {"page": page}).json()["pairs"]]
    assert len(replayed) == 1000 and sorted(p["original"]["run"] for p in pairs) == sorted(ids)  # each once
    assert {p["state"] for p in pairs} == {"identical"}
    final = board.viewer.get(doc["replaySetUrl"]).json()
    for _ in range(pages):  # each read tallies a few more chunks
        final = board.viewer.get(doc["replaySetUrl"]).json()
    assert final["done"] and final["ok"] and final["summary"]["identical"] == COUNT


def test_at_or_under_the_cap_is_replayed_at_once_and_bad_lists_are_400(board: Board):
    seed_pricing(board, MAX_REPLAYS + 1)
    ids = [f"p{n:03d}" for n in range(MAX_REPLAYS + 1)]
    at_once = post(board, ids[:MAX_REPLAYS])
    assert at_once.status_code == 201 and at_once.json()["count"] == MAX_REPLAYS
    assert post(board, [*ids[:MAX_REPLAYS], ""]).status_code == 400  # an empty id in a tracked list
    assert post(board, ["x" * 300] * 2 + ids[:MAX_REPLAYS]).status_code == 400
    assert post(board, ids, client="viewer").status_code == 403
    operations = reverse("oqronboard:api-operations")
    answer = board.operator.post(operations, json.dumps({"action": "replay", "run_ids": [{"id": "x"}, "y"]}),
                                 content_type="application/json")
    assert answer.status_code == 400, answer.content  # an object among the ids: named, not a 500
    assert Operations(board.scope.engine).list()[0] == []


def test_a_handlers_last_above_the_cap_is_a_tracked_replay(board: Board):
    seed_pricing(board, 3)
    url = reverse("oqronboard:api-replay-create")
    made = board.operator.post(url, json.dumps({"handler": "pricing", "last": 5000}), content_type="application/json")
    assert made.status_code == 202
    op = made.json()["operation"]
    assert (op["target"], op["filter"]["last"], op["filter"]["handler"]) == ("runs", 5000, "pricing")
    assert made["Location"] == reverse("oqronboard:api-operation", args=[op["id"]])
    refused = board.operator.post(url, json.dumps({"handler": "emails", "last": 5000}),
                                  content_type="application/json")
    assert refused.status_code == 400 and "'emails' is not declared replayable=True" in refused.json()["error"]
    too_many = board.operator.post(url, json.dumps({"handler": "pricing", "last": 10**8}),
                                   content_type="application/json")
    assert too_many.status_code == 400
    entries = audit(board, "operation-replay")
    assert sorted(e["ok"] for e in entries) == [False, True]
    assert next(e for e in entries if e["ok"])["operation"] == op["id"]
