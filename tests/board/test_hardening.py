"""Issue 18 (board half): every name and id the engine accepts renders and links, and
hostile input answers 400 or 404, never 500."""

from __future__ import annotations

import json

import pytest
from django.http import HttpResponse, QueryDict
from django.urls import resolve, reverse

from oqronboard.base import urlsafe
from oqronboard.base.middleware import BoardRequestMiddleware, hostile_part
from oqronboard.base.urlsafe import SegmentPattern, decode_segment, encode_segment
from oqronboard.templatetags.board import JSON_MAX_CHARS, pretty_json
from oqronkit.clock import now_ms
from tests.board.hostile import crafted_cursor, hostile_cursors, nested, raw_put
from tests.board.seed import Board, dead_job, job_value, put_jobs, put_runs, queue_control, run_value

ODD_IDS = ["order/42", "a\nb", "job/retry", "retry", ".", "..", "~x", "with space", "ünï/cödé", "%2F", "a" * 500,
           "failed", "..."]


@pytest.mark.parametrize("value", [*ODD_IDS, "plain-id_1.2", "cron:nightly:1", "\ud800", ""])
def test_segments_round_trip_and_never_hold_a_slash(value):
    segment = encode_segment(value)
    assert "/" not in segment and segment not in (".", "..")
    if value in ("\ud800",):
        with pytest.raises(ValueError):
            decode_segment(segment)  # a lone surrogate no row can hold: 404
    else:
        assert decode_segment(segment) == value


@pytest.mark.parametrize("value", [*ODD_IDS, "plain-id_1.2", "SLOTx"])
def test_a_pattern_reversed_once_fills_in_what_reverse_would(value):
    assert SegmentPattern("oqronboard:run").fill(value) == reverse("oqronboard:run", args=[value])
    job = SegmentPattern("oqronboard:job", 2)
    assert job.fill(value, "j1") == reverse("oqronboard:job", args=[value, "j1"])
    assert job.fill("q", value) == reverse("oqronboard:job", args=["q", value])


def test_a_pattern_whose_url_spells_the_slot_reverses_each_time(monkeypatch):
    monkeypatch.setattr(urlsafe, "_SLOT", "jobs")  # "/jobs/SLOT/SLOT/" then splits in four
    job = SegmentPattern("oqronboard:job", 2)
    assert job.parts is None and job.fill("q", "a/b") == reverse("oqronboard:job", args=["q", "a/b"])


def test_plain_ids_stay_plain_and_malformed_escapes_404():
    assert encode_segment("emails") == "emails" and encode_segment("cron:nightly:1") == "cron:nightly:1"
    assert reverse("oqronboard:job", args=["emails", "job-1"]) == "/jobs/emails/job-1/"
    for bad in ("~!!", "~a", "~" + "A" * 5, "~AA"):  # bad alphabet, length, a NUL byte
        with pytest.raises(ValueError):
            decode_segment(bad)
    assert resolve("/jobs/emails/with space/").kwargs["job_id"] == "with space"  # an old plain link still works


def test_queue_names_with_a_slash_render_link_and_remove(board: Board):
    queue_control(board.plane, "team/emails")
    queue_control(board.plane, "stale/one")
    put_jobs(board.plane, [job_value("team/emails", "job-1")])
    jobs_url = reverse("oqronboard:queue-jobs", args=["team/emails"])
    assert "/" not in jobs_url.removeprefix("/jobs/").rstrip("/")
    for url in (reverse("oqronboard:home"), reverse("oqronboard:queues"), reverse("oqronboard:definitions"), jobs_url,
                reverse("oqronboard:job", args=["team/emails", "job-1"])):
        response = board.viewer.get(url)
        assert response.status_code == 200, url
    assert f'href="{jobs_url}"' in board.viewer.get(reverse("oqronboard:home")).content.decode()
    body = board.operator.get(reverse("oqronboard:definitions")).content.decode()
    assert 'data-testid="remove-stale/one"' in body and 'data-testid="remove-team/emails"' not in body
    assert board.operator.post(reverse("oqronboard:queue-pause", args=["team/emails"])).status_code == 302
    assert board.plane.get("queue", "team/emails").value["paused"] is True
    # Remove: the viewer may not, a queue with jobs stays, a stale one goes (audited).
    assert board.viewer.post(reverse("oqronboard:queue-remove", args=["stale/one"])).status_code == 403
    board.operator.post(reverse("oqronboard:queue-remove", args=["team/emails"]))
    assert board.plane.get("queue", "team/emails") is not None
    assert board.operator.post(reverse("oqronboard:queue-remove", args=["stale/one"])).status_code == 302
    assert board.plane.get("queue", "stale/one") is None
    assert board.operator.post(reverse("oqronboard:queue-remove", args=["stale/one"])).status_code == 404
    audit = board.operator.get(reverse("oqronboard:audit")).content.decode()
    assert "Queue record stale/one removed." in audit


@pytest.mark.parametrize("job_id", ["order/42", "a\nb", "job/retry", "retry", ".", "..", "~x", "delete"])
def test_every_job_id_renders_links_and_takes_actions(board: Board, job_id: str):
    job = dead_job("emails", job_id)
    raw_put(board.db, job.namespace, job_id, job.to_value())  # an older engine took any id
    put_runs(board.plane, [run_value("run-1", job_id=job_id, status="failed")])
    detail = reverse("oqronboard:job", args=["emails", job_id])
    response = board.viewer.get(detail)
    assert response.status_code == 200
    assert f'href="{detail}"' in board.viewer.get(reverse("oqronboard:dead-letters")).content.decode()
    assert board.viewer.get(reverse("oqronboard:jump"), {"id": job_id} if "\n" not in job_id else {"id": "run-1"}) \
        .status_code in (200, 302)
    retry = board.operator.post(reverse("oqronboard:job-action", args=["emails", job_id, "retry"]))
    if "\n" in job_id:
        assert retry.status_code == 400  # today's engine refuses to write a newline id: said, not a 500
        delete = board.operator.post(reverse("oqronboard:job-action", args=["emails", job_id, "delete"]),
                                     {"confirmed": "yes"})
        assert delete.status_code == 302 and board.plane.get("queue_dlq:emails", job_id) is None
        assert board.viewer.get(detail).status_code == 404
        return
    assert retry.status_code == 302 and board.plane.get("queue_job:emails", job_id).value["status"] == "waiting"
    cancel = board.operator.post(reverse("oqronboard:job-action", args=["emails", job_id, "cancel"]))
    assert cancel.status_code == 302
    assert board.plane.get("queue_job:emails", job_id) is None or \
        board.plane.get("queue_job:emails", job_id).value["status"] == "cancelled"


def test_a_run_id_spelt_like_a_page_is_reachable(board: Board):
    put_runs(board.plane, [run_value("failed", status="failed")])
    url = reverse("oqronboard:run", args=["failed"])
    assert url != reverse("oqronboard:failed-runs")
    assert board.viewer.get(url).context["run"]["id"] == "failed"


def _paged_urls(board: Board) -> list[str]:
    queue_control(board.plane, "emails")
    board.plane.put("cron", "nightly", {"name": "nightly", "expression": "0 3 * * *"})
    return [reverse("oqronboard:runs"), reverse("oqronboard:failed-runs"), reverse("oqronboard:dead-letters"),
            reverse("oqronboard:queue-jobs", args=["emails"]),
            reverse("oqronboard:cron-history", args=["nightly"])]


def test_crafted_cursors_answer_400_cursor_malformed(board: Board):
    urls = _paged_urls(board)
    for cursor in hostile_cursors():
        for url in urls:
            response = board.viewer.get(url, {"cursor": cursor})
            assert response.status_code == 400, (url, cursor[:40])
            assert "Cursor malformed" in response.content.decode(), (url, cursor[:40])
    assert board.viewer.get(urls[0], {"cursor": crafted_cursor(str(now_ms()), '"run-1"')}).status_code == 200


@pytest.mark.parametrize("where", ["path", "filter", "form", "cookie"])
def test_a_nul_anywhere_answers_400(board: Board, where: str):
    queue_control(board.plane, "emails")
    if where == "path":
        response = board.viewer.get("/jobs/emails/a%00b/")
    elif where == "filter":
        response = board.viewer.get("/dead/?q=a%00b")
    elif where == "form":
        response = board.operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:a\x00b"]})
    else:
        board.viewer.cookies["sessionid"] = "abcdefgh\x00ijkl"
        response = board.viewer.get(reverse("oqronboard:home"))
    assert response.status_code == 400, where
    assert "no-store" in response["Cache-Control"]


def test_invalid_utf8_reaches_views_as_harmless_text(board: Board):
    # What an encoded lone surrogate (ED A0 80) becomes: Django re-percent-encodes it in
    # a path and replaces it with U+FFFD in a query; neither is a 500.
    queue_control(board.plane, "emails")
    assert board.viewer.get("/jobs/emails/%ED%A0%80/").status_code == 404
    assert board.viewer.get("/jobs/%ED%A0%80/").status_code in (200, 400)
    assert board.viewer.get("/runs/?name=%ED%A0%80&cursor=%ED%A0%80").status_code == 400


@pytest.mark.parametrize("part", ["path", "GET", "POST"])
def test_the_middleware_refuses_a_lone_surrogate_wherever_it_comes_from(rf, part: str):
    request = rf.post("/dead/retry/", {"ids": "emails:x"})
    if part == "path":
        request.path = request.path_info = "/jobs/\udc80/"
    else:
        data = QueryDict(mutable=True)
        data["ids"] = "emails:\udc80"
        setattr(request, "GET" if part == "GET" else "_post", data)
    response = BoardRequestMiddleware(lambda r: HttpResponse("view ran"))(request) if part == "path" else None
    assert hostile_part(request) == {"path": "path", "GET": "query string", "POST": "form"}[part]
    if response is not None:
        assert response.status_code == 400 and b"view ran" not in response.content


def test_admin_filters_and_action_selections_with_a_nul_answer_400(board: Board, django_user_model):
    board.operator.force_login(django_user_model.objects.create_superuser("root-admin-x", password="pw"))
    assert board.operator.get("/admin/definitions/record/?namespace=a%00b").status_code == 400
    response = board.operator.post("/admin/jobs/jobrecord/", {"action": "retry_dead", "_selected_action": ["a\x00b"]})
    assert response.status_code == 400


def test_pausing_or_resuming_an_unknown_queue_is_404_and_writes_nothing(board: Board):
    for name in ("queue-pause", "queue-resume"):
        assert board.operator.post(reverse(f"oqronboard:{name}", args=["nowhere"])).status_code == 404
    assert board.plane.get("queue", "nowhere") is None
    assert board.operator.post(reverse("oqronboard:queue-remove", args=["nowhere"])).status_code == 404


def test_deep_values_render_bounded(board: Board):
    # 10 KB nested 5000 deep would indent to 50 MB; SQLite's JSON functions stop at 1000
    # levels (its indexes refuse the row), 900 would still indent to 1.6 MB.
    deep = nested(5000 if board.db.alias == "postgres" else 900)
    job = job_value("emails", "deep-job")
    text = json.dumps(job.to_value()).replace('{"n": 1}', deep)
    raw_put(board.db, job.namespace, "deep-job", text)
    run = run_value("deep-run", job_id="deep-job", input={"n": 1}, output={"n": 1})
    raw_put(board.db, "runs", "deep-run", json.dumps(run).replace('{"n": 1}', deep))
    raw_put(board.db, "queue", "deep-queue", deep)
    for url in (reverse("oqronboard:job", args=["emails", "deep-job"]), reverse("oqronboard:run", args=["deep-run"]),
                reverse("oqronboard:definitions")):
        response = board.viewer.get(url)
        assert response.status_code == 200, url
        assert len(response.content) < 1_000_000, url
        assert "… truncated" in response.content.decode(), url
    assert len(pretty_json(["x" * (JSON_MAX_CHARS * 2)])) < JSON_MAX_CHARS + 100


def test_board_pages_are_not_cached_but_static_files_are(board: Board):
    response = board.viewer.get(reverse("oqronboard:home"))
    assert "no-store" in response["Cache-Control"]
    assert "no-store" in board.viewer.get(reverse("oqronboard:runs"), {"status": "nope"})["Cache-Control"]  # a 400 too
    static = board.viewer.get("/static/oqronboard/js/board.js")
    assert static.status_code == 200 and "no-store" not in static.get("Cache-Control", "")


def test_a_cron_name_with_a_slash_links_to_its_history(board: Board):
    board.plane.put("cron", "team/nightly", {"name": "team/nightly", "expression": "0 3 * * *"})
    history = reverse("oqronboard:cron-history", args=["team/nightly"])
    assert f'href="{history}"' in board.viewer.get(reverse("oqronboard:schedules")).content.decode()
    assert board.viewer.get(history).status_code == 200


def test_a_next_that_looks_like_a_view_name_redirects_instead_of_failing(board: Board):
    """A fuzzed ``next`` ("NaN") is a relative URL, never reversed as a view name (a 500)."""
    queue_control(board.plane, "nan-q")
    response = board.operator.post(reverse("oqronboard:queue-pause", args=["nan-q"]), {"next": "NaN"})
    assert response.status_code == 302 and response["Location"] == "NaN"
    assert board.plane.get("queue", "nan-q").value["paused"] is True
