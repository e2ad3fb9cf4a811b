"""Three scopes in one database for the per-scope access tests (issue 34, F5): the
configured one (``xmine-*`` rows), ``<shop>/staging`` (``xstage-*``) and
``<shop>/production`` (``xprod-*``); the ``scopes`` fixture (registered in conftest)
and what the tests do with them."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from django.test import Client
from django.urls import reverse

from oqronboard.base.scope import SESSION_KEY, BoardScope
from oqronkit import DurablePlane
from oqronkit.contrib.django import engine
from tests.board.seed import Board, dead_job, error, job_value, put_jobs, put_runs, queue_control, run_value


@dataclass
class Scopes:
    board: Board
    staging: BoardScope
    production: BoardScope

    def plane(self, scope: BoardScope) -> DurablePlane:
        return self.board.plane if scope == self.board.scope else engine.durable_for(scope.project,
                                                                                     scope.environment)


def fill(plane: DurablePlane, tag: str) -> None:
    queue_control(plane, "emails")
    put_jobs(plane, [job_value("emails", f"{tag}-w"), dead_job("emails", f"{tag}-d", message=f"{tag} boom")])
    put_runs(plane, [run_value(f"{tag}-run", status="failed", error=error(f"{tag} failure")),
                     run_value(f"{tag}-live", status="running")])


@pytest.fixture
def scopes(board: Board) -> Scopes:
    shop = f"{board.db.project}-shop"
    found = Scopes(board, BoardScope(shop, "staging"), BoardScope(shop, "production"))
    fill(board.plane, "xmine")
    fill(found.plane(found.staging), "xstage")
    fill(found.plane(found.production), "xprod")
    return found


def without_tokens(body: bytes) -> bytes:
    """A page without its CSRF tokens, which Django masks afresh on every render."""
    return re.sub(rb'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]*"', rb"\1", body)


def choose(client: Client, scope: BoardScope) -> None:
    """Forge the session's switcher value, as a crafted cookie-backed session could."""
    session = client.session
    session[SESSION_KEY] = scope.key
    session.save()


def switch(client: Client, scope: BoardScope) -> int:
    return client.post(reverse("oqronboard:switch-scope"), {"scope": scope.key}).status_code


def dead_letters(scopes: Scopes, scope: BoardScope) -> list[str]:
    return [r.id for r in scopes.plane(scope).list("queue_dlq:emails").records]


def audits(scopes: Scopes, scope: BoardScope) -> list:
    return scopes.plane(scope).list("audit").records
