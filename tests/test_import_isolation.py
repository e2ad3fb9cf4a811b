"""Habit 1: the engine imports no Django, and no driver until a backend needs it.

Each check runs in a fresh interpreter: this test process has Django loaded already.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FORBIDDEN = ("django", "psycopg", "psycopg_pool", "redis", "django_redis", "httpx", "httpcore")


def loaded_after(code: str) -> list[str]:
    """The forbidden top-level packages in sys.modules after running ``code``."""
    script = (
        f"{code}\nimport json, sys\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({list(FORBIDDEN)!r}))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)},
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_import_oqronkit_loads_no_django_or_driver():
    assert loaded_after("import oqronkit") == []


@pytest.mark.parametrize("mode", ["memory", "sqlite"])
def test_embedded_modes_run_without_any_driver(mode, tmp_path):
    code = (
        "import oqronkit\n"
        f"config = oqronkit.OqronConfig(mode={mode!r}, "
        f"database_url={None if mode == 'memory' else 'sqlite:///' + str(tmp_path / 'x.sqlite3')!r})\n"
        "plane = oqronkit.open_durable(config)\n"
        "plane.put('runs', 'r1', {'status': 'completed'})\n"
        "assert plane.get('runs', 'r1').value == {'status': 'completed'}\n"
        "plane.close()"
    )
    assert loaded_after(code) == []
