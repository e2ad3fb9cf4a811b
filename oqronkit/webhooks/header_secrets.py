"""Endpoint headers that hold credentials: their values live where the signing secrets
do (each delivering process's declaration of the webhook), never in a record or a run.

A header is secret when its value is a :class:`HeaderSecret` (the id of one of the
webhook's ``header_secrets``) or when its name suggests a credential
(:data:`CREDENTIAL_NAME`). Its endpoint record keeps the name with :data:`MASK` for a
value, and ``secretHeaders`` maps the name to the secret's id; the worker puts the value
back on the wire from its own ``header_secrets``. A plain value under a credential name
is one of those secrets when the endpoint is declared in code (every delivering process
runs that declaration; its id is ``<endpoint id>/<header name>``), and is refused at run
time, when no other process could learn it.

Records an older version wrote hold such values in ``headers``: they are masked on every
read, still sent (so deliveries keep working), and taken out of the record when the
endpoint's declaration holds the same value or its headers are set again.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigurationError

#: What every reader shows for a secret header's value: never any part of the value.
MASK = "••••••"
#: Header names that suggest a credential (case-insensitive, anywhere in the name).
CREDENTIAL_NAME = re.compile(
    r"auth|token|key|secret|passw|passphrase|passcode|pwd|session|cookie|signature|credential|bearer|jwt"
    r"|csrf|xsrf|private|(?:^|[-_.])(?:pass|sig|otp)(?:$|[-_.])", re.IGNORECASE)
# A value h11 sends as it is (visible ASCII, inner spaces): anything else would fail in the
# client, whose error message quotes the value into the run and the breaker's record.
SENDABLE = re.compile(r"^[\x21-\x7e]+(?:[ \t]+[\x21-\x7e]+)*$")
MAX_VALUE_LENGTH = 1000


@dataclass(frozen=True, slots=True)
class HeaderSecret:
    """An endpoint header's value by reference: the webhook's header secret ``id``
    (``oqronkit.webhook(..., header_secrets={id: value})`` in every process that delivers).
    The records keep the id; the delivering worker sends the value."""

    id: str


def is_credential(name: str) -> bool:
    """Whether a header's name suggests a credential (its value is then secret)."""
    return CREDENTIAL_NAME.search(name) is not None


def declared_id(endpoint_id: str, name: str) -> str:
    """The id of a credential value given in an endpoint's declaration ('/' is in no
    id a user chooses, so it takes no other secret's place)."""
    return f"{endpoint_id}/{name}"


def check_value(value: Any, what: str) -> str:
    """A secret header value, checked without ever quoting it in the error."""
    if not isinstance(value, str) or len(value) > MAX_VALUE_LENGTH or not SENDABLE.match(value):
        raise ConfigurationError(f"{what} must be 1-{MAX_VALUE_LENGTH} visible ASCII characters (inner spaces "
                                 "allowed, none leading or trailing); the value is not shown here.")
    return value


def shown_headers(stored: Mapping[str, Any], secret_names: Iterable[str]) -> tuple[dict[str, str], dict[str, str]]:
    """An endpoint record's ``headers`` as every reader shows them (each secret one
    masked), and the credential values an older version left there (still sent)."""
    names = set(secret_names)
    shown: dict[str, str] = {}
    left: dict[str, str] = {}
    for name, value in stored.items():
        secret = name in names or is_credential(name)
        shown[name] = MASK if secret else str(value)
        if secret and name not in names and isinstance(value, str) and value != MASK:
            left[name] = value
    return shown, left


def masked_endpoint(value: Any) -> Any:
    """An endpoint record's value with every secret header masked (a reader's copy)."""
    if not isinstance(value, dict) or not isinstance(value.get("headers"), dict):
        return value
    names = value.get("secretHeaders")
    shown, _ = shown_headers(value["headers"], names if isinstance(names, dict) else ())
    return {**value, "headers": shown}


def masked_attempt(run: Any) -> Any:
    """A delivery run's value with the credential headers of its stored request masked
    (a run an older version wrote holds them; the engine now stores them masked)."""
    request = run.get("request") if isinstance(run, dict) else None
    if not isinstance(request, dict) or not isinstance(request.get("headers"), dict):
        return run
    shown, _ = shown_headers(request["headers"], ())
    return {**run, "request": {**request, "headers": shown}}


def moved_out(value: Mapping[str, Any], declared: Mapping[str, Any], secrets: Mapping[str, str]
              ) -> dict[str, Any] | None:
    """The changes that take an older version's credential values out of an endpoint's
    record where its declaration holds the same value (the declared secret's id takes
    its place); None when there is nothing to move."""
    stored, refs = value.get("headers"), value.get("secretHeaders") or {}
    if not isinstance(stored, dict) or not isinstance(refs, dict):
        return None
    _, left = shown_headers(stored, refs)
    declared_refs = declared.get("secretHeaders") or {}
    moved = {name: declared_refs[name] for name, text in left.items()
             if name in declared_refs and secrets.get(declared_refs[name]) == text}
    if not moved:
        return None
    return {"headers": {**stored, **dict.fromkeys(moved, MASK)}, "secretHeaders": {**refs, **moved}}


def scrubbed(text: str, values: Iterable[str]) -> str:
    """``text`` (an error message) with every secret value sent replaced by the mask, as
    given or quoted as bytes (as the HTTP client quotes a value it refuses)."""
    for value in values:
        for form in (value, repr(value.encode("utf-8", "replace"))[2:-1]):
            text = text.replace(form, MASK) if form else text
    return text
