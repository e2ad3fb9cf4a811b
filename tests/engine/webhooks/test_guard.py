"""The SSRF guard: private, loopback, link-local and metadata addresses are refused at
connect time, after the one resolution the connection uses (a name resolving to
127.0.0.1 included), unless the endpoint allows private targets."""

from __future__ import annotations

import ipaddress
import socket

import pytest

from oqronkit import Engine
from oqronkit.webhooks import client
from oqronkit.webhooks.guard import GuardedBackend, TargetRefused, refusal
from tests.receiver import Receiver

from .conftest import SECRET, running, wait_until
from .test_delivery import delivery_runs


@pytest.mark.parametrize(("address", "refused"), [
    ("127.0.0.1", "loopback"), ("::1", "loopback"), ("10.1.2.3", "private"), ("172.16.0.1", "private"),
    ("192.168.1.1", "private"), ("169.254.169.254", "link-local"), ("fe80::1", "link-local"),
    ("fd00:ec2::254", "metadata"), ("100.100.100.200", "metadata"), ("100.64.0.1", "not a public"),
    ("0.0.0.0", "unspecified"), ("::ffff:127.0.0.1", "loopback"), ("224.0.0.1", "multicast"),
    ("8.8.8.8", None), ("2606:4700:4700::1111", None),
])
def test_which_addresses_are_refused(address, refused):
    reason = refusal(ipaddress.ip_address(address))
    assert (reason is None) if refused is None else (refused in reason)


def test_a_name_resolving_to_loopback_is_refused_at_connect_time(receiver: Receiver):
    with pytest.raises(TargetRefused, match="loopback"):
        client.post(receiver.url("/in", host="localhost"), b"{}", {}, timeout=2, allow_private=False)
    with pytest.raises(TargetRefused, match=r"127\.0\.0\.1 is a loopback"):
        client.post(receiver.url("/in"), b"{}", {}, timeout=2, allow_private=False)
    assert receiver.requests() == []
    answer = client.post(receiver.url("/in", host="localhost"), b"{}", {}, timeout=2, allow_private=True)
    assert answer.status == 200 and len(receiver.requests()) == 1


def test_the_connection_goes_to_the_address_that_was_checked(monkeypatch, receiver: Receiver):
    """DNS rebinding: a resolver answering differently on each lookup gets one lookup per
    connection, and the socket connects to that answer (never a second lookup)."""
    calls: list[str] = []
    real = socket.getaddrinfo

    def rebinding(host, port, *args, **kwargs):
        calls.append(host)
        return real("127.0.0.1", port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", rebinding)
    backend = GuardedBackend(allow_private=True)
    stream = backend.connect_tcp("rebind.example", receiver.port, timeout=2)
    try:
        assert stream.get_extra_info("socket").getpeername()[0] == "127.0.0.1"
    finally:
        stream.close()
    # One lookup of the name; the socket layer only parses the checked address it is given.
    assert calls == ["rebind.example", "127.0.0.1"]
    with pytest.raises(TargetRefused, match=r"rebind\.example"):
        GuardedBackend(allow_private=False).connect_tcp("rebind.example", receiver.port, timeout=2)


def test_a_refused_delivery_is_dead_at_once_with_the_reason(engine: Engine, receiver: Receiver):
    orders = engine.webhook("orders", secret=SECRET, schedule=[0, 0.1])
    orders.add_endpoint(receiver.url("/in", host="localhost"), id="local")  # private targets not allowed
    [job_id] = orders.fire("order.paid")
    with running(engine, poll_interval=0.05):
        wait_until(lambda: engine.durable.get("queue_dlq:webhook/orders", job_id) is not None)
    assert receiver.requests() == []
    [run] = delivery_runs(engine, job_id)
    assert run["response"] is None and "SSRF guard" in run["error"]["message"]


def test_a_webhook_may_allow_private_targets_for_every_endpoint(engine: Engine, receiver: Receiver):
    orders = engine.webhook("orders", secret=SECRET, allow_private=True)
    orders.add_endpoint(receiver.url("/in", host="localhost"), id="local")
    orders.fire("order.paid")
    with running(engine, poll_interval=0.05):
        wait_until(lambda: len(receiver.requests("/in")) == 1)
