"""The ``<meta name=... content=...>`` tags of an HTML document's head.

Page-level statements (``<meta name="robots" content="noai">``,
``<meta name="tdm-reservation" content="1">``) live in the ``<head>``.  The
page is hostile input, so it is read the cheap way, with hard bounds:

* only a prefix of the body (:data:`MAX_HEAD_BYTES`), and only up to
  ``</head>`` or ``<body``: a page cannot make the reader look at more;
* one forward scan, written by hand: every step starts where the previous
  one stopped, so the time is linear in the prefix.  The only regexes are
  searches for one character of a class (or ``<`` and one of a class): no
  quantifier, no alternation, so each looks at a character once and cannot
  backtrack;
* the tokenizer follows the HTML standard where it matters for ``<meta>``
  (13.2.5 "Tokenization": comments, bogus comments, quoted and unquoted
  attribute values, the first of two same-named attributes wins, raw text
  elements such as ``<script>`` whose content holds no tags), and gives up
  (keeping what it found) where the document is cut: an unclosed comment or
  quote consumes the rest, as it does in a browser;
* the charset is the byte order mark's, else the HTTP header's, else the
  first ``<meta charset>`` (or ``http-equiv="content-type"``) of the prefix,
  else UTF-8; undecodable bytes become U+FFFD.  Encodings that are not
  ASCII-compatible (UTF-16 named in a meta tag, UTF-7) are read as UTF-8,
  as the HTML standard's prescan does.

Nothing here raises on any input.
"""

from __future__ import annotations

import codecs
import html
import re
from collections.abc import Collection
from functools import lru_cache
from typing import NamedTuple

from .diagnostics import Diagnostic

#: bytes of a body read at most (a head is rarely over 20 KiB; what follows
#: is not read, whatever it holds)
MAX_HEAD_BYTES = 65_536
#: meta tags kept at most (pass ``names`` to keep only those wanted; a page
#: has a few dozen in all)
MAX_METAS = 128
#: tags, attributes and "=" signs read at most: a head has a few hundred;
#: this bounds the time a hostile one costs whatever its shape (a step is
#: about a microsecond of Python)
MAX_STEPS = 8_192
#: attributes of a meta tag read (a real one has two or three)
MAX_ATTRIBUTES = 32
#: characters of a ``content`` value kept (a robots or TDM value is short)
MAX_CONTENT_CHARS = 4_096
#: characters of a tag kept as its source text (for a denial's reason)
MAX_TAG_TEXT = 200

#: problem codes, and what they mean
CODES: dict[str, str] = {
    "head_truncated": "the head is longer than the bytes read; tags after them were not read",
    "head_cut": "the document ends inside a tag, comment or quoted value; what follows was not read",
    "head_too_complex": "the head has more tags and attributes than are read; the rest was not read",
    "too_many_metas": "more meta tags than are kept; the later ones were not read (a count of tags)",
    "content_clipped": "a meta content value was longer than is kept; the rest was ignored",
}

_BOM_UTF8 = b"\xef\xbb\xbf"
_BOMS_UTF16 = {b"\xff\xfe": "utf-16-le", b"\xfe\xff": "utf-16-be"}
# One-character searches (see the module docstring), and "<" followed by
# one of a class (a fixed two-character match: no quantifier either).
_TAG_OPEN = re.compile(rb"<[!/?A-Za-z]")
_TAG_NAME_END = re.compile(rb"[\t\n\f\r />]")
_NOT_SPACE_OR_SLASH = re.compile(rb"[^\t\n\f\r /]")
_NOT_SPACE = re.compile(rb"[^\t\n\f\r ]")
_ATTR_NAME_END = re.compile(rb"[\t\n\f\r />=]")
_UNQUOTED_END = re.compile(rb"[\t\n\f\r >]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: elements whose content is text, not tags (HTML 13.2.5.1, "raw text" and
#: "escapable raw text"; noscript is parsed), with a search for their end tag
#: (a fixed string, any case: nothing to backtrack)
_RAW_TEXT = {
    name: re.compile(b"</" + re.escape(name), re.IGNORECASE)
    for name in (b"script", b"style", b"title", b"textarea", b"xmp", b"iframe", b"noembed", b"noframes")
}
_SPACE = frozenset(b"\t\n\f\r ")
_SPACE_OR_SLASH = frozenset(b"\t\n\f\r /")
_LETTERS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_CHARSET_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-")
_PROBE = bytes(range(0x20, 0x7F))


class MetaTag(NamedTuple):
    """One ``<meta name=... content=...>``: ``name`` lower-cased and
    stripped, ``content`` with its character references decoded, the 1-based
    ``line`` of its ``<``, and ``text``, the tag as written (clipped, control
    characters as spaces) to name it in a reason."""

    name: str
    content: str
    line: int
    text: str


class Head(NamedTuple):
    """What was read: the meta tags (in document order), the charset used,
    whether the head was read to its end (``</head>``, ``<body`` or the end
    of a short document) and the problems met (``line`` 0: the document)."""

    metas: tuple[MetaTag, ...]
    charset: str
    complete: bool
    diagnostics: tuple[Diagnostic, ...]


EMPTY_HEAD = Head((), "utf-8", True, ())


def is_html(content_type: str | bytes | None) -> bool:
    """Whether a Content-Type names HTML (``text/html`` or XHTML): only
    then is a body read for meta tags."""
    if not content_type:
        return False
    return _is_html(content_type) if len(content_type) <= 256 else _media_is_html(content_type)


@lru_cache(maxsize=64)
def _is_html(content_type: str | bytes) -> bool:
    """:func:`_media_is_html`, for the few values a crawl meets on every page."""
    return _media_is_html(content_type)


def _media_is_html(content_type: str | bytes) -> bool:
    if isinstance(content_type, bytes):
        content_type = content_type.decode("latin-1")
    media = content_type.split(";", 1)[0].strip().lower()
    return media in ("text/html", "application/xhtml+xml")


def read_head(
    body: bytes | None,
    http_charset: str | bytes | None = None,
    names: Collection[str] | None = None,
    limit: int = MAX_HEAD_BYTES,
) -> Head:
    """The meta tags of ``body``'s head (only those whose name is in
    ``names``, in any case, when given).  ``http_charset`` is the charset of
    the response's Content-Type (a name, or the whole header value).  Never
    raises: anything unexpected gives what was read so far."""
    try:
        wanted = None if names is None else _lowered(names if isinstance(names, frozenset) else frozenset(names))
        return _read_head(body or b"", http_charset, wanted, max(0, limit))
    except Exception:  # noqa: BLE001 - hostile input: never raise; pragma: no cover (none known)
        return Head((), "utf-8", False, (Diagnostic(0, "head_cut", CODES["head_cut"] + ": internal error"),))


@lru_cache(maxsize=64)
def _lowered(names: frozenset[str]) -> frozenset[str]:
    """The names wanted, lower-cased (a crawl asks for the same few on every page)."""
    return frozenset(n.lower() for n in names)


@lru_cache(maxsize=64)
def _encoded(names: frozenset[str]) -> frozenset[bytes]:
    return frozenset(n.encode("ascii", "replace") for n in names)


@lru_cache(maxsize=64)
def _http_charset(value: str | bytes) -> str | None:
    """The usable charset a Content-Type value names (the values of a crawl repeat)."""
    return _usable_charset(_charset_in(value))


def _read_head(body: bytes, http_charset: str | bytes | None, names: frozenset[str] | None, limit: int) -> Head:
    truncated = len(body) > limit
    data = bytes(body[:limit]) if truncated or type(body) is not bytes else body
    charset: str | None = None
    if data.startswith(_BOM_UTF8):
        data, charset = data[3:], "utf-8"
    elif data[:2] in _BOMS_UTF16:
        # Not ASCII-compatible: decode it all, scan it as UTF-8.
        text = data[2:].decode(_BOMS_UTF16[data[:2]], "replace")
        data, charset = text.encode("utf-8", "surrogatepass"), "utf-8"
    if charset is None and http_charset:
        charset = _http_charset(http_charset)
    scan = _Scanner(data, names)
    scan.run()
    if charset is None:
        charset = scan.meta_charset or "utf-8"
    problems: list[Diagnostic] = []
    complete = scan.ended
    if scan.budget < 0:
        problems.append(Diagnostic(0, "head_too_complex", f"{CODES['head_too_complex']}: {MAX_STEPS:,} steps"))
    elif not scan.ended:
        if truncated:  # cut by the bound (inside a construct or not)
            problems.append(Diagnostic(0, "head_truncated", f"{CODES['head_truncated']}: {limit:,} bytes"))
        elif scan.cut:  # cut by the document itself
            problems.append(Diagnostic(0, "head_cut", CODES["head_cut"]))
        else:
            complete = True  # a short document without </head>: all of it was read
    if scan.dropped:
        problems.append(Diagnostic(0, "too_many_metas", f"{CODES['too_many_metas']}: {scan.dropped:,} more"))
    metas = []
    for lt, end, raw_name, raw_content, line in scan.found:
        key = (data[lt:end], line, charset, names) if end - lt <= _KEPT_TAG_BYTES else None
        if key is not None and key in _METAS:  # the same tag on the same line of another page
            meta = _METAS[key]
            if meta is not None:
                metas.append(meta)
            continue
        name = _name(raw_name.decode(charset, "replace"))
        if names is not None and name not in names:
            meta = None
        else:
            content = raw_content.decode(charset, "replace")
            if len(content) > MAX_CONTENT_CHARS:
                problems.append(Diagnostic(line, "content_clipped", f"{CODES['content_clipped']}: line {line}"))
                content = content[:MAX_CONTENT_CHARS]
            tag = data[lt : min(end, lt + 4 * MAX_TAG_TEXT)].decode(charset, "replace")
            meta = MetaTag(name, html.unescape(content), line, _clip(_CONTROL.sub(" ", tag)))
            metas.append(meta)
        if key is not None and len(_METAS) < _KEPT_TAGS:
            _METAS[key] = meta
    return Head(tuple(metas), charset, complete, tuple(problems))


def _name(raw: str) -> str:
    return html.unescape(raw[:MAX_TAG_TEXT]).strip(" \t\n\r\f").lower()


def _clip(text: str) -> str:
    return text if len(text) <= MAX_TAG_TEXT else text[:MAX_TAG_TEXT] + "..."


#: a meta tag's bytes after its name, up to its ">" -> its attributes (never changed) and the
#: steps reading them took; shared by every page, bounded
_TAGS: dict[bytes, tuple[dict[bytes, bytes], int]] = {}
_KEPT_TAGS = 4096
_KEPT_TAG_BYTES = 512
#: (a meta tag's bytes, its line, the charset, the names wanted) -> what it is read as
_METAS: dict[tuple[bytes, int, str, frozenset[str] | None], MetaTag | None] = {}


class _Scanner:
    """The forward scan: tags, comments and raw text, up to the head's end."""

    __slots__ = ("data", "names", "found", "dropped", "meta_charset", "ended", "cut", "budget", "_line", "_line_at")

    def __init__(self, data: bytes, names: Collection[str] | None) -> None:
        self.data = data
        self.names = None if names is None else _encoded(frozenset(names))
        self.found: list[tuple[int, int, bytes, bytes, int]] = []  # (lt, end, name, content, line)
        self.dropped = 0
        self.meta_charset: str | None = None
        self.ended = False  # </head> or <body> reached
        self.cut = False  # the prefix ends inside a construct
        #: steps left: a tag, an attribute or an "=" each (see MAX_STEPS)
        self.budget = MAX_STEPS
        self._line, self._line_at = 1, 0

    def run(self) -> None:
        # (the loop's names are locals: it runs for every tag of every page read)
        data = self.data
        n = len(data)
        i = 0
        tag_open, name_end_at, raw_text, letters = _TAG_OPEN.search, _TAG_NAME_END.search, _RAW_TEXT, _LETTERS
        found = self.found
        while True:
            m = tag_open(data, i)
            if m is None:
                return
            self.budget -= 1
            if self.budget < 0:
                return
            lt = m.start()
            c = data[lt + 1]
            if c == 0x21:  # "!": a comment, a doctype or a bogus comment
                if data.startswith(b"<!--", lt):
                    # "<!-->" and "<!--->" are closed comments (abrupt closing)
                    end = data.find(b"-->", lt + 2)
                    if end < 0:
                        self.cut = True
                        return
                    i = end + 3
                    continue
                end = data.find(b">", lt + 2)
                if end < 0:
                    self.cut = True
                    return
                i = end + 1
                continue
            if c == 0x3F:  # "<?": a bogus comment, up to ">"
                end = data.find(b">", lt + 2)
                if end < 0:
                    self.cut = True
                    return
                i = end + 1
                continue
            closing = c == 0x2F  # "</"
            start = lt + 2 if closing else lt + 1
            if start >= n or data[start] not in letters:
                i = lt + 1  # "<" as text (or "</>" and the like: skipped with it)
                continue
            m = name_end_at(data, start)
            name_end = m.start() if m else n
            name = data[start:name_end].lower()  # (ASCII only)
            if name == b"meta" and not closing and (len(found) < MAX_METAS or self.meta_charset is None):
                # A site repeats its meta tags on every page: a tag read before, up to the first
                # ">" after its name, is not read again (the same bytes give the same attributes)
                gt = data.find(b">", name_end)
                key = data[name_end : gt + 1] if 0 <= gt - name_end < _KEPT_TAG_BYTES else b""
                kept = _TAGS.get(key) if key else None
                if kept is not None:
                    attrs, steps = kept
                    self.budget -= steps
                    if self.budget < 0:
                        self.cut = True
                        return
                    end = gt + 1
                else:
                    before = self.budget
                    parsed = self._attributes(name_end)
                    if parsed is None:
                        self.cut = True
                        return
                    attrs, end = parsed
                    if key and end == gt + 1 and len(_TAGS) < _KEPT_TAGS:
                        _TAGS[key] = (attrs, before - self.budget)
                if attrs:
                    self._meta(lt, end, attrs)
                else:
                    self.dropped += len(found) >= MAX_METAS
                i = end
                continue
            gt = data.find(b">", name_end)
            if gt >= 0 and data.find(b"=", name_end, gt) < 0:
                end = gt + 1  # no "=" before the first ">": no value can hold a ">" (:meth:`_skip`'s first step)
                self.budget -= 1
            else:
                skipped = self._skip(name_end)
                if skipped is None:
                    self.cut = True
                    return
                end = skipped
            if closing:
                if name == b"head":
                    self.ended = True
                    return
            elif name == b"body":
                self.ended = True
                return
            elif name in raw_text:
                m = raw_text[name].search(data, end)
                if m is None:
                    self.cut = True
                    return
                end = m.start()
            elif name == b"meta":  # a meta tag past the kept ones, its charset known
                self.dropped += 1
            i = end

    def _skip(self, pos: int) -> int | None:
        """The position after the ``>`` that ends the tag whose name ends at
        ``pos`` (None if the prefix ends first), found as :meth:`_attributes`
        finds it, but paying only for each ``=`` rather than each attribute:
        a ``>`` ends a tag anywhere but in a quoted value, and a value opens
        only at an ``=`` that follows an attribute name (HTML 13.2.5.32-38).
        An ``=`` with nothing but blanks since the last name, value or
        ``/`` starts a name instead."""
        data = self.data
        n = len(data)
        gt = -1
        named = False  # an attribute name was started and not ended by "/" or a value
        while True:
            self.budget -= 1
            if self.budget < 0:
                return None
            if gt < pos:
                gt = data.find(b">", pos)
                if gt < 0:
                    return None
            eq = data.find(b"=", pos, gt)
            if eq < 0:
                return gt + 1
            before = data[pos:eq].rstrip(b"\t\n\f\r ")
            if before:
                named = before[-1] != 0x2F  # a name, unless the last thing is a "/"
            if not named:  # "=" starts an attribute name
                named, pos = True, eq + 1
                continue
            pos = eq + 1
            if pos >= n:
                return None
            c = data[pos]
            if c in _SPACE:
                m = _NOT_SPACE.search(data, pos)
                if m is None:
                    return None
                pos = m.start()
                c = data[pos]
            named = False
            if c == 0x22 or c == 0x27:
                close = data.find(b'"' if c == 0x22 else b"'", pos + 1)
                if close < 0:
                    return None
                pos = close + 1
            elif c == 0x3E:  # a missing value
                return pos + 1
            else:  # an unquoted value, up to a blank or ">"
                m = _UNQUOTED_END.search(data, pos)
                if m is None:
                    return None
                pos = m.start()
                if data[pos] == 0x3E:
                    return pos + 1

    def _attributes(self, pos: int) -> tuple[dict[bytes, bytes], int] | None:
        """The attributes from ``pos`` to the end of the tag (lower-case
        names; the first of two same-named wins), and the position after
        the ``>``; None if the prefix ends first.
        (The usual shapes, `` name="value"``, are tested for before the
        searches that handle every other shape.)"""
        data = self.data
        n = len(data)
        attrs: dict[bytes, bytes] = {}
        count = 0
        while True:
            self.budget -= 1
            if self.budget < 0:
                return None
            if pos >= n:
                return None
            c = data[pos]
            if c in _SPACE_OR_SLASH:
                m = _NOT_SPACE_OR_SLASH.search(data, pos)
                if m is None:
                    return None
                pos = m.start()
                c = data[pos]
            if c == 0x3E:  # ">"
                return attrs, pos + 1
            # a name: its first character may be "=" (13.2.5.32)
            m = _ATTR_NAME_END.search(data, pos + 1)
            name_end = m.start() if m else n
            name_start, pos = pos, name_end
            if pos >= n:
                return None
            c = data[pos]
            if c in _SPACE:
                m = _NOT_SPACE.search(data, pos)
                if m is None:
                    return None
                c = data[m.start()]
                if c == 0x3D:
                    pos = m.start()
            value = b""
            if c == 0x3D:  # "="
                pos += 1
                if pos >= n:
                    return None
                c = data[pos]
                if c in _SPACE:
                    m = _NOT_SPACE.search(data, pos)
                    if m is None:
                        return None
                    pos = m.start()
                    c = data[pos]
                if c == 0x22 or c == 0x27:
                    close = data.find(b'"' if c == 0x22 else b"'", pos + 1)
                    if close < 0:
                        return None
                    value = data[pos + 1 : close]
                    pos = close + 1
                elif c != 0x3E:  # unquoted; a ">" right after "=" is a missing value
                    m = _UNQUOTED_END.search(data, pos)
                    end = m.start() if m else n
                    value = data[pos:end]
                    pos = end
            name = data[name_start:name_end].lower()
            if name not in attrs:
                attrs[name] = value
            count += 1
            if count >= MAX_ATTRIBUTES:  # the rest only for the tag's end
                skipped = self._skip(pos)
                return None if skipped is None else (attrs, skipped)

    def _meta(self, lt: int, end: int, attrs: dict[bytes, bytes]) -> None:
        if self.meta_charset is None:
            self._charset(attrs)
        name = attrs.get(b"name")
        content = attrs.get(b"content")
        if name is None or content is None:
            return
        if self.names is not None and b"&" not in name and name.strip(b" \t\n\r\f").lower() not in self.names:
            return  # (a name with a character reference is decoded, then filtered)
        if len(self.found) >= MAX_METAS:
            self.dropped += 1
            return
        self._line += self.data.count(b"\n", self._line_at, lt)
        self._line_at = lt
        self.found.append((lt, end, name, content, self._line))

    def _charset(self, attrs: dict[bytes, bytes]) -> None:
        """The HTML prescan's reading of one meta tag (13.2.3.2)."""
        raw = attrs.get(b"charset")
        if raw is None and attrs.get(b"http-equiv", b"").strip().lower() == b"content-type":
            raw = _charset_in(attrs.get(b"content", b"").decode("latin-1")).encode("latin-1")
        if raw:
            label = raw.decode("latin-1").strip(" \t\n\r\f")
            self.meta_charset = _usable_charset(label) or "utf-8"


def _charset_in(value: str | bytes) -> str:
    """The ``charset=`` parameter of a Content-Type value (or ``value``
    itself when it has none: a bare charset name); scanned by hand."""
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    lower = value.lower()
    at = lower.find("charset")
    if at < 0:
        return value.strip()
    pos = at + 7
    n = len(value)
    while pos < n and value[pos] in " \t":
        pos += 1
    if pos >= n or value[pos] != "=":
        return ""
    pos += 1
    while pos < n and value[pos] in " \t":
        pos += 1
    if pos < n and value[pos] in "\"'":
        pos += 1
    end = pos
    while end < n and value[end] in _CHARSET_CHARS:
        end += 1
    return value[pos:end]


@lru_cache(maxsize=64)
def _usable_charset(label: str) -> str | None:
    """Python's codec for ``label`` if it decodes ASCII as ASCII (so the
    scan's offsets hold), else None.  UTF-7 is refused, as by the HTML
    standard; UTF-16 and the like fail the test."""
    if not label or len(label) > 40:
        return None
    try:
        name = codecs.lookup(label).name
        if name == "utf-7" or _PROBE.decode(name) != _PROBE.decode("ascii"):
            return None
        return name
    except Exception:  # noqa: BLE001 - LookupError, or a codec that is no text encoding
        return None
