from __future__ import annotations

from django.urls import path

import oqronboard.base.urlsafe  # noqa: F401  (registers <seg:...>, used for every engine id)

from . import schedules, views

urlpatterns = [
    path("definitions/", views.definitions_page, name="definitions"),
    path("definitions/queues/<seg:queue>/pause/", views.queue_pause, {"paused": True}, name="queue-pause"),
    path("definitions/queues/<seg:queue>/resume/", views.queue_pause, {"paused": False}, name="queue-resume"),
    path("definitions/queues/<seg:queue>/remove/", views.queue_remove, name="queue-remove"),
    path("schedules/", schedules.schedules_page, name="schedules"),
    path("schedules/cron/<seg:id>/", schedules.schedule_history, {"kind": "cron"}, name="cron-history"),
    path("schedules/schedule/<seg:id>/", schedules.schedule_history, {"kind": "schedule"}, name="schedule-history"),
    path("schedules/cron/<seg:id>/<str:action>/", schedules.schedule_action, {"kind": "cron"}, name="cron-action"),
    path("schedules/schedule/<seg:id>/<str:action>/", schedules.schedule_action, {"kind": "schedule"},
         name="schedule-action"),
]
