"""Reading a robots.txt file into groups of rules, with every leniency reported.

Parsing runs once per origin on files of thousands of lines, and in pure
Python the cost is the work done per line.  Most lines of real files are
plain ``Disallow: /path`` lines, in runs, so those get no Python work of
their own: one ``str.replace`` turns the line end and key of each into a
"\\r", and one ``str.split`` on line ends then gives the other lines, each
followed by the values of the plain Disallow lines after it.  Such a run is
stored as it stands, one string, and its line numbers are one slice of a
ready-made array.  (The few run values with a comment or trailing blanks are
cut at the end.)

The other lines are read one by one.  A line with a usual key spelling and
the colon right after it (``User-agent: *``, ``Allow: /a``) takes one
``str.partition`` and one dict look-up; everything unusual (leading blanks,
comments before the colon, typos, a missing colon) goes through a slower
path that also records the diagnostic.  Rules are stored compactly: all
patterns of the file in one string, their lines and Allow flags in one
integer array; they are compiled for matching only when a crawler first asks
(see :mod:`.robotstxt`).

Grouping (RFC 9309 section 2.1): consecutive User-agent lines share the rules
that follow; only an Allow or Disallow line ends a run of User-agent lines, so
a Crawl-delay, Sitemap, blank or unknown line between two User-agent lines
keeps them in one group.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Generator, Iterable, Iterator, Sequence
from functools import cache
from itertools import islice, repeat
from operator import itemgetter
from typing import Any

from .decode import DEFAULT_PARSE_BYTES, decoding
from .diagnostics import DiagnosticLog
from .steps import finish
from .usage import read_rule as _read_usage

#: lines (or chunks of a line and the plain Disallow lines after it) read in
#: one step of :func:`reading`: a step's length against the number of steps
#: (measured in docs/benchmarks_parser.md)
STEP_LINES = 512
#: the most work of one step besides its plain rule lines, in units of about a
#: microsecond: the other lines cost more (a Content-Usage line is a
#: structured-field parse, see _read_chunks), and so do long ones
STEP_WORK = 1000
#: characters of the file split into lines at a time (a step's share of a large
#: file's one-off work: its line ends found, its long lines cut)
STEP_CHARS = 32_768
#: patterns joined, and freed, in one step at the end of a parse
STEP_PATTERNS = 4096
#: RSL License URLs kept per file (a site names one or two; the service fetches the first)
MAX_LICENSES = 8
#: Google's reference parser keeps at most this many bytes of a line.
MAX_LINE_BYTES = 16_663
# A line this short cannot exceed MAX_LINE_BYTES in UTF-8 (4 bytes a character at most).
_SAFE_LINE_CHARS = MAX_LINE_BYTES // 4

# Record kinds.  DISALLOW and ALLOW are 0 and 1 so that ``line << 1 | kind``
# stores a rule's line and its Allow flag in one integer.
DISALLOW, ALLOW, USER_AGENT, SITEMAP, CRAWL_DELAY, REQUEST_RATE = range(6)
# AI usage preferences, read by .usage (``kind - CONTENT_USAGE`` is its form)
CONTENT_USAGE, CONTENT_SIGNAL = 6, 7
# RSL 1.0's License line: file-wide, for every agent (read by the service, :mod:`.rsl`)
LICENSE = 8
_NAMES = (
    "Disallow", "Allow", "User-agent", "Sitemap", "Crawl-delay", "Request-rate", "Content-Usage", "Content-Signal",
    "License",
)  # fmt: skip

_KEYS = {
    "disallow": DISALLOW,
    "allow": ALLOW,
    "user-agent": USER_AGENT,
    "sitemap": SITEMAP,
    "crawl-delay": CRAWL_DELAY,
    "request-rate": REQUEST_RATE,
    "content-usage": CONTENT_USAGE,
    "content-signal": CONTENT_SIGNAL,
    "license": LICENSE,
}
# The spellings seen in real files, looked up without any lower()/strip().
_FAST_KEYS = {
    spelling: kind for key, kind in _KEYS.items() for spelling in (key, key.upper(), key.capitalize(), key.title())
}
# Common typos of the keys, as Google accepts them.  No typo leniency for
# Allow: a typo there would widen access.
_LENIENT_KEYS = (
    ("user-agent", USER_AGENT),
    ("useragent", USER_AGENT),
    ("user agent", USER_AGENT),
    ("allow", ALLOW),
    ("disallow", DISALLOW),
    ("dissallow", DISALLOW),
    ("dissalow", DISALLOW),
    ("disalow", DISALLOW),
    ("diasllow", DISALLOW),
    ("disallaw", DISALLOW),
    ("sitemap", SITEMAP),
    ("site-map", SITEMAP),
    ("crawl-delay", CRAWL_DELAY),
    ("crawldelay", CRAWL_DELAY),
    ("request-rate", REQUEST_RATE),
)
# Google reads any key that starts with one of these as that key, so prose
# with a colon ("User-agent must match exactly: see below") becomes a record.
# RFC 9309 2.2.4 allows leniency only where it keeps the meaning of the
# records: a longer key is read as a key only when what follows the key (or
# its typo) is one of these endings ("Disallowed:", "User-agents:"); any
# other is an unknown key.  (Blanks after the key are cut before the look-up.)
_KEY_ENDINGS = ("", "s", "ed")
# lower-cased key -> kind: every spelling read as a record but the exact keys
_LENIENT_FORMS = {
    prefix + ending: kind for prefix, kind in _LENIENT_KEYS for ending in _KEY_ENDINGS if prefix + ending not in _KEYS
}
# (The patterns of HTML pages, lone CR line ends, Crawl-delay and Request-rate
# values are compiled when first needed: most crawls never meet them, and a
# compile costs 50 to 200 us at start-up.)


@cache
def _key_line() -> re.Pattern[str]:
    """A line that could be a record once blanks, case and typos are forgiven:
    a filter for the lines of an HTML page, read one by one after it."""
    return re.compile(
        r"[ \t]*(?:" + "|".join(re.escape(prefix) for prefix, _ in _LENIENT_KEYS) + ")", re.IGNORECASE | re.ASCII
    )


@cache
def _lone_cr() -> re.Pattern[str]:
    return re.compile(r"\r(?!\n)")


@cache
def _key_start() -> re.Pattern[str]:
    """A line end, blanks, and two letters that can start a lenient key: where a
    record may begin in a large HTML page.  The literal "\\n" first lets the
    regex engine skip from line end to line end.  (An alternation of the six
    pairs would be three times slower to scan.)"""
    return re.compile(r"\n[ \t]*[UuDdAaSsCcRr][SsIiLlRrEe]")


# A line longer than _SAFE_LINE_CHARS covers a whole window of this many.
_LONG_WINDOW = (_SAFE_LINE_CHARS + 1) // 2
# _EVENS[i] == i << 1: the mark of a Disallow rule on line i (see _evens()).
_EVENS = array("I", range(0, 1024 << 1, 2))
_EVENS_MAX = 1 << 17  # lines; the array is at most 512 KiB


@cache
def _html_start() -> re.Pattern[str]:
    return re.compile(r"\s*<(?:!doctype|html|head|body|!--|\?xml|meta|script)", re.IGNORECASE)


_AGENT_RUN = re.compile(r"[A-Za-z_-]*")


@cache
def _number() -> re.Pattern[str]:
    return re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)\Z")


@cache
def _rate() -> re.Pattern[str]:
    return re.compile(r"(\d+)[ \t]*/[ \t]*(\d+(?:\.\d+)?)[ \t]*(?:([smhSMH])(?![A-Za-z]))?")


# The time window of the 1996 "extended standard" ("Request-rate: 1/10m
# 1300-1659", UTC): not supported, the rate is kept for all hours (a crawler
# then never goes faster than asked inside the window), with a diagnostic.
@cache
def _rate_window() -> re.Pattern[str]:
    return re.compile(r"\d{1,2}(?::?\d\d)?[ \t]*-[ \t]*\d{1,2}(?::?\d\d)?(?:[ \t]*(?:UTC|GMT|Z))?\Z", re.IGNORECASE)


_RATE_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
_INF = float("inf")
# user-agent value -> (token, diagnostic code or None); bounded, shared by all files
_AGENT_CACHE: dict[str, tuple[str, str | None]] = {}
_AGENT_CACHE_MAX = 4096


class Group:
    """One group: the agents it names (lower-case tokens, ``*`` for all), the
    slice ``[start, end)`` of the file's rules that belong to it, and the
    crawl-rate lines and usage-preference rules (:mod:`.usage`) it holds."""

    __slots__ = ("agents", "start", "end", "crawl_delay", "request_rate", "line", "usage")

    def __init__(self, start: int, line: int) -> None:
        self.agents: list[str] = []
        self.start = start
        self.end = start
        self.crawl_delay: float | None = None
        self.request_rate: tuple[int, float] | None = None
        self.line = line
        self.usage: list[Any] | None = None  # usage.UsageRules: its usage lines, each distinct one once


class Parsed:
    """What :func:`read` found: ``patterns`` (every rule's pattern, in file
    order, joined by newlines), ``marks`` (``line << 1 | allow`` per rule),
    ``groups``, ``sitemaps``, the diagnostic log (None when clean),
    ``usage``, the Content-Signal rules before the first group (for the
    whole file; None when there is none), and ``licenses``, the RSL
    ``License`` URLs (file-wide, wherever written; in file order, once each)."""

    __slots__ = ("patterns", "marks", "groups", "sitemaps", "diagnostics", "usage", "licenses")

    def __init__(
        self,
        patterns: str,
        marks: array[int],
        groups: list[Group],
        sitemaps: list[str],
        diagnostics: DiagnosticLog | None,
        usage: list[Any] | None = None,
        licenses: tuple[str, ...] = (),
    ) -> None:
        self.licenses = licenses
        self.patterns = patterns
        self.marks = marks
        self.groups = groups
        self.sitemaps = sitemaps
        self.diagnostics = diagnostics
        self.usage = usage


def read(
    body: bytes | str,
    content_type: str | bytes | None = None,
    max_bytes: int = DEFAULT_PARSE_BYTES,
) -> Parsed:
    """Read ``body`` into groups, sitemaps and diagnostics.  Never raises.
    (:func:`reading`, run to its end.)"""
    return finish(reading(body, content_type, max_bytes))


def reading(
    body: bytes | str,
    content_type: str | bytes | None = None,
    max_bytes: int = DEFAULT_PARSE_BYTES,
) -> Generator[None, None, Parsed]:
    """:func:`read` in steps (see :mod:`.steps`): each ``next()`` reads at
    most :data:`STEP_LINES` lines, and stops early after :data:`STEP_WORK`
    of costlier ones; the :class:`Parsed` is the return value."""
    diags = DiagnosticLog()
    state = _start()
    text = yield from decoding(body, content_type, max_bytes, diags)
    chunks = iter(_chunks(text, diags))
    last = 0
    while True:
        end, stopped = _read_chunks(islice(chunks, STEP_LINES), diags, state)
        if not stopped and end - last < STEP_LINES:  # fewer chunks than a step's (numbers only grow): the end
            if len(state[0]) > STEP_PATTERNS:
                return (yield from _parsing(state, diags))
            return _parsed(state, diags)
        last = end
        yield


def _chunks(text: str, diags: DiagnosticLog) -> Iterable[tuple[int, str]]:
    """The numbered chunks of the file's text to read (see :func:`_read_chunks`)."""
    if "<" in text and _html_start().match(text):
        # An HTML page served as robots.txt: read only the lines that could be
        # records (Google would obey them), and report the page once instead
        # of once per line.  (They hold no "\r": no runs.)
        diags.add(1, "html_body", f"{len(text):,} characters")
        return _record_lines(text, diags)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if len(text) <= STEP_CHARS:  # most files: their chunks at once
        return enumerate(_split(text, 1, diags), 1)
    return _text_chunks(text, diags)


def _text_chunks(text: str, diags: DiagnosticLog) -> Iterator[tuple[int, str]]:
    """The numbered chunks of a text file, made :data:`STEP_CHARS` characters
    of whole lines at a time (so that no step makes, or frees, those of the
    whole file).  A plain Disallow line's "\\n" and key become "\\r": each
    chunk is a line and the run of plain Disallow lines after it.  (The line
    after a cut is read as a line of its own: the same record.)"""
    number, start = 1, 0
    while True:
        cut = text.find("\n", start + STEP_CHARS) if len(text) - start > STEP_CHARS else -1
        if cut < 0:
            yield from enumerate(_split(text[start:], number, diags), number)
            return
        chunks = _split(text[start:cut], number, diags, last=False)
        yield from enumerate(chunks, number)
        number += len(chunks)
        start = cut + 1


def _split(piece: str, number: int, diags: DiagnosticLog, last: bool = True) -> list[str]:
    """The chunks of whole lines, the first numbered ``number``: overlong lines
    cut, a plain Disallow line's "\n" and key made "\r"; after the ``last``
    lines of the file an empty one, so that every run has a line after it."""
    if len(piece) > _SAFE_LINE_CHARS and _has_long_line(piece):
        lines = piece.split("\n")
        piece = "\n".join([_cut_line(line, n, diags) for n, line in enumerate(lines, number)])
    chunks = piece.replace("\nDisallow: /", "\r/").split("\n")
    if last:
        chunks.append("")
    return chunks


def _start() -> list[Any]:
    """The reading state: ``[patterns, rules, marks, groups, sitemaps, group,
    in_agents, evens, run, skipped, preamble, licenses]`` (see :func:`_read_chunks`)."""
    return [[], 0, array("I"), [], {}, None, False, _EVENS, "", 0, None, {}]


def _read_chunks(chunks: Iterable[tuple[int, str]], diags: DiagnosticLog, state: list[Any]) -> tuple[int, bool]:
    """Read numbered ``chunks`` of lines and runs of plain Disallow lines,
    from and into ``state`` (so a file can be read a piece at a time); the
    number of the last chunk read (0 for none), and whether the reading
    stopped before the end of ``chunks``, after :data:`STEP_WORK`.

    A plain rule line costs nothing against that budget: its work is a few
    string methods, and a step reads at most :data:`STEP_LINES` lines.  The
    other records cost about their microseconds, more when long.

    A chunk is a line, then, after a "\\r", the values of the run of plain
    Disallow lines that follows it (without their key), "\\r"-separated.
    A chunk's number is its line's number before the lines of the runs are
    counted.
    """
    patterns: list[str]  # values, and runs of "\r"-separated values
    rules: int  # the number of patterns
    marks: array[int]
    groups: list[Group]
    sitemaps: dict[str, None]
    group: Group | None
    in_agents: bool  # the current group has had no Allow/Disallow yet
    evens: array[int] | range
    run: str  # the run after the line read last
    skipped: int  # lines of the runs read so far
    preamble: Group | None  # holds the Content-Signal lines before the first group
    licenses: dict[str, None]  # RSL License URLs, file-wide
    patterns, rules, marks, groups, sitemaps, group, in_agents, evens, run, skipped, preamble, licenses = state
    fast_keys = _FAST_KEYS
    agent_cache = _AGENT_CACHE
    base = 0  # (chunks are numbered from 1)
    spent = 0  # work done on lines other than plain rules (see STEP_WORK)
    stopped = False
    for base, chunk in chunks:
        if run:
            first = base + skipped  # the line after the line read last
            # (each "\r" comes before a "/": counting the pair is a search, faster
            # than the character-by-character loop of a one-character count)
            n = run.count("\r/") + 1 if "\r" in run else 1
            skipped += n
            spent += n >> 3  # (the string methods of a run cost about 0.1 us a line)
            if group is None:
                diags.add_lines(first, n, "outside_group", _NAMES[DISALLOW])
            else:
                in_agents = False
                patterns.append(run)
                rules += n
                if n == 1:
                    marks.append(first << 1)
                else:
                    if first + n > len(evens):
                        evens = _evens(first + n)
                    marks.extend(evens[first : first + n])
        if "\r" in chunk:
            line, _, run = chunk.partition("\r")
        else:
            line, run = chunk, ""
        if not line or line[0] == "#":
            continue
        number = base + skipped
        key, colon, value = line.partition(":")
        # a bare "Disallow" (no colon, no value) is no record: the slow path says so
        kind = fast_keys.get(key) if colon else None
        if kind is None:
            kind, value = _slow_record(line, number, diags)
            spent += 2 + (len(line) >> 7)
            if kind is None:
                if spent >= STEP_WORK:
                    stopped = True
                    break
                continue
        else:
            if "#" in value:
                value = value[: value.find("#")]
            value = value.strip(" \t")

        if kind <= ALLOW:
            if group is None:
                diags.add(number, "outside_group", _NAMES[kind])
                continue
            in_agents = False
            if value:
                if value[0] != "/" and value[0] != "*":
                    diags.add(number, "pattern_not_absolute", value)
                patterns.append(value)
                rules += 1
                marks.append(number << 1 | kind)
        elif kind == USER_AGENT:
            if not in_agents:
                if group is not None:
                    group.end = rules
                group = Group(rules, number)
                groups.append(group)
                in_agents = True
            assert group is not None  # set above, or by the line before (in_agents)
            cached = agent_cache.get(value)  # a value seen before with no diagnostic: no call
            if cached is not None and cached[1] is None:
                group.agents.append(cached[0])
            else:
                group.agents.append(_agent_token(value, number, diags))
            spent += 2 + (len(value) >> 7)
        elif kind == SITEMAP:
            if value:
                if "://" not in value:
                    diags.add(number, "sitemap_not_absolute", value)
                sitemaps[value] = None
        elif kind == LICENSE:  # file-wide, in a group or not (RSL 1.0)
            if value:
                if "://" not in value:
                    diags.add(number, "license_not_absolute", value)
                elif len(licenses) < MAX_LICENSES:
                    licenses[value] = None
        elif group is None:
            if kind == CONTENT_SIGNAL:  # before the first group: for the whole file
                if preamble is None:
                    preamble = Group(0, 0)
                _read_usage(preamble, CONTENT_SIGNAL - CONTENT_USAGE, value, number, diags)
                spent += 32 + (len(value) >> 6)
            else:
                diags.add(number, "outside_group", _NAMES[kind])
        elif kind == CRAWL_DELAY:
            delay = _crawl_delay(value, number, diags)
            if delay is not None and (group.crawl_delay is None or delay > group.crawl_delay):
                group.crawl_delay = delay
            spent += 3 + (len(value) >> 6)
        elif kind == REQUEST_RATE:
            rate = _request_rate(value, number, diags)
            if rate is not None and (group.request_rate is None or _slower(rate, group.request_rate)):
                group.request_rate = rate
            spent += 4 + (len(value) >> 6)
        else:  # Content-Usage, Content-Signal: a group's usage preferences
            _read_usage(group, kind - CONTENT_USAGE, value, number, diags)
            spent += 32 + (len(value) >> 6)
        if spent >= STEP_WORK:
            stopped = True
            break
    state[:] = patterns, rules, marks, groups, sitemaps, group, in_agents, evens, run, skipped, preamble, licenses
    return base, stopped


def _parsing(state: list[Any], diags: DiagnosticLog) -> Generator[None, None, Parsed]:
    """:func:`_parsed` of many patterns: they are joined (and the values
    freed) :data:`STEP_PATTERNS` at a time, from the end, a step each."""
    patterns = state[0]
    parts = []
    while len(patterns) > STEP_PATTERNS:
        parts.append(_joined(patterns[-STEP_PATTERNS:]))
        del patterns[-STEP_PATTERNS:]
        yield
    return _parsed(state, diags, parts)


def _parsed(state: list[Any], diags: DiagnosticLog, parts: Sequence[str] = ()) -> Parsed:
    """The :class:`Parsed` file, once every chunk is read; ``parts``: the
    patterns after those left in ``state``, joined, last first."""
    patterns, rules, marks, groups, sitemaps, group = state[:6]
    preamble, licenses = state[10], state[11]
    state.clear()
    if group is not None:
        group.end = rules
    joined = _joined(patterns)
    if parts:
        joined = "\n".join([joined, *reversed(parts)])
    usage = preamble.usage if preamble is not None else None
    diagnostics = diags if diags.codes else None
    return Parsed(
        joined.replace("\r", "\n"), marks, groups, [*sitemaps], diagnostics, usage, tuple(licenses) if licenses else ()
    )


def _joined(patterns: list[str]) -> str:
    """``patterns`` joined by "\\n", each run value cut at "#" and stripped."""
    joined = "\n".join(patterns)
    if "#" in joined or " " in joined or "\t" in joined:  # maybe a run value to cut
        joined = "\n".join([_cut_comments(p) if "#" in p or " " in p or "\t" in p else p for p in patterns])
    return joined


def _cut_comments(values: str) -> str:
    """ "\\r"-separated run values cut at "#" and stripped of trailing blanks,
    as the value of a line read on its own is (which this leaves unchanged).

    Runs are stored as they stand, so only the few that need it pay for
    this.  A run value starts with "/": it needs no leading strip, and
    cutting never empties it.
    """
    parts: Iterable[str] = values.split("\r")
    if "#" in values:
        parts = map(itemgetter(0), map(str.partition, parts, repeat("#")))
    return "\r".join(map(str.rstrip, parts, repeat(" \t")))


def _evens(stop: int) -> array[int] | range:
    """``i << 1`` at each index ``i`` below ``stop`` (at least): the marks of
    Disallow rules on lines ``i``, so that a run's marks are one slice.

    Array slices are copied at C speed, while ``array.extend(range)``
    converts integer by integer.  The array is kept for later files and
    grown up to ``_EVENS_MAX`` lines; beyond, a range gives the same marks.
    """
    global _EVENS
    if stop > len(_EVENS):
        if stop > _EVENS_MAX:
            return range(0, stop << 1, 2)
        _EVENS = array("I", range(0, min(max(stop, len(_EVENS) * 2), _EVENS_MAX) << 1, 2))
    return _EVENS


def _has_long_line(text: str) -> bool:
    """Whether a line of ``text`` is longer than ``_SAFE_LINE_CHARS``.

    Such a line covers a whole window of ``_LONG_WINDOW`` characters, so
    only lines with a window free of line ends are measured: a few
    ``find`` calls per window instead of a look at every line.
    """
    find, rfind = text.find, text.rfind
    for start in range(0, len(text), _LONG_WINDOW):
        if find("\n", start, start + _LONG_WINDOW) < 0:
            end = find("\n", start)
            if (len(text) if end < 0 else end) - rfind("\n", 0, start) - 1 > _SAFE_LINE_CHARS:
                return True
    return False


def _record_lines(text: str, diags: DiagnosticLog) -> Iterator[tuple[int, str]]:
    """``(line number, line)`` for the lines of an HTML page that could be records.

    A page can be hundreds of kilobytes of markup with no record at all, so
    rather than splitting it, one regex scan (C speed) finds the lines whose
    first non-blank characters can start a key, and only those are looked at.
    The first line holds the opening tag, so it is never a record.
    """
    crlf = "\r" in text
    if crlf and _lone_cr().search(text):
        text, crlf = text.replace("\r\n", "\n").replace("\r", "\n"), False
    # else at most CRLF line ends: "\n" still ends every line
    number, last = 1, 0
    count, find, match = text.count, text.find, _key_line().match
    for m in _key_start().finditer(text):
        start = m.start() + 1
        end = find("\n", start)
        if end < 0:
            end = len(text)
        line = text[start : end - 1 if crlf and text[end - 1] == "\r" else end]
        if match(line):
            number += count("\n", last, start)
            last = start
            yield number, _cut_line(line, number, diags)  # (lazily: a page may hold 40,000)


def _slow_record(line: str, number: int, diags: DiagnosticLog) -> tuple[int | None, str]:
    """Any line the fast path did not recognise: blanks, comments, unusual
    spacing or case, typos, a missing colon.  Returns ``(kind, value)`` or
    ``(None, "")`` for a line to skip."""
    line = line.strip(" \t")
    if not line or line[0] == "#":
        return None, ""
    hash_at = line.find("#")
    if hash_at >= 0:
        line = line[:hash_at].rstrip(" \t")
    colon = line.find(":")
    if colon >= 0:
        key = line[:colon].rstrip(" \t").lower()
        kind = _key_kind(key, number, diags)
        if kind is not None:
            return kind, line[colon + 1 :].strip(" \t")
    # Google's leniency: "Disallow /x" (exactly two tokens) is a record.  So
    # is "Sitemap https://e.com/s.xml" and "Disallow /a:b", whose only colon
    # is the value's: read by the colon, they would give the broken URL
    # "//e.com/s.xml" and the pattern "b".
    parts = line.replace("\t", " ").split(" ", 1)
    if len(parts) == 2:
        value = parts[1].lstrip(" ")
        if " " not in value:
            first = parts[0].lower()
            kind = _KEYS.get(first)
            if kind is None:
                kind = _LENIENT_FORMS.get(first)
            if kind is not None:
                diags.add(number, "missing_colon", parts[0])
                if first not in _KEYS:
                    diags.add(number, "key_typo", f"{first!r} read as {_NAMES[kind]}")
                return kind, value
    if colon >= 0 and key:
        diags.add(number, "unknown_key", key)
    else:
        diags.add(number, "unparsable_line")
    return None, ""


def _key_kind(key: str, number: int, diags: DiagnosticLog) -> int | None:
    """The kind of a lower-cased key: an exact key, or a typo or ending read
    as one (reported); None for any other."""
    kind = _KEYS.get(key)
    if kind is None:
        kind = _LENIENT_FORMS.get(key)
        if kind is not None:
            diags.add(number, "key_typo", f"{key!r} read as {_NAMES[kind]}")
    return kind


def _cut_line(line: str, number: int, diags: DiagnosticLog) -> str:
    if len(line) <= _SAFE_LINE_CHARS:
        return line
    raw = line.encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_LINE_BYTES:
        return line
    diags.add(number, "line_too_long", f"{len(raw):,} bytes")
    return raw[:MAX_LINE_BYTES].decode("utf-8", "ignore")


def _agent_token(value: str, number: int, diags: DiagnosticLog) -> str:
    """``*`` or the value's leading ``[A-Za-z_-]`` run, lower-cased."""
    cached = _AGENT_CACHE.get(value)
    if cached is None:
        cached = _token_of(value)
        if len(_AGENT_CACHE) < _AGENT_CACHE_MAX:
            _AGENT_CACHE[value] = cached
    token, code = cached
    if code is not None:
        diags.add(number, code, f"{value!r} read as {token!r}" if token else repr(value))
    return token


def _token_of(value: str) -> tuple[str, str | None]:
    if not value:
        return "", "user_agent_invalid"
    if value[:1] == "*":
        if len(value) > 1 and value[1] not in " \t":
            return "", "user_agent_invalid"
        return "*", None
    token = _AGENT_RUN.match(value).group()  # type: ignore[union-attr]
    code = None
    if len(token) != len(value):
        code = "user_agent_trimmed" if token else "user_agent_invalid"
    return token.lower(), code


def _crawl_delay(value: str, number: int, diags: DiagnosticLog) -> float | None:
    if _number().match(value):
        delay = float(value)
        if delay != _INF:  # hundreds of digits overflow to inf: no real delay
            return delay
    diags.add(number, "invalid_crawl_delay", value)
    return None


def _request_rate(value: str, number: int, diags: DiagnosticLog) -> tuple[int, float] | None:
    """``n/m`` with an optional unit (``s``, ``m``, ``h``); after it, only a
    time window (ignored, reported), else the whole value is invalid."""
    m = _rate().match(value)
    # int() refuses more than 4,300 digits (ValueError); no real rate has that many
    if m and len(m.group(1)) <= 18:
        rest = value[m.end() :].lstrip(" \t")
        window = bool(rest) and _rate_window().match(rest) is not None
        requests, seconds = int(m.group(1)), float(m.group(2)) * _RATE_UNIT[(m.group(3) or "").lower()]
        if (not rest or window) and requests > 0 and 0 < seconds < _INF:
            if window:
                diags.add(number, "request_rate_window", rest)
            return requests, seconds
    diags.add(number, "invalid_request_rate", value)
    return None


def _slower(a: tuple[int, float], b: tuple[int, float]) -> bool:
    return a[1] / a[0] > b[1] / b[0]
