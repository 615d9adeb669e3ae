"""Properties of the core, checked with hypothesis.

* ``parse`` never raises, on arbitrary bytes and on files drawn from a
  robots.txt grammar full of the irregularities real files have;
* ``check`` is total and deterministic, and its verdict agrees with
  ``allowed`` and ``rule``;
* the answer agrees with a naive reference written here from the RFC text:
  percent-normalisation, a recursive ``*``/``$`` matcher, group selection,
  longest match in octets, Allow on ties;
* the fast paths of the reader give the answers of its slow paths.
"""

from __future__ import annotations

import contextlib
import random
import re
from functools import cache

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_dots import _rfc3986_5_2_4  # the section's own algorithm (tests/core is on sys.path)

from scrapy_rfc9309 import Decision, RobotsTxt, Verdict, parse
from scrapy_rfc9309.robots import index, robotstxt
from scrapy_rfc9309.robots.parser import read

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOKENS = ("ExampleBot", "examplebot", "OtherBot", "a", "b-c_d")
ALLOWED_VERDICTS = {Verdict.ALLOWED_EXPLICIT, Verdict.ALLOWED_IMPLICIT, Verdict.ALLOWED_ROBOTS_TXT}


# -- strategies ----------------------------------------------------------------------------

# Pieces of paths and patterns: escapes of every kind (unreserved, reserved,
# lower-case, the literal '*' and '$', broken), non-ASCII, and the names that
# trigger special cases.
CHUNKS = [
    "/", "a", "b", "ab", "/a", ".", "-", "~", "?", "=", ";", "&",
    "%41", "%61", "%7e", "%2F", "%2f", "%3F", "%2A", "%2a", "%24", "%25", "%", "%2", "%zz",
    "\u00e9", "%C3%A9", "%c3%a9", "\u30c4", "%E3%83%84",
    "index.htm", "index.html", "robots.txt",
    # characters outside RFC 3986's grammar, raw and escaped (raw blanks only
    # inside a chunk: the parser strips them at the ends of a value)
    "<", "%3C", "%3c", "a b", "%20", "|", "%7C", "{}", "%7B%7D", '"', "^", "`", "\\", "%5C", "\x01", "%7F",
    # "[" and "]": reserved, but RFC 3986 allows them raw only in a host; a path holds them escaped
    "[", "]", "%5B", "%5d", "f[t]=1",
]  # fmt: skip
chunk = st.sampled_from(CHUNKS)
path_text = st.lists(chunk, max_size=8).map(lambda parts: "/" + "".join(parts))
pattern_text = st.lists(st.one_of(chunk, st.just("*"), st.just("$")), max_size=7).map("".join)
pattern_value = st.one_of(
    pattern_text.map(lambda p: "/" + p),
    pattern_text.map(lambda p: "*" + p),
    pattern_text,  # sometimes neither '/' nor '*' first
)
agent_value = st.sampled_from(
    ["*", "* extra", "ExampleBot", "examplebot/1.0", "EXAMPLEBOT", "OtherBot", "a", "b-c_d", "Example", "*x", "", "%"]
)

KEYS = [
    "User-agent", "user-agent", "USER-AGENT", "useragent", "User agent",
    "Allow", "allow", "ALLOW", "Disallow", "disallow", "Disallowed", "dissallow", "disalow",
    "Crawl-delay", "crawl-delay", "Request-rate", "Sitemap", "sitemap", "Host", "Noindex", "alow", "",
]  # fmt: skip
record = st.builds(
    lambda key, sep, value, comment, lead: f"{lead}{key}{sep}{value}{comment}",
    st.sampled_from(KEYS),
    st.sampled_from([":", ": ", " : ", ":\t", " ", "\t", ""]),
    st.one_of(agent_value, pattern_value, st.sampled_from(["5", "0.5", "1/5m", "x", "https://e.com/s.xml"])),
    st.sampled_from(["", " # note", "#"]),
    st.sampled_from(["", "", " ", "\t"]),
)
line = st.one_of(record, record, record, st.just(""), st.just("# comment"), st.text(max_size=15))
line_end = st.sampled_from(["\n", "\r", "\r\n"])


@st.composite
def robots_text(draw) -> str:
    lines = draw(st.lists(line, max_size=14))
    text = "".join(text + draw(line_end) for text in lines)
    if draw(st.booleans()):
        text = text.rstrip("\r\n")  # no final line end
    return text


url = st.one_of(
    path_text,
    path_text.map(lambda p: "https://example.com" + p),
    path_text.map(lambda p: "https://example.com" + p + "#frag"),
    # other origins, some a prefix of another: check() remembers the last origin
    st.builds(
        lambda origin, p: origin + p,
        st.sampled_from(
            [
                "https://example.com.evil",
                "https://example.com:8080",
                "http://example.com",
                "HTTPS://EXAMPLE.COM",
                "https://",
                "https:/",
                "https:",
                "https://?",
                "//example.com",
                "https://example.com?q",
            ]
        ),
        path_text,
    ),
    st.sampled_from(["https://example.com", "https://example.com?q", "/robots.txt", "//example.com/a", ""]),
    st.text(max_size=20),
)


# -- never raises; total; deterministic ----------------------------------------------------


@SETTINGS
@given(
    body=st.binary(max_size=3000),
    content_type=st.one_of(
        st.none(),
        st.sampled_from(["text/plain; charset=utf-16", "charset=cp1252", "charset=undefined", "charset=base64"]),
        st.text(max_size=30),
        st.binary(max_size=30),
    ),
)
def test_parse_never_raises_on_bytes(body: bytes, content_type) -> None:
    robots = parse(body, content_type=content_type)
    for diag in robots.diagnostics:
        assert diag.line >= 0 and diag.code and isinstance(diag.message, str)
    assert robots.check("/", "ExampleBot").verdict in Verdict


@SETTINGS
@given(body=robots_text(), bom=st.booleans())
def test_parse_never_raises_on_the_grammar(body: str, bom: bool) -> None:
    raw = (b"\xef\xbb\xbf" if bom else b"") + body.encode()
    text = ("\ufeff" if bom else "") + body
    from_bytes, from_text = parse(raw), parse(text)
    # bytes and str are read alike
    assert from_bytes.sitemaps == from_text.sitemaps
    assert from_bytes.diagnostics == from_text.diagnostics
    for token in TOKENS:
        assert from_bytes.crawl_delay(token) == from_text.crawl_delay(token)
        for path in ("/", "/a", "/ab", "/%C3%A9", "/index.html"):
            assert _answer(from_bytes.check(path, token)) == _answer(from_text.check(path, token))


def _answer(decision: Decision) -> tuple:
    rule = decision.rule
    return decision.allowed, decision.verdict, None if rule is None else (rule.allow, rule.pattern, rule.line)


@SETTINGS
@given(body=robots_text(), urls=st.lists(url, min_size=1, max_size=6), token=st.sampled_from(TOKENS))
def test_check_is_total_and_deterministic(body: str, urls: list[str], token: str) -> None:
    robots = parse(body)
    again = parse(body)
    for u in urls:
        decision = robots.check(u, token)
        assert isinstance(decision, Decision)
        assert decision.allowed == (decision.verdict in ALLOWED_VERDICTS)
        if decision.verdict in (Verdict.ALLOWED_EXPLICIT, Verdict.DISALLOWED_EXPLICIT):
            assert decision.rule is not None and decision.rule.allow == decision.allowed
            assert decision.rule.pattern and decision.rule.line >= 1
        else:
            assert decision.rule is None
        assert _answer(robots.check(u, token)) == _answer(decision)  # cached matcher
        assert _answer(again.check(u, token)) == _answer(decision)  # fresh parse
        assert robots.can_fetch(u, token) is decision.allowed
        assert _answer(robots.check(u, token.upper())) == _answer(decision)  # tokens are case-insensitive


@SETTINGS
@given(body=robots_text(), urls=st.lists(url, min_size=2, max_size=12), token=st.sampled_from(TOKENS))
def test_answers_do_not_depend_on_the_urls_asked_before(body: str, urls: list[str], token: str) -> None:
    # check() remembers the origin of the URLs it was asked about; a URL of
    # another origin, or one that only looks like it, must not be cut wrongly.
    robots = parse(body)
    for u in urls:
        assert _answer(robots.check(u, token)) == _answer(parse(body).check(u, token)), u


# -- a naive reference ------------------------------------------------------------------------

_HEX_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_RESERVED = set(":/?#[]@!$&'()*+,;=")
# RFC 3986 3.2.2, 3.3, 3.4: "[" and "]" are raw only in a host, escaped in a path or query
_HOST_ONLY = set("[]")


def ref_encode(text: str, decode_star_dollar: bool) -> str:
    """RFC 9309 section 2.2.2 normalisation: non-ASCII, the ASCII characters
    outside RFC 3986's unreserved and reserved sets, and a "%" that starts
    no escape (RFC 3986 2.4), to %XX; escapes in upper case, unreserved
    escapes decoded (and, for matching, %2A/%24 as the literal characters)."""

    def octets(i: int, c: str) -> str:
        if c == "%" and not _HEX_ESCAPE.match(text, i):
            return "%25"
        if ord(c) < 128 and (c in _UNRESERVED or c in _RESERVED or c == "%") and c not in _HOST_ONLY:
            return c
        return "".join(f"%{b:02X}" for b in c.encode())

    text = "".join(octets(i, c) for i, c in enumerate(text))

    def fix(m: re.Match[str]) -> str:
        char = chr(int(m.group(1), 16))
        if char in _UNRESERVED or (decode_star_dollar and char in "*$"):
            return char
        return "%" + m.group(1).upper()

    return _HEX_ESCAPE.sub(fix, text)


def ref_path(url: str) -> str:
    m = re.match(r"(?:[A-Za-z][A-Za-z0-9+.-]*:)?//[^/?#]*", url)
    path = (url[m.end() :] if m else url).split("#")[0]
    return ref_encode(path if path.startswith("/") else "/" + path, True)


def ref_matches(pattern: str, path: str) -> bool:
    """Recursive ``*``/``$`` matcher over the pattern's literal characters."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    tokens: list[str | None] = []  # None is the wildcard
    for i, piece in enumerate(body.split("*")):
        if i:
            tokens.append(None)
        tokens.extend(ref_encode(piece, True))

    @cache
    def match(t: int, p: int) -> bool:
        if t == len(tokens):
            return p == len(path) if anchored else True
        if tokens[t] is None:
            return any(match(t + 1, q) for q in range(p, len(path) + 1))
        return p < len(path) and path[p] == tokens[t] and match(t + 1, p + 1)

    return match(0, 0)


def ref_priority(pattern: str) -> int:
    return len(ref_encode(pattern, False))


def ref_decide(rules: list[tuple[bool, str]], url: str) -> tuple[bool, set[str]]:
    """``(allowed, winning patterns)`` by longest match, Allow on ties."""
    path = ref_path(url)
    if path == "/robots.txt":
        return True, set()
    candidates = []  # (priority, allow, pattern as written)
    for allow, pattern in rules:
        if not pattern:
            continue
        if ref_matches(pattern, path):
            candidates.append((ref_priority(pattern), allow, pattern))
        slash = pattern.rfind("/")
        if allow and slash >= 0 and pattern[slash:].startswith("/index.htm"):
            directory = pattern[: slash + 1] + "$"  # Google's index.htm rule
            if ref_matches(directory, path):
                candidates.append((ref_priority(directory), allow, pattern))
    if not candidates:
        return True, set()
    best = max(candidates)[:2]  # highest priority, then Allow (True > False)
    return best[1], {c[2] for c in candidates if c[:2] == best}


def _compare(robots: RobotsTxt, rules: list[tuple[bool, str]], u: str, token: str) -> None:
    decision = robots.check(u, token)
    allowed, winners = ref_decide(rules, u)
    resolved = _rfc3986_5_2_4(u.partition("?")[0]) + ("?" + u.partition("?")[2] if "?" in u else "")
    if allowed and resolved != u and resolved != "/robots.txt":
        # a dot segment: allowed only if the path as servers serve it is allowed too (docs/deviations.md, l)
        second = ref_decide(rules, resolved)
        if not second[0]:
            allowed, winners = second
    assert decision.allowed == allowed, (u, rules, decision)
    if winners:
        assert decision.rule is not None and decision.rule.pattern in winners, (u, rules, decision)
    else:
        assert decision.rule is None, (u, rules, decision)


rule = st.tuples(st.booleans(), pattern_value)


@settings(max_examples=300, deadline=None)
@given(rules=st.lists(rule, max_size=8), urls=st.lists(url, min_size=1, max_size=5))
def test_longest_match_agrees_with_naive_reference(rules: list[tuple[bool, str]], urls: list[str]) -> None:
    body = "User-agent: *\n" + "".join(f"{'Allow' if a else 'Disallow'}: {p}\n" for a, p in rules)
    robots = parse(body)
    for u in urls:
        _compare(robots, rules, u, "ExampleBot")


# Other spellings of a chunk: the same octets after normalisation.
SPELLINGS = {
    "a": ["a", "%61"],
    "ab": ["ab", "a%62", "%61b"],
    "/a": ["/a", "/%61"],
    "~": ["~", "%7E", "%7e"],
    "%41": ["%41", "A"],
    "%61": ["%61", "a"],
    "%7e": ["%7e", "~"],
    "%2F": ["%2F", "%2f"],
    "%2f": ["%2f", "%2F"],
    "%2A": ["%2A", "%2a"],
    "%2a": ["%2a", "%2A"],
    "\u00e9": ["\u00e9", "%C3%A9", "%c3%a9"],
    "%C3%A9": ["%C3%A9", "\u00e9", "%c3%a9"],
    "%c3%a9": ["%c3%a9", "\u00e9"],
    "\u30c4": ["\u30c4", "%E3%83%84"],
    "%E3%83%84": ["%E3%83%84", "\u30c4", "%e3%83%84"],
    "<": ["<", "%3C", "%3c"],
    "%3C": ["%3C", "<", "%3c"],
    "%3c": ["%3c", "<"],
    "a b": ["a b", "a%20b", "%61%20b"],
    "%20": ["%20"],  # (a raw blank could end a rule, where the parser strips it)
    "|": ["|", "%7C", "%7c"],
    "%7C": ["%7C", "|"],
    "{}": ["{}", "%7B}", "{%7d", "%7B%7D"],
    "%7B%7D": ["%7B%7D", "{}"],
    '"': ['"', "%22"],
    "^": ["^", "%5E", "%5e"],
    "`": ["`", "%60"],
    "\\": ["\\", "%5C", "%5c"],
    "%5C": ["%5C", "\\"],
    "\x01": ["\x01", "%01"],
    "%7F": ["%7F", "\x7f", "%7f"],
    "[": ["[", "%5B", "%5b"],
    "]": ["]", "%5D", "%5d"],
    "%5B": ["%5B", "["],
    "%5d": ["%5d", "]", "%5D"],
    "f[t]=1": ["f[t]=1", "f%5Bt%5D=1", "f%5bt]=1"],
}


@st.composite
def path_and_rules(draw) -> tuple[str, list[tuple[bool, str]]]:
    """A path and rules made from it (prefixes, respelt, with '*' in places
    and sometimes '$'), so that several rules match and lengths compete."""
    parts = draw(st.lists(chunk, max_size=8))
    rules = []
    for _ in range(draw(st.integers(1, 6))):
        k = draw(st.integers(0, len(parts)))
        pieces = ["/"] + [draw(st.sampled_from(SPELLINGS.get(p, [p]))) for p in parts[:k]]
        pieces = [("*" if draw(st.integers(0, 4)) == 0 else p) for p in pieces]
        anchor = "$" if k == len(parts) and draw(st.booleans()) else ""
        rules.append((draw(st.booleans()), "".join(pieces) + anchor))
    rules += draw(st.lists(rule, max_size=2))
    return "/" + "".join(parts), draw(st.permutations(rules))


@settings(max_examples=400, deadline=None)
@given(case=path_and_rules(), absolute=st.booleans())
def test_longest_match_agrees_on_rules_made_from_the_path(case, absolute: bool) -> None:
    path, rules = case
    body = "User-agent: *\n" + "".join(f"{'Allow' if a else 'Disallow'}: {p}\n" for a, p in rules)
    _compare(parse(body), rules, ("https://example.com" + path) if absolute else path, "ExampleBot")


@st.composite
def groups(draw) -> list[tuple[list[str], list[tuple[bool, str]]]]:
    """Groups of (user-agent values, rules); every group has at least one
    Allow/Disallow line (possibly empty), so that no two groups merge."""
    out = []
    for _ in range(draw(st.integers(0, 4))):
        agents = draw(st.lists(agent_value, min_size=1, max_size=3))
        rules = draw(st.lists(st.tuples(st.booleans(), st.one_of(pattern_value, st.just(""))), min_size=1, max_size=4))
        out.append((agents, rules))
    return out


def ref_token(value: str) -> str:
    if value == "*" or value.startswith(("* ", "*\t")):
        return "*"
    return re.match(r"[A-Za-z_-]*", value).group().lower()


@settings(max_examples=200, deadline=None)
@given(gs=groups(), urls=st.lists(url, min_size=1, max_size=4), token=st.sampled_from(TOKENS))
def test_group_selection_agrees_with_naive_reference(gs, urls: list[str], token: str) -> None:
    body = "\n".join(
        "".join(f"User-agent: {a}\n" for a in agents)
        + "".join(f"{'Allow' if allow else 'Disallow'}: {p}\n" for allow, p in rules)
        for agents, rules in gs
    )
    robots = parse(body)
    named = [rules for agents, rules in gs if token.lower() in {ref_token(a) for a in agents}]
    if not named:
        named = [rules for agents, rules in gs if "*" in {ref_token(a) for a in agents}]
    merged = [r for rules in named for r in rules]
    for u in urls:
        _compare(robots, merged, u, token)


# -- fast paths agree with slow paths ------------------------------------------------------


def _same_answers(a: RobotsTxt, b: RobotsTxt, urls: list[str]) -> None:
    assert a.sitemaps == b.sitemaps
    for token in TOKENS:
        assert a.crawl_delay(token) == b.crawl_delay(token)
        assert a.request_rate(token) == b.request_rate(token)
        for u in urls:
            assert _answer(a.check(u, token)) == _answer(b.check(u, token)), (u, token)


@SETTINGS
@given(body=robots_text(), urls=st.lists(url, min_size=1, max_size=5))
def test_html_page_reading_agrees_with_line_reading(body: str, urls: list[str]) -> None:
    # An HTML page served as robots.txt is read by a faster path that only
    # looks at lines that could be records; the first line is an HTML tag in
    # one file and a comment in the other, so the line numbers agree.
    _same_answers(parse("<html>\n" + body), parse("#html>\n" + body), urls)


_KEY_AT_START = re.compile(r"^(User-agent|Allow|Disallow|Sitemap|Crawl-delay)(:)", re.IGNORECASE)


@SETTINGS
@given(
    body=robots_text(),
    urls=st.lists(url, min_size=1, max_size=5),
    style=st.sampled_from(["lower", "upper", "swapcase"]),
    lead=st.sampled_from([" ", "\t", ""]),
    gap=st.sampled_from([" ", "\t", ""]),
)
def test_key_spelling_and_blanks_do_not_change_answers(body: str, urls, style: str, lead: str, gap: str) -> None:
    # Usual spellings take a fast path, unusual ones the slow path.
    def respell(m: re.Match[str]) -> str:
        return lead + getattr(m.group(1), style)() + gap + ":"

    lines = re.split(r"(\r\n|\r|\n)", body)
    respelt = "".join(_KEY_AT_START.sub(respell, ln, count=1) if i % 2 == 0 else ln for i, ln in enumerate(lines))
    _same_answers(parse(body), parse(respelt), urls)


def _everything_read(body: str | bytes) -> tuple:
    parsed = read(body)
    groups = [(g.agents, g.start, g.end, g.crawl_delay, g.request_rate, g.line) for g in parsed.groups]
    diagnostics = parsed.diagnostics.to_list() if parsed.diagnostics else None
    return parsed.patterns, list(parsed.marks), groups, parsed.sitemaps, diagnostics


# Plain "Disallow: /..." lines, with what the reader must cut from their values.
plain_disallow = st.builds(
    lambda path, tail: "Disallow: /" + path + tail,
    pattern_text,
    st.sampled_from(["", "", "", " ", "\t", " \t ", " # note", "#", "# a # b", "\x0b", " x"]),
)
_PLAIN_DISALLOW = re.compile(r"(?:^|(?<=[\r\n]))Disallow: /")


@st.composite
def runs_text(draw) -> str:
    lines = draw(st.lists(st.one_of(plain_disallow, plain_disallow, line), max_size=16))
    text = "".join(text + draw(line_end) for text in lines)
    return text.rstrip("\r\n") if draw(st.booleans()) else text


@SETTINGS
@given(body=runs_text())
def test_runs_of_plain_disallow_lines_read_as_lines_read_one_by_one(body: str) -> None:
    # Plain "Disallow: /" lines are read a run at a time, at C speed; spelt
    # "disallow", the same lines are read one by one.  Patterns, line numbers,
    # groups and diagnostics must all be the same.
    respelt = _PLAIN_DISALLOW.sub("disallow: /", body)
    assert _everything_read(body) == _everything_read(respelt)
    assert _everything_read(body.encode()) == _everything_read(respelt.encode())


@pytest.mark.parametrize("token", ["bad token", "ExampleBot/1.0", ""])
def test_invalid_tokens_fail_whatever_the_file(token: str) -> None:
    for robots in (parse(""), parse("User-agent: *\nDisallow: /\n"), RobotsTxt.allow_all(), RobotsTxt.deny_all()):
        with pytest.raises(ValueError):
            robots.check("/", token)


# -- rules looked up through an index (robots.index) -----------------------------------------
@contextlib.contextmanager
def literals_from(lead_rules: int, key_chars: int):
    """Every bucket is an index; more than ``lead_rules`` wildcard rules with
    one start are filed under their rarest literal, keyed by ``key_chars``."""
    saved = robotstxt._INDEX_LEAST, index.LEAD_RULES, index.KEY_CHARS
    robotstxt._INDEX_LEAST, index.LEAD_RULES, index.KEY_CHARS = 0, lead_rules, key_chars
    try:
        yield
    finally:
        robotstxt._INDEX_LEAST, index.LEAD_RULES, index.KEY_CHARS = saved


@settings(max_examples=300, deadline=None)
@given(
    case=path_and_rules(),
    extra=st.lists(rule, min_size=4, max_size=12),
    key_chars=st.integers(1, 5),
    lead_rules=st.sampled_from([0, 1, 8]),
)
def test_indexed_rules_agree_with_naive_reference(case, extra, key_chars: int, lead_rules: int) -> None:
    """Every bucket is looked up through an index, the wildcard rules filed
    by their start or (all of them, or those sharing a start) by their
    rarest literal, whatever the key length: the answers are the reference's."""
    path, rules = case
    rules = rules + extra
    body = "User-agent: *\n" + "".join(f"{'Allow' if a else 'Disallow'}: {p}\n" for a, p in rules)
    with literals_from(lead_rules, key_chars):
        robots = parse(body)
        for u in (path, path + "x", path[:-1] or "/"):
            _compare(robots, rules, u, "ExampleBot")


def test_thousands_of_distinct_literals_agree_with_naive_reference() -> None:
    """At the real threshold: 600 wildcard rules with distinct literals (in
    every bucket and in one), paths that hold some of the literals, none, or
    one split across what would be a key."""
    rnd = random.Random(9309)
    letters = "abcdefghij0123456789-_"

    def word(n: int) -> str:
        return "".join(rnd.choice(letters) for _ in range(n))

    literals = list(dict.fromkeys(word(rnd.randint(1, 9)) for _ in range(600)))
    rules = []
    for i, lit in enumerate(literals):
        shape = i % 4
        pattern = (f"/*{lit}", f"/*{lit}$", f"/s*{lit}*", f"/*x*{lit}")[shape]
        rules.append((i % 3 == 0, pattern))
    body = "User-agent: *\n" + "".join(f"{'Allow' if a else 'Disallow'}: {p}\n" for a, p in rules)
    robots = parse(body)
    paths = ["/", "/s", "/" + "x" * 600, "/s" + "".join(literals[:40]), "/" + "-".join(literals[-30:])]
    paths += ["/s" + word(rnd.randint(0, 60)) + rnd.choice(literals) + word(rnd.randint(0, 5)) for _ in range(60)]
    paths += ["/" + word(rnd.randint(1, 300)) for _ in range(30)]
    for path in paths:
        _compare(robots, rules, path, "ExampleBot")
    assert robots._matcher("ExampleBot")._literals.known, "no run took the keyed path"
