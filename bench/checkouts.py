"""Helpers for the A/B scripts that compare this checkout with another revision.

* ``other_checkout(spec)``: a directory as given, or a revision checked out into a
  temporary ``git worktree`` (removed on the way out), so ``--against 3ef4fdc`` works
  without preparing anything;
* ``merge_base()``: the default revision to compare with (``git merge-base HEAD main``);
* ``scratch_database(pg_url, name)``: a database of this invocation, dropped afterwards
  (each arm gets its own when the two revisions' schemas may differ);
* ``drop_redis_project(url, project)``: delete every key of one project's scope, so a phase
  on the shared Redis leaves nothing behind.

The arms import ``oqronkit`` from their own checkout (``PYTHONPATH``) with this
virtualenv's dependencies: no virtualenv is built for the other revision.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def git(*argv: str) -> str:
    return subprocess.run(["git", *argv], cwd=ROOT, check=True, capture_output=True, text=True,
                          timeout=120).stdout.strip()


def merge_base(branch: str = "main") -> str:
    """The commit this checkout forked from ``branch`` (HEAD itself on ``branch``)."""
    return git("merge-base", "HEAD", branch)


def describe(spec: str | Path) -> str:
    """A short label: the abbreviated commit of a revision, or the directory's path."""
    path = Path(spec)
    if path.is_dir():
        return str(path.resolve())
    return git("rev-parse", "--short", f"{spec}^{{commit}}")


@contextlib.contextmanager
def other_checkout(spec: str | Path) -> Iterator[Path]:
    """The other arm's tree: ``spec`` itself when it is a directory, else revision ``spec``
    checked out (detached) into a temporary worktree that is removed afterwards."""
    path = Path(spec)
    if path.is_dir():
        yield path.resolve()
        return
    commit = git("rev-parse", "--verify", f"{spec}^{{commit}}")
    where = Path(tempfile.mkdtemp(prefix=f"oqron-ab-{commit[:8]}-"))
    git("worktree", "add", "--detach", "--quiet", str(where), commit)
    try:
        yield where
    finally:
        with contextlib.suppress(subprocess.SubprocessError):
            git("worktree", "remove", "--force", str(where))
        shutil.rmtree(where, ignore_errors=True)
        with contextlib.suppress(subprocess.SubprocessError):
            git("worktree", "prune")


@contextlib.contextmanager
def scratch_database(pg_url: str, name: str) -> Iterator[str]:
    """A fresh database ``name`` next to ``pg_url``'s, its URL; dropped on the way out."""
    import psycopg
    from throughput import with_database  # this folder: the scripts' own

    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # our own name, never input
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield with_database(pg_url, name)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def drop_redis_project(redis_url: str, project: str) -> None:
    """Delete the keys of ``project`` (keys.py: every key of a scope starts with
    ``oqron:<project>:``); the project names used here hold no glob character."""
    import redis

    with redis.Redis.from_url(redis_url) as client:
        unlink_matching(client, f"oqron:{project}:*")


def unlink_matching(client: Any, pattern: str) -> None:
    """Delete the keys matching ``pattern`` (SCAN and UNLINK in batches, never FLUSH)."""
    batch: list[bytes] = []
    for key in client.scan_iter(match=pattern, count=1000):
        batch.append(key)
        if len(batch) >= 500:
            client.unlink(*batch)
            batch.clear()
    if batch:
        client.unlink(*batch)
