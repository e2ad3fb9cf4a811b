"""The board's routes (``oqronboard.urls`` serves them, in the ``oqronboard`` namespace).

Every view is :func:`guarded` (its input checks and headers, whatever the host's
middleware); each page needs a login and ``oqronboard.view_board`` (its own check), the
JSON API and ``metrics`` answer 401 themselves, and only the health probes are public.
tests/board/test_access.py walks them all anonymously, tests/board/test_mounting.py
under a prefix with a host project's settings.

The apps route their own tables' pages; the pages that read several tables are the
shell's, routed here in the order the paths were always tried."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.urls import URLPattern, URLResolver, include, path

from .api import urls as api_urls
from .base import urlsafe  # noqa: F401  (registers <seg:...>, used for every engine id)
from .base.guard import guarded
from .views import (
    audit,
    caches,
    definitions,
    groups,
    handlers,
    health,
    jobs,
    limits,
    logs,
    metrics,
    operation_new,
    operations,
    overview,
    planes,
    replay_matching,
    replays,
    runs,
    schedules,
    scope,
    search,
    topic_actions,
    topics,
    trace,
    webhook_actions,
    webhooks,
)

urlpatterns = [
    path("", overview.home, name="home"),
    path("health/live", health.live, name="health-live"),
    path("health/ready", health.ready, name="health-ready"),
    path("metrics", metrics.metrics, name="metrics"),
    path("api/v1/", include("oqronboard.api.urls")),
    path("scope/", scope.switch_scope, name="switch-scope"),
    path("audit/", audit.audit, name="audit"),
    path("logs/", logs.logs, name="logs"),
    path("limits/", limits.limits_page, name="limits"),
    path("limits/<seg:limiter>/<slug:action>/", limits.limiter_action, name="limiter-action"),
    path("caches/", caches.caches_page, name="caches"),
    path("planes/", planes.planes_page, name="planes"),
    path("planes/reconcile/", planes.planes_reconcile, name="planes-reconcile"),
    path("caches/<seg:cache>/invalidate/", caches.cache_invalidate, name="cache-invalidate"),
    path("go/", search.jump, name="jump"),
    path("operations/", operations.operations_page, name="operations"),
    path("operations/new/", operation_new.operation_new, name="operation-create"),
    path("operations/<seg:op_id>/", operations.operation_detail, name="operation"),
    path("operations/<seg:op_id>/<slug:verb>/", operations.operation_action, name="operation-action"),
    path("groups/", groups.groups_page, name="groups"),
    path("groups/<seg:group_id>/", groups.group_detail, name="group"),
    path("trace/<seg:correlation_id>/", trace.trace_page, name="trace"),
    path("handlers/<seg:name>/", handlers.handler_page, name="handler"),
    path("replays/", replays.replays_page, name="replays"),
    path("replays/new/", replays.replay_create, name="replay-create"),
    path("replays/matching/", replay_matching.replay_matching, name="replay-matching"),
    path("replays/<seg:set_id>/", replays.replay_detail, name="replay"),
    path("", include("oqronboard.runs.urls")),
    path("runs/<seg:run_id>/", runs.run_detail, name="run"),
    path("jobs/", jobs.queues, name="queues"),
    path("jobs/<seg:queue>/", jobs.queue_jobs_page, name="queue-jobs"),
    path("jobs/<seg:queue>/<seg:job_id>/", jobs.job_detail, name="job"),
    path("", include("oqronboard.jobs.urls")),
    path("definitions/", definitions.definitions_page, name="definitions"),
    path("definitions/queues/<seg:queue>/pause/", definitions.queue_pause, {"paused": True}, name="queue-pause"),
    path("definitions/queues/<seg:queue>/resume/", definitions.queue_pause, {"paused": False}, name="queue-resume"),
    path("definitions/queues/<seg:queue>/remove/", definitions.queue_remove, name="queue-remove"),
    path("schedules/", schedules.schedules_page, name="schedules"),
    path("schedules/cron/<seg:id>/", schedules.schedule_history, {"kind": "cron"}, name="cron-history"),
    path("schedules/schedule/<seg:id>/", schedules.schedule_history, {"kind": "schedule"}, name="schedule-history"),
    path("schedules/cron/<seg:id>/<str:action>/", schedules.schedule_action, {"kind": "cron"}, name="cron-action"),
    path("schedules/schedule/<seg:id>/<str:action>/", schedules.schedule_action, {"kind": "schedule"},
         name="schedule-action"),
    path("topics/", topics.topics_page, name="topics"),
    path("topics/<seg:topic>/", topics.topic_log, name="topic-log"),
    path("topics/<seg:topic>/messages/<seg:message_id>/", topics.message_detail, name="topic-message"),
    path("topics/<seg:topic>/groups/<seg:group>/", handlers.topic_group_page, name="topic-group"),
    path("topics/<seg:topic>/groups/<seg:group>/pause/", topic_actions.group_pause, {"paused": True},
         name="group-pause"),
    path("topics/<seg:topic>/groups/<seg:group>/resume/", topic_actions.group_pause, {"paused": False},
         name="group-resume"),
    path("topics/<seg:topic>/groups/<seg:group>/replay/", topic_actions.group_replay, name="group-replay"),
    path("topics/<seg:topic>/groups/<seg:group>/retry-dead/", topic_actions.group_retry_dead,
         name="group-retry-dead"),
    path("webhooks/", webhooks.webhooks_page, name="webhooks"),
    path("webhooks/deliveries/", webhooks.delivery_log, name="webhook-log"),
    path("webhooks/deliveries/resend/", webhook_actions.resend_matching, name="webhook-resend-matching"),
    path("webhooks/<seg:webhook>/deliveries/<seg:delivery_id>/", webhooks.delivery_detail, name="webhook-delivery"),
    path("webhooks/<seg:webhook>/deliveries/<seg:delivery_id>/resend/", webhook_actions.delivery_resend,
         name="webhook-resend"),
    path("webhooks/<seg:webhook>/endpoints/<seg:endpoint>/enable/", webhook_actions.endpoint_enable,
         name="endpoint-enable"),
    path("webhooks/<seg:webhook>/endpoints/<seg:endpoint>/disable/", webhook_actions.endpoint_disable,
         name="endpoint-disable"),
    # Logging in is the project's (LOGIN_URL); logging out the board offers itself, to LOGIN_URL.
    path("logout/", auth_views.LogoutView.as_view(next_page=settings.LOGOUT_REDIRECT_URL or settings.LOGIN_URL),
         name="logout"),
]


def _guard(patterns: list[URLPattern | URLResolver], *, json: bool = False) -> None:
    """Wrap every view below ``patterns`` in :func:`guarded` (the API's answering JSON)."""
    for entry in patterns:
        if isinstance(entry, URLResolver):
            _guard(entry.url_patterns, json=json or entry.urlconf_module is api_urls)
        elif not getattr(entry.callback, "oqron_guarded", False):
            entry.callback = guarded(entry.callback, json=json)


_guard(urlpatterns)
