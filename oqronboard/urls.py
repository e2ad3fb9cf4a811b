"""URLs of the board. Every one needs a login (LoginRequiredMiddleware, and each view's
own check); tests/board/test_access.py walks them all anonymously."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from .views import audit, overview, scope, search

urlpatterns = [
    path("", overview.home, name="home"),
    path("scope/", scope.switch_scope, name="switch-scope"),
    path("audit/", audit.audit, name="audit"),
    path("go/", search.jump, name="jump"),
    path("", include("runs.urls")),
    path("", include("jobs.urls")),
    path("", include("definitions.urls")),
    # Only login and logout: no anonymous password-reset pages on an operations board.
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("admin/", admin.site.urls),
]
