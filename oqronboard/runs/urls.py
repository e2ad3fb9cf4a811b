from __future__ import annotations

from django.urls import path

import oqronboard.base.urlsafe  # noqa: F401  (registers <seg:...>, used for every engine id)

from . import views

urlpatterns = [
    path("runs/", views.runs, name="runs"),
    path("runs/failed/", views.failed_runs, name="failed-runs"),
    path("runs/<seg:run_id>/live/", views.run_live, name="run-live"),
]
