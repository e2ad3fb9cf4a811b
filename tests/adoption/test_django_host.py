"""A Django team adds OqronKit and the board to its own project, from the built wheel.

In a fresh virtual environment outside the checkout: ``django-admin startproject``, a
host app named ``jobs`` with a model, the settings and URLs the README and the tutorial give, ``migrate``
on the host's own Postgres database, jobs added inside the host's transactions (one
committed, one rolled back), ``runworker --burst``, the run on the board under ``ops/``
for a host user holding ``oqronboard.view_board``, 403 for one without it, the host's
login page for anonymous users, and ``collectstatic`` with the host's storage.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adoption.conftest import Venv, clean_env, run
from tests.services import POSTGRES_URL, require_postgres, unique_name

pytestmark = pytest.mark.slow

MODEL = '''\
from django.db import models


class Order(models.Model):
    item = models.CharField(max_length=100)
    status = models.CharField(max_length=20, default="new")
'''

OQRON_PY = '''\
import oqronkit


def ship(ctx):
    from jobs.models import Order

    Order.objects.filter(pk=ctx.data["order"]).update(status="shipped")


orders = oqronkit.queue("orders", handler=ship)
'''

# The README's and the tutorial's lines, appended to the generated settings.
SETTINGS = '''
INSTALLED_APPS += ["jobs", "oqronkit.contrib.django", "oqronboard"]
OQRON = {{"MODE": "postgres"}}
DATABASES = {{"default": {{"ENGINE": "django.db.backends.postgresql", "NAME": {name!r}, "USER": "postgres",
                           "HOST": "127.0.0.1", "PORT": "5432"}}}}
STATIC_ROOT = BASE_DIR / "collected"
STORAGES = {{"default": {{"BACKEND": "django.core.files.storage.FileSystemStorage"}},
            "staticfiles": {{"BACKEND": "django.contrib.staticfiles.storage.ManifestStaticFilesStorage"}}}}
'''

SETUP = '''\
import json, os, sys
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "host.settings")
import django
django.setup()
from django.db import connection, transaction
'''

ENQUEUE = SETUP + '''\
from jobs.models import Order
from jobs.oqron import orders

with transaction.atomic():
    kept = Order.objects.create(item="book")
    orders.add({"order": kept.pk})
try:
    with transaction.atomic():
        lost = Order.objects.create(item="lamp")
        orders.add({"order": lost.pk})
        raise RuntimeError("the view failed after adding")
except RuntimeError:
    pass
with connection.cursor() as cursor:
    cursor.execute("SELECT value->'data'->>'order' FROM oqron_jobs WHERE namespace = 'queue_job:orders'")
    print(json.dumps({"kept": kept.pk, "jobs": [int(v) for (v,) in cursor.fetchall()]}))
'''

BOARD = SETUP + '''\
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.test.utils import setup_test_environment
from jobs.models import Order

setup_test_environment()  # the test client's host name
with connection.cursor() as cursor:
    cursor.execute("SELECT id, value->>'status' FROM oqron_runs WHERE namespace = 'runs'")
    runs = cursor.fetchall()
viewer = User.objects.create_user("ops", password="pw")
viewer.user_permissions.add(Permission.objects.get(codename="view_board", content_type__app_label="oqronboard"))
stranger = User.objects.create_user("sales", password="pw")
seen, refused, anonymous = Client(), Client(), Client()
seen.force_login(viewer)
refused.force_login(stranger)
home = seen.get("/ops/")
run_page = seen.get(f"/ops/runs/{runs[0][0]}/")
print(json.dumps({
    "orders": {o.item: o.status for o in Order.objects.all()},
    "runs": [status for _, status in runs],
    "home": home.status_code, "home_links": home.content.decode().count('href="/ops/'),
    "run_page": run_page.status_code, "run_shows_completed": "completed" in run_page.content.decode(),
    "refused": refused.get("/ops/").status_code,
    "anonymous": anonymous.get("/ops/runs/")["Location"],
}))
'''


@pytest.fixture
def database() -> Iterator[str]:
    """A fresh Postgres database of the host's own, dropped at the end."""
    import psycopg

    require_postgres()
    name = unique_name("oqron_host")
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')  # our generated name
    try:
        yield name
    finally:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def test_a_host_project_adopts_the_engine_and_the_board(board_venv: Venv, database: str, tmp_path: Path):
    project = tmp_path / "site"
    project.mkdir()
    env = clean_env()
    django_admin = board_venv.path / "bin" / "django-admin"
    run([django_admin, "startproject", "host", "."], cwd=project, env=env)
    run([board_venv.python, "manage.py", "startapp", "jobs"], cwd=project, env=env)
    (project / "jobs" / "models.py").write_text(MODEL)
    (project / "jobs" / "oqron.py").write_text(OQRON_PY)
    with (project / "host" / "settings.py").open("a") as settings:
        settings.write(SETTINGS.format(name=database))
    urls = (project / "host" / "urls.py").read_text()
    urls = urls.replace("from django.urls import path", "from django.urls import include, path")
    urls = urls.replace("urlpatterns = [", 'urlpatterns = [\n    path("ops/", include("oqronboard.urls")),')
    (project / "host" / "urls.py").write_text(urls)

    manage = [board_venv.python, "manage.py"]
    check = run([*manage, "check"], cwd=project, env=env)
    assert "no issues" in check.stdout, check.stdout + check.stderr
    run([*manage, "makemigrations", "jobs"], cwd=project, env=env)
    migrated = run([*manage, "migrate", "--noinput"], cwd=project, env=env).stdout
    assert "oqronkit.0001_engine_tables... OK" in migrated and "jobs.0001_initial... OK" in migrated

    (project / "enqueue.py").write_text(ENQUEUE)
    added = json.loads(run([board_venv.python, "enqueue.py"], cwd=project, env=env).stdout.splitlines()[-1])
    assert added["jobs"] == [added["kept"]]  # the rolled-back transaction took its job along

    run([*manage, "runworker", "--burst"], cwd=project, env=env, timeout=120)

    (project / "board.py").write_text(BOARD)
    seen = json.loads(run([board_venv.python, "board.py"], cwd=project, env=env).stdout.splitlines()[-1])
    assert seen["orders"] == {"book": "shipped"}  # the lamp order rolled back with its job
    assert seen["runs"] == ["completed"]
    assert seen["home"] == 200 and seen["home_links"] > 10
    assert seen["run_page"] == 200 and seen["run_shows_completed"]
    assert seen["refused"] == 403
    assert seen["anonymous"] == "/accounts/login/?next=/ops/runs/"  # the host's own LOGIN_URL

    collected = run([*manage, "collectstatic", "--noinput"], cwd=project, env=env).stdout
    assert "static files copied" in collected
    manifest = json.loads((project / "collected" / "staticfiles.json").read_text())["paths"]
    assert {"oqronboard/css/board.css", "oqronboard/js/board.js", "oqronboard/vendor/htmx.min.js"} <= set(manifest)
    # Nothing went to an engine built from the environment: no SQLite file beside the project.
    assert not list(project.rglob("*.sqlite3"))
