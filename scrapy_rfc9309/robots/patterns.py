"""Paths and patterns: percent-encoding (RFC 9309 section 2.2.2), the path of
a URL, and matching with ``*`` and ``$`` in linear time.

Both sides, the URL and the rule, go through the same normalisation, so that
``/caf%c3%a9``, ``/café`` and ``/caf%C3%A9`` are one path:

* non-ASCII characters become their UTF-8 octets as ``%XX`` (upper-case hex);
* every ``%xx`` escape gets upper-case hex;
* escapes of unreserved characters (``A-Z a-z 0-9 - . _ ~``) are decoded;
* escapes of reserved characters stay encoded (``%2F`` is not ``/``), except
  ``%2A`` and ``%24``, which stand for a literal ``*`` and ``$`` (section 2.2.3);
* the ASCII characters RFC 3986 allows nowhere in a URI (controls, space,
  ``"<>\\^`{|}``, DEL: neither unreserved nor reserved), and ``[`` ``]``,
  which it allows only in a host, are one with their escape: ``/a<b``,
  ``/a%3Cb`` and ``/a%3cb`` are one path, and so are ``/s?f[t]=1`` and the
  ``/s?f%5Bt%5D=1`` Scrapy sends.  RFC 9309 2.2.2
  compares them percent-encoded; here an escape of one of them is *decoded*
  for matching instead, which gives the same answers (an escape is one
  character, see below) and leaves the per-URL fast path, which cannot
  afford to look for such characters, untouched.  The rule's priority is
  still its length percent-encoded: ``<`` counts 3 octets, raw or escaped;
* a ``%`` that starts no escape (``/100%``) is the octet ``%25`` (RFC 3986 2.4).

An escape is matched as one character: a ``*`` cannot end inside one, so
``/a*3Cb`` does not match ``/a%3Cb`` (nor ``/a<b``).

No pattern ever reaches a regex engine: a wildcard pattern is split on ``*``
into literal pieces and matched with ``str.find``, leftmost first.  For
patterns anchored only at the start that greedy walk is exact, and its cost is
bounded by (number of pieces) x (length of the path).
"""

from __future__ import annotations

import re
from functools import cache
from itertools import repeat
from operator import add, itemgetter, methodcaller

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RESERVED = frozenset(":/?#[]@!$&'()*+,;=")
#: reserved characters RFC 3986 allows raw only in a host (an IP literal, 3.2.2):
#: a path or a query holds them percent-encoded (3.3, 3.4), as Scrapy (w3lib) sends them
_HOST_ONLY = "[]"
#: ASCII characters outside RFC 3986's unreserved and reserved sets (and not
#: "%"): a URI holds them only percent-encoded (RFC 3986 2.1, 2.4); and "[" "]",
#: which a path holds only percent-encoded.
OUTSIDE_URI = "".join(
    chr(c) for c in range(128) if chr(c) not in _UNRESERVED | _RESERVED | {"%"} or chr(c) in _HOST_ONLY
)
_OUTSIDE_ALL_BYTES = OUTSIDE_URI.encode("ascii")
_HIGH_BYTES = bytes(range(128, 256))
#: the same characters as bytes but "\n", which separates a file's patterns
_OUTSIDE_BYTES = OUTSIDE_URI.replace("\n", "").encode("ascii")
_HEAD, _TAIL = itemgetter(slice(0, 2)), itemgetter(slice(2, None))
#: what an escaped "*" is while a pattern is cut at its wildcards (see _normalized_pieces)
_STAR = "\ufffe"


class _FixedHex(dict[str, str]):
    """The two characters after a "%" -> what "%" and they become for matching:
    an escape's matching form (see :class:`_Escapes`), changed or not; after a
    "%" that starts no escape, ``%25`` and the characters themselves."""

    def __missing__(self, head: str) -> str:
        return "%25" + head


class _Escapes:
    """The tables and regexes of escapes, non-ASCII text and the characters
    outside the URI grammar: built once, on first use (:func:`_escapes`), so
    that a crawl whose paths and patterns are plain ASCII without a "%" never
    builds them (about 1,700 dict entries and three regexes: several
    million instructions of a crawl's start-up)."""

    __slots__ = (
        "decoded_canon",
        "escape",
        "escape_high",
        "fixed_hex",
        "fixed_hex_star",
        "needs_fix",
        "octets_more",
        "outside",
    )

    def __init__(self) -> None:
        #: an escape, or a "%" that starts none (group 1 is then None)
        self.escape = re.compile(r"%([0-9A-Fa-f]{2})?")
        #: escapes decoded when matching: unreserved characters, the literal * and $,
        #: and the characters outside the URI grammar
        decoded = {f"{c:02X}": chr(c) for c in range(128) if chr(c) in _UNRESERVED or chr(c) in "*$" + OUTSIDE_URI}
        #: escapes decoded in the priority form: unreserved characters only
        self.decoded_canon = {f"{c:02X}": chr(c) for c in range(128) if chr(c) in _UNRESERVED}
        self.outside = re.compile("[" + re.escape(OUTSIDE_URI) + "]")
        #: str.translate table: an octet above 127 (read as ISO-8859-1) -> its escape
        self.escape_high = {c: f"%{c:02X}" for c in range(128, 256)}
        # The matching form of every escape that normalisation changes (lower-case
        # hex, or a decoded character) and of a "%" that starts no escape.
        fixes = {"%": "%25"}
        for a in _HEX_DIGITS:
            for b in _HEX_DIGITS:
                hx = (a + b).upper()
                fixed = decoded.get(hx) or "%" + hx
                if fixed != "%" + a + b:
                    fixes["%" + a + b] = fixed
        self.fixed_hex = _FixedHex(
            {a + b: fixes.get("%" + a + b, "%" + a + b) for a in _HEX_DIGITS for b in _HEX_DIGITS}
        )
        #: as fixed_hex, but an escaped "*" becomes _STAR (see _normalized_pieces)
        self.fixed_hex_star = _FixedHex({**self.fixed_hex, "2A": _STAR, "2a": _STAR})
        #: the two characters after a "%" -> how many octets more the priority form has than the
        #: text as written: an escape of an unreserved character is one octet (-2); any other
        #: escape stays (0); a "%" that starts none is "%25" (+2, the default)
        self.octets_more = {
            a + b: -2 if chr(int(a + b, 16)) in _UNRESERVED else 0 for a in _HEX_DIGITS for b in _HEX_DIGITS
        }
        self.needs_fix = re.compile(_needs_fix_pattern(decoded))


_HEX_DIGITS = "0123456789ABCDEFabcdef"


@cache
def _escapes() -> _Escapes:
    return _Escapes()


def _fix_escape_canon(match: re.Match[str]) -> str:
    hx = match.group(1)
    if hx is None:
        return "%25"
    hx = hx.upper()
    return _escapes().decoded_canon.get(hx) or "%" + hx


def _encode_outside(match: re.Match[str]) -> str:
    return f"%{ord(match.group()):02X}"


def any_outside(patterns: str) -> bool:
    """Whether any of ``patterns`` (joined by newlines, which no pattern
    holds) has a raw character of :data:`OUTSIDE_URI`.

    One ``bytes.translate`` at C speed for all the patterns of a file: a
    regex search, or one per pattern, costs several times more.
    """
    raw = patterns.encode("utf-8", "surrogatepass")
    return len(raw.translate(None, _OUTSIDE_BYTES)) != len(raw)


def _encode_non_ascii(text: str) -> str:
    """``text`` with every non-ASCII character as the ``%XX`` escapes of its
    UTF-8 octets, at C speed (``urllib.parse.quote`` does a Python step per
    octet: milliseconds for a 16 KB pattern)."""
    return text.encode("utf-8", "surrogatepass").decode("iso8859-1").translate(_escapes().escape_high)


def _normalized_pieces(body: str) -> list[str]:
    """``[normalize(piece) for piece in body.split("*")]``, with the whole body
    normalised at once: a "*" is never part of an escape, so normalising
    first and cutting after gives the same pieces, once an escaped "*"
    (``%2A``, a literal star) is kept apart from the wildcards until the cut
    (a Python call per piece took milliseconds for thousands of pieces)."""
    text = body if body.isascii() else _encode_non_ascii(body)
    if "%" in text:
        escapes = _escapes()
        if escapes.needs_fix.search(text) is not None:
            text = _fix_escapes(text, escapes.fixed_hex_star)
            if _STAR in text:
                return list(map(methodcaller("replace", _STAR, "*"), text.split("*")))
    return text.split("*")


def _fix_escapes(text: str, fixed: _FixedHex) -> str:
    """``text`` with each escape in its matching form and each "%" that starts
    none as ``%25``, at C speed: the text is cut at every "%" (hex digits
    hold none, so each escape is whole at the start of its part), and each
    part's first two characters are looked up (a regex call-back per escape
    took milliseconds for a pattern of thousands)."""
    parts = text.split("%")
    rest = parts[1:]
    return parts[0] + "".join(map(add, map(fixed.__getitem__, map(_HEAD, rest)), map(_TAIL, rest)))


def _needs_fix_pattern(decoded: dict[str, str]) -> str:
    """A regex for what normalisation changes: an escape of a ``decoded``
    character, one in lower-case hex, a "%" that starts no escape.

    Most URLs with escapes need no change, or one ("%20") among a run of
    UTF-8 escapes: substituting only these skips the rest at C speed, and
    the lookahead rejects an upper-case non-ASCII escape ("%D8") at once,
    before the alternatives are tried.
    """
    alternatives = []
    for first in "01234567":
        seconds = "".join(h[1] for h in sorted(decoded) if h[0] == first)
        alternatives.append(f"{first}[{seconds}a-f]")
    alternatives += ["[89A-F][a-f]", "[a-f][0-9A-Fa-f]", "(?![0-9A-Fa-f]{2})"]
    return "%(?![89A-F][0-9A-F])(?:" + "|".join(alternatives) + ")"


def normalize(text: str) -> str:
    """The matching form of a path or of one literal piece of a pattern."""
    if not text.isascii():
        text = _encode_non_ascii(text)
    if "%" in text:
        escapes = _escapes()
        if escapes.needs_fix.search(text) is not None:
            text = _fix_escapes(text, escapes.fixed_hex)
    return text


def canonical(text: str, outside: bool = True) -> str:
    """A pattern as written, percent-encoded as RFC 9309 2.2.2 compares it:
    unreserved escapes decoded, every other escape kept (``%2A``/``%24``
    too), and non-ASCII and the characters outside the URI grammar encoded.
    Its length in octets is the rule's priority.  ``outside=False`` says
    ``text`` holds none of :data:`OUTSIDE_URI` (see :func:`compile_pattern`)."""
    if not text.isascii():
        text = _encode_non_ascii(text)
    if "%" in text:
        text = _escapes().escape.sub(_fix_escape_canon, text)
    if outside and _escapes().outside.search(text):
        text = _escapes().outside.sub(_encode_outside, text)
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
WILD = 4  # pieces a (joined by WILDCARD) matched leftmost in order; b, the longest piece
#          after the first, must occur in the path (a cheap test before the walk)
WILD_END = 5  # as WILD, and the last piece ends the path
#: what joins the pieces of a WILD rule: no normalised text holds it (it is not ASCII).  One
#: string rather than a tuple: a compiled rule then holds only strings and numbers, and
#: the garbage collector stops tracking it at once (a tuple inside a tuple is untracked one
#: collection later, after the outer one has moved to an older generation: thousands of
#: them started a full collection of a crawl's heap in the middle of a parse)
WILDCARD = "\uffff"


def octets(raw: str, outside: bool = True) -> int:
    """``len(canonical(raw, outside))``, counted at C speed without making it:
    the rule's priority.  (``canonical`` calls back into Python once per
    escape: milliseconds for a long pattern of escapes or non-ASCII text.)

    Non-ASCII characters become 3 characters per UTF-8 octet; an escape of an
    unreserved character becomes 1; a ``%`` that starts no escape becomes 3
    (``%25``); so does each character of :data:`OUTSIDE_URI` (all ASCII).  The
    octets of non-ASCII characters are never hex digits, so the escapes of the
    pattern as written are those of its encoded form."""
    size = len(raw)
    raw_bytes = None
    if not raw.isascii():
        raw_bytes = raw.encode("utf-8", "surrogatepass")
        ascii_chars = len(raw_bytes.translate(None, _HIGH_BYTES))
        size = ascii_chars + 3 * (len(raw_bytes) - ascii_chars)
    if "%" in raw:  # (each "%" and what follows it looked up at C speed, as in _fix_escapes)
        size += sum(map(_escapes().octets_more.get, map(_HEAD, raw.split("%")[1:]), repeat(2)))
    if outside:
        if raw_bytes is None:
            raw_bytes = raw.encode("ascii")
        size += 2 * (len(raw_bytes) - len(raw_bytes.translate(None, _OUTSIDE_ALL_BYTES)))
    return size


def compile_pattern(raw: str, outside: bool = True) -> tuple[int, object, str, int, int]:
    """``(kind, a, b, n, priority)`` for a non-empty pattern as written in a
    file; ``priority`` is the pattern's length in octets, percent-encoded.
    ``outside=False`` says the pattern holds no character of
    :data:`OUTSIDE_URI` (the caller has looked, for a whole file at once)."""
    plain = raw.isascii() and "%" not in raw  # most patterns: nothing to normalise
    priority = len(raw) if plain and not (outside and _escapes().outside.search(raw)) else octets(raw, outside)
    anchored = raw[-1] == "$"
    body = raw[:-1] if anchored else raw
    if "*" not in body:
        return (EXACT if anchored else PREFIX), body if plain else normalize(body), "", 0, priority
    pieces = body.split("*") if plain else _normalized_pieces(body)
    if len(pieces) > 2 and "**" in body:
        # Empty inner pieces (runs of '*') match anywhere: drop them.
        pieces = [pieces[0], *filter(None, pieces[1:-1]), pieces[-1]]
    if pieces[-1] == "":
        anchored = False  # "/a*$": the '*' reaches the end of any path, the '$' adds nothing
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
    return (WILD_END if anchored else WILD), WILDCARD.join(pieces), needle, 0, priority


def wild_match(path: str, joined: str, anchored: bool) -> bool:
    """Match ``joined`` (a pattern's pieces, split on ``*``, joined by
    :data:`WILDCARD`) against ``path``.

    The pieces a path matches are in it, apart: their characters are at most
    the path's, and every piece but the first and the last holds one at
    least (empty ones are dropped), so ``joined`` is at most twice the path
    and one more.  A longer rule (up to a 16 KB line) is ruled out before
    it is split: a check costs what the path does, not what the rule does."""
    if len(joined) > 2 * len(path) + 1:
        return False
    pieces = joined.split(WILDCARD)
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
