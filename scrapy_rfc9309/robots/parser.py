"""Reading a robots.txt file into groups of rules, with every leniency reported.

Parsing runs once per origin on files of thousands of lines, and in pure
Python the cost is the work done per line.  So the common line
(``Disallow: /path``, key spelt as usual, colon right after it) takes one
``str.partition`` and one dict look-up; everything unusual (leading blanks,
comments before the colon, typos, a missing colon) goes through a slower path
that also records the diagnostic.  Rules are stored compactly: all patterns of
the file in one string, their lines and Allow flags in one integer array;
they are compiled for matching only when a crawler first asks (see
:mod:`.robotstxt`).

Grouping (RFC 9309 section 2.1): consecutive User-agent lines share the rules
that follow; only an Allow or Disallow line ends a run of User-agent lines, so
a Crawl-delay, Sitemap, blank or unknown line between two User-agent lines
keeps them in one group.
"""

from __future__ import annotations

import re
from array import array

from .decode import DEFAULT_PARSE_BYTES, decode_body
from .diagnostics import DiagnosticLog

#: Google's reference parser keeps at most this many bytes of a line.
MAX_LINE_BYTES = 16_663
# A line this short cannot exceed MAX_LINE_BYTES in UTF-8 (4 bytes a character at most).
_SAFE_LINE_CHARS = MAX_LINE_BYTES // 4

# Record kinds.  DISALLOW and ALLOW are 0 and 1 so that ``line << 1 | kind``
# stores a rule's line and its Allow flag in one integer.
DISALLOW, ALLOW, USER_AGENT, SITEMAP, CRAWL_DELAY, REQUEST_RATE = range(6)
_NAMES = ("Disallow", "Allow", "User-agent", "Sitemap", "Crawl-delay", "Request-rate")

_KEYS = {
    "disallow": DISALLOW,
    "allow": ALLOW,
    "user-agent": USER_AGENT,
    "sitemap": SITEMAP,
    "crawl-delay": CRAWL_DELAY,
    "request-rate": REQUEST_RATE,
}
# The spellings seen in real files, looked up without any lower()/strip().
_FAST_KEYS = {
    spelling: kind
    for key, kind in _KEYS.items()
    for spelling in (key, key.upper(), key.capitalize(), key.title())
}
# Keys accepted by prefix ("Disallowed:") and common typos, as Google accepts
# them.  No typo leniency for Allow: a typo there would widen access.
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
# One regex instead of a loop of startswith(): the slow path runs on every
# line of an HTML page served as robots.txt.
_LENIENT = re.compile("|".join(f"({re.escape(prefix)})" for prefix, _ in _LENIENT_KEYS))
_LENIENT_KIND = [kind for _, kind in _LENIENT_KEYS]
# A line that could be a record once blanks, case and typos are forgiven.
_KEY_LINE = re.compile(
    r"[ \t]*(?:" + "|".join(re.escape(prefix) for prefix, _ in _LENIENT_KEYS) + ")", re.IGNORECASE | re.ASCII
)
# Substrings of every lenient key, to find candidate lines in a large page.
_KEY_STEMS = ("agent", "allow", "disal", "dissal", "diasl", "site", "crawl", "request")
_HTML_START = re.compile(r"\s*<(?:!doctype|html|head|body|!--|\?xml|meta|script)", re.IGNORECASE)
_AGENT_RUN = re.compile(r"[A-Za-z_-]*")
_NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)\Z")
_RATE = re.compile(r"(\d+)[ \t]*/[ \t]*(\d+(?:\.\d+)?)[ \t]*([smhSMH]?)(?![ \t]*[A-Za-z])")
_RATE_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
_INF = float("inf")
# user-agent value -> (token, diagnostic code or None); bounded, shared by all files
_AGENT_CACHE: dict[str, tuple[str, str | None]] = {}
_AGENT_CACHE_MAX = 4096


class Group:
    """One group: the agents it names (lower-case tokens, ``*`` for all), the
    slice ``[start, end)`` of the file's rules that belong to it, and the
    crawl-rate lines it holds."""

    __slots__ = ("agents", "start", "end", "crawl_delay", "request_rate", "line")

    def __init__(self, start: int, line: int) -> None:
        self.agents: list[str] = []
        self.start = start
        self.end = start
        self.crawl_delay: float | None = None
        self.request_rate: tuple[int, float] | None = None
        self.line = line


class Parsed:
    """What :func:`read` found: ``patterns`` (every rule's pattern, in file
    order, joined by newlines), ``marks`` (``line << 1 | allow`` per rule),
    ``groups``, ``sitemaps`` and the diagnostic log (None when clean)."""

    __slots__ = ("patterns", "marks", "groups", "sitemaps", "diagnostics")

    def __init__(self, patterns, marks, groups, sitemaps, diagnostics) -> None:
        self.patterns: str = patterns
        self.marks: array = marks
        self.groups: list[Group] = groups
        self.sitemaps: list[str] = sitemaps
        self.diagnostics: DiagnosticLog | None = diagnostics


def read(
    body: bytes | str,
    content_type: str | bytes | None = None,
    max_bytes: int = DEFAULT_PARSE_BYTES,
) -> Parsed:
    """Read ``body`` into groups, sitemaps and diagnostics.  Never raises."""
    diags = DiagnosticLog()
    text = decode_body(body, content_type, max_bytes, diags)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if _HTML_START.match(text):
        # An HTML page served as robots.txt: read only the lines that could be
        # records (Google would obey them), found by one regex scan, and
        # report the page once instead of once per line.
        diags.add(1, "html_body", f"{text.count(chr(10)) + 1:,} lines")
        numbered = _record_lines(text, diags)
    else:
        lines = text.split("\n")
        if len(text) > _SAFE_LINE_CHARS and max(map(len, lines)) > _SAFE_LINE_CHARS:
            lines = [_cut_line(line, n, diags) for n, line in enumerate(lines, 1)]
        numbered = enumerate(lines, 1)

    patterns: list[str] = []
    marks = array("I")
    groups: list[Group] = []
    sitemaps: dict[str, None] = {}
    group: Group | None = None
    in_agents = False  # the current group has had no Allow/Disallow yet
    fast_keys = _FAST_KEYS
    for number, line in numbered:
        if not line or line[0] == "#":
            continue
        key, colon, value = line.partition(":")
        # a bare "Disallow" (no colon, no value) is no record: the slow path says so
        kind = fast_keys.get(key) if colon else None
        if kind is None:
            kind, value = _slow_record(line, number, diags)
            if kind is None:
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
                marks.append(number << 1 | kind)
        elif kind == USER_AGENT:
            if not in_agents:
                if group is not None:
                    group.end = len(patterns)
                group = Group(len(patterns), number)
                groups.append(group)
                in_agents = True
            group.agents.append(_agent_token(value, number, diags))
        elif kind == SITEMAP:
            if value:
                if "://" not in value:
                    diags.add(number, "sitemap_not_absolute", value)
                sitemaps[value] = None
        elif group is None:
            diags.add(number, "outside_group", _NAMES[kind])
        elif kind == CRAWL_DELAY:
            delay = _crawl_delay(value, number, diags)
            if delay is not None and (group.crawl_delay is None or delay > group.crawl_delay):
                group.crawl_delay = delay
        else:
            rate = _request_rate(value, number, diags)
            if rate is not None and (group.request_rate is None or _slower(rate, group.request_rate)):
                group.request_rate = rate
    if group is not None:
        group.end = len(patterns)
    return Parsed("\n".join(patterns), marks, groups, list(sitemaps), diags if len(diags) else None)


def _record_lines(text: str, diags: DiagnosticLog) -> list[tuple[int, str]]:
    """``(line number, line)`` for the lines of ``text`` that could be records.

    Rather than looking at every line of a large page, look for the stems of
    the keys with ``str.find`` (C speed) and check only the lines they are on.
    """
    # lower() of non-ASCII text could move offsets: blank those characters first
    low = text if text.isascii() else text.encode("ascii", "replace").decode("ascii")
    low = low.lower()
    found = set()
    find, rfind = low.find, low.rfind
    for stem in _KEY_STEMS:
        i = find(stem)
        while i >= 0:
            found.add(rfind("\n", 0, i) + 1)
            i = find(stem, i + len(stem))
    candidates = sorted(found)
    out = []
    number, last = 1, 0
    count, match = text.count, _KEY_LINE.match
    for start in candidates:
        end = text.find("\n", start)
        line = text[start:end] if end >= 0 else text[start:]
        if match(line):
            number += count("\n", last, start)
            last = start
            out.append((number, _cut_line(line, number, diags)))
    return out


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
        value = line[colon + 1 :].strip(" \t")
    else:
        # Google's leniency: "Disallow /x" (exactly two tokens) is a record.
        parts = None
        if _lenient_kind(line.lower()) is not None:
            parts = [p for p in line.replace("\t", " ").split(" ") if p]
        if parts is None or len(parts) != 2:
            diags.add(number, "unparsable_line")
            return None, ""
        diags.add(number, "missing_colon", parts[0])
        key, value = parts[0].lower(), parts[1]
    kind = _KEYS.get(key)
    if kind is not None:
        return kind, value
    kind = _lenient_kind(key)
    if kind is not None:
        diags.add(number, "key_typo", f"{key!r} read as {_NAMES[kind]}")
        return kind, value
    diags.add(number, "unknown_key" if key else "unparsable_line", key or None)
    return None, ""


def _cut_line(line: str, number: int, diags: DiagnosticLog) -> str:
    if len(line) <= _SAFE_LINE_CHARS:
        return line
    raw = line.encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_LINE_BYTES:
        return line
    diags.add(number, "line_too_long", f"{len(raw):,} bytes")
    return raw[:MAX_LINE_BYTES].decode("utf-8", "ignore")


def _lenient_kind(key: str) -> int | None:
    m = _LENIENT.match(key)
    return None if m is None else _LENIENT_KIND[m.lastindex - 1]  # type: ignore[operator]


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
    if _NUMBER.match(value):
        delay = float(value)
        if delay != _INF:  # hundreds of digits overflow to inf: no real delay
            return delay
    diags.add(number, "invalid_crawl_delay", value)
    return None


def _request_rate(value: str, number: int, diags: DiagnosticLog) -> tuple[int, float] | None:
    m = _RATE.match(value)
    # int() refuses more than 4,300 digits (ValueError); no real rate has that many
    if m and len(m.group(1)) <= 18:
        requests, seconds = int(m.group(1)), float(m.group(2)) * _RATE_UNIT[m.group(3).lower()]
        if requests > 0 and 0 < seconds < _INF:
            return requests, seconds
    diags.add(number, "invalid_request_rate", value)
    return None


def _slower(a: tuple[int, float], b: tuple[int, float]) -> bool:
    return a[1] / a[0] > b[1] / b[0]
