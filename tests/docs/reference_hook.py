"""The docs build's reference hook (docs/_hooks/reference.py), loaded by path as MkDocs loads it."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from tests.docs.blocks import DOCS

_spec = importlib.util.spec_from_file_location("docs_reference_hook", DOCS / "_hooks" / "reference.py")
assert _spec is not None and _spec.loader is not None
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)

expand = _module.expand
load_tables = _module.load_tables


def load_sphinx_roles() -> ModuleType:
    """docs/_hooks/sphinx_roles.py, the griffe extension mkdocstrings loads."""
    spec = importlib.util.spec_from_file_location("docs_sphinx_roles", DOCS / "_hooks" / "sphinx_roles.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
