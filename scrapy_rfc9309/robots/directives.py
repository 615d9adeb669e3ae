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
from itertools import compress, islice, repeat
from typing import NamedTuple

from .diagnostics import Diagnostic
from .html_head import MetaTag
from .usage import MAX_SOURCES, UNKNOWN, Source, Usage

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
#: characters of one X-Robots-Tag line read (Twisted's HTTP/1.1 client takes
#: no longer header line); a longer one is read up to its last comma before
#: it (reported).  Every line is read: the bound is on the work per line
MAX_LINE_CHARS = 16_384
#: pieces holding a ":" (a crawler's name, or a valued directive) read per
#: line: only they cost a step of Python each, the rest of a line is read
#: at C speed; a line with more is read up to there (reported)
MAX_COLONS = 256
#: meta tags read per page
MAX_TAGS = 64
#: diagnostics kept per response
MAX_PROBLEMS = 20
_NAME_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789-_"
_BLANKS = " \t\r\n\f"
#: the directives that state something (the only ones a value is searched for)
_STATING = tuple(dict.fromkeys([*USAGE_DIRECTIVES, *sorted(NOFOLLOW_DIRECTIVES)]))
#: distinct pieces of a run looked at for unknown directives, past the known ones
_LOOKED = MAX_PROBLEMS + len(_KNOWN)

CODES: dict[str, str] = {
    "directive_unknown": "a robots directive this crawler does not know; it states nothing",
    "header_line_cut": (
        f"an X-Robots-Tag line was read up to its {MAX_COLONS + 1}th piece holding a ':', or its "
        f"{MAX_LINE_CHARS:,}th character"
    ),
    "too_many_tags": f"robots meta tags past the first {MAX_TAGS} were not read",
}


class PageDirectives(NamedTuple):
    """What a response's robots directives say: ``usage`` (categories
    disallowed, with the header lines and tags behind them), ``nofollow``
    (its links are not to be followed) with ``nofollow_sources`` (at most
    :data:`~.usage.MAX_SOURCES`, the rest counted in ``nofollow_more``), and the
    ``diagnostics`` (``line``: a tag's line, 0 for a header)."""

    usage: Usage
    nofollow: bool
    nofollow_sources: tuple[Source, ...]
    diagnostics: tuple[Diagnostic, ...]
    nofollow_more: int = 0


NOTHING = PageDirectives(UNKNOWN, False, (), ())


def page_directives(
    x_robots_tag: Iterable[bytes | str] | bytes | str | None,
    metas: Iterable[MetaTag] = (),
    tokens: str | Sequence[str] = (),
) -> PageDirectives:
    """The directives of a response for a crawler whose product token is
    one of ``tokens``: its ``X-Robots-Tag`` field lines (each line as sent;
    every line is read, each distinct line once) and the meta tags of its
    head (from :func:`.html_head.read_head`; those named neither ``robots``
    nor a token are skipped).  Never raises."""
    if x_robots_tag is None and metas == ():
        return NOTHING
    try:
        wanted = _wanted(tokens)
        statements: list[_Statement] = []
        problems: list[Diagnostic] = []
        if x_robots_tag is not None:
            _read_header(x_robots_tag, wanted, statements, problems)
        if metas:
            _read_metas(metas, wanted, statements, problems)
        return _result(statements, problems)
    except Exception as exc:  # noqa: BLE001 - hostile input: never raise; pragma: no cover (none known)
        return PageDirectives(UNKNOWN, False, (), (Diagnostic(0, "directive_unknown", f"internal error: {exc!r}"),))


def _wanted(tokens: str | Sequence[str]) -> frozenset[str]:
    if isinstance(tokens, str):
        tokens = (tokens,)
    return _names(tokens if isinstance(tokens, tuple) else tuple(tokens))


@lru_cache(maxsize=64)
def _names(tokens: tuple[object, ...]) -> frozenset[str]:
    """The names addressed to the crawler: ``robots`` and its tokens (a crawl has one set)."""
    return GENERIC_NAMES | {t.lower() for t in tokens if isinstance(t, str)}


#: what a header line or tag states: its directives that apply, and the line or tag
_Statement = tuple[tuple[str, ...], Source]


def _result(statements: list[_Statement], problems: list[Diagnostic]) -> PageDirectives:
    """What the ``statements`` state together: per category its sources (each once,
    at most :data:`~.usage.MAX_SOURCES`, the rest counted), so that what a response
    carries is bounded whatever it holds."""
    if not statements:
        return PageDirectives(UNKNOWN, False, (), tuple(problems)) if problems else NOTHING
    sources: dict[str, list[Source]] = {}
    more: dict[str, int] = {}
    for found, source in statements:
        for name in dict.fromkeys(c for d in found for c in _MEANS[d]):
            kept = sources.setdefault(name, [])
            if source in kept:
                continue
            if len(kept) < MAX_SOURCES:
                kept.append(source)
            else:  # (a source past the first ones is not looked for among them again: counted)
                more[name] = more.get(name, 0) + 1
    nofollow = tuple(sources.pop(_NOFOLLOW, ()))
    nofollow_more = more.pop(_NOFOLLOW, 0)
    usage = Usage(dict.fromkeys(sources, False), sources, more) if sources else UNKNOWN
    return PageDirectives(usage, bool(nofollow), nofollow, tuple(problems), nofollow_more)


_NOFOLLOW = "nofollow"
#: a directive that states something -> what it states (categories disallowed, and "nofollow")
_MEANS: dict[str, tuple[str, ...]] = {
    d: USAGE_DIRECTIVES.get(d, ()) + ((_NOFOLLOW,) if d in NOFOLLOW_DIRECTIVES else ()) for d in _STATING
}


def _read_header(
    values: Iterable[bytes | str] | bytes | str,
    wanted: frozenset[str],
    statements: list[_Statement],
    problems: list[Diagnostic],
) -> None:
    if isinstance(values, (bytes, bytearray, str)):
        values = [values]
    try:
        distinct: Iterable[bytes | str] = dict.fromkeys(values)  # each line once (at C speed)
    except TypeError:  # (a bytearray: not hashable)
        distinct = dict.fromkeys(bytes(v) if isinstance(v, bytearray) else v for v in values)
    for raw in distinct:
        line = raw.decode("latin-1") if isinstance(raw, (bytes, bytearray)) else str(raw)
        if len(line) > _VALUE_CHARS and not _may_state(line):
            # it states nothing: only its unknown words, a sample of which its start gives
            if len(problems) < MAX_PROBLEMS:
                _directives(line[: line.rfind(",", 0, _VALUE_CHARS) + 1], True, wanted, problems)
            continue
        stated = _directives(line, True, wanted, problems)
        if stated:
            statements.append((stated, Source("header", 0, _clip(f"{HEADER}: {line.strip()}"))))


def _may_state(line: str) -> bool:
    """Whether ``line`` holds a directive that states something (else it
    cannot: they are whole words); at C speed, whatever its length."""
    lower = line.lower()
    return any(directive in lower for directive in _STATING)


def _read_metas(
    metas: Iterable[MetaTag], wanted: frozenset[str], statements: list[_Statement], problems: list[Diagnostic]
) -> None:
    count = 0
    for tag in metas:
        if tag.name not in wanted:
            continue
        count += 1
        if count > MAX_TAGS:
            _problem(problems, Diagnostic(tag.line, "too_many_tags", CODES["too_many_tags"]))
            return
        stated = _directives(tag.content, False, wanted, problems, tag.line)
        if stated:
            statements.append((stated, Source("html", tag.line, tag.text)))


def _problem(problems: list[Diagnostic], diagnostic: Diagnostic) -> None:
    if len(problems) < MAX_PROBLEMS:
        problems.append(diagnostic)


#: (value, scoped, wanted) -> what :func:`_read_value` made of it; a site sends the same few
#: values on every page, so each is read once (bounded, short values only)
_VALUES: dict[tuple[str, bool, frozenset[str]], tuple[tuple[str, ...], tuple[str, ...], bool]] = {}
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
    found, unknown, cut = read
    for text in unknown:
        _problem(problems, Diagnostic(line, "directive_unknown", text))
    if cut:
        _problem(problems, Diagnostic(line, "header_line_cut", CODES["header_line_cut"]))
    return found


def _read_value(value: str, scoped: bool, wanted: frozenset[str]) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """``(directives that apply, the unknown ones as diagnostic texts, whether it
    was cut)`` of one value.

    Bounded in work whatever its length: at most :data:`MAX_LINE_CHARS` are
    read; a value of many pieces is split, stripped and each run's distinct
    directives found at C speed; only the pieces holding a ":" (a crawler's
    name starts a run) cost a step of Python each, at most :data:`MAX_COLONS`
    of them (past that the value is read up to there), and the unknown
    directives are looked for among a bounded number of a run's distinct
    pieces (they are only reported)."""
    cut = False
    if len(value) > MAX_LINE_CHARS:
        end = value.rfind(",", 0, MAX_LINE_CHARS + 1)
        value = value[: end if end >= 0 else MAX_LINE_CHARS]
        cut = True
    if value.count(",") < _FEW and not cut:
        return _read_pieces(value, scoped, wanted)
    pieces = list(map(str.strip, value.lower().split(","), repeat(_BLANKS)))
    found: dict[str, None] = {}
    unknown: dict[str, None] = {}  # (each once)
    if scoped and ":" in value:
        colons = list(compress(range(len(pieces)), map(str.__contains__, pieces, repeat(":"))))
        if len(colons) > MAX_COLONS:
            del pieces[colons[MAX_COLONS] :]
            del colons[MAX_COLONS:]
            cut = True
        applies, start = True, 0
        for at in colons:
            piece = pieces[at]
            colon = piece.find(":")
            head = piece[:colon].rstrip(" \t")
            if head not in _KNOWN and _is_name(head):  # a crawler's name: the run it addresses starts here
                _run(pieces[start:at], applies, found, unknown)
                applies = head in wanted
                pieces[at] = piece[colon + 1 :].strip(" \t")  # the directive after the name, in its run
                start = at
        _run(pieces[start:], applies, found, unknown)
    else:
        _run(pieces, True, found, unknown)
    return tuple(found), tuple(unknown), cut


#: a value of fewer pieces is read piece by piece (what costs least for the few a real one has)
_FEW = 16


def _read_pieces(value: str, scoped: bool, wanted: frozenset[str]) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """:func:`_read_value` of a value of fewer than :data:`_FEW` pieces, piece by piece."""
    applies = True
    found: dict[str, None] = {}
    unknown: dict[str, None] = {}
    for piece in value.split(","):
        text = piece.strip(_BLANKS).lower()
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
        if colon < 0 and head in _MEANS:
            found[head] = None
        elif head not in OTHER_DIRECTIVES and head not in VALUED_DIRECTIVES and _is_name(head):
            # (also "noindex: x": no directive this crawler knows)
            unknown[_clip(f"{CODES['directive_unknown']}: {text}")] = None
        # anything else: a known directive, or the rest of a value split at a
        # comma (the date of unavailable_after): nothing to state
    return tuple(found), tuple(unknown), False


def _run(pieces: list[str], applies: bool, found: dict[str, None], unknown: dict[str, None]) -> None:
    """The directives of one run of ``pieces`` (stripped, lower-case), if it ``applies``."""
    if not applies or not pieces:
        return
    distinct = dict.fromkeys(pieces)
    for directive in _STATING:
        if directive in distinct:
            found[directive] = None
    if len(unknown) >= MAX_PROBLEMS:
        return
    for text in islice(distinct, _LOOKED):
        if not text:
            continue
        colon = text.find(":")
        head = text if colon < 0 else text[:colon].rstrip(" \t")
        if colon < 0 and head in _MEANS:
            continue
        if head not in OTHER_DIRECTIVES and head not in VALUED_DIRECTIVES and _is_name(head):
            # (also "noindex: x": no directive this crawler knows)
            unknown[_clip(f"{CODES['directive_unknown']}: {text}")] = None
            if len(unknown) >= MAX_PROBLEMS:
                return
        # anything else: a known directive, or the rest of a value split at a
        # comma (the date of unavailable_after): nothing to state


def _is_name(text: str) -> bool:
    """Whether ``text`` is a product-token-like word (lower-case)."""
    return 0 < len(text) <= 64 and not text.strip(_NAME_CHARS)  # (every character one of them)


def _clip(text: str) -> str:
    return text if len(text) <= 200 else text[:200] + "..."
