from __future__ import annotations

from django.urls import path, re_path

from . import dead, views

urlpatterns = [
    path("jobs/", views.queues, name="queues"),
    path("jobs/<str:queue>/", views.queue_jobs_page, name="queue-jobs"),
    # Job ids are the producer's (an idempotency key may contain "/"), so they match
    # as paths; the action pattern comes first and names its actions.
    re_path(r"^jobs/(?P<queue>[^/]+)/(?P<job_id>.+)/(?P<action>cancel|promote|retry|delete)/$", views.job_action,
            name="job-action"),
    path("jobs/<str:queue>/<path:job_id>/", views.job_detail, name="job"),
    path("dead/", dead.dead_letters, name="dead-letters"),
    path("dead/retry/", dead.retry, name="dead-retry"),
    path("dead/delete/", dead.delete, name="dead-delete"),
    path("dead/export/", dead.export, name="dead-export"),
]
