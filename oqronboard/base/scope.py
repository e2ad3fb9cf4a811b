"""Which (project, environment) a request looks at: the project/environment switcher.

The choice lives in the session; every board query starts from :class:`BoardScope`, so
rows of another scope cannot leak into a page (tests/board/test_scope.py). Whether the
request may look there at all is :mod:`oqronboard.base.roles`' to say (``current_scope``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from django.http import HttpRequest

import oqronkit
from oqronkit.contrib.django import engine

from . import conf

SESSION_KEY = "oqron_scope"
ANY = "*"
# The engine's own rule for project and environment names (oqronkit.config).
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
#: A grant's or a token's project or environment: a name, or ``*`` for any.
PATTERN_PART = r"^(\*|[A-Za-z0-9][A-Za-z0-9._-]{0,99})$"
_PATTERN_PART = re.compile(PATTERN_PART)


@dataclass(frozen=True)
class BoardScope:
    """One (project, environment) and the engine objects that act in it."""

    project: str
    environment: str

    @property
    def key(self) -> str:
        """``project/environment``, the switcher's option value."""
        return f"{self.project}/{self.environment}"

    @property
    def is_production(self) -> bool:
        """An environment of ``OQRON_PRODUCTION_ENVIRONMENTS``: the red badge, and its
        actions need ``oqronboard.operate_production`` too."""
        return self.environment.lower() in conf.production_environments()

    @cached_property
    def engine(self) -> oqronkit.Engine:
        """The engine in this scope (its actions write only this scope's rows)."""
        return engine.engine_for(self.project, self.environment)

    def queue(self, name: str) -> oqronkit.Queue:
        """A control object for queue ``name`` in this scope (handler or not)."""
        return self.engine.controller(name)

    @classmethod
    def parse(cls, key: str) -> BoardScope | None:
        """``project/environment`` back to a scope; None when malformed."""
        project, sep, environment = (key or "").partition("/")
        if not sep or not _NAME.match(project) or not _NAME.match(environment):
            return None
        return cls(project, environment)


@dataclass(frozen=True, order=True)
class ScopePattern:
    """The scopes a grant or a token covers: a project and an environment, each a name
    or ``*`` (any)."""

    project: str
    environment: str

    def matches(self, scope: BoardScope) -> bool:
        return self.project in (ANY, scope.project) and self.environment in (ANY, scope.environment)

    @property
    def exact(self) -> BoardScope | None:
        """The one scope this pattern names, or None when it holds a ``*``."""
        if ANY in (self.project, self.environment):
            return None
        return BoardScope(self.project, self.environment)

    @classmethod
    def parse(cls, text: str) -> ScopePattern:
        """``project/environment`` (``*`` in either part); ValueError when malformed."""
        project, sep, environment = str(text).strip().partition("/")
        if not sep or not _PATTERN_PART.match(project) or not _PATTERN_PART.match(environment):
            raise ValueError(f"{text!r} is not a scope: write project/environment, either part a name or *.")
        return cls(project, environment)


def configured_scope() -> BoardScope:
    config = engine.get_config()
    return BoardScope(config.project, config.environment)


def chosen_scope(request: HttpRequest) -> BoardScope | None:
    """The scope the session's switcher chose, or None: a choice, not a right (see
    :func:`oqronboard.base.roles.current_scope`)."""
    chosen = request.session.get(SESSION_KEY) if hasattr(request, "session") else None
    return BoardScope.parse(chosen) if isinstance(chosen, str) else None
