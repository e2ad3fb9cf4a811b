"""The board's URLs, mounted by a project under any prefix::

    path("ops/", include("oqronboard.urls")),

Every name lives in the ``oqronboard`` namespace (``reverse("oqronboard:home")``); the
routes themselves are :mod:`oqronboard.routes`. Included while the board's apps are not
installed, the board serves nothing and ``manage.py check`` says what to add
(``oqron.E112``), rather than failing on the first request.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.core import checks
from django.http import Http404, HttpRequest
from django.urls import URLPattern, URLResolver, path

app_name = "oqronboard"
REQUIRED = ("oqronkit.contrib.django", "oqronboard")


class NotInstalled(URLPattern):
    """A pattern that matches nothing and fails the URL checks with what to install."""

    def __init__(self, missing: list[str]) -> None:
        super().__init__(path("", _nothing).pattern, _nothing)
        self.missing = missing

    def resolve(self, path: str) -> Any:
        return None

    def check(self) -> list[checks.CheckMessage]:
        names = ", ".join(f'"{app}"' for app in self.missing)
        return [checks.Error(
            f"oqronboard.urls is included, but {names} {'is' if len(self.missing) == 1 else 'are'} not in "
            "INSTALLED_APPS, so the board serves nothing.",
            hint=f"INSTALLED_APPS += [{names}] (the tutorial, docs/tutorial/index.md).",
            id="oqron.E112")]


def _nothing(request: HttpRequest) -> Any:
    raise Http404("The board's apps are not installed.")


_missing = [app for app in REQUIRED if not apps.is_installed(app)]
urlpatterns: list[URLPattern | URLResolver]
if _missing:
    urlpatterns = [NotInstalled(_missing)]
else:
    from .routes import urlpatterns  # noqa: F401  (this module's patterns)
