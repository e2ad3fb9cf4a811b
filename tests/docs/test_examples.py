"""Every example of the docs site runs: one test per page with examples (tests/docs/README.md).

Run one page's with ``.venv/bin/pytest tests/docs -k PAGE_STEM``; a failure names the page and
line of the block, its error and its output.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.blocks import DOCS, ConventionError, has_examples, page_paths, parse_page
from tests.docs.report import record
from tests.docs.runner import ExampleFailed, run_page

PAGES = [p for p in page_paths() if has_examples((DOCS / p).read_text(encoding="utf-8"))]


@pytest.mark.parametrize("page_path", PAGES, ids=[p.removesuffix(".md") for p in PAGES])
def test_page_examples(page_path: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    try:
        page = parse_page(page_path, (DOCS / page_path).read_text(encoding="utf-8"))
        outcome = run_page(page, tmp_path)
    except (ConventionError, ExampleFailed) as exc:
        failure = str(exc)
    else:
        record(request.node, outcome)
        return
    pytest.fail(failure, pytrace=False)  # outside the except: the report shows the block, not a chain
