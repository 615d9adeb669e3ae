"""What a user types at ``scrapy robots``, checked before anything runs.

A URL the command cannot fetch the robots.txt of is refused with one line
that shows it (secrets masked, a long one shortened: :func:`shown`), says
what is wrong with it and what to write instead: no traceback, no crawl that
fails on it later, and never exit status 1, which means "denied".

The rules are those of a URL that names an origin (RFC 9309 section 2.3 and
RFC 3986): the ``http`` or ``https`` scheme, a host that is a name (letters,
digits, ``-``, ``_`` and dots; a non-ASCII name that IDNA can write), an IPv4
address or an IPv6 address in brackets, a port from 1 to 65535, and no
space or control character anywhere (Scrapy would percent-encode one in the
path silently; the command asks for it written out, as a crawl sends it).
Pure standard library; each check is one pass over the text.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import quote

from ..masking import mask_url
from ..robots.text import shorten

SCHEMES = ("http", "https")
#: RFC 1035 section 2.3.4: a name of at most 253 characters (255 octets on the wire), labels of at most 63
MAX_HOST_CHARS = 253
MAX_LABEL_CHARS = 63
_HOST_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._")
EXAMPLE = "https://example.com/page"


def shown(text: str) -> str:
    """A URL (or a path) as a message shows it: secrets masked, shortened,
    quoted, every unprintable character escaped (one line, whatever it holds)."""
    return repr(shorten(mask_url(text)))


def url_problem(url: str, paths: bool = False) -> str | None:
    """What is wrong with ``url`` as a URL to check, in one line (with what to
    write instead); None when it is fine.  With ``paths``, a path starting
    with ``/`` is fine too (``--file``: the file has no origin)."""
    if not url:
        return f"an empty URL: give an absolute http(s) URL such as {EXAMPLE!r}"
    problem = _unprintable(url)
    if problem:
        return f"{shown(url)}: {problem}"
    if paths and url.startswith("/"):
        return None
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme or "/" in scheme:
        if paths:
            return f"{shown(url)} is neither a path (starting with '/') nor an absolute http(s) URL such as {EXAMPLE!r}"
        return f"{shown(url)} is not an absolute http(s) URL: give one such as {EXAMPLE!r}"
    if scheme.lower() not in SCHEMES:
        return (
            f"{shown(url)}: robots.txt governs http and https URLs only (RFC 9309 section 2.3), "
            f"not {shorten(scheme)!r}: give an http(s) URL"
        )
    authority = rest
    for end in "/?#":
        authority = authority.partition(end)[0]
    hostport = authority.rpartition("@")[2]  # a userinfo is never part of the origin
    problem = _host_problem(hostport)
    return f"{shown(url)}: {problem}" if problem else None


def _unprintable(text: str) -> str:
    """The first space or control character of ``text``, said with its
    position and how to write it; "" when there is none."""
    for at, char in enumerate(text, 1):
        if char == " " or not char.isprintable():
            what = "a space" if char == " " else f"the character {char!r}"
            return (
                f"{what} at character {at}: a URL has no spaces or control characters; "
                f"percent-encode it as {quote(char, safe='')!r}"
            )
    return ""


def _host_problem(hostport: str) -> str:
    """What is wrong with a URL's ``host[:port]``; "" when nothing is."""
    if hostport.startswith("["):
        close = hostport.find("]")
        if close < 0:
            return "the IPv6 address has no closing ']': write it as 'http://[::1]:8080/'"
        address, after = hostport[1:close], hostport[close + 1 :]
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            return f"[{shorten(address)}] is not an IPv6 address: write one such as 'http://[2001:db8::1]/'"
        if after and not after.startswith(":"):
            return f"{shorten(after)!r} after the IPv6 address: a port follows a ':', as in 'http://[::1]:8080/'"
        return _port_problem(after[1:])
    host, colon, port = hostport.rpartition(":")
    if not colon:
        host, port = hostport, ""
    if ":" in host:
        return "an IPv6 address goes in brackets, as in 'http://[::1]:8080/'"
    if "[" in host or "]" in host:
        return f"the host {shorten(host)!r} holds a bracket: write an IPv6 address as 'http://[::1]/'"
    return _port_problem(port) or _name_problem(host)


def _port_problem(port: str) -> str:
    if not port:
        return ""  # the scheme's default port (an empty one too: 'http://host:/')
    if not (port.isascii() and port.isdigit()):
        return f"the port {shorten(port)!r} is not a number: write a port from 1 to 65535, or none for the default"
    if not 1 <= int(port) <= 65535:
        return f"the port {int(port)} is out of range: a port is 1 to 65535 (none: the scheme's default)"
    return ""


def _name_problem(host: str) -> str:
    """What is wrong with a host name or IPv4 address; "" when nothing is."""
    if not host:
        return "the URL has no host: write it as 'http://HOST/PATH'"
    if not host.isascii():
        try:
            host = ".".join(label.encode("idna").decode("ascii") if label else "" for label in host.split("."))
        except UnicodeError:
            if max(len(label) for label in host.split(".")) > MAX_LABEL_CHARS:
                return _length_problem(host)
            return f"the host {shorten(host)!r} cannot be written in IDNA (ASCII): correct the host"
    bad = next((char for char in host if char not in _HOST_CHARS), None)
    if bad is not None:
        return (
            f"the host {shorten(host)!r} holds {bad!r}: a host name has letters, digits, '-' and dots only "
            "(no percent-encoding); correct the host"
        )
    labels = host[:-1].split(".") if host.endswith(".") else host.split(".")  # "example.com." is fully qualified
    if "" in labels:
        return f"the host {shorten(host)!r} has an empty label (a dot at its start or two in a row): correct the host"
    return _length_problem(host)


def _length_problem(host: str) -> str:
    longest = max(len(label) for label in host.split("."))
    if longest > MAX_LABEL_CHARS:
        return (
            f"the host {shorten(host)!r} has a label of {longest} characters: a label of a host name has "
            f"at most {MAX_LABEL_CHARS} (RFC 1035); correct the host"
        )
    if len(host.rstrip(".")) > MAX_HOST_CHARS:
        return (
            f"the host {shorten(host)!r} is {len(host.rstrip('.'))} characters long: a host name has at most "
            f"{MAX_HOST_CHARS} (RFC 1035); correct the host"
        )
    return ""
