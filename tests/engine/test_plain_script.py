"""A plain Python script outside Django needs no set-up call: the engine configures
itself from the OQRON_* environment variables on first use."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from oqronkit import Engine, OqronConfig, Registry

ROOT = Path(__file__).resolve().parents[2]


def test_import_and_add_just_works(tmp_path):
    (tmp_path / "myjobs.py").write_text(textwrap.dedent("""
        import oqronkit
        emails = oqronkit.queue("emails")
    """))
    script = "import myjobs; job = myjobs.emails.add({'to': 'a@x.com'}); print(job.id)"
    url = f"sqlite:///{tmp_path / 'oqron.sqlite3'}"
    env = {**os.environ, "OQRON_MODE": "sqlite", "OQRON_DATABASE_URL": url, "OQRON_PROJECT": "script",
           "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"}
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    job_id = done.stdout.strip()
    engine = Engine(OqronConfig(mode="sqlite", database_url=url, project="script"), registry=Registry())
    try:
        stored = engine.durable.get("queue_job:emails", job_id)
        assert stored is not None and stored.value["data"] == {"to": "a@x.com"}
    finally:
        engine.close()


def test_bad_environment_is_a_clear_error(tmp_path):
    env = {**os.environ, "OQRON_MODE": "postgres", "OQRON_DATABASE_URL": "sqlite:///x", "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", "import oqronkit; oqronkit.queue('q').add({})"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "ConfigurationError" in done.stderr and "postgresql://" in done.stderr
