"""The distribution as users get it: built from the checkout (sdist, then the wheel from
the sdist, as ``python -m build`` does), installed into fresh virtual environments
outside the checkout. Built once per test session."""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def clean_env(**extra: str) -> dict[str, str]:
    """An environment with nothing of this checkout or this test run in it."""
    keep = {k: v for k, v in os.environ.items()
            if not k.startswith(("OQRON_", "DJANGO_", "PYTHON", "PYTEST", "VIRTUAL_ENV", "COV_"))}
    return {**keep, **extra}


def run(args: list[str | Path], cwd: Path, *, env: dict[str, str] | None = None, timeout: float = 600,
        check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in args], cwd=cwd, env=env or clean_env(), capture_output=True,
                            text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} exited {result.returncode}:\n"
                             f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}")
    return result


@dataclass(frozen=True)
class Dist:
    wheel: Path
    sdist: Path


@pytest.fixture(scope="session")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Dist:
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--outdir", out, ROOT], cwd=out)
    (wheel,), (sdist,) = out.glob("oqronkit-*.whl"), out.glob("oqronkit-*.tar.gz")
    return Dist(wheel, sdist)


@dataclass(frozen=True)
class Venv:
    path: Path

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def pip_install(self, *requirements: str | Path) -> None:
        run([self.python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *requirements],
            cwd=self.path)


def make_venv(where: Path) -> Iterator[Venv]:
    venv.EnvBuilder(with_pip=True, clear=True).create(where)
    yield Venv(where)


@pytest.fixture(scope="session")
def board_venv(dist: Dist, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Venv]:
    """The wheel with the integration, the board and Postgres, and the documented server."""
    for made in make_venv(tmp_path_factory.mktemp("board-venv")):
        made.pip_install(f"{dist.wheel}[django,postgres]", "gunicorn")
        yield made
