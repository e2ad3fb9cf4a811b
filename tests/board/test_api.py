"""The JSON API: every endpoint anonymous, viewer and operator; sessions with CSRF and
bearer tokens; the board's audit records; scope isolation; JSON refusals, never HTML."""

from __future__ import annotations

import json
import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from oqronkit.clock import now_ms
from oqronkit.contrib.django import engine
from tests.board.hostile import crafted_cursor, nested, raw_put
from tests.board.seed import (
    Board,
    dead_job,
    error,
    grant,
    job_value,
    put_jobs,
    put_runs,
    queue_control,
    run_value,
)

OPERATOR_TOKEN, VIEWER_TOKEN = "op-" + "o" * 40, "view-" + "v" * 40
READS = [("api-queues", {}), ("api-queue", {"queue": "emails"}), ("api-job", {"queue": "emails", "job_id": "d1"}),
         ("api-runs", {}), ("api-run", {"run_id": "r1"}), ("api-dead", {}), ("api-dead-groups", {}),
         ("api-definitions", {}), ("api-schedules", {})]
ACTIONS = [
    ("api-job-action", {"queue": "emails", "job_id": "d1", "action": "retry"}, {}),
    ("api-job-action", {"queue": "emails", "job_id": "w1", "action": "cancel"}, {}),
    ("api-job-action", {"queue": "emails", "job_id": "w2", "action": "promote"}, {}),
    ("api-job-action", {"queue": "emails", "job_id": "d2", "action": "delete"}, {"confirmed": True}),
    ("api-dead-retry", {}, {"ids": ["emails:d3"]}),
    ("api-dead-delete", {}, {"mode": "matching", "queue": "emails", "confirmed": True}),
    ("api-queue-pause", {"queue": "emails"}, {}),
    ("api-queue-resume", {"queue": "emails"}, {}),
]


def seed(board: Board) -> None:
    plane = board.plane
    queue_control(plane, "emails")
    delayed = job_value("emails", "w2", status="delayed", run_at=now_ms() + 3_600_000)
    put_jobs(plane, [job_value("emails", "w1"), delayed, *(dead_job("emails", f"d{i}") for i in (1, 2, 3))])
    put_runs(plane, [run_value("r1", status="failed", error=error("kaput"), job_id="d1"),
                     *(run_value(f"bulk-{i}", started=now_ms() - 120_000 - i) for i in range(55))])
    plane.put("cron", "nightly", {"name": "nightly", "expression": "0 3 * * *"})


def post(client: Client, url: str, data: dict | None = None, **headers: str):
    return client.post(url, json.dumps(data or {}), content_type="application/json", headers=headers)


def is_json_error(response, status: int) -> bool:
    return (response.status_code == status and response["Content-Type"] == "application/json"
            and bool(response.json().get("error")))


@pytest.fixture
def api(board: Board, settings) -> Board:
    seed(board)
    suffix = board.db.project[-6:]
    settings.OQRON_API_TOKENS = {OPERATOR_TOKEN: f"olivia-{suffix}", VIEWER_TOKEN: f"victor-{suffix}",
                                 "short": f"olivia-{suffix}"}
    return board


def test_anonymous_gets_json_401_everywhere(api: Board):
    anonymous = Client()
    for name, kwargs in READS:
        assert is_json_error(anonymous.get(reverse(f"oqronboard:{name}", kwargs=kwargs)), 401), name
    for name, kwargs, data in ACTIONS:
        response = post(anonymous, reverse(f"oqronboard:{name}", kwargs=kwargs), data)
        assert is_json_error(response, 401) and response["WWW-Authenticate"] == "Bearer", name
    for header in ("Bearer nope", "Bearer short", "Basic dXNlcjpwdw==", "Bearer "):
        assert is_json_error(anonymous.get(reverse("oqronboard:api-queues"), headers={"Authorization": header}), 401)
    assert api.plane.get("queue_dlq:emails", "d1") is not None


def test_a_viewer_reads_everything(api: Board):
    for client, headers in ((api.viewer, {}), (Client(), {"Authorization": f"Bearer {VIEWER_TOKEN}"})):
        bodies = {}
        for name, kwargs in READS:
            response = client.get(reverse(f"oqronboard:{name}", kwargs=kwargs), headers=headers)
            assert response.status_code == 200, (name, response.content[:300])
            bodies[name] = response.json()
        emails = next(q for q in bodies["api-queues"]["queues"] if q["name"] == "emails")
        assert emails["dead"] == 3 and emails["paused"] is False and emails["internal"] is False
        queue = bodies["api-queue"]
        assert "waiting" in queue["counts"] and [r["id"] for r in queue["results"]] == ["w1"]
        assert bodies["api-job"]["status"] == "dead" and bodies["api-job"]["runs"][0]["id"] == "r1"
        assert bodies["api-run"]["run"]["error"]["message"] == "kaput" and bodies["api-run"]["queue"] == "emails"
        assert bodies["api-dead"]["depths"] == {"emails": 3} and len(bodies["api-dead"]["results"]) == 3
        assert bodies["api-dead-groups"]["groups"][0]["count"] == 3
        assert {"queue", "cron"} <= {d["namespace"] for d in bodies["api-definitions"]["definitions"]}
        assert bodies["api-schedules"]["schedules"][0]["name"] == "nightly"


def test_runs_page_through_the_same_filters_and_cursors(api: Board):
    first = api.viewer.get(reverse("oqronboard:api-runs")).json()
    assert len(first["results"]) == 50 and first["next_cursor"]
    second = api.viewer.get(reverse("oqronboard:api-runs"), {"cursor": first["next_cursor"]}).json()
    ids = [r["id"] for r in first["results"] + second["results"]]
    assert len(ids) == 56 == len(set(ids)) and second["next_cursor"] is None
    failed = api.viewer.get(reverse("oqronboard:api-runs"), {"q": "kaput"}).json()
    assert [r["id"] for r in failed["results"]] == ["r1"] and failed["status_implied_by_search"] is True


def test_a_viewer_is_refused_every_action_and_nothing_changes(api: Board):
    for client, headers in ((api.viewer, {}), (Client(), {"Authorization": f"Bearer {VIEWER_TOKEN}"})):
        for name, kwargs, data in ACTIONS:
            assert is_json_error(post(client, reverse(f"oqronboard:{name}", kwargs=kwargs), data, **headers),
                                 403), (name, kwargs)
    assert api.plane.get("queue_dlq:emails", "d1") is not None
    assert api.plane.get("queue", "emails").value["paused"] is False
    assert api.plane.list("audit").records == []


@pytest.mark.parametrize("auth", ["session", "token"])
def test_an_operator_acts_through_the_boards_code_audited(api: Board, auth: str):
    token = {"Authorization": f"Bearer {OPERATOR_TOKEN}"}
    client, headers = (api.operator, {}) if auth == "session" else (Client(), token)
    for name, kwargs, data in ACTIONS:
        response = post(client, reverse(f"oqronboard:{name}", kwargs=kwargs), data, **headers)
        assert response.status_code == 200 and response.json()["ok"] is True, (name, kwargs, response.content)
    assert api.plane.get("queue_job:emails", "d1").value["status"] == "waiting"
    cancelled = api.plane.get("queue_job:emails", "w1")
    assert cancelled is None or cancelled.value["status"] == "cancelled"
    assert api.plane.get("queue_dlq:emails", "d2") is None and api.plane.get("queue_dlq:emails", "d3") is None
    audit = [r.value for r in api.plane.list("audit").records]
    assert len(audit) == len(ACTIONS) and {a["source"] for a in audit} == {"api"}
    assert {a["user"] for a in audit} == {f"olivia-{api.db.project[-6:]}"}
    assert {a["action"] for a in audit} == {"retry", "cancel", "promote", "delete", "pause", "resume"}
    # A second retry finds nothing to do: 409 with the board's message, audited too.
    again = post(client, reverse("oqronboard:api-job-action", args=["emails", "d1", "retry"]), **headers)
    assert again.status_code in (404, 409) and again["Content-Type"] == "application/json"


def test_sessions_need_csrf_tokens_do_not(api: Board):
    user = get_user_model().objects.get(username=f"olivia-{api.db.project[-6:]}")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    url = reverse("oqronboard:api-queue-pause", args=["emails"])
    assert is_json_error(post(client, url), 403)
    assert api.plane.get("queue", "emails").value["paused"] is False
    page = client.get(reverse("oqronboard:definitions")).content.decode()
    token = re.search(r'"X-CSRFToken": "([^"]+)"', page).group(1)
    assert post(client, url, X_CSRFToken=token).status_code == 200
    scripted = Client(enforce_csrf_checks=True)
    assert post(scripted, reverse("oqronboard:api-queue-resume", args=["emails"]),
                Authorization=f"Bearer {OPERATOR_TOKEN}").status_code == 200
    assert api.plane.get("queue", "emails").value["paused"] is False


def test_rows_of_another_scope_never_show(api: Board):
    other = engine.durable_for("other-shop", "production")
    queue_control(other, "secret-queue")
    put_jobs(other, [dead_job("emails", "secret-dead")])
    put_runs(other, [run_value("secret-run", status="failed", error=error("secret failure"))])
    for name, kwargs in READS:
        assert "secret" not in api.viewer.get(reverse(f"oqronboard:{name}", kwargs=kwargs)).content.decode(), name
    assert is_json_error(api.viewer.get(reverse("oqronboard:api-run", args=["secret-run"])), 404)
    assert is_json_error(post(api.operator, reverse("oqronboard:api-job-action", args=["emails", "secret-dead",
                                                                                       "retry"])), 404)
    assert post(api.operator, reverse("oqronboard:api-dead-retry"),
                {"ids": ["emails:secret-dead"]}).json()["retried"] == 0
    assert other.get("queue_dlq:emails", "secret-dead") is not None
    # ?scope= picks a scope the database knows and the viewer may see, as the switcher does.
    grant(api.users["viewer"], "other-shop/production")
    chosen = api.viewer.get(reverse("oqronboard:api-dead"), {"scope": "other-shop/production"}).json()
    assert [r["id"] for r in chosen["results"]] == ["secret-dead"]
    assert is_json_error(api.viewer.get(reverse("oqronboard:api-dead"), {"scope": "nobody/production"}), 400)


def test_bad_input_is_a_json_refusal_never_html_or_500(api: Board):
    viewer, operator = api.viewer, api.operator
    cases = [
        viewer.get(reverse("oqronboard:api-runs"), {"cursor": crafted_cursor("NaN")}),
        viewer.get(reverse("oqronboard:api-runs"), {"cursor": "!!"}),
        viewer.get(reverse("oqronboard:api-runs"), {"status": "nonsense"}),
        viewer.get(reverse("oqronboard:api-runs"), {"window": "1e400"}),
        viewer.get(reverse("oqronboard:api-dead"), {"fingerprint": "xyz"}),
        viewer.get(reverse("oqronboard:api-queue", args=["emails"]), {"status": "gone"}),
        viewer.get("/api/v1/runs/", {"name": "a\x00b"}),
        post(operator, reverse("oqronboard:api-job-action", args=["emails", "d1", "delete"])),  # not confirmed
        post(operator, reverse("oqronboard:api-dead-retry"), {"ids": ["no-colon"]}),
        post(operator, reverse("oqronboard:api-dead-retry"), {"ids": [{"nested": 1}]}),
        post(operator, reverse("oqronboard:api-dead-retry"), {"ids": ["emails:\ud800"]}),
        operator.post(reverse("oqronboard:api-dead-retry"), "{not json", content_type="application/json"),
        operator.post(reverse("oqronboard:api-dead-retry"), "[1]", content_type="application/json"),
    ]
    for index, response in enumerate(cases):
        assert is_json_error(response, 400), (index, response.status_code, response.content[:200])
    for url in ("/api/v1/nope/", "/api/v1/", "/api/v1/queues", reverse("oqronboard:api-run", args=["missing"]),
                reverse("oqronboard:api-job", args=["emails", "missing"])):
        assert is_json_error(viewer.get(url), 404), url
    assert is_json_error(post(operator, reverse("oqronboard:api-job-action", args=["emails", "d1", "explode"])), 404)
    assert is_json_error(post(operator, reverse("oqronboard:api-queue-pause", args=["nowhere"])), 404)
    wrong = viewer.delete(reverse("oqronboard:api-queues"))
    assert is_json_error(wrong, 405) and wrong["Allow"] == "GET, HEAD"
    assert is_json_error(operator.get(reverse("oqronboard:api-dead-retry")), 405)
    assert api.plane.get("queue_dlq:emails", "d1") is not None


def test_deep_values_answer_json(api: Board):
    deep = nested(5000 if api.db.alias == "postgres" else 900)
    job = job_value("emails", "deep-job")
    raw_put(api.db, job.namespace, "deep-job", json.dumps(job.to_value()).replace('{"n": 1}', deep))
    run = run_value("deep-run", job_id="deep-job")
    raw_put(api.db, "runs", "deep-run", json.dumps(run).replace('{"n": 1}', deep))
    for url in (reverse("oqronboard:api-job", args=["emails", "deep-job"]), reverse("oqronboard:api-run",
                                                                                    args=["deep-run"])):
        response = api.viewer.get(url)
        assert response.status_code == 200 and len(response.content) < 1_000_000, url


@pytest.mark.django_db
def test_without_a_sql_durable_plane_the_api_says_so(client: Client):
    client.force_login(get_user_model().objects.create_superuser("vera", password="pw"))
    response = client.get(reverse("oqronboard:api-queues"))  # the test settings' memory mode
    assert is_json_error(response, 503) and "SQL" in response.json()["error"]
