"""The ``<meta name=... content=...>`` tags of an HTML document's head, and
the RSL licenses its ``<link>`` elements name.

Page-level statements (``<meta name="robots" content="noai">``,
``<meta name="tdm-reservation" content="1">``) live in the ``<head>``, and
what counts is what a browser puts there: the HTML standard's parser (13.2),
scripting disabled, as a crawler that runs no script sees the page.  The page
is hostile input, so it is read the cheap way, with hard bounds:

* only a prefix of the body (:data:`MAX_HEAD_BYTES`), and only up to the
  body's first content: a page cannot make the reader look at more;
* one forward scan, written by hand: every step starts where the previous
  one stopped (a search that may look far ahead, in a script's escapes, is
  remembered rather than repeated), so the time is linear in the prefix, and
  each tag, attribute, ``=``, ``>`` inside a comment or script escape costs
  a step of a fixed budget (:data:`MAX_STEPS`).  The regexes are searches for one character of a
  class, or a fixed string (``</script`` and one character of a class, in
  any case): no quantifier, no alternation, nothing to backtrack;
* the tokenizer follows the standard (13.2.5): comments close at ``-->``,
  at ``--!>``, and at once as ``<!-->`` or ``<!--->``; ``<!x>``, ``<?x>`` and
  ``</ x>`` are bogus comments up to the first ``>``; ``<!DOCTYPE>`` ends at
  its first ``>``; raw text elements (``<script>``, ``<style>``, ``<title>``,
  ``<textarea>`` ...) end only at their own end tag, a script after
  ``<!--<script>`` only after ``-->``; attributes quoted or not, the first
  of two same-named wins; a cut document keeps what was read (an unclosed
  comment or quote consumes the rest, as in a browser);
* the tree construction's modes up to the body (13.2.6.4.1-6): ``<meta>``,
  ``<link>``, ``<title>``, ``<style>``, ``<script>``, ``<noscript>`` (its
  content parsed, and in the head) and ``<template>`` are in the head, also
  after ``</head>`` (the "after head" mode puts them back); ``<template>``'s
  content is no part of the head, nor does it end it; the head ends at the
  body's first content: text other than blanks, any other start tag,
  ``<body>``, ``</body>``, ``</html>`` or ``</br>``.  Inside a template, foreign
  content (``<svg>``, ``<math>``) and ``<select>``, whose own rules are not
  followed here, make every later meta tag count: the reader then sees more
  than a browser, never less;
* the encoding (13.2.3): the byte order mark's, else the Content-Type
  header's charset, else the first ``<meta charset>`` (or
  ``http-equiv="content-type"``) in the head, else UTF-8; labels as the
  Encoding standard reads them (``latin1`` is windows-1252).  UTF-16 (by the
  BOM or the header) and ISO-2022 are decoded before the scan; UTF-16 named by
  the document itself is UTF-8, as in the standard; undecodable bytes become
  U+FFFD.  (The standard's prescan of the first 1,024 bytes is not run: the
  first meta charset in the head is the one its "change the encoding" step
  would settle on.)

The head's ``<link>`` elements whose ``rel`` has the token ``license`` and
whose ``type`` is ``application/rsl+xml`` (both in any ASCII case, the type's
parameters ignored) name RSL licenses (:attr:`Head.licenses`, RSL 1.0): their
``href``, character references decoded, resolved against the document's base
URL, the page's URL given, or the first ``<base href>`` read (resolved against
it; a ``data:`` or ``javascript:`` one is ignored, as in the standard), kept
when the result is an http(s) URL of at most :data:`MAX_URL_CHARS`
characters, once each, at most :data:`MAX_LICENSES` (later ones counted).
Unlike the standard, a ``<base>`` in the body is not seen: the reading stops
at the body's first content, so a license link is then resolved against the
page's URL.  An empty ``href`` names nothing.

Nothing here raises on any input.
"""

from __future__ import annotations

import codecs
import html
import re
from collections.abc import Collection
from functools import lru_cache
from typing import NamedTuple
from urllib.parse import urljoin, urlsplit

from .diagnostics import Diagnostic
from .rsl import MEDIA_TYPE

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
#: RSL license links kept at most (a page names one; later ones are counted)
MAX_LICENSES = 8
#: characters of a license link's resolved URL kept at most (a longer one is refused)
MAX_URL_CHARS = 2_048

#: problem codes, and what they mean
CODES: dict[str, str] = {
    "head_truncated": "the head is longer than the bytes read; tags after them were not read",
    "head_cut": "the document ends inside a tag, comment or quoted value; what follows was not read",
    "head_too_complex": "the head has more tags and attributes than are read; the rest was not read",
    "too_many_metas": "more meta tags than are kept; the later ones were not read (a count of tags)",
    "content_clipped": "a meta content value was longer than is kept; the rest was ignored",
    "too_many_licenses": "more links that may name an RSL license than are kept; the later ones were not read",
    "license_refused": "an RSL license link whose URL is not an http(s) URL of at most 2,048 characters",
}

_BOMS = ((b"\xef\xbb\xbf", "utf-8"), (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"))
#: Python's codec names that the Encoding standard reads as another encoding (its "Names and labels")
_WHATWG = {
    "ascii": "cp1252", "iso8859-1": "cp1252", "iso8859-9": "cp1254", "iso8859-11": "cp874", "tis-620": "cp874",
    "utf-16": "utf-16-le", "gb2312": "gb18030", "gbk": "gb18030", "shift_jis": "cp932",
}  # fmt: skip
#: encodings whose bytes under 0x80 are not always ASCII: the prefix is decoded, then scanned
_TRANSCODED = frozenset({"utf-16-le", "utf-16-be", "iso2022_jp", "iso2022_kr"})
# One-character searches (see the module docstring).
_TAG_NAME_END = re.compile(rb"[\t\n\f\r />]")
_NOT_SPACE_OR_SLASH = re.compile(rb"[^\t\n\f\r /]")
_NOT_SPACE = re.compile(rb"[^\t\n\f\r ]")
_ATTR_NAME_END = re.compile(rb"[\t\n\f\r />=]")
_UNQUOTED_END = re.compile(rb"[\t\n\f\r >]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
#: the insertion modes of the tree construction (13.2.6.4) that come before the body
_BEFORE_HEAD, _IN_HEAD, _IN_NOSCRIPT, _AFTER_HEAD = range(4)
#: start tags the "in head" mode takes (the "after head" mode puts them back in the head)
_IN_HEAD_TAGS = frozenset(
    {b"base", b"basefont", b"bgsound", b"link", b"meta", b"noframes", b"script", b"style", b"template", b"title"}
)
#: of them, those the "in head noscript" mode takes without leaving the noscript element
_IN_NOSCRIPT_TAGS = frozenset({b"basefont", b"bgsound", b"link", b"meta", b"noframes", b"style"})
#: end tags that end the head and open the body
_ENDS_HEAD = frozenset({b"body", b"html", b"br"})
#: elements whose content is text, not tags (13.2.5: RCDATA, RAWTEXT, script data, PLAINTEXT;
#: noscript's content is parsed, scripting being disabled)
_RAW_TEXT = frozenset(
    {b"script", b"style", b"title", b"textarea", b"xmp", b"iframe", b"noembed", b"noframes", b"plaintext"}
)
#: inside a template, elements whose content this reader does not follow to the letter (foreign
#: content and its integration points, the select element's own rules)
_FOREIGN = frozenset({b"svg", b"math", b"select"})
#: the end tag of a raw text element: "</", its name in any case, and a character that ends a
#: tag name (a fixed length: nothing to backtrack)
_END_TAGS = {name: re.compile(b"</" + name + rb"[\t\n\f\r />]", re.IGNORECASE) for name in _RAW_TEXT}
_COMMENT_CLOSE = re.compile(rb"-->")
_SCRIPT_START = re.compile(rb"<script[\t\n\f\r />]", re.IGNORECASE)
_SPACE = frozenset(b"\t\n\f\r ")
_BLANKS = b"\t\n\f\r "
_SPACE_OR_SLASH = frozenset(b"\t\n\f\r /")
_LETTERS = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_CHARSET_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-")
#: the elements read for license links: ``<link>``, and ``<base>`` for the URL they are resolved against
_LINK_TAGS = frozenset({b"link", b"base"})
#: bytes searched ahead for a "+" or "&" at once (a head's links are rarely further apart)
_HINT_BYTES = 4_096
#: the HTML standard's ASCII whitespace (``str.split()`` splits on more)
_WHITESPACE = str.maketrans("\t\n\f\r", "    ")
_PROBE = bytes(range(0x20, 0x7F))
_ASCII = _PROBE.decode("ascii")


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
    of a short document), the problems met (``line`` 0: the document) and
    the URLs of the RSL licenses its links name (in document order, once each)."""

    metas: tuple[MetaTag, ...]
    charset: str
    complete: bool
    diagnostics: tuple[Diagnostic, ...]
    licenses: tuple[str, ...] = ()


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
    url: str | None = None,
) -> Head:
    """The meta tags of ``body``'s head (only those whose name is in
    ``names``, in any case, when given) and the RSL licenses it links to.
    ``http_charset`` is the charset of the response's Content-Type (a name,
    or the whole header value); ``url`` the page's, which relative links
    are resolved against (without it, only a ``<base href>`` is).  Never
    raises: anything unexpected gives what was read so far."""
    try:
        wanted = None if names is None else _lowered(names if isinstance(names, frozenset) else frozenset(names))
        return _read_head(body or b"", http_charset, wanted, max(0, limit), url or "")
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
    return _encoding(_charset_in(value))


def _read_head(
    body: bytes, http_charset: str | bytes | None, names: frozenset[str] | None, limit: int, url: str
) -> Head:
    truncated = len(body) > limit
    data = bytes(body[:limit]) if truncated or type(body) is not bytes else body
    encoding: str | None = None  # the document's, when the BOM or the header names it (13.2.3.1)
    for bom, name in _BOMS:
        if data.startswith(bom):
            data, encoding = data[len(bom) :], name
            break
    if encoding is None and http_charset:
        encoding = _http_charset(http_charset)
    charset = encoding  # what the bytes scanned are decoded with
    if encoding in _TRANSCODED:  # not ASCII-compatible: decoded, then scanned as UTF-8
        data, charset = data.decode(encoding, "replace").encode("utf-8", "surrogatepass"), "utf-8"
    scan = _Scanner(data, names)
    scan.run()
    if charset is None:
        charset = encoding = scan.meta_charset or "utf-8"
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
    licenses = _licenses(scan, charset, url, problems) if scan.links else ()
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
    return Head(tuple(metas), encoding or charset, complete, tuple(problems), licenses)


def _licenses(scan: _Scanner, charset: str, url: str, problems: list[Diagnostic]) -> tuple[str, ...]:
    """The license links' URLs, resolved against the document's base URL (HTML 2.4.1)."""
    base = url
    if scan.base is not None:  # its "frozen base URL" (4.2.3): a data: or javascript: one is ignored
        frozen = _resolve(url, scan.base.decode(charset, "replace"))
        if frozen is not None and urlsplit(frozen).scheme.lower() not in ("data", "javascript"):
            base = frozen
    found: list[str] = []
    for raw, line in scan.links:
        resolved = _resolve(base, raw.decode(charset, "replace"))
        if resolved is None or len(resolved) > MAX_URL_CHARS or urlsplit(resolved).scheme not in ("http", "https"):
            problems.append(Diagnostic(line, "license_refused", f"{CODES['license_refused']}: line {line}"))
        elif resolved not in found:
            found.append(resolved)
    if scan.links_dropped:
        count = f"{scan.links_dropped:,} more"
        problems.append(Diagnostic(0, "too_many_licenses", f"{CODES['too_many_licenses']}: {count}"))
    return tuple(found)


def _resolve(base: str, href: str) -> str | None:
    """``href`` (an attribute's value as written) resolved against ``base``; None when it names nothing."""
    href = html.unescape(href[: 4 * MAX_URL_CHARS]).strip(" \t\n\r\f")
    if not href:
        return None
    try:
        return urljoin(base, href)
    except ValueError:  # (a malformed authority, such as an unclosed "[")
        return None


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
    """The forward scan: the tokenizer's tokens, and the insertion modes of the
    tree construction up to the first content of the body (see the module's
    docstring)."""

    __slots__ = (
        "data", "names", "found", "dropped", "meta_charset", "ended", "cut", "budget", "lenient", "_line", "_line_at",
        "_next", "links", "links_dropped", "base", "_seen",
    )  # fmt: skip

    def __init__(self, data: bytes, names: Collection[str] | None) -> None:
        self.data = data
        self.names = None if names is None else _encoded(frozenset(names))
        self.found: list[tuple[int, int, bytes, bytes, int]] = []  # (lt, end, name, content, line)
        self.dropped = 0
        self.meta_charset: str | None = None
        self.ended = False  # the body's first content reached
        self.cut = False  # the prefix ends inside a construct
        #: steps left: a tag, an attribute or an "=" each (see MAX_STEPS)
        self.budget = MAX_STEPS
        #: a construct inside a template this reader does not follow was met: every later meta tag counts
        self.lenient = False
        self._line, self._line_at = 1, 0
        #: a search -> (where it started, what it found): a later search from a position up to what
        #: was found finds the same, so that repeated searches for a far string stay linear
        self._next: dict[object, tuple[int, int]] = {}
        #: the hrefs of the RSL license links (as written, once each) and their line; those not kept
        self.links: list[tuple[bytes, int]] = []
        self.links_dropped = 0
        #: the first ``<base>``'s href, as written
        self.base: bytes | None = None
        #: the bytes of the link tags read (a tag repeated is not read again)
        self._seen: set[bytes] = set()

    def _find(self, what: bytes | re.Pattern[bytes], pos: int) -> int:  # (for the script data states)
        """The position of the next ``what`` (a string or a pattern) at or after ``pos``, or -1."""
        known = self._next.get(what)
        if known is not None and known[0] <= pos and (known[1] >= pos or known[1] < 0):
            return known[1]
        if isinstance(what, bytes):
            at = self.data.find(what, pos)
        else:
            m = what.search(self.data, pos)
            at = m.start() if m else -1
        self._next[what] = (pos, at)
        return at

    def run(self) -> None:
        # (the loop's names are locals: it runs for every tag of every page read)
        data = self.data
        n = len(data)
        i = 0
        name_end_at, letters = _TAG_NAME_END.search, _LETTERS
        found = self.found
        mode = _BEFORE_HEAD
        depth = 0  # templates open (their content is no part of the head)
        foreign = 0  # the depth at which foreign content (svg, math, select) opened inside a template
        hint = -1  # the next "+" or "&" (an RSL link's type has one, or a character reference) at or after a tag
        while True:
            lt = data.find(b"<", i)
            if lt != i and depth == 0 and not self.lenient and data[i : n if lt < 0 else lt].strip(_BLANKS):
                self.ended = True  # text: the head's end (13.2.6.4.4 "anything else")
                return
            if lt < 0 or lt + 1 >= n:
                return
            self.budget -= 1
            if self.budget < 0:
                return
            c = data[lt + 1]
            if c == 0x21:  # "!": a comment, a doctype, or a bogus comment (CDATA only in foreign content)
                if data.startswith(b"<!--", lt):
                    end = self._comment_end(lt)
                else:
                    end = data.find(b">", lt + 2)
                    end = end + 1 if end >= 0 else -1
                if end < 0:
                    self.cut = True
                    return
                i = end
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
            if start >= n:
                return
            if data[start] not in letters:
                if closing:  # "</>" is nothing; "</" and another character, a bogus comment
                    end = start + 1 if data[start] == 0x3E else data.find(b">", start) + 1
                    if end <= 0:
                        self.cut = True
                        return
                    i = end
                    continue
                if depth == 0 and not self.lenient:  # "<" as text
                    self.ended = True
                    return
                i = lt + 1
                continue
            m = name_end_at(data, start)
            name_end = m.start() if m else n
            name = data[start:name_end].lower()  # (ASCII only)
            if (
                name == b"meta"
                and not closing
                and (depth == 0 or self.lenient)
                and (len(found) < MAX_METAS or self.meta_charset is None)
            ):
                if mode == _BEFORE_HEAD:
                    mode = _IN_HEAD
                end = self._read_meta(lt, name_end)
                if end < 0:
                    self.cut = True
                    return
                i = end
                continue
            if name == b"meta" and depth and not closing and self.meta_charset is None:
                parsed = self._attributes(name_end)  # a template's meta charset is the document's too
                if parsed is None:
                    self.cut = True
                    return
                self._charset(parsed[0])
                i = parsed[1]
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
            i = end
            raw = False
            if depth:  # inside a template: only templates, raw text and foreign content matter
                if name != b"template":
                    raw = not foreign and not closing and name in _RAW_TEXT
                    if not closing and not foreign and name in _FOREIGN:
                        foreign = depth
                        self.lenient = True  # (its integration points are not followed: read more, not less)
                    elif self.lenient and not closing and name in _LINK_TAGS:
                        self._link(name, lt, name_end, end)
                elif closing:
                    depth -= 1
                    if depth < foreign:
                        foreign = 0
                else:
                    depth += 1
            elif closing:
                if name == b"head":
                    if mode in (_BEFORE_HEAD, _IN_HEAD):
                        mode = _AFTER_HEAD
                elif name == b"noscript":
                    if mode == _IN_NOSCRIPT:
                        mode = _IN_HEAD
                elif name in _ENDS_HEAD and (mode != _IN_NOSCRIPT or name == b"br") and not self.lenient:
                    self.ended = True
                    return
            elif name in _IN_HEAD_TAGS:
                if mode == _BEFORE_HEAD or (mode == _IN_NOSCRIPT and name not in _IN_NOSCRIPT_TAGS):
                    mode = _IN_HEAD
                if name == b"template":
                    depth = 1
                elif name == b"meta":  # a meta tag past the kept ones, its charset known
                    self.dropped += 1
                elif name in _LINK_TAGS:
                    if hint < name_end:
                        hint = _hint(data, name_end, n)
                    if hint < end or name == b"base":  # (most links, stylesheets and icons, have neither)
                        self._link(name, lt, name_end, end)
                raw = name in _RAW_TEXT
            elif name == b"head":
                if mode == _BEFORE_HEAD:
                    mode = _IN_HEAD
            elif name == b"noscript":
                if mode in (_BEFORE_HEAD, _IN_HEAD):
                    mode = _IN_NOSCRIPT  # (scripting disabled: its content is parsed, and in the head)
                elif mode == _AFTER_HEAD and not self.lenient:
                    self.ended = True
                    return
            elif name != b"html" and not self.lenient:  # any other start tag: the body
                self.ended = True
                return
            if raw:  # the element's content is text, up to its end tag
                end = self._raw_text_end(name, i)
                if end < 0:
                    self.cut = True
                    return
                self.budget -= 1
                i = end

    def _raw_text_end(self, name: bytes, pos: int) -> int:
        """The position of the ``<`` of the end tag that closes the raw text
        element ``name`` whose content starts at ``pos`` (its "appropriate end
        tag"), -1 if the prefix or the budget ends first.  A script's content
        follows the script data states (13.2.5.4, 15-31): after ``<!--``, a
        ``<script`` hides the next ``</script`` until ``-->``."""
        if name == b"plaintext":
            return -1
        data = self.data
        m = _END_TAGS[name].search(data, pos)
        end = m.start() if m else -1
        if name != b"script" or data.find(b"<!--", pos, len(data) if end < 0 else end) < 0:
            return end  # (the usual script: no escape before its end)
        find = self._find
        end_tag = _END_TAGS[name]
        while True:  # script data
            end = find(end_tag, pos)
            escape = find(b"<!--", pos)
            if escape < 0 or 0 <= end < escape:
                return end
            pos = escape + 2  # escaped: "-->" may use the opener's dashes
            double = False
            while True:  # escaped, or double escaped (three searches: three steps)
                self.budget -= 3
                if self.budget < 0:
                    return -1
                close = find(_COMMENT_CLOSE, pos)
                end = find(end_tag, pos)
                if close >= 0 and (end < 0 or close < end):
                    end = -1
                if not double:
                    start = find(_SCRIPT_START, pos)
                    if start >= 0 and (end < 0 or start < end) and (close < 0 or start < close):
                        double, pos = True, start + 8
                        continue
                    if end >= 0:
                        return end
                elif end >= 0:
                    double, pos = False, end + 9
                    continue
                if close < 0:
                    return -1
                pos = close + 3
                break

    def _comment_end(self, lt: int) -> int:
        """The position after the comment opened by ``<!--`` at ``lt``, -1 if the
        prefix or the budget ends first (13.2.5.43-52): ``<!-->`` and ``<!--->``
        close at once, else the first ``-->`` or ``--!>`` after the opener does
        (each ``>`` in the comment costs a step)."""
        data = self.data
        at = lt + 4
        if data.startswith(b">", at):
            return at + 1
        if data.startswith(b"->", at):
            return at + 2
        gt = at
        while True:
            gt = data.find(b">", gt)
            if gt < 0:
                return -1
            if (gt - 2 >= at and data[gt - 2 : gt] == b"--") or (gt - 3 >= at and data[gt - 3 : gt] == b"--!"):
                return gt + 1
            self.budget -= 1
            if self.budget < 0:
                return -1
            gt += 1

    def _read_meta(self, lt: int, name_end: int) -> int:
        """Reads the meta tag whose name ends at ``name_end``: the position after it, -1 if cut."""
        # A site repeats its meta tags on every page: a tag read before, up to the first
        # ">" after its name, is not read again (the same bytes give the same attributes)
        data = self.data
        gt = data.find(b">", name_end)
        key = data[name_end : gt + 1] if 0 <= gt - name_end < _KEPT_TAG_BYTES else b""
        kept = _TAGS.get(key) if key else None
        if kept is not None:
            attrs, steps = kept
            self.budget -= steps
            if self.budget < 0:
                return -1
            end = gt + 1
        else:
            before = self.budget
            parsed = self._attributes(name_end)
            if parsed is None:
                return -1
            attrs, end = parsed
            if key and end == gt + 1 and len(_TAGS) < _KEPT_TAGS:
                _TAGS[key] = (attrs, before - self.budget)
        if attrs:
            self._meta(lt, end, attrs)
        else:
            self.dropped += len(self.found) >= MAX_METAS
        return end

    def _link(self, name: bytes, lt: int, name_end: int, end: int) -> None:
        """Reads a ``<link>`` that may name an RSL license, or the first ``<base>`` with an href.
        Only a tag whose bytes hold the words it needs, or a numeric character reference, is
        parsed, and only once a document (the same bytes state the same)."""
        raw = self.data[name_end:end]
        if raw in self._seen or (name == b"base" and self.base is not None):
            return
        self._seen.add(raw)
        text = raw.lower()
        if name == b"base":
            if b"href" not in text:
                return  # (an attribute's name is never written with a character reference)
        elif b"&#" not in text and (b"rsl" not in text or b"license" not in text):
            return  # (no named character reference stands for a letter of "rsl" or "license")
        elif len(self.links) >= MAX_LICENSES:  # (counted, not parsed: a hostile head's are many)
            self.links_dropped += 1
            return
        parsed = self._attributes(name_end)
        attrs = parsed[0] if parsed is not None else {}
        href, media = attrs.get(b"href"), attrs.get(b"type")
        if href is None:
            return
        if name == b"base":
            self.base = href
            return
        if media is None:
            return
        # rel and type hold ASCII tokens: read as Latin-1 and unescaped, their bytes match whatever the charset
        kind = html.unescape(media.decode("latin-1")).split(";", 1)[0].strip(" \t\n\r\f")
        rel = html.unescape(attrs.get(b"rel", b"").decode("latin-1")).translate(_WHITESPACE).split(" ")
        if kind.lower() != MEDIA_TYPE or "license" not in [t.lower() for t in rel if t.isascii()]:
            return
        if any(href == known for known, _ in self.links):
            return
        self._line += self.data.count(b"\n", self._line_at, lt)
        self._line_at = lt
        self.links.append((href, self._line))

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
        if raw:  # (an encoding not known is ignored: a later meta tag may name one)
            found = _encoding(raw.decode("latin-1").strip(" \t\n\r\f"))
            if found is not None:  # UTF-16 named in the document is UTF-8 (13.2.3.2, 13.2.3.4)
                self.meta_charset = "utf-8" if found in _TRANSCODED else found


def _hint(data: bytes, pos: int, n: int) -> int:
    """A position up to which, from ``pos``, there is no "+" nor "&": a link without either
    names no RSL license and is not parsed (one search for the links of a head, searching
    at most :data:`_HINT_BYTES` ahead)."""
    limit = min(n, pos + _HINT_BYTES)
    plus, amp = data.find(b"+", pos, limit), data.find(b"&", pos, limit)
    return min(plus if plus >= 0 else limit, amp if amp >= 0 else limit)


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
def _encoding(label: str) -> str | None:
    """Python's codec for an encoding ``label``, as the Encoding standard
    reads it (``latin1`` is windows-1252, ``utf-16`` UTF-16LE); None for an
    unknown label or one the standard does not have (UTF-7, UTF-32, codecs
    that are no text encoding)."""
    if not label or len(label) > 40:
        return None
    try:
        name = codecs.lookup(label).name
        name = _WHATWG.get(name, name)
        if name in _TRANSCODED or (not name.startswith(("utf-7", "utf-32")) and _PROBE.decode(name) == _ASCII):
            return name
        return None
    except Exception:  # noqa: BLE001 - LookupError, or a codec that is no text encoding
        return None
