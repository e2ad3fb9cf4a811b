"""The group page (issue 26): progress by state, the callback's state, members linked to
their jobs and runs; linked from a member's job and run pages; escaped; another
scope's group is a 404. The Groups list shows the scope's groups only."""

from __future__ import annotations

from django.urls import reverse

from oqronboard.base.scope import BoardScope
from oqronkit import group_results
from oqronkit.groups.ledger import member_settled
from oqronkit.queues.jobs import Job
from tests.board.seed import Board, put_runs, run_value

HOSTILE = "<script>alert(1)</script>"


def make_group(scope: BoardScope, name: str = HOSTILE) -> str:
    """Three members and a callback; one member completed (its run recorded), one dead."""
    engine = scope.engine
    gid = engine.group([("emails", {"n": i}) for i in range(3)], on_complete=("reports", None),
                       on_failure=("alerts", None), on_failure_policy="after_all", name=name)
    first, second, _third = group_results(gid, engine=engine)
    engine.durable.delete("queue_job:emails", first.job_id)
    run = run_value("run-g1", job_id=first.job_id, output={"html": HOSTILE})
    run["groupId"] = gid
    put_runs(engine.durable, [run])
    member_settled(engine.durable, engine.hot, Job(id=first.job_id, queue="emails", data=None, group=gid,
                                                   run_id="run-g1"), "completed", output={"html": HOSTILE})
    member_settled(engine.durable, engine.hot, Job(id=second.job_id, queue="emails", data=None, group=gid,
                                                   last_error={"type": "ValueError", "message": HOSTILE}), "dead")
    return gid


def test_the_group_page_shows_progress_callbacks_and_members(board: Board):
    gid = make_group(board.scope)
    response = board.viewer.get(reverse("oqronboard:group", args=[gid]))
    assert response.status_code == 200
    body = response.content.decode()
    assert HOSTILE not in body and "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert 'data-testid="group-status">open<' in body
    assert "1 completed, 1 dead, 1 pending of 3 (67% settled)" in body
    assert 'data-testid="group-live"' in body and "waiting</span> 1" in body
    assert 'data-testid="callback-state-on_complete">waiting for the group<' in body
    assert 'data-testid="callback-state-on_failure">waiting for the group<' in body
    first = group_results(gid, engine=board.scope.engine)[0]
    assert reverse("oqronboard:job", args=["emails", first.job_id]) in body and reverse("oqronboard:run",
                                                                                        args=["run-g1"]) in body


def test_the_group_page_after_the_group_settled(board: Board):
    gid = make_group(board.scope, name="weekly")
    engine = board.scope.engine
    last = group_results(gid, engine=engine)[2]
    engine.durable.delete("queue_job:emails", last.job_id)
    member_settled(engine.durable, engine.hot, Job(id=last.job_id, queue="emails", data=None, group=gid), "completed")
    body = board.viewer.get(reverse("oqronboard:group", args=[gid])).content.decode()
    assert 'data-testid="group-status">failed<' in body  # after_all, one dead
    assert 'data-testid="callback-state-on_failure">waiting<' in body
    assert 'data-testid="callback-state-on_complete">not needed<' in body
    live = board.viewer.get(reverse("oqronboard:group", args=[gid]) + "?panel=live", HTTP_HX_REQUEST="true")
    assert live.status_code == 200 and 'data-testid="group-status">failed<' in live.content.decode()  # callback waits
    engine.durable.delete("queue_job:alerts", f"{gid}:onFailure")  # ran and completed
    put_runs(engine.durable, [run_value("run-cb", name="alerts", job_id=f"{gid}:onFailure")])
    done = board.viewer.get(reverse("oqronboard:group", args=[gid]) + "?panel=live", HTTP_HX_REQUEST="true")
    assert done.status_code == 286 and "<html" not in done.content.decode()
    assert 'data-testid="callback-state-on_failure">completed<' in done.content.decode()
    listing = board.viewer.get(reverse("oqronboard:groups")).content.decode()
    assert "weekly" in listing and reverse("oqronboard:group", args=[gid]) in listing
    assert 'data-testid="nav-groups" href="/groups/" aria-current="page"' in listing


def test_member_job_and_run_pages_link_to_the_group(board: Board):
    gid = make_group(board.scope)
    third = group_results(gid, engine=board.scope.engine)[2]
    job_page = board.viewer.get(reverse("oqronboard:job", args=["emails", third.job_id])).content.decode()
    assert f'href="{reverse("oqronboard:group", args=[gid])}" data-testid="job-group-link"' in job_page
    run_page = board.viewer.get(reverse("oqronboard:run", args=["run-g1"])).content.decode()
    assert f'href="{reverse("oqronboard:group", args=[gid])}" data-testid="run-group-link"' in run_page


def test_another_scopes_group_is_a_404_and_not_listed(board: Board):
    other = BoardScope(board.db.project + "-other", board.db.environment)
    gid = make_group(other, name="secret-group")
    assert board.viewer.get(reverse("oqronboard:group", args=[gid])).status_code == 404
    assert board.viewer.get(reverse("oqronboard:group", args=["never"])).status_code == 404
    listing = board.viewer.get(reverse("oqronboard:groups")).content.decode()
    assert "secret-group" not in listing and 'data-testid="no-groups"' in listing


def test_a_large_group_lists_its_first_members(board: Board, monkeypatch):
    from oqronboard.views import groups as view

    monkeypatch.setattr(view, "SHOWN", 2)
    gid = make_group(board.scope)
    body = board.viewer.get(reverse("oqronboard:group", args=[gid])).content.decode()
    assert body.count('data-testid="member-') == 2 and 'data-testid="members-hidden"' in body and "1 more" in body


def test_the_api_answers_a_group_as_json(board: Board):
    gid = make_group(board.scope)
    body = board.viewer.get(reverse("oqronboard:api-group", args=[gid])).json()
    assert body["group"]["name"] == HOSTILE and body["group"]["status"] == "open"
    assert body["counts"] == {"pending": 1, "completed": 1, "dead": 1} and body["pending_now"] == {"waiting": 1}
    assert [c["state"] for c in body["callbacks"]] == ["waiting for the group"] * 2
    assert [m["status"] for m in body["members"]] == ["completed", "dead", "pending"]
    assert body["members"][0]["output"] == {"html": HOSTILE} and body["more_members"] == 0
    other = BoardScope(board.db.project + "-other", board.db.environment)
    assert board.viewer.get(reverse("oqronboard:api-group", args=[make_group(other)])).status_code == 404
