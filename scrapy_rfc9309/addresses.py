"""Which addresses are internal and which origins private: a public origin's robots.txt redirect is not followed
to an internal address (docs/middleware.md, "The redirect guard").  Internal: not globally routable, or multicast
(or ``RFC9309_INTERNAL_NETWORKS``); a private origin (internal IP, one label, :data:`PRIVATE_SUFFIXES`) may."""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from contextlib import suppress
from functools import cache
from urllib.parse import urlsplit

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

#: name suffixes outside the public DNS (special-use and de-facto private)
PRIVATE_SUFFIXES = ("local", "localhost", "internal", "home.arpa", "lan", "intranet", "corp", "private")
_NAT64 = ipaddress.ip_network("64:ff9b::/96")


@cache
def _legacy_ipv4() -> re.Pattern[str]:
    """The legacy IPv4 forms getaddrinfo accepts: "127.1", "0x7f.0.0.1", "2130706433" (compiled on first use)."""
    return re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]*|[0-9]+)){0,3}")


def parse_networks(value: object, name: str) -> tuple[IPNetwork, ...] | None:
    """A setting's networks (a list, or a JSON or comma-separated string); None: the default set; else ValueError."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            import json

            try:
                value = json.loads(text)
            except ValueError:
                raise ValueError(f"{name}={value!r} is not a valid JSON list of networks") from None
        else:
            value = [part for part in (p.strip() for p in text.split(",")) if part]
    if not isinstance(value, Iterable) or isinstance(value, (bytes, dict)):
        raise ValueError(f"{name}={value!r} must be a list of networks such as ['10.0.0.0/8']")
    networks = []
    for item in value:
        try:
            networks.append(ipaddress.ip_network(str(item).strip(), strict=False))
        except ValueError:
            raise ValueError(f"{name}: {item!r} is not an IP network such as '10.0.0.0/8'") from None
    return tuple(networks)


class AddressPolicy:
    """Tells internal addresses and private origins apart (see the module docstring)."""

    def __init__(self, networks: tuple[IPNetwork, ...] | None = None) -> None:
        self.networks = networks  # the networks that count as internal, or None for "not globally routable"

    def internal(self, address: IPAddress | str) -> bool:
        ip = ipaddress.ip_address(address) if isinstance(address, str) else address
        if isinstance(ip, ipaddress.IPv6Address):
            embedded = ip.ipv4_mapped or ip.sixtofour
            if embedded is None and ip in _NAT64:
                embedded = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
            if embedded is not None and self._internal(embedded):
                return True
        return self._internal(ip)

    def _internal(self, ip: IPAddress) -> bool:
        if self.networks is not None:
            return any(ip.version == net.version and ip in net for net in self.networks)
        return not ip.is_global or ip.is_multicast

    def internal_literal(self, url: str) -> str | None:
        """The host of ``url`` when it is an internal IP address (in any form a resolver accepts); else None."""
        host = urlsplit(url).hostname or ""
        address = ip_literal(host)
        return host if address is not None and self.internal(address) else None

    def private_origin(self, origin: str) -> bool:
        """Whether the canonical origin ``scheme://host:port`` is itself private."""
        host = origin.partition("://")[2].rpartition(":")[0].strip("[]").lower().rstrip(".")
        if (address := ip_literal(host)) is not None:
            return self.internal(address)
        if "." not in host:
            return True  # localhost, a single-label intranet name
        return host.endswith(tuple("." + suffix for suffix in PRIVATE_SUFFIXES)) or host in PRIVATE_SUFFIXES


def ip_literal(host: str) -> IPAddress | None:
    """``host`` as an IP address, also in the legacy IPv4 forms; None for a name."""
    host = host.strip("[]")
    with suppress(ValueError):
        return ipaddress.ip_address(host)
    if _legacy_ipv4().fullmatch(host):
        with suppress(OSError):
            return ipaddress.IPv4Address(socket.inet_aton(host))
    return None
