"""The webhook of the secret-header process test (imported by ``python -m oqronkit worker``):
its header secret and its declared endpoint's credential come from the worker's
environment, as a deployment's would; the producer in the test holds neither."""

from __future__ import annotations

import os

import oqronkit
from tests.processes.webhook_app import OPTIONS  # the producer's too: one control record

keyed = oqronkit.webhook(
    "keyed", **OPTIONS, header_secrets={"crm-token": os.environ["KEYED_CRM_TOKEN"]},
    endpoints=[{"id": "shop", "url": os.environ["KEYED_SHOP_URL"], "allow_private": True,
                "headers": {"X-Api-Key": os.environ["KEYED_SHOP_KEY"], "X-Tenant": "acme"}}])
