"""The site builds in strict mode through ``bin/docs --build`` (as .ci/run builds it), so a
broken link or reference fails ``bin/test`` locally too, and the generated reference is in it."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.docs.blocks import ROOT


def test_bin_docs_builds_the_site_strictly(tmp_path: Path):
    site = tmp_path / "site"
    done = subprocess.run([str(ROOT / "bin" / "docs"), "--build", str(site)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr
    metrics = (site / "reference" / "metrics" / "index.html").read_text(encoding="utf-8")
    assert "oqron_scrape_section_seconds" in metrics  # a table generated from the code at build time
    api = (site / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    assert "oqronkit.queue" in api and ":func:" not in api  # docstrings rendered, reST roles converted
    assert (site / "screenshots" / "overview-light.png").exists()
    assert not (site / "screenshots" / "README").exists() and not (site / "_hooks").exists()
