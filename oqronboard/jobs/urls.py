from __future__ import annotations

from django.urls import path

import oqronboard.base.urlsafe  # noqa: F401  (registers <seg:...>, used for every engine id)

from . import dead, views

urlpatterns = [
    # <seg:...> never holds a "/" (ids that do are escaped), so the action cannot be
    # mistaken for the end of a job id.
    path("jobs/<seg:queue>/<seg:job_id>/<str:action>/", views.job_action, name="job-action"),
    path("dead/", dead.dead_letters, name="dead-letters"),
    path("dead/retry/", dead.retry, name="dead-retry"),
    path("dead/delete/", dead.delete, name="dead-delete"),
    path("dead/export/", dead.export, name="dead-export"),
]
