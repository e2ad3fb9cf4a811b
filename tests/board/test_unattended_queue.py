"""A queue a producer filled before any worker ran (so no queue record yet) shows on the
overview with its "no worker consumes this queue" warning."""

from __future__ import annotations

from django.urls import reverse

from oqronboard.jobs.queries import job_queues
from tests.board.seed import Board, dead_job, put_jobs, queue_control


def test_a_queue_with_jobs_and_no_record_appears_unattended(board: Board):
    queue_control(board.plane, "emails")
    put_jobs(board.plane, [dead_job("old-dead", "d1")])
    board.scope.queue("fresh").add({"n": 1})  # through the engine: a job, no queue record
    assert board.plane.get("queue", "fresh") is None
    assert job_queues(board.scope) == ["fresh"]
    body = board.viewer.get(reverse("oqronboard:home")).content.decode()
    assert 'data-testid="queue-row-fresh"' in body
    row = body[body.index('data-testid="queue-row-fresh"'):]
    row = row[:row.index("</tr>")]
    assert 'data-testid="unattended-fresh"' in row, row
