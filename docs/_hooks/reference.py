"""MkDocs hook: replace each ``<!-- reference: NAME -->`` marker of a page with the table that
docs/_hooks/tables.py generates from the code (settings, environment, CLI, JSON API, metrics).

An unknown NAME fails the build, as does a table that cannot be generated.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

MARKER = re.compile(r"^<!-- reference: (?P<name>[a-z-]+) -->$", re.MULTILINE)


def load_tables() -> ModuleType:
    root = Path(__file__).resolve().parents[2]
    if str(root) not in sys.path:  # the checkout's oqronkit and oqronboard, as the tests import them
        sys.path.insert(0, str(root))
    spec = importlib.util.spec_from_file_location("docs_reference_tables", Path(__file__).with_name("tables.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def expand(markdown: str, page: str) -> str:
    """``markdown`` with every reference marker replaced by its generated table."""
    if "<!-- reference:" not in markdown:
        return markdown
    tables = load_tables()

    def generate(match: re.Match[str]) -> str:
        name = match["name"]
        if name not in tables.RENDERERS:
            raise ValueError(f"{page}: unknown reference table {name!r}; known: {', '.join(tables.RENDERERS)}")
        return str(tables.RENDERERS[name]())

    return MARKER.sub(generate, markdown)


def on_page_markdown(markdown: str, page: Any, **kwargs: Any) -> str:
    return expand(markdown, page.file.src_uri)
