"""Viewers and operators, scope by scope: the permissions, the scope grants they hold
(:mod:`.grants`) and the checks every page and action makes (the standalone project's
groups themselves are made by :mod:`oqronboard.models`).

- Seeing a (project, environment) needs ``oqronboard.view_board`` (checked by each
  view) and a grant covering it; the configured scope needs none while
  ``OQRON_CONFIGURED_SCOPE_OPEN`` is on. A scope one may not see is never chosen:
  :func:`current_scope` falls back to one that may be seen.
- Acting there needs ``oqronboard.operate`` and a grant with ``can_operate`` (the
  configured scope: ``operate`` alone while it is open), and in an environment of
  ``OQRON_PRODUCTION_ENVIRONMENTS`` also ``oqronboard.operate_production``.
- Superusers see and act everywhere; an API token may narrow its user's scopes, never
  widen them (:mod:`.tokens`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from functools import cached_property, wraps
from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from . import conf
from .grants import ScopeGrant
from .scope import BoardScope, ScopePattern, chosen_scope, configured_scope

logger = logging.getLogger(__name__)
VIEW_PERMISSION = "oqronboard.view_board"
OPERATE_PERMISSION = "oqronboard.operate"
OPERATE_PRODUCTION_PERMISSION = "oqronboard.operate_production"
METRICS_PERMISSION = "oqronboard.view_metrics"
VIEWERS_GROUP = "viewers"
OPERATORS_GROUP = "operators"
PRODUCTION_OPERATORS_GROUP = "production-operators"
NO_SCOPE = ("No project/environment of this board is open to you: an administrator grants them "
            "(OqronBoard's scope grants, in the admin).")


def is_viewer(user: Any) -> bool:
    """Whether ``user`` may see the board's pages and read its API (superusers may)."""
    return bool(user and user.is_authenticated and user.has_perm(VIEW_PERMISSION))


def is_operator(user: Any) -> bool:
    """Whether ``user`` may change state through the board somewhere (superusers may);
    where, :meth:`Access.operate_refusal` says."""
    return bool(user and user.is_authenticated and user.has_perm(OPERATE_PERMISSION))


class NoScopeGranted(PermissionDenied):
    """The request may see no scope at all: a 403 that says how to get one."""


class Access:
    """What one user, through one credential, may see and do, scope by scope.
    ``limit``: the patterns an API token is limited to (None: the user's own rights)."""

    def __init__(self, user: Any, *, limit: Iterable[ScopePattern] | None = None) -> None:
        self.user = user
        self.limit = None if limit is None else tuple(limit)

    @cached_property
    def _everywhere(self) -> bool:
        return bool(self.user and self.user.is_active and self.user.is_superuser)

    @cached_property
    def grants(self) -> tuple[tuple[ScopePattern, bool], ...]:
        """(pattern, can_operate) of the user's and its groups' grants: read once, and
        only when a scope other than an open configured one is asked about."""
        if not (self.user and self.user.is_authenticated) or self._everywhere:
            return ()
        rows = ScopeGrant.objects.held_by(self.user).values_list("project", "environment", "can_operate")
        return tuple((ScopePattern(project, environment), bool(operate)) for project, environment, operate in rows)

    def _within_limit(self, scope: BoardScope) -> bool:
        return self.limit is None or any(pattern.matches(scope) for pattern in self.limit)

    def _open(self, scope: BoardScope) -> bool:
        # Checked before the grants, so the usual page costs no grant query.
        return conf.configured_scope_open() and scope == configured_scope()

    def can_see(self, scope: BoardScope) -> bool:
        if not (self.user and self.user.is_authenticated) or not self._within_limit(scope):
            return False
        return self._everywhere or self._open(scope) or any(p.matches(scope) for p, _ in self.grants)

    def operate_refusal(self, scope: BoardScope) -> str | None:
        """Why this user may not act in ``scope``, or None when it may."""
        if not is_operator(self.user):
            return f"Operating the board needs the {OPERATE_PERMISSION} permission."
        if not self.can_see(scope):
            return f"{scope.project} / {scope.environment} is not open to you."
        if scope.is_production and not self.user.has_perm(OPERATE_PRODUCTION_PERMISSION):
            return (f"Acting in {scope.environment}, a production environment, also needs the "
                    f"{OPERATE_PRODUCTION_PERMISSION} permission.")
        if self._everywhere or self._open(scope) or any(p.matches(scope) and op for p, op in self.grants):
            return None
        return (f"You may look at {scope.project} / {scope.environment}, not act there: acting needs a scope "
                "grant with can_operate.")

    def can_operate(self, scope: BoardScope) -> bool:
        return self.operate_refusal(scope) is None

    def default_scope(self) -> BoardScope | None:
        """Where a request that chose nothing (or what it may not see) looks: the
        configured scope, else the first scope a token's limit or a grant names."""
        named = [p.exact for p in (*(self.limit or ()), *sorted(p for p, _ in self.grants))]
        for scope in (configured_scope(), *(s for s in named if s is not None)):
            if self.can_see(scope):
                return scope
        return None

    def visible(self, scopes: Iterable[BoardScope]) -> list[BoardScope]:
        return [scope for scope in scopes if self.can_see(scope)]


def access_of(request: HttpRequest) -> Access:
    """The request's :class:`Access` (its user's, or its API token's), made once."""
    access = getattr(request, "oqron_access", None)
    if not isinstance(access, Access) or access.user is not request.user:
        access = Access(request.user)
        setattr(request, "oqron_access", access)  # noqa: B010  (HttpRequest declares no such attribute)
    return access


def current_scope(request: HttpRequest) -> BoardScope:
    """The session's scope when the request may see it, else its default scope;
    :class:`NoScopeGranted` when it may see none."""
    access = access_of(request)
    chosen = chosen_scope(request)
    if chosen is not None and access.can_see(chosen):
        return chosen
    fallback = access.default_scope()
    if fallback is None:
        raise NoScopeGranted(NO_SCOPE)
    return fallback


def refused_choice(request: HttpRequest, scope: BoardScope) -> BoardScope | None:
    """The scope the session chose when the request fell back from it to ``scope`` (one
    it may not see any more), else None: an action then acts nowhere rather than in the
    scope the page fell back to."""
    chosen = chosen_scope(request)
    return chosen if chosen is not None and chosen != scope else None


def operate_refusal(request: HttpRequest, scope: BoardScope, *, from_session: bool = True) -> str | None:
    """Why this request may not act in ``scope`` (the one it resolved), or None."""
    refused = refused_choice(request, scope) if from_session else None
    if refused is not None:
        return (f"{refused.project} / {refused.environment} is not open to you any more: nothing was done. "
                "Pick a project/environment in the switcher.")
    return access_of(request).operate_refusal(scope)


def refuse(request: HttpRequest, scope: BoardScope, why: str) -> PermissionDenied:
    """The 403 for an action refused in ``scope``, logged (who, where, why)."""
    user = request.user.get_username() if request.user.is_authenticated else "anonymous"
    logger.warning("%s may not act in %s: %s", user, scope.key, why, extra={"action": "board.action_refused"})
    return PermissionDenied(why)


def operator_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """403 (nothing done) for anyone who may not act in the request's scope, whatever
    the template showed. Inside :func:`oqronboard.base.pages.board_view`, which sets it."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        scope: BoardScope = request.scope  # type: ignore[attr-defined]
        why = operate_refusal(request, scope)
        if why is not None:
            raise refuse(request, scope, why)
        return view(request, *args, **kwargs)

    wrapper.oqron_action = True  # type: ignore[attr-defined]  # tests walk every action by it
    return wrapper
