from __future__ import annotations

from django.urls import path

from . import schedules, views

urlpatterns = [
    path("definitions/", views.definitions_page, name="definitions"),
    path("definitions/queues/<str:queue>/pause/", views.queue_pause, {"paused": True}, name="queue-pause"),
    path("definitions/queues/<str:queue>/resume/", views.queue_pause, {"paused": False}, name="queue-resume"),
    path("schedules/", schedules.schedules_page, name="schedules"),
    path("schedules/cron/<str:id>/", schedules.schedule_history, {"kind": "cron"}, name="cron-history"),
    path("schedules/schedule/<str:id>/", schedules.schedule_history, {"kind": "schedule"}, name="schedule-history"),
    path("schedules/cron/<str:id>/<str:action>/", schedules.schedule_action, {"kind": "cron"}, name="cron-action"),
    path("schedules/schedule/<str:id>/<str:action>/", schedules.schedule_action, {"kind": "schedule"},
         name="schedule-action"),
]
