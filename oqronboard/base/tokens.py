"""The JSON API's tokens (``OQRON_API_TOKENS``): who each acts as, and the scopes it is
limited to. A token narrows its user's rights, never widens them: it sees and acts
only where both its scopes and the user's own grants allow (:class:`.roles.Access`).

A holder is written three ways (docs/reference/json-api.md):

- ``"alice"``: acts as alice, with alice's own grants;
- ``"alice:shop/production:shop/*"``: as alice, limited to those scopes (``:`` cannot
  appear in a username or a scope name; the environment variable's form,
  ``OQRON_API_TOKENS="<token>=alice:shop/production,<token>=bob"``);
- ``{"user": "alice", "scopes": ["shop/production", "shop/*"]}`` in the settings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import conf
from .scope import ScopePattern


@dataclass(frozen=True)
class TokenHolder:
    """The user a token acts as, and the scopes it is limited to (None: the user's own)."""

    username: str
    scopes: tuple[ScopePattern, ...] | None = None


def holder(value: object) -> TokenHolder:
    """One ``OQRON_API_TOKENS`` value read; ValueError says what is wrong with it."""
    if isinstance(value, str):
        username, *parts = (part.strip() for part in value.split(":"))
        return _holder(username, parts or None)
    if isinstance(value, Mapping):
        listed = value.get("scopes")
        if listed is not None and (isinstance(listed, str) or not isinstance(listed, Sequence)):
            raise ValueError('"scopes" must be a list of "project/environment" strings.')
        return _holder(value.get("user"), None if listed is None else list(listed))
    raise ValueError('a token maps to a username, "user:project/environment:...", or {"user": ..., "scopes": [...]}.')


def _holder(username: object, scopes: Sequence[object] | None) -> TokenHolder:
    if not isinstance(username, str) or not username.strip():
        raise ValueError("a token needs the username it acts as.")
    if scopes is not None and not scopes:
        raise ValueError("a token limited to no scope would see nothing: list its scopes, or none at all.")
    patterns = None if scopes is None else tuple(ScopePattern.parse(str(s)) for s in scopes)
    return TokenHolder(username.strip(), patterns)


def token_holders() -> list[tuple[str, TokenHolder | ValueError]]:
    """Every configured token with its holder, or the error that makes it unusable
    (such a token never authenticates; ``manage.py check`` names it)."""
    found: list[tuple[str, TokenHolder | ValueError]] = []
    for token, value in conf.api_tokens().items():
        try:
            found.append((str(token), holder(value)))
        except ValueError as exc:
            found.append((str(token), exc))
    return found
