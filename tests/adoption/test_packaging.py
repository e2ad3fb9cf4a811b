"""One distribution, ``oqronkit``, built from the repository root: its metadata, and a
wheel holding only the import packages ``oqronkit`` and ``oqronboard`` with every SQL,
Lua, template and static file they need."""

from __future__ import annotations

import sys
import tomllib
import zipfile

import pytest

from tests.adoption.conftest import ROOT, Dist, run

pytestmark = pytest.mark.slow


def tree_packages() -> set[str]:
    """Every package of the checkout's two import packages (the board's apps, templates
    and static files are folders inside ``oqronboard``; the top-level names link there)."""
    found = {".".join(p.parent.relative_to(ROOT).parts) for top in ("oqronkit", "oqronboard")
             for p in (ROOT / top).rglob("__init__.py")}
    return found | {"oqronboard.templates", "oqronboard.static"}


def test_the_package_list_matches_the_tree():
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    assert listed == tree_packages()


def test_the_board_apps_keep_the_top_level_layout():
    for name in ("runs", "jobs", "definitions", "templates", "static"):
        link = ROOT / name
        assert link.is_symlink() and link.resolve() == (ROOT / "oqronboard" / name).resolve(), name


def test_the_wheel_holds_only_the_two_packages_and_their_data(dist: Dist):
    with zipfile.ZipFile(dist.wheel) as archive:
        names = archive.namelist()
    tops = {n.split("/")[0] for n in names}
    assert tops == {"oqronkit", "oqronboard", dist.wheel.name.split("-py3")[0] + ".dist-info"}
    expected = set()
    for top in ("oqronkit", "oqronboard"):
        for path in (ROOT / top).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                expected.add(path.relative_to(ROOT).as_posix())
    # Everything the packages hold ships, the SQL, Lua, templates and static files included.
    assert sorted(expected - set(names)) == []
    assert any(n.endswith(".lua") for n in names) and any(n.endswith("schema.sql") for n in names)
    assert "oqronboard/templates/oqronboard/base.html" in names
    assert "oqronboard/static/oqronboard/vendor/htmx.min.js" in names
    assert not any(n.startswith(("demo/", "bench/", "tests/", "runs/", "jobs/", "definitions/")) for n in names)


def test_the_metadata_passes_twine_check(dist: Dist):
    result = run([sys.executable, "-m", "twine", "check", "--strict", dist.wheel, dist.sdist], cwd=dist.wheel.parent)
    assert result.stdout.count("PASSED") == 2, result.stdout
    with zipfile.ZipFile(dist.wheel) as archive:
        metadata = archive.read(f"{dist.wheel.name.split('-py3')[0]}.dist-info/METADATA").decode()
    for line in ("Name: oqronkit", "Requires-Python: >=3.12", "License-Expression: MIT",
                 "Provides-Extra: django", "Provides-Extra: postgres", "Provides-Extra: redis",
                 "Description-Content-Type: text/markdown"):
        assert line in metadata, line
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    core = [line for line in requires if "extra ==" not in line]
    assert not any("django" in line.lower() or "psycopg" in line or "redis" in line for line in core), core


def test_the_version_lives_in_one_place():
    import oqronkit

    assert f'__version__ = "{oqronkit.__version__}"' in (ROOT / "oqronkit" / "__init__.py").read_text()
    assert "version" in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dynamic"]


def test_the_sdist_carries_no_checkout_clutter(dist: Dist):
    import tarfile

    with tarfile.open(dist.sdist) as archive:
        names = archive.getnames()
    assert not any("/.venv/" in n or n.endswith(".sqlite3") or "/__pycache__/" in n for n in names)
    assert any(n.endswith("/LICENSE") for n in names) and any(n.endswith("/README.md") for n in names)


def test_the_tree_walk_sees_nested_packages():
    """Guards the first test: the walk finds the nested packages a forgotten entry would be."""
    assert {"oqronkit.queues", "oqronkit.contrib.django.management.commands", "oqronboard.runs"} <= tree_packages()
