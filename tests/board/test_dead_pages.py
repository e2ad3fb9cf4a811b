"""Dead letters: depth, groups, retry (one, selected, group, all matching up to the
render time), delete with confirmation, export."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from django.db import connections
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from oqronboard.jobs import dead
from oqronboard.jobs.queries import dead_groups
from oqronkit.clock import now_ms
from tests.board.seed import MINUTE, Board, dead_job, put_jobs, queue_control


def dead_ids(body: str) -> list[str]:
    return re.findall(r'data-testid="dead-row" data-job-id="([^"]+)"', body)


def seed(board: Board) -> int:
    now = now_ms()
    put_jobs(board.plane, [
        dead_job("emails", "e1", message="user 42 not found", kind="LookupError", died=now - 5 * MINUTE),
        dead_job("emails", "e2", message="user 7 not found", kind="LookupError", died=now - 4 * MINUTE),
        dead_job("emails", "e3", message="SMTP refused", kind="ConnectionError", died=now - 3 * MINUTE),
        dead_job("sms", "s1", message="user 9 not found", kind="LookupError", died=now - 2 * MINUTE),
    ])
    return now


def test_depth_per_queue_and_the_list_newest_first(board: Board):
    seed(board)
    body = board.viewer.get(reverse("oqronboard:dead-letters")).content.decode()
    assert 'data-testid="dlq-depth-emails">3<' in body and 'data-testid="dlq-depth-sms">1<' in body
    assert dead_ids(body) == ["s1", "e3", "e2", "e1"]
    assert dead_ids(board.viewer.get(reverse("oqronboard:dead-letters"), {"queue": "emails"}).content.decode()) == \
        ["e3", "e2", "e1"]
    assert dead_ids(board.viewer.get(reverse("oqronboard:dead-letters"), {"q": "smtp"}).content.decode()) == ["e3"]
    depth = board.viewer.get(reverse("oqronboard:dead-letters"), {"panel": "depth"},
                             HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in depth and 'data-testid="dlq-depth-emails">3<' in depth and "dead-row" not in depth


def test_failures_group_by_fingerprint(board: Board):
    now = seed(board)
    body = board.viewer.get(reverse("oqronboard:dead-letters"), {"panel": "groups"},
                            HTTP_HX_REQUEST="true").content.decode()
    groups = re.findall(r'data-testid="group-([0-9a-f]+)"', body)
    assert len(groups) == 2  # "user <n> not found" is one group across queues; SMTP another
    lookup = dead_job("x", "y", message="user 1 not found", kind="LookupError").error_fingerprint
    assert lookup in groups
    row = body.split(f'data-testid="group-{lookup}"')[1].split("</tr>")[0]
    assert '<td class="num">3</td>' in row and "2 queues" in row and "LookupError" in row
    filtered = board.viewer.get(reverse("oqronboard:dead-letters"), {"fingerprint": lookup}).content.decode()
    assert dead_ids(filtered) == ["s1", "e2", "e1"]
    in_queue = board.viewer.get(reverse("oqronboard:dead-letters"), {"panel": "groups", "queue": "sms"},
                                HTTP_HX_REQUEST="true").content.decode()
    assert len(re.findall(r'data-testid="group-', in_queue)) == 1
    assert now


def test_retry_one_row_with_htmx_and_the_depth_drops(board: Board):
    seed(board)
    response = board.operator.post(reverse("oqronboard:dead-retry"), {"ids": ["emails:e1"]}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and json.loads(response["HX-Trigger"]) == {"board:refresh": {}}
    assert 'data-testid="retried-row"' in response.content.decode()
    assert board.plane.get("queue_job:emails", "e1").value["status"] == "waiting"
    depth = board.viewer.get(reverse("oqronboard:dead-letters"), {"panel": "depth"},
                             HTTP_HX_REQUEST="true").content.decode()
    assert 'data-testid="dlq-depth-emails">2<' in depth


def test_retry_selected_across_queues(board: Board):
    seed(board)
    response = board.operator.post(reverse("oqronboard:dead-retry"), {"mode": "ids", "ids": ["emails:e2", "sms:s1"],
                                                           "next": "/dead/?queue=emails"})
    assert response.status_code == 302 and response["Location"] == "/dead/?queue=emails"
    assert board.plane.get("queue_job:emails", "e2") and board.plane.get("queue_job:sms", "s1")
    assert board.plane.get("queue_dlq:emails", "e1") is not None
    entry = board.plane.list("audit").records[0].value
    assert sorted(entry["ids"]) == ["emails/e2", "sms/s1"] and entry["mode"] == "ids"


def test_retry_a_group_only_touches_what_the_operator_saw(board: Board):
    rendered = seed(board)
    lookup = dead_job("x", "y", message="user 1 not found", kind="LookupError").error_fingerprint
    # Dies after the page was rendered: same group, must be left alone.
    put_jobs(board.plane, [dead_job("emails", "late", message="user 5 not found", kind="LookupError",
                                    died=rendered + 10_000)])
    response = board.operator.post(reverse("oqronboard:dead-retry"), {"mode": "matching", "fingerprint": lookup,
                                                           "rendered_at": rendered}, HTTP_HX_REQUEST="true")
    assert "Retried 3 of 3" in response.content.decode()
    assert json.loads(response["HX-Trigger"]) == {"board:refresh": {}, "dead:list": {}}
    assert board.plane.get("queue_dlq:emails", "late") is not None
    assert board.plane.get("queue_dlq:emails", "e3") is not None  # another group
    assert board.plane.get("queue_job:sms", "s1") is not None


def test_retry_all_matching_respects_the_filters_and_the_render_time(board: Board):
    rendered = seed(board)
    put_jobs(board.plane, [dead_job("emails", "late", died=rendered + 1)])
    page = board.operator.get(reverse("oqronboard:dead-letters"), {"queue": "emails"}).content.decode()
    assert 'data-testid="retry-matching"' in page and 'name="rendered_at" value="' in page
    board.operator.post(reverse("oqronboard:dead-retry"), {"mode": "matching", "queue": "emails",
                                                           "rendered_at": rendered})
    assert [board.plane.get("queue_dlq:emails", i) is None for i in ("e1", "e2", "e3")] == [True] * 3
    assert board.plane.get("queue_dlq:emails", "late") is not None
    assert board.plane.get("queue_dlq:sms", "s1") is not None


def test_retry_all_matching_is_capped_per_request(board: Board, monkeypatch):
    seed(board)
    monkeypatch.setattr(dead, "ACTION_CAP", 2)
    response = board.operator.post(reverse("oqronboard:dead-retry"), {"mode": "matching", "rendered_at": now_ms()},
                                   follow=True)
    assert b"Retried 2 of 2" in response.content and b"at most 2" in response.content
    assert len(board.plane.list("queue_dlq:emails").records) + len(board.plane.list("queue_dlq:sms").records) == 2


@pytest.mark.parametrize(
    "data",
    [{}, {"ids": ["no-colon"]}, {"ids": [":x"]}, {"mode": "matching"},
     {"mode": "everything", "ids": ["emails:e1"]}, {"mode": "matching", "rendered_at": "soon"},
     {"mode": "matching", "rendered_at": 1, "fingerprint": "XYZ!"}],
    ids=["nothing", "no-queue", "empty-queue", "no-render-time", "bad-mode", "bad-time", "bad-fingerprint"],
)
def test_bad_selections_answer_400(board: Board, data):
    seed(board)
    response = board.operator.post(reverse("oqronboard:dead-retry"), data)
    assert response.status_code == 400
    assert b'data-testid="bad-request"' in response.content


def test_delete_needs_confirmation(board: Board):
    seed(board)
    confirm = board.operator.post(reverse("oqronboard:dead-delete"), {"ids": ["emails:e1", "emails:e2"]})
    body = confirm.content.decode()
    assert confirm.status_code == 200 and "Delete 2 dead letters for good?" in body
    assert board.plane.get("queue_dlq:emails", "e1") is not None
    assert body.count('name="ids"') == 2 and 'name="confirmed" value="yes"' in body
    done = board.operator.post(reverse("oqronboard:dead-delete"), {"ids": ["emails:e1", "emails:e2"],
                                                                   "confirmed": "yes"})
    assert done.status_code == 302
    assert board.plane.get("queue_dlq:emails", "e1") is None and board.plane.get("queue_dlq:emails", "e3")
    assert board.plane.list("audit").records[0].value["action"] == "delete"


def test_delete_a_group_after_confirmation(board: Board):
    rendered = seed(board)
    lookup = dead_job("x", "y", message="user 1 not found", kind="LookupError").error_fingerprint
    data = {"mode": "matching", "fingerprint": lookup, "rendered_at": rendered}
    confirm = board.operator.post(reverse("oqronboard:dead-delete"), data).content.decode()
    assert "Delete 3 dead letters" in confirm and f'name="fingerprint" value="{lookup}"' in confirm
    board.operator.post(reverse("oqronboard:dead-delete"), {**data, "confirmed": "yes"})
    assert board.plane.get("queue_dlq:sms", "s1") is None and board.plane.get("queue_dlq:emails", "e3")


def test_export_csv_and_json_follow_the_filters(board: Board):
    seed(board)
    response = board.viewer.get(reverse("oqronboard:dead-export"), {"format": "csv", "queue": "emails"})
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "attachment;" in response["Content-Disposition"]
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert [r["id"] for r in rows] == ["e3", "e2", "e1"]
    assert rows[0]["error_type"] == "ConnectionError" and rows[0]["queue"] == "emails"
    response = board.viewer.get(reverse("oqronboard:dead-export"), {"format": "json", "q": "not found"})
    data = json.loads(b"".join(response.streaming_content))
    assert [r["id"] for r in data] == ["s1", "e2", "e1"] and isinstance(data[0]["died"], int)
    assert board.viewer.get(reverse("oqronboard:dead-export"), {"format": "xml"}).status_code == 400


def test_export_is_capped_and_neutralises_formulas(board: Board, monkeypatch):
    put_jobs(board.plane, [dead_job("emails", f"=cmd{i}", message="=HYPERLINK(\"x\")") for i in range(5)])
    monkeypatch.setattr(dead, "EXPORT_CAP", 3)
    response = board.viewer.get(reverse("oqronboard:dead-export"), {"format": "csv"})
    rows = list(csv.reader(io.StringIO(b"".join(response.streaming_content).decode())))
    assert len(rows) == 1 + 3
    assert all(row[1].startswith("'=") and row[5].startswith("'=") for row in rows[1:])


# Read as formulas by spreadsheets although the first character is no ASCII sign (issue 34, F6).
FORMULAS_IN_DISGUISE = [" =1+1", "\u3000=cmd|' /C calc'!A0", "\uff1dHYPERLINK(\"http://x\")", "\uff0b1+1",
                        "\uff0d1+1", "\uff20SUM(A1)", " \t@SUM(A1)", "\n=1+1", "\ufe66 1+1", "\u00a0+1"]


@pytest.mark.parametrize("text", ["=1+1", "+1", "-1", "@A1", "\tx", "\rx", *FORMULAS_IN_DISGUISE])
def test_a_formula_gets_a_quote_after_nfkc_and_leading_blanks(text: str):
    assert dead._csv_safe(text) == "'" + text


@pytest.mark.parametrize("text", ["", "user 42 not found", "a=b", "x-1", " user@example.com", "\u2212 1", 7])
def test_plain_values_are_exported_as_they_are(text: object):
    assert dead._csv_safe(text) == text


def test_export_neutralises_formulas_behind_blanks_and_fullwidth_signs(board: Board):
    put_jobs(board.plane, [dead_job("emails", f"f{i}", message=text) for i, text in enumerate(FORMULAS_IN_DISGUISE)])
    response = board.viewer.get(reverse("oqronboard:dead-export"), {"format": "csv"})
    rows = list(csv.DictReader(io.StringIO(b"".join(response.streaming_content).decode(), newline="")))
    exported = {row["id"]: row["error_message"] for row in rows}
    assert exported == {f"f{i}": "'" + text for i, text in enumerate(FORMULAS_IN_DISGUISE)}


def test_load_more_pages_dead_letters(board: Board):
    now = now_ms()
    queue_control(board.plane, "emails")
    put_jobs(board.plane, [dead_job("emails", f"d{i:03d}", died=now - i) for i in range(60)])
    first = board.viewer.get(reverse("oqronboard:dead-letters")).content.decode()
    assert dead_ids(first) == [f"d{i:03d}" for i in range(50)]
    query = re.search(r'href="\?([^"]+)" hx-get', first).group(1).replace("&amp;", "&")
    rest = board.viewer.get(reverse("oqronboard:dead-letters") + "?" + query, HTTP_HX_REQUEST="true").content.decode()
    assert dead_ids(rest) == [f"d{i:03d}" for i in range(50, 60)] and "<html" not in rest


def test_error_groups_are_one_statement_with_counts_and_the_latest_error(board: Board):
    now = now_ms()
    put_jobs(board.plane, [
        dead_job("emails", "a", message="user 1 not found", died=now - 3 * MINUTE),
        dead_job("sms", "b", message="user 2 not found", died=now - MINUTE),
        dead_job("emails", "c", message="SMTP down", kind="ConnectionError", died=now - 2 * MINUTE),
    ])
    with CaptureQueriesContext(connections[board.db.alias]) as captured:
        groups = dead_groups(board.scope)
    assert len([q for q in captured.captured_queries if "oqron_jobs" in q["sql"]]) == 1
    assert [(g["count"], g["queues"], g["error_type"]) for g in groups] == [(2, 2, "ValueError"),
                                                                            (1, 1, "ConnectionError")]
    lookup = groups[0]
    assert lookup["first"] == now - 3 * MINUTE and lookup["last"] == now - MINUTE
    assert lookup["message"] == "user 2 not found"  # the latest failure's message
    in_sms = dead_groups(board.scope, queue="sms")
    assert [(g["count"], g["queue"]) for g in in_sms] == [(1, "sms")]
