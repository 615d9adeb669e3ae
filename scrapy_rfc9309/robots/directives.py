"""Page-level robots directives: ``X-Robots-Tag`` headers and robots meta tags.

A page can say, for itself, what may be done with it: in each response's
``X-Robots-Tag`` header lines (any media type) and, for HTML, in
``<meta name="robots">`` or ``<meta name="<token>">`` tags of its head
(read by :mod:`.html_head`).  Their values are comma-separated directives,
case-insensitive.  Three of them are usage statements, mapped onto the
plugin's categories (:data:`USAGE_DIRECTIVES`):

* ``noindex``: not in a search index: ``search`` disallowed;
* ``noai`` and ``noimageai`` (a de-facto convention from late 2022, no
  standard): not for AI training: ``train-ai`` disallowed.  ``noimageai``
  speaks of a page's images; the plugin cannot tell a page's images from
  its text, so the statement applies to the response as a whole.  Neither
  says anything about ``ai-input`` (content given to a model at answer
  time): the convention was written about training sets, and reading more
  into it would state what the site did not;
* ``none``: ``noindex, nofollow``.

``nofollow`` is no usage category: it says the links found on the page are
not to be followed, and is reported apart (:attr:`PageDirectives.nofollow`).
Everything else (``all``, ``index``, ``follow``: the defaults; ``noarchive``,
``nosnippet``, ``max-snippet: 20``, ``unavailable_after: <date>`` ...)
states nothing here and is no error; an unknown word is reported.

Scope, as the search engines that defined these read it: a header value may
name a crawler, ``X-Robots-Tag: googlebot: noindex, nofollow``, and the
directives after the name (to the next name) apply to that crawler only; a
meta tag names its crawler in its ``name``.  Here they apply when the name is
the crawl's product token (case-insensitive) or ``robots``; unnamed header
directives apply to every crawler.  A name is a product-token-like word
(letters, digits, ``-``, ``_``) followed by ``:`` that is not itself a valued
directive (``max-snippet``, ``unavailable_after``, ``noindex`` ...), so the date of
``unavailable_after: Wednesday, 15-Nov-23 15:00:00 GMT`` names no crawler.

Each statement keeps where it was made: the header line
(``header: X-Robots-Tag: googlebot: noai``) or the tag with its line
(``html`` line 12, ``<meta name="robots" content="noai">``).  Several
statements combine as every other usage statement does, the most
restrictive winning (the search engines' rule for conflicting directives
too).  Nothing here raises on any input.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import NamedTuple

from .diagnostics import Diagnostic
from .html_head import MetaTag
from .usage import UNKNOWN, Source, Usage, combine

#: directive -> the categories it disallows
USAGE_DIRECTIVES: dict[str, tuple[str, ...]] = {
    "noai": ("train-ai",),
    "noimageai": ("train-ai",),
    "noindex": ("search",),
    "none": ("search",),
}
#: directives that say the page's links are not to be followed
NOFOLLOW_DIRECTIVES = frozenset({"nofollow", "none"})
#: directives that take a value after ":" (a name before ":" that is one of
#: these is the directive, not a crawler)
VALUED_DIRECTIVES = frozenset(
    {"max-snippet", "max-image-preview", "max-video-preview", "unavailable_after", "unavailable-after"}
)
#: directives known and stating nothing here
OTHER_DIRECTIVES = frozenset(
    {
        "all", "index", "follow", "noarchive", "nocache", "nosnippet", "noimageindex", "notranslate",
        "indexifembedded", "nositelinkssearchbox", "noodp", "noydir", "noyaca",
    }
)  # fmt: skip
_KNOWN = frozenset(USAGE_DIRECTIVES) | NOFOLLOW_DIRECTIVES | VALUED_DIRECTIVES | OTHER_DIRECTIVES
#: meta names and header scopes that address every crawler
GENERIC_NAMES = frozenset({"robots"})
#: the header's name, as it is reported
HEADER = "X-Robots-Tag"
#: bytes of X-Robots-Tag values read per response (all lines together); the
#: lines past it are not read (reported)
MAX_HEADER_BYTES = 16_384
#: meta tags read per page
MAX_TAGS = 64
#: diagnostics kept per response
MAX_PROBLEMS = 20
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")

CODES: dict[str, str] = {
    "directive_unknown": "a robots directive this crawler does not know; it states nothing",
    "header_too_long": f"X-Robots-Tag values past {MAX_HEADER_BYTES:,} bytes were not read",
    "too_many_tags": f"robots meta tags past the first {MAX_TAGS} were not read",
}


class PageDirectives(NamedTuple):
    """What a response's robots directives say: ``usage`` (categories
    disallowed, with the header lines and tags behind them), ``nofollow``
    (its links are not to be followed) with ``nofollow_sources``, and the
    ``diagnostics`` (``line``: a tag's line, 0 for a header)."""

    usage: Usage
    nofollow: bool
    nofollow_sources: tuple[Source, ...]
    diagnostics: tuple[Diagnostic, ...]


NOTHING = PageDirectives(UNKNOWN, False, (), ())


def page_directives(
    x_robots_tag: Iterable[bytes | str] | bytes | str | None,
    metas: Iterable[MetaTag] = (),
    tokens: str | Sequence[str] = (),
) -> PageDirectives:
    """The directives of a response for a crawler whose product token is
    one of ``tokens``: its ``X-Robots-Tag`` field lines (each line as sent)
    and the meta tags of its head (from :func:`.html_head.read_head`;
    those named neither ``robots`` nor a token are skipped).  Never raises."""
    try:
        wanted = _wanted(tokens)
        statements: list[Usage] = []
        nofollow: list[Source] = []
        problems: list[Diagnostic] = []
        _read_header(x_robots_tag, wanted, statements, nofollow, problems)
        _read_metas(metas, wanted, statements, nofollow, problems)
    except Exception as exc:  # noqa: BLE001 - hostile input: never raise; pragma: no cover (none known)
        return PageDirectives(UNKNOWN, False, (), (Diagnostic(0, "directive_unknown", f"internal error: {exc!r}"),))
    if not statements and not nofollow and not problems:
        return NOTHING
    usage = UNKNOWN if not statements else statements[0] if len(statements) == 1 else combine(statements)
    return PageDirectives(usage, bool(nofollow), tuple(dict.fromkeys(nofollow)), tuple(problems))


def _wanted(tokens: str | Sequence[str]) -> frozenset[str]:
    if isinstance(tokens, str):
        tokens = (tokens,)
    return _names(tokens if isinstance(tokens, tuple) else tuple(tokens))


@lru_cache(maxsize=64)
def _names(tokens: tuple[object, ...]) -> frozenset[str]:
    """The names addressed to the crawler: ``robots`` and its tokens (a crawl has one set)."""
    return GENERIC_NAMES | {t.lower() for t in tokens if isinstance(t, str)}


def _read_header(
    values: Iterable[bytes | str] | bytes | str | None,
    wanted: frozenset[str],
    statements: list[Usage],
    nofollow: list[Source],
    problems: list[Diagnostic],
) -> None:
    if values is None:
        return
    if isinstance(values, (bytes, str)):
        values = [values]
    budget = MAX_HEADER_BYTES
    for raw in values:
        line = raw.decode("latin-1") if isinstance(raw, (bytes, bytearray)) else str(raw)
        if len(line) > budget:
            problems.append(Diagnostic(0, "header_too_long", CODES["header_too_long"]))
            return
        budget -= len(line)
        found = _directives(line, scoped=True, wanted=wanted, problems=problems)
        if found:
            _state(found, Source("header", 0, _clip(f"{HEADER}: {line.strip()}")), statements, nofollow)


def _read_metas(
    metas: Iterable[MetaTag],
    wanted: frozenset[str],
    statements: list[Usage],
    nofollow: list[Source],
    problems: list[Diagnostic],
) -> None:
    count = 0
    for tag in metas:
        if tag.name not in wanted:
            continue
        count += 1
        if count > MAX_TAGS:
            problems.append(Diagnostic(tag.line, "too_many_tags", CODES["too_many_tags"]))
            return
        found = _directives(tag.content, scoped=False, wanted=wanted, problems=problems, line=tag.line)
        if found:
            _state(found, Source("html", tag.line, tag.text), statements, nofollow)


def _state(found: tuple[str, ...], source: Source, statements: list[Usage], nofollow: list[Source]) -> None:
    """Record what one header line or tag states."""
    disallowed = {c for d in found for c in USAGE_DIRECTIVES.get(d, ())}
    if disallowed:
        statements.append(Usage(dict.fromkeys(disallowed, False), {c: (source,) for c in disallowed}))
    if any(d in NOFOLLOW_DIRECTIVES for d in found):
        nofollow.append(source)


#: (value, scoped, wanted) -> what :func:`_read_value` made of it; a site sends the same few
#: values on every page, so each is read once (bounded, short values only)
_VALUES: dict[tuple[str, bool, frozenset[str]], tuple[tuple[str, ...], tuple[str, ...]]] = {}
_VALUES_MAX = 1024
_VALUE_CHARS = 256


def _directives(
    value: str,
    scoped: bool,
    wanted: frozenset[str],
    problems: list[Diagnostic],
    line: int = 0,
) -> tuple[str, ...]:
    """The directive names of one value that apply (lower-case).  With
    ``scoped`` (a header line), ``name: ...`` switches the crawler the
    following directives address.  What could not be read is added to
    ``problems`` (with ``line``)."""
    key = (value, scoped, wanted)
    read = _VALUES.get(key)
    if read is None:
        read = _read_value(value, scoped, wanted)
        if len(_VALUES) < _VALUES_MAX and len(value) <= _VALUE_CHARS:
            _VALUES[key] = read
    found, unknown = read
    for text in unknown:
        if len(problems) < MAX_PROBLEMS:
            problems.append(Diagnostic(line, "directive_unknown", text))
    return found


def _read_value(value: str, scoped: bool, wanted: frozenset[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(directives that apply, the unknown ones as diagnostic texts)`` of one value."""
    applies = True
    found: list[str] = []
    unknown: list[str] = []
    for piece in value.split(","):
        text = piece.strip(" \t\r\n\f").lower()
        if not text:
            continue
        colon = text.find(":")
        head = text if colon < 0 else text[:colon].rstrip(" \t")
        if scoped and colon > 0 and head not in _KNOWN and _is_name(head):
            applies = head in wanted
            text = text[colon + 1 :].strip(" \t")
            if not text:
                continue
            colon = text.find(":")
            head = text if colon < 0 else text[:colon].rstrip(" \t")
        if not applies:
            continue
        if colon < 0 and (head in USAGE_DIRECTIVES or head in NOFOLLOW_DIRECTIVES):
            found.append(head)
        elif head not in OTHER_DIRECTIVES and head not in VALUED_DIRECTIVES and _is_name(head):
            # (also "noindex: x": no directive this crawler knows)
            if len(unknown) < MAX_PROBLEMS:
                unknown.append(_clip(f"{CODES['directive_unknown']}: {text}"))
        # anything else: a known directive, or the rest of a value split at a
        # comma (the date of unavailable_after): nothing to state
    return tuple(found), tuple(unknown)


def _is_name(text: str) -> bool:
    """Whether ``text`` is a product-token-like word (lower-case)."""
    return bool(text) and len(text) <= 64 and all(c in _NAME_CHARS for c in text)


def _clip(text: str) -> str:
    return text if len(text) <= 200 else text[:200] + "..."
