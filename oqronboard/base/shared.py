"""What every viewer's poll would recompute, computed once per scope for a few seconds
(``OQRON_BOARD_CACHE_SECONDS``) in Django's cache: django-redis in the Redis modes, so
20 viewers polling cost the database what one does. An operator's action starts a new
generation of its scope, so the page it refreshes is never older than the action."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

from django.core.cache import cache

from oqronkit.clock import now_ms
from oqronkit.errors import OqronError
from oqronkit.services.kept_depths import forget_kept

from . import conf
from .scope import BoardScope

logger = logging.getLogger(__name__)


def _scope_key(scope: BoardScope) -> str:
    """A cache-safe name of the scope (its names may hold spaces or any character)."""
    return hashlib.blake2b(f"{scope.project}\x00{scope.environment}".encode("utf-8", "surrogatepass"),
                           digest_size=12).hexdigest()


def _generation_key(scope: BoardScope) -> str:
    return f"gen:{_scope_key(scope)}"


def shared[T](scope: BoardScope, name: str, compute: Callable[[], T]) -> T:
    """``compute()``, or what it returned for ``scope`` and ``name`` less than the
    setting's seconds ago and since the scope's last action."""
    seconds = conf.cache_seconds()
    if seconds <= 0:
        return compute()
    key = _shared_key(scope, name)
    found = cache.get(key)
    if found is not None:
        return found  # type: ignore[no-any-return,unused-ignore]
    value = compute()
    cache.set(key, value, timeout=seconds)
    return value


def _shared_key(scope: BoardScope, name: str) -> str:
    generation = cache.get(_generation_key(scope), 0)
    return f"shared:{_scope_key(scope)}:{generation}:{name}"


def shared_fresh(scope: BoardScope, name: str) -> Any:
    """What :func:`shared` (or :func:`shared_at`) holds for ``scope`` and ``name`` now,
    without computing it: None when nothing fresh is held (or nothing is shared)."""
    if conf.cache_seconds() <= 0:
        return None
    return cache.get(_shared_key(scope, name))


def shared_at[T](scope: BoardScope, name: str, compute: Callable[[], T]) -> tuple[T, int]:
    """:func:`shared`, with when ``compute()`` ran (epoch ms), for the page to say so."""
    return shared(scope, name, lambda: (compute(), now_ms()))


def new_generation(scope: BoardScope) -> None:
    """Forget what was shared for ``scope`` (after an action changed what it shows),
    the queue depths the leader keeps counted included."""
    try:
        cache.incr(_generation_key(scope))
    except ValueError:  # no generation yet
        cache.set(_generation_key(scope), 1, timeout=None)
    try:
        forget_kept(scope.engine.hot)
    except OqronError as exc:  # the hot plane is away: nothing is read from it either
        logger.warning("could not mark the kept queue depths stale: %s", exc,
                       extra={"action": "board.kept_depths_stale"})


def kept_depths_ms() -> int:
    """How old the queue depths the leader keeps counted may be when a page takes them:
    as old as any figure every viewer shares (0: each read counts)."""
    return int(conf.cache_seconds() * 1000)


def refresh_scope(*, project: str, environment: str, **kwargs: Any) -> None:
    """``scope_changed``'s receiver: an operator acted outside the board (``manage.py oqron``)."""
    try:
        new_generation(BoardScope(project, environment))
    except Exception as exc:  # the cache expires in seconds anyway: never fail a done action for it
        logger.warning("could not refresh the board's cache: %s", exc, extra={"action": "cli.cache_refresh"})
