"""``/api/v1/``: every path answers JSON, an unknown one a JSON 404 (the last pattern)."""

from __future__ import annotations

from django.http import Http404, HttpRequest
from django.urls import path

from ..base import urlsafe  # noqa: F401  (registers <seg:...>, used for every engine id)
from . import actions, history, operations, planes, reads, replays
from .base import api_view

urlpatterns = [
    path("queues/", reads.queue_list, name="api-queues"),
    path("queues/<seg:queue>/", reads.queue_detail, name="api-queue"),
    path("queues/<seg:queue>/pause/", actions.queue_pause, {"paused": True}, name="api-queue-pause"),
    path("queues/<seg:queue>/resume/", actions.queue_pause, {"paused": False}, name="api-queue-resume"),
    path("jobs/<seg:queue>/<seg:job_id>/", reads.job_detail, name="api-job"),
    path("jobs/<seg:queue>/<seg:job_id>/<str:action>/", actions.job_action, name="api-job-action"),
    path("runs/", reads.run_list, name="api-runs"),
    path("runs/<seg:run_id>/", reads.run_detail, name="api-run"),
    path("dead/", reads.dead_letter_list, name="api-dead"),
    path("dead/groups/", reads.dead_letter_groups, name="api-dead-groups"),
    path("dead/retry/", actions.dead_retry, name="api-dead-retry"),
    path("dead/delete/", actions.dead_delete, name="api-dead-delete"),
    path("definitions/", reads.definition_list, name="api-definitions"),
    path("schedules/", reads.schedule_list, name="api-schedules"),
    path("groups/<seg:group_id>/", reads.group_detail, name="api-group"),
    path("operations/", operations.operation_list, name="api-operations"),
    path("operations/<seg:op_id>/", operations.operation_detail, name="api-operation"),
    path("operations/<seg:op_id>/<slug:verb>/", operations.operation_action, name="api-operation-action"),
    path("planes/", planes.planes, name="api-planes"),
    path("planes/reconcile/", planes.reconcile, name="api-planes-reconcile"),
    path("trace/<seg:correlation_id>/", reads.trace_detail, name="api-trace"),
    path("metrics/history/", history.metrics_history, name="api-metrics-history"),
    path("replays/", replays.replay_list, name="api-replays"),
    path("replays/new/", replays.replay_create, name="api-replay-create"),
    path("replays/<seg:set_id>/", replays.replay_detail, name="api-replay"),
]


@api_view("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")
def not_found(request: HttpRequest, rest: str = "") -> dict:
    raise Http404("No such API endpoint (every path ends with '/'): see the docs, reference/json-api.md.")


urlpatterns += [path("", not_found, name="api-root"), path("<path:rest>", not_found, name="api-not-found")]
