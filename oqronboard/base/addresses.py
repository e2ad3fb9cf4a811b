"""The client's address as the login limiter counts it, behind trusted reverse proxies.

``REMOTE_ADDR`` is the peer: behind a reverse proxy, the proxy. A peer listed in
``OQRON_TRUSTED_PROXIES`` appended the address it saw to ``X-Forwarded-For``, so the
list is read from its right end, past every trusted hop, to the first address no
trusted proxy owns: the rightmost untrusted hop (MDN's advice for the header, and
Rails' ``remote_ip``). Entries left of it were written before any proxy of ours saw the
request, so a client can forge them: they are never believed, and a forged header moves
no one's count but the forger's. Without trusted proxies the header is ignored.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Any

from .conf import IPNetwork

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# An IPv6 host owns its whole /64 (SLAAC, privacy addresses): counting single addresses
# would give one client 2**64 buckets.
IPV6_BUCKET_PREFIX = 64


def parse_address(text: object) -> IPAddress | None:
    """An address as proxies write it (``1.2.3.4``, ``1.2.3.4:5678``, ``[2001:db8::1]:443``,
    ``2001:db8::1``); None for anything else (``unknown``, an obfuscated identifier)."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if text.startswith("["):  # [v6] or [v6]:port
        text = text[1:].partition("]")[0]
    elif text.count(":") == 1:  # v4:port
        text = text.partition(":")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped  # one client, one spelling
    return address


def _trusted(address: IPAddress, proxies: Sequence[IPNetwork]) -> bool:
    return any(address.version == net.version and address in net for net in proxies)


def client_ip(request: Any, proxies: Sequence[IPNetwork]) -> IPAddress | None:
    """The client's address: ``REMOTE_ADDR``, or behind trusted ``proxies`` the rightmost
    ``X-Forwarded-For`` hop they do not own. None when the peer has no IP address."""
    peer = parse_address(request.META.get("REMOTE_ADDR"))
    if peer is None or not _trusted(peer, proxies):
        return peer
    nearest = peer
    for hop in reversed(str(request.META.get("HTTP_X_FORWARDED_FOR", "")).split(",")):
        address = parse_address(hop)
        if address is None:  # no address a trusted proxy would write: stop at the last one we trust
            break
        if not _trusted(address, proxies):
            return address
        nearest = address
    return nearest


def address_key(address: IPAddress | None) -> str:
    """``address`` as a count's key: IPv4 as is, IPv6 as its /64; ``unknown`` without one."""
    if address is None:
        return "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        return str(ipaddress.IPv6Network((address, IPV6_BUCKET_PREFIX), strict=False))
    return str(address)
