"""Standard Webhooks signatures (https://www.standardwebhooks.com): ``webhook-id``,
``webhook-timestamp`` and ``webhook-signature: v1,<base64 HMAC-SHA256 of
"<id>.<timestamp>.<body>">``, with ``whsec_``-prefixed base64 secrets and one signature
per secret while a secret is rotated. Both sides: the sender signs, :func:`verify`
checks on the receiver's side."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import secrets as random_secrets
import time
from collections.abc import Mapping, Sequence

from ..errors import ConfigurationError, OqronError

SECRET_PREFIX = "whsec_"
ID_HEADER = "webhook-id"
TIMESTAMP_HEADER = "webhook-timestamp"
SIGNATURE_HEADER = "webhook-signature"
DEFAULT_TOLERANCE = 300


class WebhookVerificationError(OqronError, ValueError):
    """A received webhook's headers or signature do not verify: reject the request (the
    message says which check failed, never the expected signature)."""


def secret_key(secret: str) -> bytes:
    """The HMAC key of a ``whsec_<base64>`` secret (the prefix is optional, as in the
    reference libraries); ConfigurationError for anything else."""
    if not isinstance(secret, str) or not secret:
        raise ConfigurationError("A webhook secret must be a non-empty 'whsec_<base64>' string.")
    encoded = secret.removeprefix(SECRET_PREFIX)
    try:
        key = base64.b64decode(encoded, validate=True)
    except (binascii.Error, ValueError):
        raise ConfigurationError("A webhook secret must be 'whsec_' followed by base64 (see new_secret()).") from None
    if not 16 <= len(key) <= 128:
        raise ConfigurationError(f"A webhook secret must hold 16 to 128 bytes, this one holds {len(key)}.")
    return key


def new_secret() -> str:
    """A fresh random secret in the Standard Webhooks form (24 random bytes)."""
    return SECRET_PREFIX + base64.b64encode(random_secrets.token_bytes(24)).decode("ascii")


def _signature(key: bytes, msg_id: str, timestamp: int, body: bytes) -> str:
    signed = f"{msg_id}.{timestamp}.".encode() + body
    return base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode("ascii")


def sign(msg_id: str, timestamp: int, body: bytes, keys: Sequence[bytes]) -> str:
    """The ``webhook-signature`` value: ``v1,<sig>`` per key, space-separated."""
    return " ".join(f"v1,{_signature(key, msg_id, timestamp, body)}" for key in keys)


def verify(headers: Mapping[str, str], body: bytes | str, secrets: str | Sequence[str], *,
           tolerance: int = DEFAULT_TOLERANCE, now: float | None = None) -> None:
    """Check a received webhook: its id, a timestamp within ``tolerance`` seconds of now
    (the replay window) and at least one ``v1`` signature made with one of ``secrets``
    (several during a rotation), compared in constant time. Raises
    :class:`WebhookVerificationError`; returns None when the webhook is genuine."""
    keys = [secret_key(s) for s in ([secrets] if isinstance(secrets, str) else secrets)]
    if not keys:
        raise ConfigurationError("verify needs at least one secret.")
    found = {k.lower(): v for k, v in headers.items()}
    msg_id, stamp, signatures = (found.get(ID_HEADER), found.get(TIMESTAMP_HEADER), found.get(SIGNATURE_HEADER))
    if not msg_id or not stamp or not signatures:
        raise WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature header")
    try:
        timestamp = int(stamp)
    except ValueError:
        raise WebhookVerificationError("webhook-timestamp is not an integer") from None
    current = time.time() if now is None else now
    if timestamp < current - tolerance:
        raise WebhookVerificationError("webhook-timestamp is too old (outside the replay window)")
    if timestamp > current + tolerance:
        raise WebhookVerificationError("webhook-timestamp is too far in the future")
    payload = body.encode("utf-8") if isinstance(body, str) else bytes(body)
    expected = [_signature(key, msg_id, timestamp, payload).encode() for key in keys]
    offered = [part[3:].encode() for part in signatures.split() if part.startswith("v1,")]
    # Every pair is compared (no early exit on a match) so the time taken says nothing.
    matched = False
    for candidate in offered:
        for wanted in expected:
            matched |= hmac.compare_digest(candidate, wanted)
    if not matched:
        raise WebhookVerificationError("no webhook-signature matches")
