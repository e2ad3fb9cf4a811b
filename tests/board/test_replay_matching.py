"""The runs page's "replay every match" (issue 37, item 5): every queue job's run the
filters match up to the page's render time, replayed by id: at once up to 1,000, beyond
that as a tracked operation of the id list; operators only, CSRF, audited."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from oqronboard.views import replay_matching
from oqronkit.clock import now_ms
from oqronkit.namespaces import job_namespace
from oqronkit.operations import Operations
from oqronkit.replay import MAX_REPLAYS
from tests.board.seed import Board, put_runs, queue_control, run_value
from tests.board.test_operation_targets import audit, drain, seed_pricing

URL = "oqronboard:replay-matching"


def test_more_than_the_cap_becomes_a_tracked_replay_of_the_ids(board: Board):
    seed_pricing(board, MAX_REPLAYS + 200)
    page = board.operator.get(reverse("oqronboard:runs"), {"name": "pricing", "window": "24h"}).content.decode()
    assert 'data-testid="replay-matching-form"' in page and 'name="rendered_at"' in page
    viewer_page = board.viewer.get(reverse("oqronboard:runs"), {"name": "pricing"}).content.decode()
    assert 'data-testid="replay-matching-form"' not in viewer_page
    rendered = now_ms()
    put_runs(board.plane, [run_value("late", name="pricing", job_id="jl", started=rendered + 50)])
    made = board.operator.post(reverse(URL), {"name": "pricing", "window": "24h", "rendered_at": rendered})
    (op,) = Operations(board.scope.engine).list()[0]
    assert made.status_code == 302 and made["Location"] == reverse("oqronboard:operation", args=[op.id])
    assert (op.target, op.planned) == ("run_ids", MAX_REPLAYS + 200)  # the late run is not in
    drain(board, chunk=500)
    done = Operations(board.scope.engine).get(op.id)
    assert (done.status, done.progress.done, done.progress.failed) == ("done", MAX_REPLAYS + 200, 0)
    assert "late" not in {r.value["replayOf"] for r in board.plane.list(job_namespace("pricing"), limit=1000).records}
    (entry,) = audit(board, "operation-replay")
    assert entry["operation"] == op.id and entry["selection"]["matching"] == {"name": "pricing", "window": "24h"}


def test_up_to_the_cap_is_replayed_at_once_and_a_mixed_selection_is_refused_by_name(board: Board):
    seed_pricing(board, 5)
    queue_control(board.plane, "emails")
    put_runs(board.plane, [run_value("e1", name="emails", job_id="je", started=now_ms() - 1000)])
    rendered = now_ms()
    refused = board.operator.post(reverse(URL), {"window": "1h", "rendered_at": rendered})
    assert refused.status_code == 302 and refused["Location"].startswith(reverse("oqronboard:runs"))
    (entry,) = audit(board, "replay")
    assert entry["ok"] is False and "'emails' is not declared replayable=True" in entry["result"]
    made = board.operator.post(reverse(URL), {"name": "pricing", "status": "completed", "rendered_at": rendered})
    set_id = board.plane.list("replay_sets").records[0].id
    assert made.status_code == 302 and made["Location"] == reverse("oqronboard:replay", args=[set_id])
    assert board.plane.count(job_namespace("pricing")) == 5 and Operations(board.scope.engine).list()[0] == []
    ok = [e for e in audit(board, "replay") if e["ok"]]
    assert len(ok) == 1 and ok[0]["replaySet"] == set_id and len(ok[0]["ids"]) == 5
    nothing = board.operator.post(reverse(URL), {"name": "nobody", "rendered_at": rendered})
    assert nothing.status_code == 302 and board.plane.count("replay_sets") == 1


def test_operators_only_with_csrf_a_render_time_and_a_bound(board: Board, monkeypatch: pytest.MonkeyPatch):
    seed_pricing(board, 2)
    monkeypatch.setattr(replay_matching, "MAX_IDS", 1)
    too_many = board.operator.post(reverse(URL), {"name": "pricing", "rendered_at": now_ms()})
    assert too_many.status_code == 400 and "More than 1 runs match" in too_many.content.decode()
    assert [e["ok"] for e in audit(board, "replay")] == [False]
    monkeypatch.undo()
    assert board.viewer.post(reverse(URL), {"name": "pricing", "rendered_at": now_ms()}).status_code == 403
    assert board.operator.post(reverse(URL), {"name": "pricing"}).status_code == 400
    assert board.operator.post(reverse(URL), {"name": "pricing", "rendered_at": "x"}).status_code == 400
    assert board.operator.post(reverse(URL), {"window": "9y", "rendered_at": now_ms()}).status_code == 400
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(get_user_model().objects.get(pk=board.users["operator"].pk))
    assert strict.post(reverse(URL), {"name": "pricing", "rendered_at": now_ms()}).status_code == 403
    assert board.plane.count("replay_sets") == 0
