"""``manage.py oqron_demo`` (run by bin/demo) creates the documented demo login once."""

from __future__ import annotations

import io

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command


@pytest.mark.django_db
def test_creates_the_demo_superuser_once(django_user_model):
    out = io.StringIO()
    call_command("oqron_demo", stdout=out)
    call_command("oqron_demo", stdout=out)
    assert "Created the demo login demo / demo" in out.getvalue()
    assert "already exists" in out.getvalue()
    user = authenticate(username="demo", password="demo")
    assert user is not None and user.is_superuser and user.is_staff
    assert django_user_model.objects.filter(username="demo").count() == 1
