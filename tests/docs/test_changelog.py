"""CHANGELOG.md in Keep a Changelog form, its release matching the one version, and the site's
changelog page showing it (an include, so the two cannot differ)."""

from __future__ import annotations

import re
import tomllib

import oqronkit
from tests.docs.blocks import DOCS, ROOT

CHANGELOG = ROOT / "CHANGELOG.md"
RELEASE = re.compile(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d{2}-\d{2})$", re.MULTILINE)
SECTIONS = {"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}


def test_the_changelog_has_an_unreleased_section_then_the_current_release_first():
    text = CHANGELOG.read_text(encoding="utf-8")
    headings = re.findall(r"^## .*$", text, re.MULTILINE)
    assert headings[0] == "## [Unreleased]"
    releases = RELEASE.findall(text)
    assert releases and releases[0][0] == oqronkit.__version__, "the newest release is the package's version"
    assert len(headings) == 1 + len(releases), "every other heading is a release with its date"
    unreleased = text.split("## [Unreleased]", 1)[1].split("\n## [", 1)[0]
    assert set(re.findall(r"^### (\w+)$", unreleased, re.MULTILINE)) <= SECTIONS


def test_the_site_includes_the_changelog_rather_than_a_copy():
    page = (DOCS / "changelog.md").read_text(encoding="utf-8")
    assert '--8<-- "CHANGELOG.md:releases"' in page and "## [" not in page
    text = CHANGELOG.read_text(encoding="utf-8")
    start, end = text.index("[start:releases]"), text.index("[end:releases]")
    assert text.index("## [Unreleased]") > start and RELEASE.search(text[start:end])


def test_the_version_is_written_in_one_place():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "oqronkit.__version__"}
    source = (ROOT / "oqronkit" / "__init__.py").read_text(encoding="utf-8")
    assert source.count(f'"{oqronkit.__version__}"') == 1
