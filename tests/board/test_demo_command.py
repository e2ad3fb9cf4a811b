"""``manage.py oqron_demo`` (run by bin/demo): the documented logins and the workload."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth import authenticate
from django.core.management import call_command

from oqronboard.base.roles import is_operator
from oqronkit.engine import default_registry
from tests.board.conftest import SharedDatabase


@pytest.mark.django_db
def test_creates_the_demo_logins_once(django_user_model):
    out = io.StringIO()
    call_command("oqron_demo", stdout=out)
    call_command("oqron_demo", stdout=out)
    text = out.getvalue()
    assert "Created the demo login demo / demo" in text and "already exists" in text
    assert "Created the viewer login viewer / viewer" in text
    assert "no demo workload" in text  # the test settings use mode memory
    user = authenticate(username="demo", password="demo")
    assert user is not None and user.is_superuser and user.is_staff and is_operator(user)
    viewer = authenticate(username="viewer", password="viewer")
    assert viewer is not None and not viewer.is_staff and not is_operator(viewer)
    assert django_user_model.objects.filter(username__in=["demo", "viewer"]).count() == 2


@pytest.mark.django_db(transaction=True)
def test_enqueues_the_demo_workload_through_the_engine(sqlite_shared_db: SharedDatabase):
    saved = dict(default_registry.queues)
    default_registry.queues.clear()
    try:
        out = io.StringIO()
        call_command("oqron_demo", stdout=out)
        call_command("oqron_demo", "--no-workload", stdout=out)
    finally:
        default_registry.queues.clear()
        default_registry.queues.update(saved)
    plane = sqlite_shared_db.plane
    assert "Enqueued the demo workload" in out.getvalue()
    for queue, count in (("emails", 25), ("payments", 15), ("reports", 3), ("thumbnails", 30)):
        assert plane.count(f"queue_job:{queue}") == count, queue
    ticker = plane.list("queue_job:demo-ticker").records
    assert len(ticker) == 1 and ticker[0].value["status"] == "delayed"


def test_the_demo_app_is_installed_only_for_the_demo():
    assert "demo" not in settings.INSTALLED_APPS
    script = (Path(settings.BASE_DIR) / "bin" / "demo").read_text()
    assert "export OQRON_DEMO=1" in script and "runworker" in script and "trap stop_worker EXIT" in script


def test_the_demo_queues_fail_sometimes_and_report_progress():
    saved = dict(default_registry.queues)
    try:
        from demo import oqron
    finally:
        default_registry.queues.clear()
        default_registry.queues.update(saved)
    assert {"emails", "payments", "reports", "thumbnails", "demo-ticker"} <= {
        q.name for q in (oqron.emails, oqron.payments, oqron.reports, oqron.thumbnails, oqron.ticker)}
    source = Path(oqron.__file__).read_text()
    assert "ctx.progress(" in source and "raise " in source
