"""``pip install oqronkit`` alone: no Django, jobs in SQLite mode from a plain script and
``python -m oqronkit worker``; a mode whose extra is missing names the extra to install."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.adoption.conftest import Dist, Venv, clean_env, make_venv, run

pytestmark = pytest.mark.slow

APP = '''\
import json, pathlib, oqronkit

done = pathlib.Path(__file__).with_name("done.jsonl")


def send(ctx):
    with done.open("a") as out:
        out.write(json.dumps(ctx.data) + "\\n")


emails = oqronkit.queue("emails", handler=send)
'''


@pytest.fixture(scope="module")
def engine_venv(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Venv]:
    for made in make_venv(tmp_path_factory.mktemp("engine-venv")):
        made.pip_install(dist.wheel)
        yield made


def test_the_engine_installs_without_django(engine_venv: Venv):
    code = "import importlib.util as u, oqronkit; print(u.find_spec('django') is None, oqronkit.__version__)"
    out = run([engine_venv.python, "-c", code], cwd=engine_venv.path).stdout.split()
    assert out[0] == "True"


def test_a_script_and_the_worker_run_jobs_in_sqlite_mode(engine_venv: Venv, tmp_path: Path):
    (tmp_path / "app.py").write_text(APP)
    env = clean_env(OQRON_MODE="sqlite", OQRON_DATABASE_URL=f"sqlite:///{tmp_path / 'jobs.sqlite3'}",
                    PYTHONPATH=str(tmp_path))
    run([engine_venv.python, "-c", "import app; app.emails.add({'to': 'a@example.com'}); "
         "app.emails.add_bulk([{'to': 'b@example.com'}])"], cwd=tmp_path, env=env)
    run([engine_venv.python, "-m", "oqronkit", "worker", "--import", "app", "--burst"], cwd=tmp_path, env=env)
    done = [json.loads(line) for line in (tmp_path / "done.jsonl").read_text().splitlines()]
    assert sorted(d["to"] for d in done) == ["a@example.com", "b@example.com"]


@pytest.mark.parametrize(("mode", "extra"), [("postgres", "postgres"), ("redis", "redis")])
def test_a_missing_extra_is_named(engine_venv: Venv, tmp_path: Path, mode: str, extra: str):
    env = clean_env(OQRON_MODE=mode, OQRON_DATABASE_URL="postgresql://127.0.0.1:1/x",
                    OQRON_REDIS_URL="redis://127.0.0.1:1/0")
    result = run([engine_venv.python, "-c", "import oqronkit; oqronkit.queue('q').add({})"],
                 cwd=tmp_path, env=env, check=False)
    assert result.returncode != 0
    assert f'pip install "oqronkit[{extra}]"' in result.stderr, result.stderr[-2000:]
    assert "MissingDependency" in result.stderr
