"""The login forms (the board's and the admin's) are rate limited per client address
and per username (issue 22): the attempt past the limit gets 429 with Retry-After and
the IETF RateLimit headers; the form itself (GET) is never counted."""

from __future__ import annotations

import uuid

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db


@pytest.fixture
def limited(settings):
    settings.OQRON_LOGIN_RATE_LIMIT = (3, 60)
    return f"10.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}.{uuid.uuid4().int % 250}"


def post(url: str, username: str, address: str):
    response = Client(REMOTE_ADDR=address).post(url, {"username": username, "password": "wrong"})
    return response


def test_one_address_gets_three_attempts_a_minute_whatever_the_usernames(limited):
    codes = [post(reverse("login"), f"u-{uuid.uuid4().hex}", limited).status_code for _ in range(3)]
    assert codes == [200, 200, 200]  # the form again, with its error
    refused = post(reverse("login"), f"u-{uuid.uuid4().hex}", limited)
    assert refused.status_code == 429 and int(refused["Retry-After"]) >= 1
    assert 'q=3;w=60' in refused["RateLimit-Policy"] and "r=0" in refused["RateLimit"]
    assert Client(REMOTE_ADDR=limited).get(reverse("login")).status_code == 200  # the form is free


def test_one_username_gets_three_attempts_a_minute_from_any_address(limited):
    name = f"olga-{uuid.uuid4().hex[:8]}"
    codes = [post(reverse("login"), name, f"10.200.{i}.{uuid.uuid4().int % 250}").status_code for i in range(4)]
    assert codes == [200, 200, 200, 429]
    assert post(reverse("login"), name.upper(), "10.201.0.1").status_code == 429  # case does not help
    assert post(reverse("login"), f"other-{uuid.uuid4().hex}", "10.201.0.2").status_code == 200


def fullwidth(text: str, every: int = 1) -> str:
    """``text`` with every ``every``-th ASCII character in its fullwidth form (U+FF01-U+FF5E)."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" and i % every == 0 else c for i, c in enumerate(text))


def test_look_alike_spellings_of_a_username_share_its_count(limited):
    name = f"operator-{uuid.uuid4().hex[:8]}"
    get_user_model().objects.create_user(name, password="right-Horse-7")
    spellings = [fullwidth(name, 2), f" {name.upper()} ", fullwidth(name)]  # all counted as `name`
    codes = [post(reverse("login"), spelling, f"10.202.{i}.{uuid.uuid4().int % 250}").status_code
             for i, spelling in enumerate(spellings)]
    assert codes == [200, 200, 200]
    right = Client(REMOTE_ADDR="10.203.0.1").post(reverse("login"), {"username": fullwidth(name, 3),
                                                                     "password": "right-Horse-7"})
    assert right.status_code == 429  # the fourth try, however it is spelled


def test_a_fullwidth_spelling_reaches_the_account(limited):
    name = f"operator-{uuid.uuid4().hex[:8]}"
    get_user_model().objects.create_user(name, password="right-Horse-7")
    answer = Client(REMOTE_ADDR="10.204.0.1").post(reverse("login"), {"username": fullwidth(name, 2),
                                                                      "password": "right-Horse-7"})
    assert answer.status_code == 302  # why the limiter must count it as `name`


def test_the_admin_login_is_limited_too(limited):
    codes = [post("/admin/login/", f"a-{uuid.uuid4().hex}", limited).status_code for _ in range(4)]
    assert codes[:3] == [200, 200, 200] and codes[3] == 429


def test_a_misconfigured_engine_does_not_stop_anyone_logging_in(limited, settings):
    settings.OQRON = {"MODE": "bogus"}  # the overview reports it; the login form must still answer
    assert post(reverse("login"), f"u-{uuid.uuid4().hex}", limited).status_code == 200
