"""The host's URLconf: its own ``home`` and ``login`` first, the board under ``ops/``."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def home(request: HttpRequest) -> HttpResponse:
    return HttpResponse("the host's home")


def login(request: HttpRequest) -> HttpResponse:
    return HttpResponse("the host's login")


urlpatterns = [
    path("", home, name="home"),
    path("login/", login, name="login"),
    path("ops/", include("oqronboard.urls")),
]
