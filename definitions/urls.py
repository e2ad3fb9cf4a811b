from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("definitions/", views.definitions_page, name="definitions"),
    path("definitions/queues/<str:queue>/pause/", views.queue_pause, {"paused": True}, name="queue-pause"),
    path("definitions/queues/<str:queue>/resume/", views.queue_pause, {"paused": False}, name="queue-resume"),
]
