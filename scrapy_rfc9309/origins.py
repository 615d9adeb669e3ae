"""The one place that decides which robots.txt governs a URL: the one of its scheme, host and port (RFC 9309
section 2.3), keyed ``"scheme://host:port"``: lower-case IDNA host, the default port explicit, no userinfo."""

from __future__ import annotations

from contextlib import suppress
from functools import lru_cache
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


@lru_cache(maxsize=4096)  # a crawl asks about few origins, twice per request; bounded for millions of hosts
def _key(scheme: str, netloc: str) -> str | None:
    default = DEFAULT_PORTS.get(scheme)
    if default is None or not netloc:
        return None
    if "@" in netloc or "[" in netloc or not netloc.isascii():
        return _slow_key(scheme, netloc, default)
    host, colon, port = netloc.rpartition(":")  # the common case, with string operations only
    if not colon:
        host, port = netloc, ""
    if not host or (port and not (port.isdigit() and int(port) <= 65535)):
        return None
    return f"{scheme}://{host.lower()}:{int(port) if port else default}"


def _slow_key(scheme: str, netloc: str, default: int) -> str | None:
    """Userinfo, IPv6 literals and non-ASCII hosts, through urllib."""
    parts = urlsplit("//" + netloc)
    try:
        port = parts.port
    except ValueError:
        return None
    if not (host := parts.hostname):
        return None
    if not host.isascii():
        with suppress(UnicodeError):  # not representable in IDNA 2003: the Unicode form, still one key per host
            host = ".".join(label.encode("idna").decode("ascii") if label else label for label in host.split("."))
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    return f"{scheme}://{host}:{port if port is not None else default}"


@lru_cache(maxsize=4096)  # (a request's origin is asked several times, by its URL; a string keeps its hash)
def origin_of(url: str) -> str | None:
    """``"scheme://host:port"`` of an http(s) URL; None for any other scheme, no host or a bad port."""
    parts = urlsplit(url)
    return _key(parts.scheme.lower(), parts.netloc)


def robots_url(origin: str) -> str:
    """The robots.txt URL of a canonical origin."""
    return resource_url(origin, "/robots.txt")


def resource_url(origin: str, path: str) -> str:
    """The URL of ``path`` on a canonical origin, the default port left out (as a browser writes it)."""
    scheme, _, hostport = origin.partition("://")
    host, _, port = hostport.rpartition(":")
    return f"{scheme}://{host}{path}" if DEFAULT_PORTS.get(scheme) == int(port) else origin + path
