"""AI usage preferences in robots.txt and the Content-Usage header (robots/usage.py).

The drafts' own examples give the drafts' answers; each form is read, matched
and combined; nothing raises on any input.
"""

from __future__ import annotations

import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import parse
from scrapy_rfc9309.robots import index as index_mod
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


# -- many rules (issue 30): looked up through an index, statements named up to a cap --------------
_USAGE_PATH = st.lists(st.sampled_from(["a", "b", "/", "*", "x.php", "%61", "caf\u00e9"]), max_size=5).map(
    lambda parts: "/" + "".join(parts)
)
_USAGE_RULE = st.tuples(
    st.one_of(_USAGE_PATH, _USAGE_PATH.map(lambda p: p + "$")),
    st.sampled_from(["train-ai=n", "train-ai=y", "search=y", "train-ai=n, search=n", "search=y, train-ai=y"]),
)


def _statements(usage: Usage) -> tuple[dict[str, bool | None], dict[str, list[tuple[str, int, str]]]]:
    """The values, and each category's sources in line order (the index combines
    the rules of one pattern first: the order may differ, not the statements)."""
    return dict(usage), {c: sorted(usage.sources[c], key=lambda s: s.line) for c in usage_mod.CATEGORIES}


@SETTINGS
@given(
    rules=st.lists(_USAGE_RULE, min_size=1, max_size=12),
    signal=st.sampled_from(["", "Content-Signal: search=yes, ai-train=no\n"]),
    paths=st.lists(_USAGE_PATH, min_size=1, max_size=4),
    lead_rules=st.sampled_from([0, 1, 8]),
)
def test_usage_rules_looked_up_through_an_index_state_what_the_walk_states(rules, signal, paths, lead_rules) -> None:
    body = "User-agent: *\n" + signal + "".join(f"Content-Usage: {p} {e}\n" for p, e in rules)
    walked = parse(body)
    expected = [_statements(walked.usage(URL + p, "bot")) for p in paths]
    saved = usage_mod.INDEX_LEAST, index_mod.LEAD_RULES
    usage_mod.INDEX_LEAST, index_mod.LEAD_RULES = 0, lead_rules
    try:
        indexed = parse(body)
        assert [_statements(indexed.usage(URL + p, "bot")) for p in paths] == expected
        assert indexed._usage["bot"].index is not None  # (the index was used)
    finally:
        usage_mod.INDEX_LEAST, index_mod.LEAD_RULES = saved


def test_thousands_of_repeated_statements_name_a_few_lines_and_cost_little() -> None:
    """5,000 identical Content-Signal lines and 5,000 Content-Usage lines for
    one path: every request carries its preferences' sources, and combining
    them compared each new source with all kept ones (seconds)."""
    body = "User-agent: *\n" + "Content-Signal: search=yes\n" * 5_000 + "Content-Usage: /x train-ai=n\n" * 5_000
    robots = parse(body)
    started = time.process_time()
    got = robots.usage(URL + "/x/1", "bot")
    for i in range(100):
        robots.usage(URL + f"/x/{i}", "bot")
    assert time.process_time() - started < 1.0  # about 20 ms: one build, then microseconds a look-up
    assert got["search"] is True and got["train-ai"] is False
    assert [s.line for s in got.sources["search"]] == list(range(2, 2 + usage_mod.MAX_SOURCES))
    assert [s.line for s in got.sources["train-ai"]] == list(range(5_002, 5_002 + usage_mod.MAX_SOURCES))


def test_combine_names_at_most_max_sources_per_category() -> None:
    many = [
        Usage({"search": True}, {"search": (Source("robots.txt", i, "Content-Signal: search=yes"),)}) for i in range(40)
    ]
    got = combine(many)
    assert got["search"] is True and [s.line for s in got.sources["search"]] == list(range(usage_mod.MAX_SOURCES))
    denied = combine([*many, Usage({"search": False}, {"search": (Source("header", 0, "Content-Usage: search=n"),)})])
    assert denied["search"] is False and denied.sources["search"] == (Source("header", 0, "Content-Usage: search=n"),)
