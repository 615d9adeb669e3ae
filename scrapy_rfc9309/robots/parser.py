"""Reading a robots.txt file into groups of rules, with every leniency reported.

One pass over the lines, with no object made per line beyond the strings the
rules keep: parsing runs once per origin and real files have thousands of lines.
Rules are stored as written; they are compiled for matching only when a
crawler first asks (see :mod:`.robotstxt`).

Grouping (RFC 9309 section 2.1): consecutive User-agent lines share the rules
that follow; only an Allow or Disallow line ends a run of User-agent lines, so
a Crawl-delay, Sitemap, blank or unknown line between two User-agent lines
keeps them in one group.
"""

from __future__ import annotations

import re

from .decode import DEFAULT_PARSE_BYTES, decode_body
from .diagnostics import Diagnostic

#: Google's reference parser keeps at most this many bytes of a line.
MAX_LINE_BYTES = 16_663
# A line this short cannot exceed MAX_LINE_BYTES in UTF-8 (4 bytes a character at most).
_MAX_LINE_CHARS_SAFE = MAX_LINE_BYTES // 4

# Record kinds.
USER_AGENT, ALLOW, DISALLOW, SITEMAP, CRAWL_DELAY, REQUEST_RATE = range(6)

_EXACT_KEYS = {
    "user-agent": USER_AGENT,
    "allow": ALLOW,
    "disallow": DISALLOW,
    "sitemap": SITEMAP,
    "crawl-delay": CRAWL_DELAY,
    "request-rate": REQUEST_RATE,
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
_AGENT_RUN = re.compile(r"[A-Za-z_-]*")
_NUMBER = re.compile(r"(?:\d+(?:\.\d*)?|\.\d+)\Z")
_RATE = re.compile(r"(\d+)\s*/\s*(\d+(?:\.\d+)?)\s*([smh]?)", re.IGNORECASE)
_RATE_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}
_KNOWN_OTHER_KEYS = frozenset({"host", "clean-param", "noindex", "nofollow", "noarchive", "visit-time"})


class Group:
    """One group: the agents it names (lower-case tokens, ``*`` for all) and
    its rules as ``(allow, pattern, line)`` tuples in file order."""

    __slots__ = ("agents", "rules", "crawl_delay", "request_rate", "line")

    def __init__(self, line: int) -> None:
        self.agents: list[str] = []
        self.rules: list[tuple[bool, str, int]] = []
        self.crawl_delay: float | None = None
        self.request_rate: tuple[int, float] | None = None
        self.line = line


class ParseResult:
    __slots__ = ("groups", "sitemaps", "diagnostics")

    def __init__(self, groups: list[Group], sitemaps: list[str], diagnostics: list[Diagnostic]) -> None:
        self.groups = groups
        self.sitemaps = sitemaps
        self.diagnostics = diagnostics


def read(
    body: bytes | str,
    content_type: str | bytes | None = None,
    max_bytes: int = DEFAULT_PARSE_BYTES,
) -> ParseResult:
    """Read ``body`` into groups, sitemaps and diagnostics.  Never raises."""
    diags: list[Diagnostic] = []
    text = decode_body(body, content_type, max_bytes, diags)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    groups: list[Group] = []
    sitemaps: dict[str, None] = {}
    group: Group | None = None
    in_agents = False  # the current group has had no Allow/Disallow yet
    exact_keys = _EXACT_KEYS
    add = diags.append

    for number, line in enumerate(text.split("\n"), 1):
        if len(line) > _MAX_LINE_CHARS_SAFE:
            line = _cut_line(line, number, add)
        hash_at = line.find("#")
        if hash_at >= 0:
            line = line[:hash_at]
        colon = line.find(":")
        if colon >= 0:
            key = line[:colon].strip(" \t").lower()
            value = line[colon + 1 :].strip(" \t")
        else:
            line = line.strip(" \t")
            if not line:
                continue
            key, value = _without_colon(line, number, add)
            if key is None:
                continue
        kind = exact_keys.get(key)
        if kind is None:
            kind = _lenient_key(key, number, add)
            if kind is None:
                continue

        if kind == USER_AGENT:
            if not in_agents or group is None:
                group = Group(number)
                groups.append(group)
                in_agents = True
            group.agents.append(_agent_token(value, number, add))
        elif kind == ALLOW or kind == DISALLOW:
            if group is None:
                add(Diagnostic(number, "outside_group", f"{_name(kind)} before any User-agent line"))
                continue
            in_agents = False
            if value:
                if value[0] != "/" and value[0] != "*":
                    add(Diagnostic(number, "pattern_not_absolute", f"pattern {value[:80]!r} does not start with '/'"))
                group.rules.append((kind == ALLOW, value, number))
        elif kind == SITEMAP:
            if value:
                if "://" not in value:
                    add(Diagnostic(number, "sitemap_not_absolute", f"Sitemap {value[:80]!r} is not an absolute URL"))
                sitemaps[value] = None
        elif group is None:
            add(Diagnostic(number, "outside_group", f"{_name(kind)} before any User-agent line"))
        elif kind == CRAWL_DELAY:
            delay = _crawl_delay(value, number, add)
            if delay is not None and (group.crawl_delay is None or delay > group.crawl_delay):
                group.crawl_delay = delay
        else:
            rate = _request_rate(value, number, add)
            if rate is not None and (group.request_rate is None or _slower(rate, group.request_rate)):
                group.request_rate = rate
    return ParseResult(groups, list(sitemaps), diags)


def _name(kind: int) -> str:
    return ("User-agent", "Allow", "Disallow", "Sitemap", "Crawl-delay", "Request-rate")[kind]


def _without_colon(line: str, number: int, add) -> tuple[str | None, str]:
    """Google's leniency: ``Disallow /x`` (exactly two tokens) is a record."""
    parts = line.replace("\t", " ").split(" ")
    parts = [p for p in parts if p]
    if len(parts) == 2 and _lenient_kind(parts[0].lower()) is not None:
        add(Diagnostic(number, "missing_colon", f"no colon after {parts[0][:40]!r}"))
        return parts[0].lower(), parts[1]
    add(Diagnostic(number, "unparsable_line", f"not a 'key: value' record: {line[:60]!r}"))
    return None, ""


def _cut_line(line: str, number: int, add) -> str:
    raw = line.encode("utf-8", "surrogatepass")
    if len(raw) <= MAX_LINE_BYTES:
        return line
    add(Diagnostic(number, "line_too_long", f"line of {len(raw):,} bytes cut to {MAX_LINE_BYTES:,}"))
    return raw[:MAX_LINE_BYTES].decode("utf-8", "ignore")


def _lenient_kind(key: str) -> int | None:
    for prefix, kind in _LENIENT_KEYS:
        if key.startswith(prefix):
            return kind
    return None


def _lenient_key(key: str, number: int, add) -> int | None:
    kind = _lenient_kind(key)
    if kind is not None:
        add(Diagnostic(number, "key_typo", f"{key[:40]!r} read as {_name(kind)}"))
        return kind
    if key in _KNOWN_OTHER_KEYS:
        add(Diagnostic(number, "unknown_key", f"{key!r} is not part of RFC 9309; ignored"))
    elif key:
        add(Diagnostic(number, "unknown_key", f"unknown key {key[:40]!r}; ignored"))
    else:
        add(Diagnostic(number, "unparsable_line", "empty key; ignored"))
    return None


def _agent_token(value: str, number: int, add) -> str:
    """``*`` or the value's leading ``[A-Za-z_-]`` run, lower-cased."""
    if value[:1] == "*":
        if len(value) > 1 and value[1] not in " \t":
            add(Diagnostic(number, "user_agent_invalid", f"user agent {value[:40]!r} matches no crawler"))
            return ""
        return "*"
    token = _AGENT_RUN.match(value).group()  # type: ignore[union-attr]
    if len(token) != len(value):
        if token:
            add(Diagnostic(number, "user_agent_trimmed", f"user agent {value[:40]!r} read as {token!r}"))
        else:
            add(Diagnostic(number, "user_agent_invalid", f"user agent {value[:40]!r} matches no crawler"))
    return token.lower()


def _crawl_delay(value: str, number: int, add) -> float | None:
    if _NUMBER.match(value):
        return float(value)
    add(Diagnostic(number, "invalid_crawl_delay", f"Crawl-delay {value[:40]!r} is not a non-negative number"))
    return None


def _request_rate(value: str, number: int, add) -> tuple[int, float] | None:
    m = _RATE.match(value)
    if m:
        requests, seconds = int(m.group(1)), float(m.group(2)) * _RATE_UNIT[m.group(3).lower()]
        if requests > 0 and seconds > 0:
            return requests, seconds
    add(Diagnostic(number, "invalid_request_rate", f"Request-rate {value[:40]!r} is not 'n/m[s|m|h]'"))
    return None


def _slower(a: tuple[int, float], b: tuple[int, float]) -> bool:
    return a[1] / a[0] > b[1] / b[0]
