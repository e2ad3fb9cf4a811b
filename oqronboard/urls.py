"""URLs of the board. Every one needs a login (LoginRequiredMiddleware, and each view's
own check); tests/board/test_access.py walks them all anonymously.

The apps route their own tables' pages; the pages that read several tables are the
shell's, routed here in the order the paths were always tried."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from .base import urlsafe  # noqa: F401  (registers <seg:...>, used for every engine id)
from .views import (
    audit,
    caches,
    definitions,
    favicon,
    groups,
    health,
    jobs,
    limits,
    logs,
    metrics,
    overview,
    runs,
    schedules,
    scope,
    search,
    topic_actions,
    topics,
    webhook_actions,
    webhooks,
)
from .views.login import rate_limited_login

urlpatterns = [
    path("", overview.home, name="home"),
    path("favicon.ico", favicon.favicon, name="favicon"),
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
    path("caches/<seg:cache>/invalidate/", caches.cache_invalidate, name="cache-invalidate"),
    path("go/", search.jump, name="jump"),
    path("groups/", groups.groups_page, name="groups"),
    path("groups/<seg:group_id>/", groups.group_detail, name="group"),
    path("", include("runs.urls")),
    path("runs/<seg:run_id>/", runs.run_detail, name="run"),
    path("jobs/", jobs.queues, name="queues"),
    path("jobs/<seg:queue>/", jobs.queue_jobs_page, name="queue-jobs"),
    path("jobs/<seg:queue>/<seg:job_id>/", jobs.job_detail, name="job"),
    path("", include("jobs.urls")),
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
    # Only login and logout: no anonymous password-reset pages on an operations board.
    path("accounts/login/", rate_limited_login(auth_views.LoginView.as_view()), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/login/", rate_limited_login(admin.site.login), name="admin-login"),  # shadows the admin's own
    path("admin/", admin.site.urls),
]
