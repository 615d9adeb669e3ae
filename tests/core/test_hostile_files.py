"""Hostile robots.txt files: the parser never raises, never takes long, and
still answers as a naive reference does.

Complements ``test_properties.py`` (arbitrary bytes, the everyday grammar, a
recursive reference matcher on short inputs) with what an attacker or a
broken server can serve:

* wildcard-heavy patterns against long paths, checked against a
  dynamic-programming reference (no recursion, no regex), each check in
  bounded time: no pattern makes matching catastrophic;
* junk lines (binary, HTML tags, invalid UTF-8) between the records of a
  generated file do not change any answer;
* crawl-rate values of every hostile shape give finite, non-negative answers;
* fixed shapes at the limits: a 1 MB single line, 20,000 rules, 10,000
  user-agents, CR-only line ends, a 512 KB HTML page;
* the shapes of 500 KiB that cost the most to prepare: parsed and compiled
  in steps as a crawl does it, no step and no check takes long;
* every file of ``../shared/corpus/robots/`` parses in under a second.

Bounds are in process time, a few times what a loaded machine takes (a step
or a check: milliseconds expected, ``STEP_BOUND``/``CHECK_BOUND``): they
catch a regression such as one check of a 2 KB path taking 69 ms, or one
step holding the event loop for 200 ms.  A whole parse of a large file is
not one step: ``BOUND`` only catches quadratic or exponential behaviour.
"""

from __future__ import annotations

import gc
import math
import os
import random
import re
import string
import time
from functools import lru_cache
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import RobotsTxt, Verdict, parse
from scrapy_rfc9309.robots.parser import MAX_LINE_BYTES

TOKEN = "ExampleBot"
#: seconds one whole parse of a hostile input may take (expected: tens of milliseconds)
BOUND = 1.0
#: seconds of process time one step of a stepped parse + compile may take (expected: 1-4 ms;
#: a crawl runs steps for 2 ms, then the event loop turns)
STEP_BOUND = 0.030
#: seconds of process time one check may take once its bucket is compiled (expected: under 2 ms)
CHECK_BOUND = 0.020
LETTERS = string.ascii_letters + string.digits
REPO_ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(os.environ.get("RFC9309_CORPUS") or REPO_ROOT.parent / "shared" / "corpus") / "robots"
HYPOTHESIS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def timed(fn, *args):
    """``fn(*args)`` and the process time it took (the garbage collector off:
    a full collection of the test process is not robots.txt work)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.process_time()
        value = fn(*args)
        return value, time.process_time() - start
    finally:
        if enabled:
            gc.enable()


# -- a naive reference: normalise, then match character by character -----------------------
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def norm(text: str, literal_star_dollar: bool = True) -> str:
    """RFC 9309 section 2.2.2: UTF-8 percent-encode non-ASCII, upper-case
    escapes, decode escapes of unreserved characters (and, when matching,
    %2A and %24, which stand for a literal '*' and '$')."""
    out = []
    for char in text:
        out.append(char if ord(char) < 128 else "".join(f"%{octet:02X}" for octet in char.encode("utf-8")))
    text = "".join(out)

    def fix(m: re.Match[str]) -> str:
        char = chr(int(m.group(1), 16))
        if char in _UNRESERVED or (literal_star_dollar and char in "*$"):
            return char
        return "%" + m.group(1).upper()

    return _ESCAPE.sub(fix, text)


@lru_cache(maxsize=65_536)
def tokens_of(pattern: str) -> tuple[list[str | None], bool, str, tuple[str, ...]]:
    """The pattern as a list of literal characters and None (the wildcard);
    whether '$' anchors it at the end of the path; its literal start; and
    all its literal pieces (each must occur in a path it matches)."""
    anchored = pattern.endswith("$")
    body = pattern[:-1] if anchored else pattern
    pieces = [norm(piece) for piece in body.split("*")]
    tokens: list[str | None] = []
    for i, piece in enumerate(pieces):
        if i:
            tokens.append(None)
        tokens.extend(piece)
    return tokens, anchored, pieces[0], tuple(p for p in pieces if p)


def ref_match(pattern: str, path: str) -> bool:
    """Glob matching by dynamic programming over (pattern position) sets:
    O(len(path) x len(pattern)), whatever the pattern."""
    tokens, anchored, lead, pieces = tokens_of(pattern)
    if not path.startswith(lead) or not all(piece in path for piece in pieces):
        return False  # cheap necessary conditions, so that 20,000 rules stay testable
    end = len(tokens)

    def closure(states: set[int]) -> set[int]:
        todo = list(states)
        while todo:
            t = todo.pop()
            if t < end and tokens[t] is None and t + 1 not in states:
                states.add(t + 1)
                todo.append(t + 1)
        return states

    states = closure({0})
    for char in path:
        if end in states and not anchored:
            return True
        nxt = set()
        for t in states:
            if t < end:
                if tokens[t] is None:
                    nxt.add(t)
                elif tokens[t] == char:
                    nxt.add(t + 1)
        if not nxt:
            return False
        states = closure(nxt)
    return end in states


def ref_decide(rules: list[tuple[bool, str]], path: str) -> tuple[bool, set[str]]:
    """``(allowed, patterns that tie for the win)``: the longest matching
    pattern in octets wins, Allow wins a tie, no match allows."""
    path = norm(path)
    best: tuple[int, bool] | None = None
    winners: set[str] = set()
    for allow, pattern in rules:
        if not pattern or not ref_match(pattern, path):
            continue
        key = (len(norm(pattern, literal_star_dollar=False)), allow)
        if best is None or key > best:
            best, winners = key, {pattern}
        elif key == best:
            winners.add(pattern)
    if best is None:
        return True, set()
    return best[1], winners


def agree(robots, rules: list[tuple[bool, str]], path: str) -> None:
    # an absolute URL: a bare "//x" would be read as a scheme-relative authority
    decision, took = timed(robots.check, "https://example.com" + path, TOKEN)
    assert took < CHECK_BOUND, f"check took {took * 1e3:.1f} ms"
    allowed, winners = ref_decide(rules, path)
    assert decision.allowed == allowed, (path[:200], decision)
    if winners:
        assert decision.rule is not None and decision.rule.pattern in winners, (path[:200], decision)
    else:
        assert decision.rule is None and decision.verdict is Verdict.ALLOWED_IMPLICIT, decision


def rules_file(rules: list[tuple[bool, str]]) -> str:
    return "User-agent: *\n" + "".join(f"{'Allow' if a else 'Disallow'}: {p}\n" for a, p in rules)


def test_the_reference_itself():
    """The reference is only worth something if it is right on known cases."""
    assert ref_match("/a*b$", "/axxb") and not ref_match("/a*b$", "/axxbc")
    assert ref_match("/a", "/abc") and not ref_match("/a$", "/abc")
    assert ref_match("*.php", "/x/index.php?q") and not ref_match("*.php$", "/x/index.php?q")
    assert ref_match("/%7Euser", "/~user") and ref_match("/caf\u00e9", "/caf%C3%A9")
    assert ref_match("/a%2A", "/a*") and not ref_match("/a%2A", "/ab")
    assert ref_decide([(False, "/a"), (True, "/a*")], "/a/x") == (True, {"/a*"})  # equal length: Allow
    assert ref_decide([(True, "/a"), (False, "/a/")], "/a/x") == (False, {"/a/"})


# -- wildcard-heavy patterns against long paths ------------------------------------------
# A tiny alphabet makes every '*' ambiguous: the worst case for a backtracking matcher.
star_piece = st.sampled_from(["a", "b", "/", "*", "*", "**", "a*", "*b", "%61", "%2A", "ab"])
hostile_pattern = st.builds(
    lambda lead, pieces, dollar: lead + "".join(pieces) + ("$" if dollar else ""),
    st.sampled_from(["/", "*", "/a", "/*"]),
    st.lists(star_piece, max_size=60),
    st.booleans(),
)
long_path = st.builds(
    lambda unit, times, tail: "/" + unit * times + tail,
    st.text(alphabet="ab/*", max_size=12),
    st.integers(1, 400),
    st.text(alphabet="ab/", max_size=6),
)


@HYPOTHESIS
@given(
    rules=st.lists(st.tuples(st.booleans(), hostile_pattern), min_size=1, max_size=6),
    paths=st.lists(long_path, min_size=1, max_size=3),
)
def test_wildcard_heavy_patterns_agree_with_the_reference_in_bounded_time(rules, paths) -> None:
    robots, took = timed(parse, rules_file(rules))
    assert took < BOUND
    for path in paths:
        agree(robots, rules, path)


def test_worst_known_wildcard_shapes_stay_linear() -> None:
    """Patterns that make backtracking matchers (and naive regex translations)
    explode: ``a*a*...*b`` against ``aaaa...``, on paths of 100 KB."""
    shapes = [
        "/" + "a*" * 2000 + "b",
        "/" + "*a" * 2000 + "$",
        "*" + "*a*b" * 1000 + "c$",
        "/" + "a*" * 8000,
    ]
    robots = parse(rules_file([(False, p) for p in shapes]))
    robots.check("/", TOKEN)  # compiles the rules
    for path in ("/" + "a" * 100_000, "/" + "ab" * 50_000, "/" + "a" * 99_999 + "c"):
        _, took = timed(robots.check, path, TOKEN)
        assert took < CHECK_BOUND, took
    assert not robots.check("/" + "a" * 100_000, TOKEN).allowed  # "/" + "a*" * 8000 matches
    assert robots.check("/b", TOKEN).allowed


# -- junk lines between records ------------------------------------------------------------
# A junk line never starts like a record: a NUL, a high byte, or markup first.
junk_line = st.builds(
    lambda first, rest: first + rest,
    st.sampled_from([b"\x00", b"\xff", b"\x80", b"\xc3", b"<div>", b"{", b"\x1b[0m", b"\xef\xbf"]),
    st.binary(max_size=80).map(lambda b: b.replace(b"\n", b" ").replace(b"\r", b" ")),
).filter(lambda line: not line.startswith(b"\xff\xfe"))  # first in the file: UTF-16's BOM, not junk
plain_pattern = st.builds(
    lambda parts, dollar: "/" + "".join(parts) + ("$" if dollar else ""),
    st.lists(st.sampled_from(["a", "b", "/", "*", "caf\u00e9", "%C3%A9", "x.php", "%2F", "%7e"]), max_size=6),
    st.booleans(),
)


@HYPOTHESIS
@given(
    rules=st.lists(st.tuples(st.booleans(), plain_pattern), max_size=8),
    junk=st.lists(st.tuples(st.integers(0, 10), junk_line), max_size=6),
    paths=st.lists(
        st.lists(st.sampled_from(["a", "b", "/", "caf\u00e9", "x.php", "%2F", "~"]), max_size=8), min_size=1, max_size=5
    ),
)
def test_junk_lines_do_not_change_the_answers(rules, junk, paths) -> None:
    lines = rules_file(rules).encode("utf-8").split(b"\n")
    for at, line in sorted(junk, reverse=True):
        lines.insert(min(at, len(lines)), line)
    body = b"\n".join(lines)
    robots, took = timed(parse, body)
    assert took < BOUND
    for parts in paths:
        agree(robots, rules, "/" + "".join(parts))


# -- crawl-rate values ---------------------------------------------------------------------
rate_value = st.one_of(
    st.sampled_from(["9" * 400, "9" * 5000, "1e309", "inf", "nan", "-1", "0", "0.0", ".5", "5.", "1_000", "0x10",
                     "\u0661\u0662", "\uff15", "1/0", "0/5", "1/0s", "9" * 30 + "/1", "1/" + "9" * 400, "3/1h",
                     "1/1e309", "2 / 3 m", "4/\u0665"]),
    st.text(alphabet="0123456789./ smh-e", max_size=20),
    st.text(max_size=12),
)  # fmt: skip


@HYPOTHESIS
@given(delays=st.lists(rate_value, max_size=4), rates=st.lists(rate_value, max_size=4))
def test_crawl_rate_answers_are_finite_whatever_the_values(delays, rates) -> None:
    body = "User-agent: *\n" + "".join(f"Crawl-delay: {d}\n" for d in delays)
    body += "".join(f"Request-rate: {r}\n" for r in rates) + "Disallow: /x\n"
    robots = parse(body)
    delay, rate, floor = robots.crawl_delay(TOKEN), robots.request_rate(TOKEN), robots.min_delay(TOKEN)
    for value in (delay, floor):
        assert value is None or (math.isfinite(value) and value >= 0), value
    if rate is not None:
        assert rate[0] > 0 and math.isfinite(rate[1]) and rate[1] > 0, rate
    assert not robots.check("/x", TOKEN).allowed  # the group survived its odd lines


# -- fixed shapes at the limits ----------------------------------------------------------------
def test_a_1_mb_single_line_is_cut_not_choked_on() -> None:
    line = "Disallow: /" + "x" * 1_000_000
    robots, took = timed(parse, ("User-agent: *\n" + line).encode(), None, 2_000_000)
    assert took < BOUND
    kept = MAX_LINE_BYTES - len("Disallow: ")
    assert "line_too_long" in {d.code for d in robots.diagnostics}
    robots.check("/", TOKEN)  # compiles the rule
    decision, took = timed(robots.check, "/" + "x" * 1_000_000, TOKEN)
    assert took < CHECK_BOUND
    assert not decision.allowed and decision.rule.pattern == "/" + "x" * (kept - 1)
    assert robots.check("/" + "x" * (kept - 2), TOKEN).allowed  # shorter than the kept pattern


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"x" * 1_000_000, id="1MB-of-one-character"),
        pytest.param(b"Disallow: /" + b"*" * 1_000_000, id="1MB-of-stars"),
        pytest.param(b"User-agent: *\nDisallow: /" + b"a*" * 500_000, id="1MB-of-wildcards"),
        pytest.param(b"User-agent: *\nDisallow: /" + b"%" * 1_000_000, id="1MB-of-percent"),
        pytest.param(b"User-agent: " + b"a" * 1_000_000, id="1MB-user-agent"),
        pytest.param(b"\xff\xfe" * 500_000, id="1MB-invalid-utf8"),
        pytest.param(b"\x00" * 1_000_000, id="1MB-of-NUL"),
    ],
)
def test_single_line_monsters_parse_and_check_in_bounded_time(body: bytes) -> None:
    robots, took = timed(parse, body)
    assert took < BOUND
    robots.check("/", TOKEN)  # compiles the rules
    for path in ("/", "/" + "a" * 50_000, "/%41%" * 10_000):
        decision, took = timed(robots.check, path, TOKEN)
        assert took < CHECK_BOUND and decision.verdict in Verdict


def _twenty_thousand_rules(seed: int = 9309) -> list[tuple[bool, str]]:
    rnd = random.Random(seed)
    words = ["img", "a", "ab", "x.php", "caf\u00e9", "%7Euser", "q?x=1", "b/c"]
    rules = []
    for i in range(20_000):
        section = f"/s{i % 700:03d}/"
        word = rnd.choice(words)
        shape = rnd.random()
        if shape < 0.6:
            pattern = section + word
        elif shape < 0.8:
            pattern = section + "*" + word
        elif shape < 0.9:
            pattern = section + word + "$"
        else:
            pattern = "*" + word + "*" + str(i % 50)
        rules.append((rnd.random() < 0.3, pattern))
    return rules


def test_20000_rules_parse_fast_and_agree_with_the_reference() -> None:
    rules = _twenty_thousand_rules()
    body = rules_file(rules).encode()
    robots, took = timed(parse, body, None, len(body))
    assert took < BOUND, took
    _, took = timed(robots.prepare, TOKEN, 1)  # every bucket: the checks below only look up
    assert took < BOUND, took
    rnd = random.Random(7)
    words = ["img", "a", "ab", "x.php", "caf\u00e9", "%7Euser", "q?x=1", "b/c", "zz", "17", "3"]
    for _ in range(60):
        path = f"/s{rnd.randrange(720):03d}/" + "".join(rnd.choice(words) for _ in range(rnd.randrange(4)))
        agree(robots, rules, path)


def _letters(n: int) -> str:
    """``n`` written with the letters a-j (product tokens have no digits)."""
    return "".join(chr(ord("a") + int(d)) for d in str(n))


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(
            "".join(f"User-agent: bot{_letters(i)}\n" for i in range(10_000)) + "Disallow: /\n", id="10000-agents"
        ),
        pytest.param("".join(f"User-agent: *\nDisallow: /g{i}\n" for i in range(20_000)), id="20000-groups"),
        pytest.param("User-agent: *\r" + "Disallow: /cr\r" * 40_000, id="CR-only-line-ends"),
        pytest.param(
            "Sitemap: https://e.com/s.xml?" + "\nSitemap: https://e.com/".join(map(str, range(20_000))),
            id="20000-sitemaps",
        ),
        pytest.param(
            "<html>\n" + "<p>allow disallow user-agent sitemap crawl</p>\n" * 10_000, id="512KB-html-full-of-key-stems"
        ),
        pytest.param("User-agent: *\n" + "Crawl-delay: 1\nRequest-rate: 1/5\n" * 15_000, id="30000-rate-lines"),
    ],
)
def test_many_lines_of_one_kind_parse_in_bounded_time(body: str) -> None:
    robots, took = timed(parse, body.encode())
    assert took < BOUND, took
    for token in (TOKEN, "bot" + _letters(42), "bot" + _letters(9_999)):
        robots.check("/g19999/y", token)  # the first: selects and compiles the token's groups
        decision, took = timed(robots.check, "/g19999/x", token)
        assert took < CHECK_BOUND and decision.verdict in Verdict


@pytest.mark.parametrize("ends", [["\n"], ["\r\n"], ["\r"], ["\n", "\r\n", "\r"]], ids=["LF", "CRLF", "CR", "mixed"])
def test_html_page_records_keep_their_line_numbers_whatever_the_line_ends(ends: list[str]) -> None:
    # The HTML path scans for line starts instead of splitting the page; the
    # rule lines it reports must still be the lines a text editor shows.
    lines = ["<!DOCTYPE html>", "<html><body>", "<pre>", "User-agent: *", "  <p>useful site</p>", "Disallow: /a"]
    lines += ["<p>all allowed</p>"] * 50 + ["\tdisallow: /b", "crawl-delay: 2", "</pre></body></html>"]
    body = "".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
    robots = parse(body.encode())
    assert robots.diagnostics[0].code == "html_body"
    assert robots.check("/a", TOKEN).rule.line == lines.index("Disallow: /a") + 1
    assert robots.check("/b", TOKEN).rule.line == lines.index("\tdisallow: /b") + 1
    assert robots.check("/c", TOKEN).allowed and robots.crawl_delay(TOKEN) == 2.0


@pytest.mark.parametrize("blank_lines", [0, 3_000, 200_000])
def test_runs_far_down_a_long_file_keep_their_line_numbers(blank_lines: int) -> None:
    # The line numbers of a run of plain Disallow lines are one slice of an
    # array kept for all files and grown on demand; past its limit, a range.
    body = "User-agent: *\n" + "\n" * blank_lines + "Disallow: /a\nDisallow: /b\nAllow: /c\nDisallow: /d\n"
    robots = parse(body)
    for i, path in enumerate(["/a", "/b", "/c", "/d"]):
        assert robots.check(path, TOKEN).rule.line == blank_lines + 2 + i


# (character, count) pairs about the limits: MAX_LINE_BYTES in UTF-8, and in
# characters the length beyond which a line may hold too many bytes, and half of it
_NEAR_LIMITS = [
    (char, count + extra)
    for char in ("a", "\u00e9", "\u30c4", "\U0001f600")  # 1 to 4 bytes in UTF-8
    for count in (MAX_LINE_BYTES // len(char.encode()), MAX_LINE_BYTES // 4, MAX_LINE_BYTES // 8)
    for extra in (-1, 0, 1, 2)
]


@HYPOTHESIS
@given(lines=st.lists(st.sampled_from(_NEAR_LIMITS), min_size=1, max_size=4), offset=st.integers(0, 4200))
def test_exactly_the_lines_over_the_byte_limit_are_cut(lines, offset: int) -> None:
    texts = [char * count for char, count in lines]
    robots = parse(("#" * offset + "\n" + "\n".join(texts)).encode())
    cut = [d.line for d in robots.diagnostics if d.code == "line_too_long"]
    assert cut == [i + 2 for i, text in enumerate(texts) if len(text.encode()) > MAX_LINE_BYTES]


def test_a_line_just_over_the_byte_limit_is_cut_wherever_it_starts() -> None:
    # Long lines are looked for in windows of half the length that can hold
    # too many bytes: the shortest such line must be found at any offset.
    line = "\U0001f600" * (MAX_LINE_BYTES // 4 + 1)
    for offset in range(MAX_LINE_BYTES // 8 + 2):
        robots = parse("#" * offset + "\n" + line + "\nUser-agent: *\n")
        assert [(d.line, d.code) for d in robots.diagnostics] == [(2, "line_too_long"), (2, "unparsable_line")]


# -- 500 KiB shapes, parsed and compiled in steps as a crawl does it ---------------------------
def _random_literal(rnd: random.Random, size: int) -> str:
    return "".join(rnd.choice(string.ascii_lowercase + string.digits) for _ in range(size))


_LONG = "x" * 2048
#: name -> (body, paths checked): a short and a 2 KB path in each bucket the file uses
STEPPED_SHAPES = {
    "20,000 rules like /123456/* and /654321/*.php": lambda: (
        "User-agent: *\n"
        + "".join(
            f"Disallow: /{(i * 7919) % 1_000_000:06d}/*\nAllow: /{(i * 104_729) % 1_000_000:06d}/*.php\n"
            for i in range(10_000)
        ),
        [f"/{d}23456/x.php" for d in "0123456789"] + [f"/{d}23456/{_LONG}.php" for d in "0123456789"],
    ),
    "10,000 distinct wildcard literals in every bucket": lambda: (
        "User-agent: *\n"
        + "".join(f"Disallow: /*x{i}*y{i}$\n" for i in range(10_000))
        + "".join(f"Disallow: /{LETTERS[i % 62]}s-{i:05d}/*/page$\n" for i in range(10_000)),
        [f"/{c}s-00001/x/page" for c in LETTERS[::7]] + [f"/{c}s-{_LONG}" for c in LETTERS[::7]],
    ),
    "1,000 wildcard rules of 480-character literals": lambda: (
        "User-agent: *\n" + "".join(f"Disallow: /a*{_random_literal(random.Random(i), 480)}\n" for i in range(1_000)),
        ["/a", "/a" + _LONG, "/b" + _LONG],
    ),
    "60 groups of 300 wildcard rules": lambda: (
        "".join(
            f"User-agent: {'*' if g == 60 else 'bot' + _letters(g)}\n"
            + "".join(f"Disallow: /{LETTERS[i % 62]}*x{g}-{i}*.php\n" for i in range(300))
            for g in range(61)
        ),
        [f"/{c}/x1-1/a.php" for c in LETTERS[::7]] + [f"/{c}/{_LONG}.php" for c in LETTERS[::7]],
    ),
    "plain prefix rules, most in one bucket": lambda: (
        "User-agent: *\n" + "".join(f"Disallow: /p{i}/x\n" for i in range(40_000)),
        ["/p1/x", "/p39999/x", "/p1/" + _LONG, "/q"],
    ),
    "a line of 1 MB": lambda: ("User-agent: *\nDisallow: /" + "x" * 1_000_000, ["/" + "x" * 100, "/" + _LONG]),
    "30,000 User-agent lines": lambda: (
        "".join(f"User-agent: bot{i}\n" for i in range(30_000)) + "Disallow: /x\n",
        ["/x", "/" + _LONG],
    ),
}


@pytest.mark.parametrize("name", list(STEPPED_SHAPES))
def test_no_step_and_no_check_of_a_500_kib_shape_takes_long(name: str) -> None:
    """As the crawl does it (service.RobotsService._policy): the file parsed
    and compiled for the crawler in steps, then checked."""
    text, paths = STEPPED_SHAPES[name]()
    body = text.encode()[:512_000]
    steps = RobotsTxt.parsing(body, None, 512_000, TOKEN)
    robots, longest, count = None, 0.0, 0

    def step() -> RobotsTxt | None:
        try:
            next(steps)
        except StopIteration as done:
            return done.value
        return None

    while robots is None:
        robots, took = timed(step)
        longest, count = max(longest, took), count + 1
    assert longest < STEP_BOUND, f"a step took {longest * 1e3:.1f} ms ({count} steps)"
    for round_ in ("first", "later"):
        for path in paths:
            decision, took = timed(robots.check, path, TOKEN)
            assert took < CHECK_BOUND, f"{round_} check of {path[:30]}... took {took * 1e3:.1f} ms"
            assert decision.verdict in Verdict


# -- declared charsets ------------------------------------------------------------------------
@pytest.mark.parametrize("charset", ["utf-16", "utf-16-le", "cp500"])
def test_a_wrong_non_ascii_charset_does_not_erase_the_rules(charset: str) -> None:
    body = "User-agent: *\nDisallow: /caf\u00e9\nDisallow: /private\n".encode("latin-1")
    if len(body) % 2:
        body += b"\n"  # an even length decodes as UTF-16 without an error
    robots = parse(body, f"text/plain; charset={charset}")
    assert not robots.check("/private", TOKEN).allowed


@pytest.mark.parametrize("charset", ["iso-8859-1", "windows-1252", "utf-8", "x-unknown", "utf-32"])
def test_a_wrong_ascii_compatible_charset_keeps_the_rules(charset: str) -> None:
    latin = "User-agent: *\nDisallow: /caf\u00e9\nDisallow: /private\n".encode("latin-1")
    robots = parse(latin, f"text/plain; charset={charset}")
    assert not robots.check("/private", TOKEN).allowed
    assert not robots.check("/caf%C3%A9", TOKEN).allowed
    # a UTF-8 file declared as Latin-1 is read as UTF-8: its bytes say so
    utf8 = "User-agent: *\nDisallow: /caf\u00e9\n".encode()
    assert not parse(utf8, f"text/plain; charset={charset}").check("/caf%C3%A9", TOKEN).allowed


# -- the real corpus ---------------------------------------------------------------------------
@pytest.mark.corpus
def test_every_corpus_file_parses_within_a_second() -> None:
    if not CORPUS.is_dir():
        pytest.skip(f"corpus not found at {CORPUS} (expected ../shared/corpus/robots next to the repo)")
    files = sorted(p for p in CORPUS.iterdir() if p.is_file())
    if not files:
        pytest.skip(f"no files in {CORPUS}")
    slowest = (0.0, "")
    for path in files:
        body = path.read_bytes()
        start = time.perf_counter()
        robots = parse(body)
        decisions = [robots.check(u, t) for u in ("/", "/search?q=1", "/a/b/c.html") for t in (TOKEN, "googlebot")]
        took = time.perf_counter() - start
        assert all(d.verdict in Verdict for d in decisions)
        assert took < BOUND, f"{path.name}: {took:.2f}s"
        slowest = max(slowest, (took, path.name))
    print(f"{len(files)} corpus files; slowest {slowest[1]} in {slowest[0] * 1000:.0f} ms")
