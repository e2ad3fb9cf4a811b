"""The board's layer order (docs/reference/layout.md, and below), read from the source.

Bottom up: the engine (``oqronkit``) and its Django integration (``oqronkit/contrib/django/``,
whose ``engine.py`` is the bridge from settings); the board base (``oqronboard/base/``); the
apps (``oqronboard.runs``, ``.jobs``, ``.definitions``), one table each; the shell (the rest
of ``oqronboard/``), which may import everything.
An app imports the base, the engine and Django, never another app or the shell; the
base imports no app and not the shell. Every import counts, a lazy one in a function
body included.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
APPS = ("runs", "jobs", "definitions")  # packages of oqronboard
THIRD_PARTY = frozenset({"django", "django_htmx"})
BELOW_THE_APPS = frozenset({"stdlib", "third-party", "engine", "bridge", "base"})
ALLOWED = {
    "bridge": frozenset({"stdlib", "third-party", "engine"}),
    "base": BELOW_THE_APPS,
    **{app: BELOW_THE_APPS | {app} for app in APPS},
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(source: str, module: str, *, is_package: bool = False) -> list[tuple[int, str]]:
    """``(line, dotted target)`` of every import in ``source``; for ``from m import n``
    the target is ``m.n`` (``n`` may be a submodule, as in ``from oqronboard import engine``)."""
    package = module if is_package else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            origin = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[: len(parts) - node.level + 1])
                origin = f"{anchor}.{origin}" if origin else anchor
            found += [(node.lineno, f"{origin}.{alias.name}") for alias in node.names]
    return sorted(found)


def layer_of(target: str) -> str:
    top = target.partition(".")[0]
    if target == "oqronkit.contrib.django.engine" or target.startswith("oqronkit.contrib.django.engine."):
        return "bridge"
    if target == "oqronboard.base" or target.startswith("oqronboard.base."):
        return "base"
    board_part = target.split(".")[1] if top == "oqronboard" and "." in target else ""
    if board_part in APPS:
        return board_part
    if top == "oqronboard":
        return "shell"
    if top == "oqronkit":
        return "engine"
    if top in sys.stdlib_module_names:
        return "stdlib"
    return "third-party" if top in THIRD_PARTY else f"unexpected ({top})"


def violations(path: Path, layer: str) -> list[str]:
    module = module_name(path)
    found = imported(path.read_text(encoding="utf-8"), module, is_package=path.name == "__init__.py")
    return [f"{path.relative_to(ROOT)}:{line} imports {target} ({layer_of(target)})"
            for line, target in found if layer_of(target) not in ALLOWED[layer]]


def sources(*folders: str) -> list[Path]:
    files = sorted(p for folder in folders for p in (ROOT / folder).rglob("*.py"))
    assert files, folders
    return files


@pytest.mark.parametrize("app", APPS)
def test_an_app_imports_only_the_base_the_engine_and_django(app: str):
    assert [v for path in sources(f"oqronboard/{app}") for v in violations(path, app)] == []


def test_the_base_imports_no_app_and_not_the_shell():
    assert [v for path in sources("oqronboard/base") for v in violations(path, "base")] == []


def test_the_engine_bridge_imports_only_the_engine_and_django():
    assert violations(ROOT / "oqronkit" / "contrib" / "django" / "engine.py", "bridge") == []


def test_the_integration_never_imports_the_board():
    """A host installs oqronkit.contrib.django without the board and gets all of it."""
    found = [f"{p.relative_to(ROOT)}:{line} imports {target}" for p in sources("oqronkit/contrib")
             for line, target in imported(p.read_text(encoding="utf-8"), module_name(p),
                                          is_package=p.name == "__init__.py")
             if target.partition(".")[0] in ("oqronboard", "demo")]
    assert found == []


def test_the_check_sees_every_kind_of_import():
    """Guards the test itself: relative, lazy and ``from package import module`` imports
    are all found and judged."""
    source = (
        "from .queries import get_run\n"
        "from oqronkit.contrib.django import engine\n"
        "from oqronboard import views\n"
        "def page():\n    from oqronboard.jobs.queries import get_job\n"
        "import oqronboard.definitions.models\n"
    )
    targets = imported(source, "oqronboard.runs.views")
    assert [layer_of(t) for _, t in targets] == ["runs", "bridge", "shell", "jobs", "definitions"]
    assert imported("from ..pages import BadFilter\n", "oqronboard.base.views.x") == \
        [(1, "oqronboard.base.pages.BadFilter")]
    assert imported("from . import live\n", "oqronboard.base", is_package=True) == [(1, "oqronboard.base.live")]


def test_the_shell_stands_on_every_app():
    """Cross-table pages live above the apps: the shell reads all three tables."""
    shell = [p for p in sources("oqronboard") if p.relative_to(ROOT / "oqronboard").parts[0] not in ("base", *APPS)]
    layers = {layer_of(t) for p in shell for _, t in imported(p.read_text(encoding="utf-8"), module_name(p))}
    assert set(APPS) <= layers


def test_the_board_reads_live_data_through_the_engine():
    """Hot-plane entries (the live overlay, the worker registry) are read with
    ``oqronkit.live``; no board module reads a hot-plane group or parses its JSON."""
    found = [f"{p.relative_to(ROOT)}:{n}" for p in sources("oqronboard")
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
             if any(call in line for call in ("kv_get(", "kv_all(", "kv_set(", "kv_delete("))]
    assert found == []
