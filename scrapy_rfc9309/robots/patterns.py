"""Paths and patterns: percent-encoding (RFC 9309 section 2.2.2), the path of
a URL, and matching with ``*`` and ``$`` in linear time.

Both sides, the URL and the rule, go through the same normalisation, so that
``/caf%c3%a9``, ``/café`` and ``/caf%C3%A9`` are one path:

* non-ASCII characters become their UTF-8 octets as ``%XX`` (upper-case hex);
* every ``%xx`` escape gets upper-case hex;
* escapes of unreserved characters (``A-Z a-z 0-9 - . _ ~``) are decoded;
* escapes of reserved characters stay encoded (``%2F`` is not ``/``), except
  ``%2A`` and ``%24``, which stand for a literal ``*`` and ``$`` (section 2.2.3).

No pattern ever reaches a regex engine: a wildcard pattern is split on ``*``
into literal pieces and matched with ``str.find``, leftmost first.  For
patterns anchored only at the start that greedy walk is exact, and its cost is
bounded by (number of pieces) x (length of the path).
"""

from __future__ import annotations

import re
from urllib.parse import quote

_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_ASCII = "".join(map(chr, range(128)))
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
#: escapes decoded when matching: unreserved characters plus the literal * and $
_DECODED = {f"{c:02X}": chr(c) for c in range(128) if chr(c) in _UNRESERVED or chr(c) in "*$"}
_DECODED_CANON = {k: v for k, v in _DECODED.items() if v not in "*$"}


def _fix_escape(match: re.Match[str]) -> str:
    hx = match.group(1).upper()
    return _DECODED.get(hx) or "%" + hx


def _fix_escape_canon(match: re.Match[str]) -> str:
    hx = match.group(1).upper()
    return _DECODED_CANON.get(hx) or "%" + hx


def _encode_non_ascii(text: str) -> str:
    return quote(text, safe=_ASCII, errors="surrogatepass")


# An escape that normalisation would change: lower-case hex, or an
# unreserved/"*"/"$" character.  Most real URLs have none, and one C-level
# search is cheaper than calling back into Python for every escape.
_NEEDS_FIX = re.compile(
    r"%(?:[0-9A-Fa-f][a-f]|[a-f][0-9A-F]|3[0-9]|4[1-9A-F]|5[0-9AF]|6[1-9A-F]|7[0-9AE]|2[DE4A])"
)


def normalize(text: str) -> str:
    """The matching form of a path or of one literal piece of a pattern."""
    if not text.isascii():
        text = _encode_non_ascii(text)
    if "%" in text and _NEEDS_FIX.search(text):
        text = _ESCAPE.sub(_fix_escape, text)
    return text


def canonical(text: str) -> str:
    """A pattern as written, normalised but with ``%2A``/``%24`` kept encoded;
    its length in octets is the rule's priority."""
    if not text.isascii():
        text = _encode_non_ascii(text)
    if "%" in text:
        text = _ESCAPE.sub(_fix_escape_canon, text)
    return text


# Scheme and authority, or a scheme-relative authority ("//host"); what
# follows is the path.  A linear pattern over a URL, never over robots.txt data.
_AUTHORITY = re.compile(r"(?:[A-Za-z][A-Za-z0-9+.\-]*:)?//[^/?#]*")


_WEB_SCHEMES = frozenset({"http:", "https:", "HTTP:", "HTTPS:"})


def path_of(url: str) -> str:
    """``path;params?query`` of an absolute URL (or of a path), without the
    fragment, normalised; ``/`` when the URL has no path.

    No ``urlsplit``: this runs per request.  The common ``http(s)://host/...``
    is cut at its third slash; anything else by one anchored regex match.
    """
    parts = url.split("/", 3)
    if len(parts) == 4 and parts[0] in _WEB_SCHEMES and not parts[1] and "?" not in parts[2] and "#" not in parts[2]:
        path = "/" + parts[3]
    else:
        m = _AUTHORITY.match(url)
        path = url[m.end() :] if m is not None else url
    cut = path.find("#")
    if cut >= 0:
        path = path[:cut]
    if path[:1] != "/":
        path = "/" + path
    if path.isascii() and "%" not in path:
        return path
    return normalize(path)


def plain_origin(url: str, path: str) -> str | None:
    """``scheme://authority`` when ``url`` is exactly that followed by
    ``path`` (its :func:`path_of`), with nothing to normalise; else None.

    For any URL that starts with this origin and a ``/``, with no ``#``, no
    ``%`` and only ASCII after it, :func:`path_of` is the rest of the URL.
    """
    cut = len(url) - len(path)
    if cut <= 0 or not url.endswith(path) or "#" in url or "%" in path or not path.isascii():
        return None
    origin = url[:cut]
    return origin if _AUTHORITY.fullmatch(origin) else None


# Compiled rule kinds, and what a compiled rule ``(kind, a, b, n)`` means:
PREFIX = 0  # path.startswith(a)
EXACT = 1  # path == a
SUB = 2  # "a*b": path.startswith(a) and b occurs at or after n = len(a)
SUB_END = 3  # "a*b$": path.startswith(a), path.endswith(b), len(path) >= n = len(a) + len(b)
WILD = 4  # pieces a (a tuple) matched leftmost in order; b, the longest piece after
#          the first, must occur in the path (a cheap test before the walk)
WILD_END = 5  # as WILD, and the last piece ends the path


def compile_pattern(raw: str) -> tuple[int, object, str, int, int]:
    """``(kind, a, b, n, priority)`` for a non-empty pattern as written in a
    file; ``priority`` is the pattern's length in octets."""
    plain = raw.isascii() and "%" not in raw  # most patterns: nothing to normalise
    priority = len(raw) if plain else len(canonical(raw))
    anchored = raw[-1] == "$"
    body = raw[:-1] if anchored else raw
    if "*" not in body:
        return (EXACT if anchored else PREFIX), body if plain else normalize(body), "", 0, priority
    pieces = body.split("*") if plain else [normalize(p) for p in body.split("*")]
    if len(pieces) > 2:
        # Empty inner pieces (runs of '*') match anywhere: drop them.
        pieces = [pieces[0], *(p for p in pieces[1:-1] if p), pieces[-1]]
    if not anchored and pieces[-1] == "":
        pieces.pop()
        if len(pieces) == 1:
            return PREFIX, pieces[0], "", 0, priority  # "/foo*" is the prefix "/foo"
    if len(pieces) == 2:
        a, b = pieces
        if anchored:
            return SUB_END, a, b, len(a) + len(b), priority
        return SUB, a, b, len(a), priority
    needle = max(pieces[1:], key=len)
    return (WILD_END if anchored else WILD), tuple(pieces), needle, 0, priority


def wild_match(path: str, pieces: tuple[str, ...], anchored: bool) -> bool:
    """Match ``pieces`` (a pattern split on ``*``) against ``path``."""
    first = pieces[0]
    if not path.startswith(first):
        return False
    pos = len(first)
    last = len(pieces) - 1
    for i in range(1, last):
        found = path.find(pieces[i], pos)
        if found < 0:
            return False
        pos = found + len(pieces[i])
    tail = pieces[last]
    if anchored:
        # the tail must end the path, after everything matched so far
        return path.endswith(tail) and len(path) - len(tail) >= pos
    return path.find(tail, pos) >= 0
