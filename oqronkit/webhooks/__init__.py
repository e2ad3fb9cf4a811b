"""Outgoing webhooks: events fired to HTTP endpoints, signed per Standard Webhooks, each
delivery a job of the webhook's delivery queue and each attempt a run.

An endpoint header whose value is a secret takes a :class:`HeaderSecret` (see
header_secrets.py). The receiver's side needs nothing but :func:`verify` (and, in a
Django project, :func:`oqronkit.webhooks.django_view.verified_webhook`); importing this
package does not import the sender's machinery.
"""

from __future__ import annotations

from .header_secrets import HeaderSecret
from .signing import WebhookVerificationError, new_secret, sign, verify

__all__ = ["HeaderSecret", "WebhookVerificationError", "new_secret", "sign", "verify"]
