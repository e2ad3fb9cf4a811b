from __future__ import annotations

from django.urls import path

from . import views

urlpatterns = [
    path("runs/", views.runs, name="runs"),
    path("runs/failed/", views.failed_runs, name="failed-runs"),
    path("runs/<str:run_id>/", views.run_detail, name="run"),
    path("runs/<str:run_id>/live/", views.run_live, name="run-live"),
]
