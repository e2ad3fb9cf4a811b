"""README.md is the short front door, its links and the docs' screenshots lead somewhere real,
and nothing in the repository points outside it."""

from __future__ import annotations

import re
import subprocess

from tests.browser.screenshots import SHOTS
from tests.docs.blocks import DOCS, ROOT

README = ROOT / "README.md"
LINK = re.compile(r"\]\(([^)\s]+)\)")
SCREENSHOT = re.compile(r"screenshots/([a-z0-9-]+\.png)")
#: Documents kept beside the repository, never in it: nothing here may send a reader there.
OUTSIDE = re.compile(r"\.\./shared|/work/shared|shared/(?:spec|reference)/|(?<![\w/])(?:ARCHITECTURE|CONVENTIONS)\.md"
                     r"|(?<![\w/(-])storage-model\.md|design documents?\b")


def test_the_readme_is_short_and_says_the_commands():
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 200
    for command in ("bin/demo", "bin/test", "bin/docs", "pip install", "docs/tutorial/index.md"):
        assert command in text, command


def test_every_relative_link_of_the_readme_resolves_inside_the_repository():
    targets = [t for t in LINK.findall(README.read_text(encoding="utf-8")) if not t.startswith(("http", "#"))]
    assert len(targets) > 30
    for target in targets:
        path = (ROOT / target.split("#")[0]).resolve()
        assert path.is_relative_to(ROOT) and path.exists(), target


def test_screenshots_in_the_docs_are_the_ones_the_browser_harness_takes():
    produced = {f"{shot.slug}-{theme}.png" for shot in SHOTS for theme in ("light", "dark")}
    on_disk = {p.name for p in (DOCS / "screenshots").glob("*.png")}
    assert on_disk <= produced, f"not taken by tests/browser/screenshots.py: {sorted(on_disk - produced)}"
    pages = [README, *DOCS.rglob("*.md")]
    used = {name for page in pages for name in SCREENSHOT.findall(page.read_text(encoding="utf-8"))}
    assert used and used <= on_disk, f"missing screenshots: {sorted(used - on_disk)}"


def test_nothing_in_the_repository_points_outside_it():
    files = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    me = "tests/docs/test_front_door.py"
    found = []
    for name in files:
        path = ROOT / name
        if name == me or path.suffix not in {".md", ".py", ".sql", ".txt", ".toml", ".yml", ".html", ""}:
            continue
        if not path.is_file():
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if OUTSIDE.search(line):
                found.append(f"{name}:{number}: {line.strip()[:100]}")
    assert found == []
