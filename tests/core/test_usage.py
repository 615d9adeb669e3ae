"""AI usage preferences in robots.txt and the Content-Usage header (robots/usage.py).

The drafts' own examples give the drafts' answers; each form is read, matched
and combined; nothing raises on any input.
"""

from __future__ import annotations

import random
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import parse
from scrapy_rfc9309.robots import patterns
from scrapy_rfc9309.robots import usage as usage_mod
from scrapy_rfc9309.robots.usage import UNKNOWN, Source, Usage, combine, from_header

URL = "https://example.com"

# draft-ietf-aipref-attach (editor's copy, path optional), section 3.4
ATTACH_EXAMPLE = """\
User-Agent: *
Allow: /
Disallow: /never/
Content-Usage: train-ai=n
Content-Usage: /ai-ok/ train-ai=y

User-Agent: ExampleBot
Allow: /
Content-Usage: train-ai=y
"""
# the later editor's copy writes the same rules with the path "/"
ATTACH_EXAMPLE_SLASH = ATTACH_EXAMPLE.replace("Content-Usage: train-ai", "Content-Usage: / train-ai")


def u(robots_txt: str, path: str, agent: str = "OtherBot") -> Usage:
    return parse(robots_txt).usage(URL + path, agent)


def test_attach_example_table() -> None:
    for text in (ATTACH_EXAMPLE, ATTACH_EXAMPLE_SLASH):
        assert u(text, "/test")["train-ai"] is False
        assert u(text, "/never/test") == UNKNOWN  # not crawlable: no preferences
        assert u(text, "/ai-ok/test")["train-ai"] is True
        # ExampleBot uses its own group: train-ai=y everywhere
        assert u(text, "/never/test", "ExampleBot")["train-ai"] is True
        assert u(text, "/test", "ExampleBot")["search"] is None


def test_sources_name_the_line() -> None:
    got = u(ATTACH_EXAMPLE, "/ai-ok/page")
    assert got.sources["train-ai"] == (Source("robots.txt", 5, "Content-Usage: /ai-ok/ train-ai=y"),)
    assert str(got.sources["train-ai"][0]) == "robots.txt line 5: Content-Usage: /ai-ok/ train-ai=y"
    assert got.sources["search"] == ()


def test_vocab_examples() -> None:
    # draft-ietf-aipref-vocab, section 6: the format and the processing algorithm
    assert from_header(b"train-ai=y, search=n") == {"train-ai": True, "search": False, "ai-input": None}
    # duplicated keys: the last value applies, and neither is a Token
    assert from_header(b'train-ai=y, train-ai, search=n, search="n"') == UNKNOWN
    # parameters are ignored; the last member wins
    assert from_header(b"train-ai;allow=n, train-ai=y")["train-ai"] is True
    assert from_header(b'train-ai;has;parameters="?";') == UNKNOWN
    # a Dictionary that does not parse (uppercase key): everything unknown
    assert from_header(b"Train-AI=n") == UNKNOWN
    assert from_header(b"train-ai=n, search=Y") == {"train-ai": False, "search": None, "ai-input": None}


def test_header_lines_join() -> None:
    assert from_header([b"train-ai=n", b"search=y"]) == {"train-ai": False, "search": True, "ai-input": None}
    assert from_header(None) == UNKNOWN and from_header([]) == UNKNOWN
    got = from_header("train-ai=n")
    assert got.sources["train-ai"] == (Source("header", 0, "Content-Usage: train-ai=n"),)


def test_longest_path_wins_in_encoded_octets() -> None:
    text = (
        "User-agent: *\nContent-Usage: /a train-ai=y\nContent-Usage: /%C3%A9 train-ai=n\nContent-Usage: /é/x search=y\n"
    )
    assert u(text, "/a/b")["train-ai"] is True
    assert u(text, "/é")["train-ai"] is False  # "/é" and "/%c3%a9" are one path
    assert u(text, "/%c3%a9/x") == {"train-ai": None, "search": True, "ai-input": None}
    # wildcards and "$" like Allow/Disallow
    text = "User-agent: *\nContent-Usage: / train-ai=y\nContent-Usage: /*.pdf$ train-ai=n\n"
    assert u(text, "/doc/a.pdf")["train-ai"] is False
    assert u(text, "/doc/a.pdf?x")["train-ai"] is True


def test_conflicting_identical_paths_most_restrictive() -> None:
    text = (
        "User-agent: *\n"
        "Content-Usage: /p/ train-ai=y, search=y\n"
        "Content-Usage: /p/ train-ai=n\n"
        "Content-Usage: /p/ search=y\n"
    )
    got = u(text, "/p/x")
    assert got == {"train-ai": False, "search": True, "ai-input": None}
    assert [s.line for s in got.sources["train-ai"]] == [3]
    assert [s.line for s in got.sources["search"]] == [2, 4]
    # unlike Allow/Disallow, where the conflict goes to the permissive rule
    assert parse("User-agent: *\nAllow: /p/\nDisallow: /p/\n").can_fetch(URL + "/p/x", "bot")


def test_content_signal() -> None:
    text = "User-Agent: *\nContent-Signal: search=yes, ai-input=yes, ai-train=no\nAllow: /\n"
    got = u(text, "/anything")
    assert got == {"train-ai": False, "search": True, "ai-input": True}
    assert got["ai-train"] is False  # the Content Signals spelling of the same category
    assert str(got.sources["train-ai"][0]) == "robots.txt line 2: Content-Signal: search=yes, ai-input=yes, ai-train=no"
    # absent: no statement; y/n are not Content Signals values
    assert u("User-agent: *\nContent-Signal: search=yes\n", "/")["train-ai"] is None
    assert u("User-agent: *\nContent-Signal: ai-train=n\n", "/")["train-ai"] is None


def test_signal_and_usage_are_separate_statements() -> None:
    text = "User-agent: *\nContent-Signal: ai-train=yes\nContent-Usage: /private/ train-ai=n\n"
    assert u(text, "/x")["train-ai"] is True
    got = u(text, "/private/x")
    assert got["train-ai"] is False and [s.line for s in got.sources["train-ai"]] == [3]
    # a Content-Signal "no" is not overridden by a longer Content-Usage "y"
    text = "User-agent: *\nContent-Signal: ai-train=no\nContent-Usage: /open/ train-ai=y\n"
    assert u(text, "/open/x")["train-ai"] is False


def test_groups_and_disallowed_paths() -> None:
    text = "User-agent: a\nDisallow: /\nContent-Usage: train-ai=y\n\nUser-agent: *\nContent-Usage: train-ai=n\n"
    assert u(text, "/x", "a") == UNKNOWN
    assert u(text, "/x", "b")["train-ai"] is False
    assert u("User-agent: *\nDisallow: /x\n", "/y") == UNKNOWN
    assert parse(b"").usage(URL + "/", "bot") == UNKNOWN


def test_access_rules_unchanged() -> None:
    # a Content-Usage line between User-agent lines keeps them in one group (as Crawl-delay)
    text = "User-agent: a\nContent-Usage: train-ai=n\nUser-agent: b\nDisallow: /\n"
    robots = parse(text)
    assert not robots.can_fetch(URL + "/x", "a") and not robots.can_fetch(URL + "/x", "b")
    assert robots.usage(URL + "/robots.txt", "a")["train-ai"] is False
    assert robots.rules_for("a")[0].pattern == "/"


def test_diagnostics_with_line_numbers() -> None:
    text = (
        "Content-Usage: train-ai=n\n"  # 1: outside any group
        "User-agent: *\n"
        "Content-Usage: /x Train-ai=n\n"  # 3: uppercase key: does not parse
        "Content-Usage: /y train-ai=maybe, foo=y\n"  # 4: unknown value and label
        "Content-Usage: /z\n"  # 5: no expression
        "Content-Signal: search=yes,\n"  # 6: trailing comma
        "content-usage: train-ai=n\n"  # 7: fine (keys are case-insensitive)
    )
    robots = parse(text)
    got = [(d.line, d.code) for d in robots.diagnostics]
    assert got == [
        (1, "outside_group"),
        (3, "usage_unparsable"),
        (4, "usage_unknown_label"),
        (5, "usage_unparsable"),
        (6, "usage_unparsable"),
    ]
    assert robots.usage(URL + "/w", "bot")["train-ai"] is False  # line 7
    # line 3 is still the longest match for /x: its preferences are unknown (the draft)
    assert robots.usage(URL + "/x", "bot") == UNKNOWN


def test_combine_order() -> None:
    y, n = Usage({"train-ai": True}), Usage({"train-ai": False})
    for parts in ((y, n), (n, y), (UNKNOWN, y, UNKNOWN), (y, UNKNOWN, n)):
        expect = False if n in parts else True
        assert combine(parts)["train-ai"] is expect
    assert combine([]) == UNKNOWN


def test_denies_and_dict_round_trip() -> None:
    got = u(ATTACH_EXAMPLE, "/test")
    assert got.denies(["search"]) is None
    assert got.denies(["search"], unknown_denies=True) == ("search", ())
    label, sources = got.denies(["ai-train"])  # type: ignore[misc]
    assert label == "train-ai" and sources[0].line == 4
    assert Usage.from_dict(got.to_dict()) == got
    assert Usage.from_dict({"train-ai": {"value": "no"}, "x": 1}) == UNKNOWN
    assert Usage.from_dict(None) == UNKNOWN


def test_files_without_usage_lines_hold_none() -> None:
    robots = parse("User-agent: *\nDisallow: /a\nCrawl-delay: 1\n")
    assert all(g.usage is None for g in robots.groups_for("bot"))
    assert robots.usage(URL + "/b", "bot") == UNKNOWN


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_VALUES = st.one_of(
    st.text(max_size=60),
    st.lists(
        st.sampled_from(
            ["train-ai", "search", "ai-train", "ai-input", "=", "y", "n", "yes", ",", " ", ";", '"', "(", "/a"]
        )
    ).map("".join),
)


@SETTINGS
@given(st.binary(max_size=300))
def test_header_never_raises(data: bytes) -> None:
    got = from_header(data)
    assert set(got) == set(usage_mod.CATEGORIES)


@SETTINGS
@given(
    st.lists(
        st.tuples(st.sampled_from(["Content-Usage", "content-signal", "CONTENT-USAGE ", "Content-Signal"]), _VALUES),
        max_size=8,
    ),
    st.text(max_size=30),
)
def test_lines_never_raise(lines: list[tuple[str, str]], path: str) -> None:
    body = "User-agent: *\n" + "".join(f"{key}: {value}\n" for key, value in lines)
    robots = parse(body)
    got = robots.usage(URL + "/" + path, "bot")
    assert set(got) == set(usage_mod.CATEGORIES)
    for line in robots.diagnostics:
        assert line.line >= 1


@SETTINGS
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    robots = parse(b"User-agent: *\nContent-Usage: " + data)
    robots.usage(URL + "/", "bot")


# -- Content Signals as sites write them (issue 32) -----------------------------------------

CLOUDFLARE = """\
# As a condition of accessing this website, you agree to abide by the following
# content signals: ...
Content-Signal: search=yes, ai-train=no, use=reference

User-agent: *
Allow: /
"""


def test_content_signal_before_the_first_group_is_file_wide() -> None:
    robots = parse(CLOUDFLARE)
    got = robots.usage(URL + "/page", "anybot")
    assert got == {"train-ai": False, "search": True, "ai-input": None}
    assert got.sources["train-ai"] == (
        Source("robots.txt", 3, "Content-Signal: search=yes, ai-train=no, use=reference"),
    )
    assert robots.diagnostics == []  # read, not "outside_group"; use= is known
    # every group gets it, and a crawler no group names too
    text = "Content-Signal: ai-train=no\nUser-agent: a\nAllow: /\n\nUser-agent: b\nDisallow: /x\n"
    for agent in ("a", "b", "c"):
        assert parse(text).usage(URL + "/y", agent)["train-ai"] is False
    assert parse("Content-Signal: ai-train=no\n").usage(URL + "/", "bot")["train-ai"] is False
    # still nothing for a URL the crawler may not fetch
    assert parse(text).usage(URL + "/x", "b") == UNKNOWN
    # a Content-Usage line there is outside every group, as the draft says
    robots = parse("Content-Usage: train-ai=n\nUser-agent: *\nAllow: /\n")
    assert robots.usage(URL + "/", "bot") == UNKNOWN
    assert [(d.line, d.code) for d in robots.diagnostics] == [(1, "outside_group")]


def test_file_wide_and_group_signals_combine_most_restrictive() -> None:
    text = "Content-Signal: ai-train=yes, search=no\nUser-agent: *\nContent-Signal: ai-train=no, search=yes\n"
    got = u(text, "/x")
    assert got == {"train-ai": False, "search": False, "ai-input": None}
    assert [s.line for s in got.sources["train-ai"]] == [3]
    assert [s.line for s in got.sources["search"]] == [1]
    # and with a group's Content-Usage rule (another statement)
    text = "Content-Signal: ai-train=no\nUser-agent: *\nContent-Usage: /open/ train-ai=y, search=y\n"
    assert u(text, "/open/a") == {"train-ai": False, "search": True, "ai-input": None}


def test_use_level_is_kept_reported_and_mapped_to_no_category() -> None:
    got = u(CLOUDFLARE, "/a")
    assert got.use == "reference"
    assert got.use_sources[0].line == 3
    assert got["ai-input"] is None  # no category
    assert got.describe() == "train-ai=n, search=y, ai-input=?, use=reference"
    assert got.to_dict()["use"] == {"value": "reference", "sources": [got.use_sources[0].to_dict()]}
    assert Usage.from_dict(got.to_dict()) == got
    assert u("Content-Signal: use=full\nUser-agent: *\n", "/a")  # a use level alone is a statement
    # the most restrictive level wins: immediate, then reference, then full
    text = "Content-Signal: use=full\nUser-agent: *\nContent-Signal: use=immediate\n"
    assert u(text, "/a").use == "immediate"
    # other keys and values: a diagnostic with the line, never an error
    robots = parse("User-agent: *\nContent-Signal: ai-train=no, use=maybe, nsfw=yes\n")
    assert robots.usage(URL + "/", "bot")["train-ai"] is False
    (diag,) = robots.diagnostics
    assert (diag.line, diag.code) == (2, "usage_unknown_label") and "use=maybe, nsfw" in diag.message
    # use= means nothing in a Content-Usage rule (not in the IETF vocabulary)
    robots = parse("User-agent: *\nContent-Usage: train-ai=n, use=full\n")
    assert robots.usage(URL + "/", "bot").use is None
    assert [d.code for d in robots.diagnostics] == ["usage_unknown_label"]


def test_ties_across_lengths_of_literal_combine() -> None:
    # equal priority (10 octets), literals of 10 and 2 characters: both match, both count
    text = "User-agent: *\nContent-Usage: /aaaaaaaaa train-ai=y\nContent-Usage: /a******** search=n\n"
    assert u(text, "/aaaaaaaaaa") == {"train-ai": True, "search": False, "ai-input": None}
    assert u(text, "/ab") == {"train-ai": None, "search": False, "ai-input": None}
    # one pattern written twice ("/a", then "/a*", which outranks it) tied with another
    text = "User-agent: *\nContent-Usage: /a train-ai=y\nContent-Usage: /a* train-ai=n\nContent-Usage: /ab train-ai=y\n"
    assert u(text, "/ab")["train-ai"] is False
    assert [s.line for s in u(text, "/ab").sources["train-ai"]] == [3]
    # a longer literal with a lower priority than a shorter one with stars
    text = "User-agent: *\nContent-Usage: /aaaaaaaaa train-ai=y\nContent-Usage: /a************ train-ai=n\n"
    assert u(text, "/aaaaaaaaaa")["train-ai"] is False


# -- the index against a plain reading of the same rules ------------------------------------

_PIECES = ["a", "b", "/", "%61", "é", "*", "ab", "abcdefgh", "***"]
_USAGE = {  # expression -> what it states (the drafts' reading)
    "train-ai=n": {"train-ai": False},
    "train-ai=y": {"train-ai": True},
    "search=y, train-ai=n": {"search": True, "train-ai": False},
    "search=n": {"search": False},
    "Train=n": {},  # does not parse: states nothing, but still the longest match
    "foo=y": {},
}
_SIGNALS = {
    "ai-train=no": ({"train-ai": False}, None),
    "search=yes, ai-input=no": ({"search": True, "ai-input": False}, None),
    "ai-train=yes, use=reference": ({"train-ai": True}, "reference"),
    "use=full": ({}, "full"),
    "search=maybe": ({}, None),
}
_RANK = {None: 0, True: 1, False: 2}
_LEVELS = ("immediate", "reference", "full")


def _pattern(pieces: list[str], end: bool) -> str:
    return "/" + "".join(pieces) + ("$" if end else "")


def _regex(raw: str) -> re.Pattern[str]:
    anchored = raw.endswith("$")
    body = raw[:-1] if anchored else raw
    return re.compile(
        ".*".join(re.escape(patterns.normalize(p)) for p in body.split("*")) + (r"\Z" if anchored else "")
    )


def _reference(preamble: list[str], groups: list[tuple[str, list[tuple[str, str]]]], path: str, agent: str) -> Any:
    """The values and use level the drafts give ``path``, from the rules as generated."""
    named = [lines for name, lines in groups if name == agent]
    chosen = named or [lines for name, lines in groups if name == "*"]
    rules = [(k, v) for lines in chosen for k, v in lines]
    target = patterns.path_of(URL + path)
    matched = []
    for key, value in rules:
        if key == "usage":
            raw, expression = value.split(" ", 1)
            if _regex(raw).match(target):
                matched.append((len(patterns.canonical(raw)), _USAGE[expression]))
    statements = []
    if matched:
        top = max(p for p, _ in matched)
        statements += [m for p, m in matched if p == top]
    signals = [_SIGNALS[v] for v in preamble] + [_SIGNALS[v] for k, v in rules if k == "signal"]
    statements += [s for s, _ in signals]
    values: dict[str, bool | None] = {c: None for c in usage_mod.CATEGORIES}
    for stated in statements:
        for c, v in stated.items():
            if _RANK[v] > _RANK[values[c]]:
                values[c] = v
    levels = [level for _, level in signals if level]
    return values, min(levels, key=_LEVELS.index) if levels else None


def _text(preamble: list[str], groups: list[tuple[str, list[tuple[str, str]]]]) -> str:
    out = [f"Content-Signal: {v}\n" for v in preamble]
    for name, lines in groups:
        out.append(f"User-agent: {name}\nAllow: /\n")  # (Allow ends the group's agent lines)
        out += [f"{'Content-Usage' if k == 'usage' else 'Content-Signal'}: {v}\n" for k, v in lines]
    return "".join(out)


_RULE = st.one_of(
    st.tuples(
        st.just("usage"),
        st.builds(
            lambda pieces, end, expression: f"{_pattern(pieces, end)} {expression}",
            st.lists(st.sampled_from(_PIECES), max_size=4),
            st.booleans(),
            st.sampled_from(sorted(_USAGE)),
        ),
    ),
    st.tuples(st.just("signal"), st.sampled_from(sorted(_SIGNALS))),
)


@SETTINGS
@given(
    st.lists(st.sampled_from(sorted(_SIGNALS)), max_size=2),
    st.lists(st.tuples(st.sampled_from(["*", "bot", "other"]), st.lists(_RULE, max_size=8)), max_size=3),
    st.lists(st.sampled_from(_PIECES), max_size=5),
    st.sampled_from(["bot", "else"]),
)
def test_matcher_agrees_with_a_plain_reading(
    preamble: list[str], groups: list[tuple[str, list[tuple[str, str]]]], pieces: list[str], agent: str
) -> None:
    path = "/" + "".join(p for p in pieces if p != "*")
    got = parse(_text(preamble, groups)).usage(URL + path, agent)
    values, use = _reference(preamble, groups, path, agent)
    assert dict(got) == values and got.use == use


def test_many_wildcard_rules_agree_with_a_plain_reading() -> None:
    # enough wildcard rules starting with one literal to be filed by the literals they need
    rng = random.Random(9309)
    for _ in range(20):
        preamble = [rng.choice(sorted(_SIGNALS))]
        lines = []
        for _ in range(rng.randrange(60, 300)):
            pieces = ["*", *rng.choices(_PIECES + ["x", "yz", "x1", "q"], k=rng.randrange(1, 5))]
            lines.append(("usage", f"{_pattern(pieces, rng.random() < 0.3)} {rng.choice(sorted(_USAGE))}"))
        groups = [("*", lines)]
        robots = parse(_text(preamble, groups))
        for _ in range(40):
            path = "/" + "".join(rng.choices(["a", "b", "/", "x", "yz", "1", "q", "é"], k=rng.randrange(0, 8)))
            got = robots.usage(URL + path, "bot")
            values, use = _reference(preamble, groups, path, "bot")
            assert (dict(got), got.use) == (values, use), (path, lines)


# -- the Content-Signal header (issue 37) -----------------------------------------------------------


def test_content_signal_header_reads_as_the_robots_txt_line() -> None:
    from scrapy_rfc9309.robots.usage import from_signal_header

    got = from_signal_header(b"search=yes, ai-train=no, use=reference")
    assert got == {"train-ai": False, "search": True, "ai-input": None}
    source = Source("header", 0, "Content-Signal: search=yes, ai-train=no, use=reference")
    assert got.sources["train-ai"] == got.sources["search"] == (source,)
    assert (got.use, got.use_sources) == ("reference", (source,))
    # field lines joined with ", " (RFC 9651 4.2); yes/no Tokens only, case-sensitive
    assert from_signal_header([b"ai-input=no", b"search=yes"]) == {"train-ai": None, "search": True, "ai-input": False}
    assert from_signal_header(b"ai-train=No") == UNKNOWN and from_signal_header(b"ai-train=n") == UNKNOWN
    assert from_signal_header(b"train-ai=no") == UNKNOWN  # Content-Usage's label, not Content Signals'
    assert from_signal_header(None) == UNKNOWN and from_signal_header(b"Ai-Train=no") == UNKNOWN
    assert from_signal_header(b"use=full").use == "full"


@SETTINGS
@given(
    st.lists(
        st.sampled_from(["search", "ai-train", "ai-input", "use", "train-ai", "nsfw"]).flatmap(
            lambda k: st.sampled_from([f"{k}=yes", f"{k}=no", f"{k}=Yes", f"{k}=immediate", f"{k}=reference", k])
        ),
        min_size=1,
        max_size=5,
    )
)
def test_the_signal_header_and_the_robots_txt_line_agree(members: list[str]) -> None:
    from scrapy_rfc9309.robots.usage import from_signal_header

    value = ", ".join(members)
    line = parse(f"Content-Signal: {value}\nUser-agent: *\nAllow: /\n").usage(URL + "/x", "ExampleBot")
    header = from_signal_header(value.encode())
    assert dict(header) == dict(line) and header.use == line.use, value


def test_a_long_signal_header_keeps_what_it_read_that_says_no() -> None:
    from scrapy_rfc9309.robots.usage import MAX_HEADER_BYTES, from_signal_header

    filler = [f"x{i}=yes" for i in range(4_000)]  # distinct members, past the bound
    got = from_signal_header(", ".join(["ai-train=no", "search=yes", "use=immediate", *filler]))
    assert got == {"train-ai": False, "search": None, "ai-input": None} and got.use == "immediate"
    assert "read)" in got.sources["train-ai"][0].text
    got = from_signal_header(", ".join(["use=full", *filler, "use=immediate"]))
    assert got == UNKNOWN  # a level read in part may be undone by a more restrictive one later
    assert len(", ".join(filler)) > MAX_HEADER_BYTES


# -- vocab-07: no category is derived from another (issue 37) ----------------------------------------


def test_no_category_is_derived_from_another() -> None:
    # each category stands alone: a statement about one says nothing of the others
    for value, stated in [
        ("train-ai=n", {"train-ai": False}),
        ("train-ai=y", {"train-ai": True}),
        ("search=n", {"search": False}),
        ("search=y", {"search": True}),
    ]:
        got = from_header(value)
        assert dict(got) == {"train-ai": None, "search": None, "ai-input": None, **stated}, value
        got = u(f"User-agent: *\nAllow: /\nContent-Usage: {value}\n", "/x")
        assert dict(got) == {"train-ai": None, "search": None, "ai-input": None, **stated}, value
    for value, stated in [
        ("ai-train=no", {"train-ai": False}),
        ("ai-input=no", {"ai-input": False}),
        ("search=no", {"search": False}),
        ("ai-input=yes", {"ai-input": True}),
    ]:
        got = u(f"User-agent: *\nAllow: /\nContent-Signal: {value}\n", "/x")
        assert dict(got) == {"train-ai": None, "search": None, "ai-input": None, **stated}, value
    # labels of other drafts and extensions (a broader or narrower category than the
    # vocabulary's) map onto no category: unknown, and reported
    robots = parse("User-agent: *\nAllow: /\nContent-Usage: bots=n, train-genai=n, ai-use=n, genai=n\n")
    assert dict(robots.usage(URL + "/x", "ExampleBot")) == {"train-ai": None, "search": None, "ai-input": None}
    assert [d.code for d in robots.diagnostics] == ["usage_unknown_label"]
    assert from_header("bots=n, train-genai=n, ai-use=n") == UNKNOWN
    # so a declared purpose is denied only by a statement about that purpose
    assert from_header("train-ai=n").denies(["search", "ai-input"]) is None
    assert from_header("search=n").denies(["train-ai"]) is None
    assert u("User-agent: *\nAllow: /\nContent-Signal: ai-train=no\n", "/x").denies(["ai-input", "search"]) is None
