"""Standard Webhooks signatures: ours verify with the reference package and with our own
receiver helper, theirs with ours; rotation, the replay window, tampering, bad secrets,
and the Django view decorator's 400/401."""

from __future__ import annotations

import base64
import time

import pytest
import standardwebhooks

from oqronkit.errors import ConfigurationError
from oqronkit.webhooks import WebhookVerificationError, new_secret, sign, verify
from oqronkit.webhooks.signing import secret_key

from .conftest import NEW_SECRET, SECRET

BODY = b'{"type":"order.paid","timestamp":"2026-01-01T00:00:00.000Z","data":{"id":1}}'


def signed_headers(*secrets: str, msg_id: str = "msg_1", at: int | None = None, body: bytes = BODY) -> dict[str, str]:
    stamp = int(time.time()) if at is None else at
    return {"webhook-id": msg_id, "webhook-timestamp": str(stamp),
            "webhook-signature": sign(msg_id, stamp, body, [secret_key(s) for s in secrets])}


def test_the_reference_package_verifies_our_signature():
    headers = signed_headers(SECRET)
    assert standardwebhooks.Webhook(SECRET).verify(BODY, headers) == {
        "type": "order.paid", "timestamp": "2026-01-01T00:00:00.000Z", "data": {"id": 1}}


def test_we_verify_the_reference_packages_signature():
    stamp = int(time.time())
    from datetime import UTC, datetime

    signature = standardwebhooks.Webhook(SECRET).sign("msg_2", datetime.fromtimestamp(stamp, tz=UTC), BODY.decode())
    verify({"Webhook-Id": "msg_2", "Webhook-Timestamp": str(stamp), "Webhook-Signature": signature}, BODY, SECRET)


def test_during_a_rotation_both_secrets_sign_and_either_verifies():
    headers = signed_headers(SECRET, NEW_SECRET)
    assert len(headers["webhook-signature"].split()) == 2
    for secret in (SECRET, NEW_SECRET):
        standardwebhooks.Webhook(secret).verify(BODY, headers)
        verify(headers, BODY, secret)
    verify(headers, BODY, [new_secret(), NEW_SECRET])  # a receiver holding the new one among others
    with pytest.raises(WebhookVerificationError, match="no webhook-signature matches"):
        verify(headers, BODY, new_secret())


@pytest.mark.parametrize("change", ["body", "id", "timestamp", "signature"])
def test_a_tampered_webhook_does_not_verify(change):
    headers = signed_headers(SECRET)
    body = BODY
    if change == "body":
        body = BODY.replace(b"1", b"2")
    elif change == "id":
        headers["webhook-id"] = "msg_other"
    elif change == "timestamp":
        headers["webhook-timestamp"] = str(int(headers["webhook-timestamp"]) - 1)
    else:
        headers["webhook-signature"] = "v1," + base64.b64encode(b"x" * 32).decode()
    with pytest.raises(WebhookVerificationError):
        verify(headers, body, SECRET)


def test_the_replay_window_refuses_old_and_future_timestamps():
    now = time.time()
    verify(signed_headers(SECRET, at=int(now) - 299), BODY, SECRET, now=now)
    with pytest.raises(WebhookVerificationError, match="too old"):
        verify(signed_headers(SECRET, at=int(now) - 301), BODY, SECRET, now=now)
    with pytest.raises(WebhookVerificationError, match="future"):
        verify(signed_headers(SECRET, at=int(now) + 301), BODY, SECRET, now=now)
    verify(signed_headers(SECRET, at=int(now) - 1000), BODY, SECRET, tolerance=2000, now=now)


@pytest.mark.parametrize("missing", ["webhook-id", "webhook-timestamp", "webhook-signature"])
def test_missing_headers_are_refused(missing):
    headers = signed_headers(SECRET)
    del headers[missing]
    with pytest.raises(WebhookVerificationError, match="missing"):
        verify(headers, BODY, SECRET)


@pytest.mark.parametrize("secret", ["", "whsec_", "whsec_not base64!", "whsec_" + base64.b64encode(b"short").decode(),
                                    None, 42])
def test_bad_secrets_are_configuration_errors_that_never_echo_the_secret(secret):
    with pytest.raises(ConfigurationError) as caught:
        secret_key(secret)
    if isinstance(secret, str) and len(secret) > 6:
        assert secret[6:] not in str(caught.value)


def test_new_secrets_are_distinct_and_usable():
    first, second = new_secret(), new_secret()
    assert first != second and first.startswith("whsec_") and len(secret_key(first)) == 24


def test_the_django_view_decorator_answers_400_and_401_and_calls_the_view_when_genuine():
    from django.http import HttpResponse
    from django.test import RequestFactory

    from oqronkit.webhooks.django_view import verified_webhook

    calls = []

    @verified_webhook([SECRET])
    def receive(request):
        calls.append(request.body)
        return HttpResponse("thanks")

    factory = RequestFactory()

    def post(headers):
        return receive(factory.post("/hook", data=BODY, content_type="application/json",
                                    headers=headers))

    assert post(signed_headers(SECRET)).status_code == 200 and calls == [BODY]
    assert post({}).status_code == 400
    forged = signed_headers(new_secret())
    assert post(forged).status_code == 401
    assert post(signed_headers(SECRET, at=int(time.time()) - 3600)).status_code == 401
    assert calls == [BODY]
