"""bench/.oqron-venv: the virtualenv throughput.py runs our engine's workers and drivers from.

The peers run from bench/.peers-venv, which holds their runtime requirements and nothing
else; our project's .venv also holds the development requirements, and some of them
change what a worker process costs: redis-py imports the OpenTelemetry SDK whenever it is
installed (2.7 MiB of every worker's resident memory; a test requirement of ours). So our
side gets the same treatment: a virtualenv made by the peers' interpreter (the same Python
build on both sides) with pyproject.toml's runtime dependencies and the extras the
benchmarked modes use. The engine itself still comes from the measured checkout
(``PYTHONPATH``), so ``--against`` arms share this virtualenv as they share .venv.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE_VENV = ROOT / "bench" / ".oqron-venv"
#: What the oqron-* systems need: postgres and redis modes, and --metrics-port (the -metrics row).
EXTRAS = ("postgres", "redis", "prometheus")
STAMP = ".requirements"  # the requirement list last installed, to reinstall when pyproject.toml changes


def runtime_requirements(pyproject: Path = ROOT / "pyproject.toml") -> list[str]:
    """The distribution's dependencies plus those of :data:`EXTRAS`, as pyproject.toml lists them."""
    project = tomllib.loads(pyproject.read_text())["project"]
    extras = project.get("optional-dependencies", {})
    return [*project["dependencies"], *(req for name in EXTRAS for req in extras[name])]


def ensure_engine_venv(base_python: str, *, timeout: float = 900) -> str:
    """bench/.oqron-venv's interpreter, created with ``base_python`` (the peers' one) and
    filled with :func:`runtime_requirements` when missing or out of date."""
    python = ENGINE_VENV / "bin" / "python"
    wanted = "\n".join(runtime_requirements())
    stamp = ENGINE_VENV / STAMP
    if python.exists() and stamp.exists() and stamp.read_text() == wanted:
        return str(python)
    env = {**os.environ, "PYENV_VERSION": os.environ.get("PYENV_VERSION", "3.13.0")}
    if not python.exists():
        print(f"creating {ENGINE_VENV} with {base_python} (one-off) ...", flush=True)
        subprocess.run([base_python, "-m", "venv", str(ENGINE_VENV)], env=env, check=True, timeout=300)
    print(f"installing the engine's runtime requirements into {ENGINE_VENV} ...", flush=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *wanted.splitlines()], env=env, check=True,
                   timeout=timeout)
    stamp.write_text(wanted)
    return str(python)


if __name__ == "__main__":  # build it ahead of a run
    parser = argparse.ArgumentParser(description="Create or update bench/.oqron-venv; print its interpreter.")
    parser.add_argument("base_python", nargs="?", default=str(ROOT / "bench" / ".peers-venv" / "bin" / "python"),
                        help="the interpreter that makes it (default: the peers' virtualenv's)")
    print(ensure_engine_venv(parser.parse_args().base_python))
