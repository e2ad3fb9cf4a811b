"""``bin/test`` says, before the run, that the browser tests will skip without Chromium
and how to get it (a newcomer otherwise only sees skip reasons at the end)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_bin_test(chromium: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "OQRON_CHROMIUM": chromium}
    return subprocess.run([str(ROOT / "bin" / "test"), "--version"], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)


def test_bin_test_says_how_to_get_chromium_when_it_is_missing():
    missing = run_bin_test("/nonexistent/chromium")
    assert missing.returncode == 0, missing.stderr[-2000:]
    assert "browser tests" in missing.stderr and "apt-get install -y chromium" in missing.stderr
    present = run_bin_test("/bin/sh")  # any executable stands in for it
    assert present.returncode == 0 and "chromium" not in present.stderr.lower()
