"""The standalone project's URLs: the board at the root, its own login page (rate
limited), the admin, and the board's pages for 403 and 404. A host project mounts
``oqronboard.urls`` under its own prefix instead and keeps all of these its own."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from .views import errors, favicon
from .views.login import rate_limited_login

admin.site.site_header = admin.site.site_title = "OqronBoard admin"

urlpatterns = [
    path("favicon.ico", favicon.favicon, name="favicon"),
    # Only login and logout: no anonymous password-reset pages on an operations board.
    path("accounts/login/", rate_limited_login(auth_views.LoginView.as_view(
        template_name="oqronboard/login.html", redirect_authenticated_user=True)), name="login"),
    # Shadows the admin's own login, so both forms are limited alike.
    path("admin/login/", rate_limited_login(admin.site.login, source="admin"), name="admin-login"),
    path("admin/", admin.site.urls),
    path("", include("oqronboard.urls")),
]

handler403 = errors.forbidden
handler404 = errors.not_found
