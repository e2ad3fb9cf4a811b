"""What a host project's settings change for the board (tests/board/test_mounting.py
applies them over the test settings): Django's startproject middleware and templates,
nothing of the standalone project's."""

from __future__ import annotations

HOST = {
    "ROOT_URLCONF": "tests.board.host.urls",
    "LOGIN_URL": "/login/",
    "MIDDLEWARE": [
        "django.middleware.security.SecurityMiddleware",
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.middleware.common.CommonMiddleware",
        "django.middleware.csrf.CsrfViewMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "django.contrib.messages.middleware.MessageMiddleware",
        "django.middleware.clickjacking.XFrameOptionsMiddleware",
    ],
    # A host's templates may differ in every way from the board's; none of it reaches the board.
    "TEMPLATES": [{
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": ["django.template.context_processors.request",
                                   "django.contrib.auth.context_processors.auth",
                                   "django.contrib.messages.context_processors.messages"],
            "string_if_invalid": "INVALID-%s",
            "autoescape": False,
        },
    }],
}
