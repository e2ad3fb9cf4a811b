"""The id jump box: a run id, a job id or a correlation id takes you to its page."""

from __future__ import annotations

from django import forms
from django.http import HttpResponse
from django.shortcuts import redirect
from django.urls import reverse

from oqronboard.base.templating import render
from oqronboard.definitions.queries import queue_controls
from oqronboard.jobs.queries import dlq_depths, find_jobs
from oqronboard.runs.queries import get_run

from ..base.filters import TextFilter, clean_or_400
from ..base.pages import BoardRequest, board_view, scope_of


class JumpForm(forms.Form):
    id = TextFilter(max_length=200, label="id")


@board_view
def jump(request: BoardRequest) -> HttpResponse:
    """Redirect to the run, the job, or the trace of the correlation id, with this id;
    list the matches when a job id exists in several queues; 404 with a message when
    nothing has it."""
    wanted = clean_or_400(JumpForm(request.GET))["id"]
    if not wanted:
        return redirect("oqronboard:home")
    scope = scope_of(request)
    if get_run(scope, wanted) is not None:
        return redirect("oqronboard:run", run_id=wanted)
    queues = sorted(set(queue_controls(scope)) | set(dlq_depths(scope)))
    jobs = find_jobs(scope, wanted, queues)
    if len(jobs) == 1:
        return redirect("oqronboard:job", queue=jobs[0].queue, job_id=wanted)
    if not jobs and scope.engine.trace(wanted, limit=1).entries:
        return redirect("oqronboard:trace", correlation_id=wanted)
    matches = [(j.queue, reverse("oqronboard:job", args=[j.queue, wanted])) for j in jobs]
    return render(request, "oqronboard/jump.html", {"wanted": wanted, "matches": matches},
                  status=200 if matches else 404)
