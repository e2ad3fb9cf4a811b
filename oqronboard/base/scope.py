"""Which (project, environment) a request looks at: the project/environment switcher.

The choice lives in the session; every board query starts from :class:`BoardScope`, so
rows of another scope cannot leak into a page (tests/board/test_scope.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from django.http import HttpRequest

import oqronkit
from oqronkit.contrib.django import engine

SESSION_KEY = "oqron_scope"
PRODUCTION_NAMES = frozenset({"production", "prod", "live"})
# The engine's own rule for project and environment names (oqronkit.config).
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


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
        return self.environment.lower() in PRODUCTION_NAMES

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


def configured_scope() -> BoardScope:
    config = engine.get_config()
    return BoardScope(config.project, config.environment)


def current_scope(request: HttpRequest) -> BoardScope:
    """The session's scope, or the configured one."""
    chosen = request.session.get(SESSION_KEY)
    if isinstance(chosen, str):
        scope = BoardScope.parse(chosen)
        if scope is not None:
            return scope
    return configured_scope()

