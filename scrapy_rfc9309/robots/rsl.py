"""RSL 1.0: Really Simple Licensing (rslstandard.org, RSL-SPEC-1.0, published
2025-11-06; what was read of it, and what could not be confirmed, is in
docs/usage_preferences.md, "RSL licenses").

A site names its license with a file-wide ``License: <absoluteURL>`` line in
robots.txt (read by :mod:`.parser`, kept in :attr:`.RobotsTxt.licenses`), a
``Link: <URL>; rel="license"; type="application/rsl+xml"`` response header
(:func:`link_licenses`) or an HTML ``<link rel="license">``.  The license is
an XML document in the namespace ``https://rslstandard.org/rsl``::

    <rsl xmlns="https://rslstandard.org/rsl">
      <content url="/premium/*">
        <license>
          <permits type="usage">search ai-input</permits>
          <prohibits type="usage">ai-train</prohibits>
          <payment type="subscription">...</payment>
        </license>
      </content>
    </rsl>

``<content url>`` is a path pattern matched as robots.txt's are (``*``,
``$``, percent-encoding as RFC 9309 compares it: :mod:`.patterns`), or a
full URL (its path, on its own origin only); the longest matching pattern
applies, and equally long ones combine, the most restrictive winning.  Each
``<license>`` of a content is one set of terms a client may take.  For a
usage category (:data:`.usage.CATEGORIES`) a license:

* reserves it when a ``<prohibits type="usage">`` names it, or when it has a
  ``<permits type="usage">`` that does not name it (not granted);
* else grants it against a condition when it has a ``<payment>`` whose type
  is not ``free``, or its content names a license ``server`` (RSL: a
  license must then be obtained even when free);
* else grants it freely.

A category is allowed when some license grants it freely, or against a
condition and the crawl declares it holds the license
(``RFC9309_USAGE["licenses"]``, :func:`holds`); otherwise, when some license
speaks of it, disallowed.  RSL's usage tokens map onto the categories as
:data:`USAGE_TOKENS` says (``ai-index`` has no category of its own here).

The document is parsed safely and in bounded steps (:meth:`License.parsing`):
stdlib expat, no DTD: a ``<!DOCTYPE`` or ``<!ENTITY`` is refused before any
entity is declared (so none is ever expanded), at most
:data:`MAX_FILE_BYTES` bytes, :data:`MAX_ELEMENTS` elements,
:data:`MAX_DEPTH` levels and :data:`MAX_CONTENTS` contents are read, at most
:data:`MAX_DIAGNOSTICS` diagnostics kept (with their line).  A document that
breaks a bound, is not XML or has no RSL content states nothing; nothing here
raises on any input.  A check costs one pass over the (at most
:data:`MAX_CONTENTS`) patterns, and each content's statement is made once.
"""

from __future__ import annotations

import xml.parsers.expat
from collections.abc import Generator, Iterable, Sequence
from typing import Any, NamedTuple
from urllib.parse import urljoin, urlsplit

from . import patterns
from .diagnostics import Diagnostic
from .steps import finish
from .usage import CATEGORIES, UNKNOWN, Source, Usage, combine

#: the RSL namespace
NAMESPACE = "https://rslstandard.org/rsl"
#: the media type of an RSL document (Link header, HTML link)
MEDIA_TYPE = "application/rsl+xml"
#: RSL usage tokens -> the categories they cover (``train-ai``, the AI
#: Preferences spelling, appears in rslstandard.org's own examples)
USAGE_TOKENS: dict[str, tuple[str, ...]] = {
    "all": CATEGORIES,
    "ai-all": ("train-ai", "ai-input"),
    "ai-train": ("train-ai",),
    "train-ai": ("train-ai",),
    "ai-input": ("ai-input",),
    "ai-index": (),
    "search": ("search",),
}
#: bytes of a document parsed at most (a real license is a few hundred); a larger one states nothing
MAX_FILE_BYTES = 65_536
#: elements read at most; a document with more states nothing
MAX_ELEMENTS = 4_096
#: nesting depth at most; a deeper document states nothing
MAX_DEPTH = 32
#: ``<content>`` elements kept; later ones are not read (reported)
MAX_CONTENTS = 64
#: ``<license>`` elements kept per content
MAX_LICENSES = 8
#: characters of an element's text read (a permits list, a payment type)
MAX_TEXT_CHARS = 1_024
#: diagnostics kept; the rest are counted (``omitted``)
MAX_DIAGNOSTICS = 20
#: bytes fed to the XML parser per step of :meth:`License.parsing`
STEP_BYTES = 8_192
#: where statements come from, as Source.origin
ORIGIN = "license"

CODES: dict[str, str] = {
    "rsl_too_large": f"the document is larger than {MAX_FILE_BYTES:,} bytes; it states nothing",
    "rsl_doctype": "the document has a DOCTYPE or an ENTITY declaration (refused: no entity is expanded); it states nothing",
    "rsl_not_xml": "the document is not well-formed XML; it states nothing",
    "rsl_too_many_elements": f"the document has more than {MAX_ELEMENTS:,} elements; it states nothing",
    "rsl_too_deep": f"the document nests deeper than {MAX_DEPTH} levels; it states nothing",
    "rsl_no_content": f"no <content> element in the RSL namespace ({NAMESPACE}); the document states nothing",
    "rsl_too_many_contents": f"<content> elements after the first {MAX_CONTENTS} were not read",
    "rsl_too_many_licenses": f"<license> elements after the first {MAX_LICENSES} of a content were not read",
    "rsl_content_url_invalid": "the content's url is missing or neither a path nor an http(s) URL; it was ignored",
    "rsl_unknown_usage": "a usage token this crawler does not know; it was ignored",
    "rsl_type_not_read": "permits/prohibits of this type (user, geo) are not read; it was ignored",
    "rsl_more_problems": f"problems past the first {MAX_DIAGNOSTICS} were counted, not kept",
}

_CONTENT, _LICENSE = NAMESPACE + " content", NAMESPACE + " license"
_PERMITS, _PROHIBITS, _PAYMENT = NAMESPACE + " permits", NAMESPACE + " prohibits", NAMESPACE + " payment"
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: a category's standing under one license, from best to worst for the crawl
_FREE, _PAID, _RESERVED = 0, 1, 2


class Terms(NamedTuple):
    """One ``<license>``: its line, the categories it permits (None: it has
    no ``permits type="usage"``, so all but the prohibited ones), prohibits,
    and its payment type (None: none, or ``free``)."""

    line: int
    permits: frozenset[str] | None
    prohibits: frozenset[str]
    payment: str | None

    def standing(self, category: str, server: bool) -> int:
        if category in self.prohibits or (self.permits is not None and category not in self.permits):
            return _RESERVED
        return _PAID if self.payment is not None or server else _FREE


class Content(NamedTuple):
    """One ``<content>``: its line, url as written, the origin its full URL
    names (None for a path), compiled pattern and priority, whether it names
    a license server, and its licenses."""

    line: int
    url: str
    origin: tuple[str, str, int] | None
    compiled: tuple[int, Any, str, int]
    priority: int
    server: bool
    terms: tuple[Terms, ...]


class License:
    """One RSL document, read once (:meth:`parse`, :meth:`parsing`): its
    ``contents``, ``diagnostics`` (at most :data:`MAX_DIAGNOSTICS`, then one
    ``rsl_more_problems``), the ``url`` it was fetched from, the ``sha256``
    of its body, and whether the crawl ``held`` declares it holds it.  An
    empty one states nothing."""

    __slots__ = ("contents", "diagnostics", "url", "sha256", "held", "_usages")

    def __init__(
        self,
        contents: Sequence[Content] = (),
        diagnostics: Sequence[Diagnostic] = (),
        url: str = "",
        sha256: str | None = None,
        held: bool = False,
    ) -> None:
        self.contents = tuple(contents)
        self.diagnostics = tuple(diagnostics)
        self.url, self.sha256, self.held = url, sha256, held
        self._usages: dict[int, Usage] = {}

    @classmethod
    def parse(cls, body: bytes | str | None, url: str = "", sha256: str | None = None, held: bool = False) -> License:
        """The document's terms; never raises."""
        return finish(cls.parsing(body, url, sha256, held))

    @classmethod
    def parsing(
        cls, body: bytes | str | None, url: str = "", sha256: str | None = None, held: bool = False
    ) -> Generator[None, None, License]:
        """:meth:`parse` in steps of :data:`STEP_BYTES` bytes fed to the parser."""
        reader = _Reader()
        try:
            yield from reader.reading(body)
        except Exception as exc:  # noqa: BLE001 - hostile input: never raise; pragma: no cover (none known)
            reader.contents = []
            reader.problem(0, "rsl_not_xml", repr(exc)[:100])
        return cls(reader.contents, reader.kept(), url, sha256, held)

    def __bool__(self) -> bool:
        return bool(self.contents)

    def __len__(self) -> int:
        return len(self.contents)

    def __repr__(self) -> str:
        return f"<License {len(self.contents)} contents, {len(self.diagnostics)} diagnostics>"

    def usage(self, url: str) -> Usage:
        """What the license states for ``url`` (an absolute URL): the
        statement of the longest matching content (equally long ones combined)."""
        if not self.contents:
            return UNKNOWN
        path = patterns.path_of(url)
        where: tuple[str, str, int] | None = None
        best, found = -1, []
        for index, content in enumerate(self.contents):
            if content.priority < best:
                continue
            if content.origin is not None:
                where = where or _origin(url)
                if content.origin != where:
                    continue
            if _matches(path, content.compiled):
                if content.priority > best:
                    best, found = content.priority, [index]
                else:
                    found.append(index)
        if not found:
            return UNKNOWN
        parts = [self._usage(index) for index in found]
        return parts[0] if len(parts) == 1 else combine(parts)

    def _usage(self, index: int) -> Usage:
        usage = self._usages.get(index)
        if usage is None:
            usage = self._usages[index] = self._statement(self.contents[index])
        return usage

    def _statement(self, content: Content) -> Usage:
        """A content's statement: per category, the best standing any of its licenses gives it."""
        values: dict[str, bool] = {}
        sources: dict[str, tuple[Source, ...]] = {}
        for category in CATEGORIES:
            spoken = [t for t in content.terms if t.permits is not None or category in t.prohibits or t.payment]
            if not spoken and not content.server:
                continue  # no license says anything of it
            standing, terms = min(((t.standing(category, content.server), t) for t in content.terms), default=(3, None))
            if terms is None:
                continue
            if standing == _FREE:
                values[category], why = True, "permitted"
            elif standing == _PAID:
                condition = f"against {terms.payment}" if terms.payment else "through the license server"
                values[category] = self.held
                why = f"permitted only {condition}; license {'held' if self.held else 'not held'}"
            else:
                values[category] = False
                why = "prohibited" if category in terms.prohibits else "not among the uses it permits"
            sources[category] = (Source(ORIGIN, terms.line, self._text(content, category, why)),)
        return Usage(values, sources) if values else UNKNOWN

    def _text(self, content: Content, category: str, why: str) -> str:
        url = self.url if len(self.url) <= 80 else self.url[:80] + "..."
        digest = f" sha256={self.sha256[:16]}" if self.sha256 else ""  # (the whole hash: provenance, trail)
        return f"{url}{digest}: content {_clean(content.url, 40)}: {category} {why}"


#: no license, or one that states nothing
EMPTY = License()


def holds(url: str, held: Iterable[str]) -> bool:
    """Whether the crawl holds the license at ``url``: ``held`` names it (a
    URL, compared as written) or its host (``example.com``)."""
    host = (urlsplit(url).hostname or "") if url else ""
    for item in held:
        if "://" in item:
            if item == url:
                return True
        elif host and item.lower().rstrip(".") == host:
            return True
    return False


def link_licenses(values: Iterable[bytes | str] | None, limit: int = 4) -> tuple[str, ...]:
    """The RSL license URLs a response's ``Link`` field lines name
    (``<URL>; rel="license"; type="application/rsl+xml"``), at most
    ``limit``; linear in the header, never raises."""
    found: list[str] = []
    for value in values or ():
        text = value.decode("latin-1") if isinstance(value, (bytes, bytearray)) else str(value)
        for link in text[:16_384].split(","):  # (a URL with a comma is not read: rare, and only recorded)
            target, _, params = link.strip().partition(">")
            if not target.startswith("<"):
                continue
            attrs = {}
            for param in params.split(";"):
                key, _, val = param.strip().partition("=")
                attrs[key.strip().lower()] = val.strip().strip('"').lower()
            if "license" in attrs.get("rel", "").split() and attrs.get("type") == MEDIA_TYPE:
                found.append(target[1:].strip())
                if len(found) >= limit:
                    return tuple(found)
    return tuple(found)


def page_licenses(link: Iterable[bytes | str] | None, html: Sequence[str], url: str) -> tuple[tuple[str, str], ...]:
    """The RSL licenses a response names, once each, as (URL, ``"header"`` or ``"html"``):
    its ``Link`` lines' (:func:`link_licenses`, resolved against ``url``), then its HTML
    head's (:attr:`.html_head.Head.licenses`, resolved already)."""
    found: dict[str, str] = {}
    for target in link_licenses(link) if link else ():
        try:
            found.setdefault(urljoin(url, target), "header")
        except ValueError:  # (a malformed authority: names nothing)
            continue
    for target in html:
        found.setdefault(target, "html")
    return tuple(found.items())


# -- reading ------------------------------------------------------------------------------


class _Refused(Exception):
    """A bound or a refused construct: the document states nothing."""

    def __init__(self, code: str, line: int, detail: str | None = None) -> None:
        super().__init__(code)
        self.code, self.line, self.detail = code, line, detail


class _Reader:
    """expat's handlers, and what they keep (bounded whatever the document holds)."""

    def __init__(self) -> None:
        self.contents: list[Content] = []
        self.items: list[Diagnostic] = []
        self.omitted = 0
        self.elements = 0
        self.depth = 0
        self.skipped = False  # contents past MAX_CONTENTS were met
        self.content: dict[str, Any] | None = None  # the content being read
        self.terms: dict[str, Any] | None = None  # the license being read
        self.text: list[str] | None = None  # the text of a permits/prohibits being read
        self.chars = 0
        self.kind: tuple[str, str, int] | None = None  # (element, type, line) of that permits/prohibits
        self.parser: Any = None

    def problem(self, line: int, code: str, detail: str | None = None) -> None:
        if len(self.items) < MAX_DIAGNOSTICS:
            text = CODES[code] if detail is None else f"{CODES[code]}: {_clean(detail, 100)}"
            self.items.append(Diagnostic(line, code, text))
        else:
            self.omitted += 1

    def kept(self) -> tuple[Diagnostic, ...]:
        if not self.omitted:
            return tuple(self.items)
        more = Diagnostic(0, "rsl_more_problems", f"{CODES['rsl_more_problems']}: {self.omitted:,} more")
        return (*self.items, more)

    def reading(self, body: bytes | str | None) -> Generator[None, None, None]:
        if body is None:
            return
        data = body.encode("utf-8") if isinstance(body, str) else bytes(body)
        if len(data) > MAX_FILE_BYTES:
            self.problem(0, "rsl_too_large", f"{len(data):,} bytes")
            return
        parser = self.parser = xml.parsers.expat.ParserCreate(namespace_separator=" ")
        parser.SetParamEntityParsing(xml.parsers.expat.XML_PARAM_ENTITY_PARSING_NEVER)
        parser.StartDoctypeDeclHandler = self._doctype
        parser.EntityDeclHandler = self._entity
        parser.StartElementHandler = self._start
        parser.EndElementHandler = self._end
        parser.CharacterDataHandler = self._chars
        try:
            for at in range(0, max(len(data), 1), STEP_BYTES):
                parser.Parse(data[at : at + STEP_BYTES], at + STEP_BYTES >= len(data))
                yield
        except _Refused as refused:
            self.contents = []
            self.problem(refused.line, refused.code, refused.detail)
            return
        except xml.parsers.expat.ExpatError as exc:
            self.contents = []
            self.problem(exc.lineno or 0, "rsl_not_xml", xml.parsers.expat.ErrorString(exc.code))
            return
        finally:
            self.parser = None  # (its handlers hold this reader)
        if not self.contents and not self.skipped:
            self.problem(0, "rsl_no_content")

    def _line(self) -> int:
        return int(self.parser.CurrentLineNumber) if self.parser is not None else 0

    def _doctype(self, *_: Any) -> None:
        raise _Refused("rsl_doctype", self._line())

    def _entity(self, *_: Any) -> None:  # (reached only if a DOCTYPE could be skipped: never)
        raise _Refused("rsl_doctype", self._line())  # pragma: no cover

    def _start(self, name: str, attrs: dict[str, str]) -> None:
        self.elements += 1
        self.depth += 1
        if self.elements > MAX_ELEMENTS:
            raise _Refused("rsl_too_many_elements", self._line())
        if self.depth > MAX_DEPTH:
            raise _Refused("rsl_too_deep", self._line())
        if name == _CONTENT:
            self._content(attrs)
        elif self.content is None:
            return
        elif name == _LICENSE and self.terms is None:
            if len(self.content["terms"]) >= MAX_LICENSES:
                self.problem(self._line(), "rsl_too_many_licenses")
                return
            self.terms = {"line": self._line(), "permits": None, "prohibits": set(), "payment": None}
        elif self.terms is None:
            return
        elif name in (_PERMITS, _PROHIBITS) and self.text is None:
            kind = attrs.get("type", "usage").strip().lower()
            if kind != "usage":
                self.problem(self._line(), "rsl_type_not_read", f"type={kind!r}")
                return
            self.text, self.chars, self.kind = [], 0, (name, kind, self._line())
        elif name == _PAYMENT:
            kind = (attrs.get("type") or "unspecified").strip().lower()[:40] or "unspecified"
            if kind != "free" and self.terms["payment"] is None:
                self.terms["payment"] = kind

    def _content(self, attrs: dict[str, str]) -> None:
        self.content = self.terms = self.text = None
        line = self._line()
        if len(self.contents) >= MAX_CONTENTS:
            if not self.skipped:
                self.problem(line, "rsl_too_many_contents")
            self.skipped = True
            return
        url = attrs.get("url", "").strip()
        target = _target(url)
        if target is None:
            self.problem(line, "rsl_content_url_invalid", repr(url[:60]))
            return
        origin, path = target
        kind, a, b, n, priority = patterns.compile_pattern(path)
        self.content = {
            "line": line, "url": url[:2048], "origin": origin, "compiled": (kind, a, b, n), "priority": priority,
            "server": bool(attrs.get("server", "").strip()), "terms": [],
        }  # fmt: skip

    def _chars(self, data: str) -> None:
        if self.text is not None and self.chars < MAX_TEXT_CHARS:
            data = data[: MAX_TEXT_CHARS - self.chars]
            self.text.append(data)
            self.chars += len(data)

    def _end(self, name: str) -> None:
        self.depth -= 1
        if self.text is not None and self.kind is not None and name == self.kind[0] and self.terms is not None:
            categories: set[str] = set()
            for token in "".join(self.text).replace(",", " ").split():
                covered = USAGE_TOKENS.get(token.lower())
                if covered is None:
                    self.problem(self.kind[2], "rsl_unknown_usage", token[:40])
                else:
                    categories.update(covered)
            if name == _PERMITS:
                self.terms["permits"] = (self.terms["permits"] or set()) | categories
            else:
                self.terms["prohibits"] |= categories
            self.text = self.kind = None
        elif name == _LICENSE and self.terms is not None and self.content is not None:
            t = self.terms
            permits = frozenset(t["permits"]) if t["permits"] is not None else None
            self.content["terms"].append(Terms(t["line"], permits, frozenset(t["prohibits"]), t["payment"]))
            self.terms = None
        elif name == _CONTENT and self.content is not None:
            c = self.content
            self.contents.append(
                Content(c["line"], c["url"], c["origin"], c["compiled"], c["priority"], c["server"], tuple(c["terms"]))
            )
            self.content = self.terms = None


def _target(url: str) -> tuple[tuple[str, str, int] | None, str] | None:
    """``(origin or None, path pattern)`` of a content's url, or None when unusable."""
    if url[:1] in ("/", "*"):
        return None, url
    if "://" not in url:
        return None
    origin = _origin(url)
    if origin is None:
        return None
    rest = url.split("/", 3)
    return origin, "/" + rest[3] if len(rest) == 4 else "/"


def _origin(url: str) -> tuple[str, str, int] | None:
    try:
        parts = urlsplit(url)
        scheme, host = parts.scheme.lower(), (parts.hostname or "").rstrip(".")
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    if scheme not in _DEFAULT_PORTS or not host or port is None:
        return None
    return scheme, host, port


def _matches(path: str, compiled: tuple[int, Any, str, int]) -> bool:
    kind, a, b, n = compiled
    if kind == patterns.PREFIX:
        return path.startswith(a)
    if kind == patterns.EXACT:
        return bool(path == a)
    if kind == patterns.SUB:
        return path.startswith(a) and path.find(b, n) >= 0
    if kind == patterns.SUB_END:
        return path.endswith(b) and len(path) >= n and path.startswith(a)
    return patterns.wild_match(path, a, kind == patterns.WILD_END)


def _clean(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) > limit:
        text = text[:limit] + "..."
    return text if text.isprintable() else "".join(c if c.isprintable() else " " for c in text)
