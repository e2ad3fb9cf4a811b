"""The SSRF guard: a webhook connects only to public addresses unless its endpoint (or
the webhook) allows private ones. The check runs at connect time on the address the
connection is made to, after the one DNS resolution that connection uses, so a name
that resolves to a public address when checked and a private one when connecting (DNS
rebinding) cannot slip through: we resolve once and connect to that address."""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

import httpcore

from ..errors import OqronError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# Cloud metadata services outside the link-local range (Alibaba's; AWS's IPv6 one is ULA).
METADATA_ADDRESSES = frozenset({ipaddress.ip_address("100.100.100.200"), ipaddress.ip_address("fd00:ec2::254")})


class TargetRefused(OqronError, ConnectionError):
    """The SSRF guard refused to connect: the target resolves only to private, loopback,
    link-local or metadata addresses (allow them on the endpoint with ``allow_private``)."""


def refusal(address: IPAddress) -> str | None:
    """Why the guard refuses ``address``, or None for a public one."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    for flag in ("unspecified", "loopback", "link_local", "multicast", "private", "reserved"):
        if getattr(address, f"is_{flag}"):
            return f"a {flag.replace('_', '-')} address"
    if not address.is_global:  # shared (100.64/10), documentation and other special ranges
        return "not a public address"
    return None


def resolve(host: str, port: int) -> list[tuple[int, IPAddress]]:
    """Every (family, address) ``host`` resolves to, in the resolver's order (an IP
    literal resolves to itself)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: dict[IPAddress, int] = {}
    for family, _type, _proto, _name, sockaddr in infos:
        found.setdefault(ipaddress.ip_address(str(sockaddr[0]).split("%")[0]), family)
    return [(family, address) for address, family in found.items()]


class GuardedBackend(httpcore.SyncBackend):
    """httpcore's sync network backend, connecting only to addresses the guard allows
    (every address when ``allow_private``): one resolution, the connection made to the
    resolved address itself; TLS still verifies (and SNI names) the URL's host."""

    def __init__(self, *, allow_private: bool) -> None:
        self.allow_private = allow_private

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> httpcore.NetworkStream:
        try:
            resolved = resolve(host, port)
        except OSError as exc:
            raise httpcore.ConnectError(f"cannot resolve {host!r}: {exc}") from exc
        allowed = [(family, address) for family, address in resolved
                   if self.allow_private or refusal(address) is None]
        if not allowed:
            reasons = ", ".join(f"{address} is {refusal(address)}" for _, address in resolved)
            raise TargetRefused(f"refused to connect to {host!r}: {reasons} (the SSRF guard; allow private "
                                "targets on the endpoint with allow_private=True if this is intended)")
        last: Exception | None = None
        for _family, address in allowed:
            try:
                return super().connect_tcp(str(address), port, timeout, local_address, socket_options)
            except httpcore.ConnectError as exc:  # the next resolved address, as create_connection would
                last = exc
        assert last is not None
        raise last
