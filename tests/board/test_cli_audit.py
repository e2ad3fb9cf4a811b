"""Guard test joining the products: an action taken with the operator CLI (engine side,
no Django) is audited in the board's audit log, which the audit page and the job's page
read through the ORM."""

from __future__ import annotations

import io

from django.urls import reverse

from oqronkit.cli import Console, build_parser, execute
from tests.board.seed import Board, dead_job, put_jobs


def test_a_cli_action_shows_on_the_boards_audit_pages(board: Board):
    put_jobs(board.plane, [dead_job("emails", "d1")])
    out = io.StringIO()
    console = Console(stdin=io.StringIO(), stdout=out, stderr=io.StringIO(), interactive=False, user="nightowl")
    args = build_parser("oqron", connection_options=False).parse_args(["retry", "emails:d1"])
    assert execute(args, board.scope.engine, console) == 0, out.getvalue()
    assert board.plane.get("queue_job:emails", "d1") is not None
    audit_page = board.viewer.get(reverse("oqronboard:audit")).content.decode()
    assert audit_page.count('data-testid="audit-row"') == 1
    assert "nightowl <span class=\"muted small\">cli</span>" in audit_page and "emails/d1" in audit_page
    job_page = board.viewer.get(reverse("oqronboard:job", args=["emails", "d1"])).content.decode()
    assert 'data-testid="job-audit"' in job_page and "nightowl" in job_page
