"""The docs examples' closing summary: pages run, blocks executed, and every skipped block.

Each page's test records its :class:`~tests.docs.runner.Outcome` in the report's
user_properties (which pytest-xdist carries from its workers); tests/conftest.py registers
these hooks so the controller prints them after the run.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import pytest

from tests.docs.runner import Outcome

PROPERTY = "docs_examples"
_outcomes: list[dict[str, Any]] = []


def record(item: pytest.Item, outcome: Outcome) -> None:
    item.user_properties.append((PROPERTY, json.dumps(asdict(outcome))))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call":
        _outcomes.extend(json.loads(value) for name, value in report.user_properties if name == PROPERTY)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not _outcomes:
        return
    write = terminalreporter.write_line
    terminalreporter.section("docs examples")
    for o in sorted(_outcomes, key=lambda o: o["page"]):
        write(f"docs/{o['page']}: {o['python']} python, {o['sh']} sh, {o['files']} files, "
              f"{len(o['skipped'])} skipped, {o['seconds']:.1f} s")
    skipped = [s for o in _outcomes for s in o["skipped"]]
    write(f"{len(_outcomes)} pages: {sum(o['python'] for o in _outcomes)} python and "
          f"{sum(o['sh'] for o in _outcomes)} sh blocks executed, {sum(o['files'] for o in _outcomes)} files "
          f"written, {len(skipped)} blocks skipped (no-run), {sum(o['seconds'] for o in _outcomes):.0f} s in all")
    for where, reason in sorted(skipped):
        write(f"  no-run {where}: {reason}")
