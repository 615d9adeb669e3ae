"""Page-level robots directives: X-Robots-Tag and robots meta tags (robots/directives.py).

* the documented header examples (several lines, a crawler named before
  its directives) give the documented answers;
* ``noai`` / ``noimageai`` disallow ``train-ai`` (and nothing else),
  ``noindex`` disallows ``search``, ``none`` is ``noindex, nofollow``,
  ``nofollow`` is a flag with its sources;
* directives naming another crawler do not apply; names are case-insensitive;
* valued directives (``unavailable_after`` with a date holding commas and
  colons) name no crawler and state nothing;
* statements keep their header line or tag, and combine most-restrictive
  with the other usage statements;
* against a reference written here from the rules, on generated headers;
  nothing raises on any input.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import parse
from scrapy_rfc9309.robots.directives import (
    MAX_COLONS,
    MAX_LINE_CHARS,
    MAX_PROBLEMS,
    NOTHING,
    PageDirectives,
    page_directives,
)
from scrapy_rfc9309.robots.html_head import MetaTag, read_head
from scrapy_rfc9309.robots.usage import UNKNOWN, Source, combine

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TOKEN = "ExampleBot"


def values(d: PageDirectives) -> dict[str, bool | None]:
    return dict(d.usage)


def test_documented_header_example() -> None:
    # Google's robots meta tag / X-Robots-Tag specification, "Using the X-Robots-Tag HTTP header"
    lines = [b"googlebot: nofollow", b"otherbot: noindex, nofollow"]
    other = page_directives(lines, tokens="otherbot")
    assert values(other) == {"train-ai": None, "search": False, "ai-input": None}
    assert other.nofollow
    assert other.nofollow_sources == (Source("header", 0, "X-Robots-Tag: otherbot: noindex, nofollow"),)
    google = page_directives(lines, tokens="Googlebot")
    assert google.usage == UNKNOWN and google.nofollow
    assert page_directives(lines, tokens=TOKEN) == NOTHING


def test_mdn_mixed_forms() -> None:
    # "<indexing-rule>, <bot-name>: <indexing-rule>": the rule before the name is for every crawler
    d = page_directives("noai, otherbot: noindex, nofollow", tokens=TOKEN)
    assert values(d) == {"train-ai": False, "search": None, "ai-input": None}
    assert not d.nofollow
    d = page_directives("noai, ExampleBot: noindex, nofollow", tokens="examplebot")
    assert values(d) == {"train-ai": False, "search": False, "ai-input": None} and d.nofollow
    # each header line starts for every crawler again
    d = page_directives(["otherbot: noindex", "nofollow"], tokens=TOKEN)
    assert d.usage == UNKNOWN and d.nofollow


def test_directive_meanings() -> None:
    assert values(page_directives("noai", tokens=TOKEN)) == {"train-ai": False, "search": None, "ai-input": None}
    assert values(page_directives("noimageai", tokens=TOKEN)) == {"train-ai": False, "search": None, "ai-input": None}
    assert values(page_directives("noindex", tokens=TOKEN)) == {"train-ai": None, "search": False, "ai-input": None}
    none = page_directives("none", tokens=TOKEN)
    assert values(none) == {"train-ai": None, "search": False, "ai-input": None} and none.nofollow
    nofollow = page_directives("nofollow", tokens=TOKEN)
    assert nofollow.usage == UNKNOWN and nofollow.nofollow
    # the defaults and the search-presentation directives state nothing, and are no error
    quiet = "all, index, follow, noarchive, nocache, nosnippet, max-snippet: 20, max-image-preview:large, notranslate"
    assert page_directives(quiet, tokens=TOKEN) == NOTHING
    # "index" does not allow what "noindex" disallows: the most restrictive wins
    assert values(page_directives(["index", "noindex"], tokens=TOKEN))["search"] is False


def test_case_and_blanks() -> None:
    d = page_directives(b"  EXAMPLEBOT :  NoAI ,\tNOFOLLOW  ", tokens=TOKEN)
    assert values(d)["train-ai"] is False and d.nofollow
    assert values(page_directives("robots: noindex", tokens=TOKEN))["search"] is False
    assert page_directives("", tokens=TOKEN) == NOTHING
    assert page_directives(None, tokens=TOKEN) == NOTHING
    assert page_directives([b",,, ,"], tokens=TOKEN) == NOTHING


def test_unavailable_after_names_no_crawler() -> None:
    for date in ("Wednesday, 15-Nov-23 15:00:00 GMT", "25 Jun 2010 15:00:00 PST", "2026-06-25T15:00:00+02:00"):
        d = page_directives(f"unavailable_after: {date}, noindex", tokens=TOKEN)
        assert values(d)["search"] is False, date
        assert d.diagnostics == (), date


def test_unknown_directive_reported() -> None:
    d = page_directives("noindx, noai", tokens=TOKEN)
    assert values(d)["train-ai"] is False and values(d)["search"] is None
    assert [(x.code, x.message.rsplit(": ", 1)[1]) for x in d.diagnostics] == [("directive_unknown", "noindx")]
    # a directive with a value it does not take is no directive
    d = page_directives(b"noindex: yes", tokens=TOKEN)
    assert d.usage == UNKNOWN and [x.code for x in d.diagnostics] == ["directive_unknown"]
    # diagnostics are bounded; a word repeated in a value is reported once
    assert len(page_directives(",".join(f"bogus{i}" for i in range(1000)), tokens=TOKEN).diagnostics) == 20
    assert len(page_directives(",".join(["bogus"] * 1000), tokens=TOKEN).diagnostics) == 1


def test_meta_tags() -> None:
    head = read_head(
        b"<head>\n"
        b'<meta name="robots" content="noindex">\n'
        b'<meta name="ExampleBot" content="noai, nofollow">\n'
        b'<meta name="otherbot" content="none">\n'
        b'<meta name="description" content="noai">\n'
        b'<meta name="robots" content="googlebot: noimageai">\n'
        b"</head>"
    )
    d = page_directives(None, head.metas, tokens=TOKEN)
    assert values(d) == {"train-ai": False, "search": False, "ai-input": None}
    assert d.usage.sources["search"] == (Source("html", 2, '<meta name="robots" content="noindex">'),)
    assert d.usage.sources["train-ai"] == (Source("html", 3, '<meta name="ExampleBot" content="noai, nofollow">'),)
    assert d.nofollow_sources == (Source("html", 3, '<meta name="ExampleBot" content="noai, nofollow">'),)
    # a meta tag's content names no crawler: "googlebot: noimageai" is no directive
    assert [x.line for x in d.diagnostics] == [6]
    # another crawler reading the same page
    other = page_directives(None, head.metas, tokens="OtherBot")
    assert values(other) == {"train-ai": None, "search": False, "ai-input": None} and other.nofollow


def test_header_and_meta_together() -> None:
    metas = [MetaTag("robots", "noindex", 4, '<meta name="robots" content="noindex">')]
    d = page_directives([b"noindex", b"ExampleBot: noai"], metas, tokens=["OtherBot", "ExampleBot"])
    assert values(d) == {"train-ai": False, "search": False, "ai-input": None}
    # every statement behind a value is kept, in the order read
    assert d.usage.sources["search"] == (
        Source("header", 0, "X-Robots-Tag: noindex"),
        Source("html", 4, '<meta name="robots" content="noindex">'),
    )
    assert str(d.usage.sources["train-ai"][0]) == "header: X-Robots-Tag: ExampleBot: noai"


def test_combines_most_restrictive_with_robots_txt() -> None:
    robots = parse("User-agent: *\nAllow: /\nContent-Usage: train-ai=y, search=y\n")
    allowed = robots.usage("https://example.com/page", TOKEN)
    assert allowed["train-ai"] is True
    page = page_directives("noai", tokens=TOKEN)
    both = combine([allowed, page.usage])
    assert both["train-ai"] is False and both["search"] is True
    assert both.denies(["train-ai"]) == ("train-ai", (Source("header", 0, "X-Robots-Tag: noai"),))


def test_every_line_counts() -> None:
    # issue 37: reading stopped at 16 KiB of X-Robots-Tag lines, so a late noai was missed
    others = [f"otherbot{i}: noindex, nofollow".encode() for i in range(2_000)]  # 62 KB, all distinct
    d = page_directives([*others, b"noai"], tokens=TOKEN)
    assert d.usage["train-ai"] is False and d.usage["search"] is None and not d.nofollow
    assert d.usage.sources["train-ai"] == (Source("header", 0, "X-Robots-Tag: noai"),)
    # lines repeated by the thousand are read once each; the statement counts distinct lines
    d = page_directives([b"noindex"] * 5_000 + [b"none"] * 5_000 + [b"ExampleBot: noai"], tokens=TOKEN)
    assert values(d) == {"train-ai": False, "search": False, "ai-input": None} and d.nofollow
    assert d.usage.sources["search"] == (
        Source("header", 0, "X-Robots-Tag: noindex"),
        Source("header", 0, "X-Robots-Tag: none"),
    )
    # a line as long as HTTP/1.1 delivers (16 KiB) is read to its end, its many pieces at C speed
    line = b"all, " * ((MAX_LINE_CHARS - 4) // 5)
    line = b" " * (MAX_LINE_CHARS - 4 - len(line)) + line + b"noai"
    assert len(line) == MAX_LINE_CHARS
    d = page_directives([line], tokens=TOKEN)
    assert d.usage["train-ai"] is False and d.diagnostics == ()
    d = page_directives([line.replace(b"all", b"x  ")], tokens=TOKEN)
    assert d.usage["train-ai"] is False
    assert [p.code for p in d.diagnostics] == ["directive_unknown"]  # "x", once
    # a longer one is read up to its last comma before the bound, and says so
    d = page_directives([b" " + line], tokens=TOKEN)
    assert d.usage == UNKNOWN and [p.code for p in d.diagnostics] == ["header_line_cut"]
    d = page_directives([b"noindex, " + line, b"nofollow"], tokens=TOKEN)
    assert d.usage["search"] is False and d.usage["train-ai"] is None and d.nofollow
    # what a response carries stays bounded: 3 sources a category, the rest counted
    d = page_directives([f"noai, nofollow, x{i}".encode() for i in range(1_000)], tokens=TOKEN)
    assert len(d.usage.sources["train-ai"]) == 3 and d.usage.more["train-ai"] == 997
    assert len(d.nofollow_sources) == 3 and d.nofollow_more == 997
    assert len(d.diagnostics) == MAX_PROBLEMS


def test_crawler_names_in_a_line_are_bounded() -> None:
    # each piece holding a ":" costs a step; at most MAX_COLONS of them are read per line
    names = ", ".join(f"bot{i}: noindex" for i in range(MAX_COLONS - 1))
    d = page_directives([f"{names}, ExampleBot: noai"], tokens=TOKEN)  # exactly MAX_COLONS: read whole
    assert d.usage["train-ai"] is False and d.usage["search"] is None and d.diagnostics == ()
    d = page_directives([f"{names}, bot: x, ExampleBot: noai"], tokens=TOKEN)  # one more: cut before it
    assert d.usage == UNKNOWN
    assert [p.code for p in d.diagnostics] == ["header_line_cut"]
    # (what comes before the cut is read, and other lines are read whole)
    d = page_directives([f"noai, {names}, bot: x, ExampleBot: noindex", "nofollow"], tokens=TOKEN)
    assert d.usage["train-ai"] is False and d.usage["search"] is None and d.nofollow


# -- against a reference ---------------------------------------------------------------------------

DIRECTIVES = ["noai", "noimageai", "noindex", "none", "nofollow", "index", "all", "nosnippet", "max-snippet: 5"]
SCOPES = [None, "robots", "ExampleBot", "examplebot", "OtherBot", "googlebot"]


@st.composite
def header_line(draw) -> tuple[str, list[tuple[str | None, list[str]]]]:
    """A header line and what it holds: (scope, directives) runs."""
    runs = draw(st.lists(st.tuples(st.sampled_from(SCOPES), st.lists(st.sampled_from(DIRECTIVES), min_size=1, max_size=3)), min_size=1, max_size=3))  # fmt: skip
    # only the first run may be unscoped (a later unnamed run continues the scope before it)
    runs = [runs[0]] + [(scope or "robots", ds) for scope, ds in runs[1:]]
    sep = draw(st.sampled_from([", ", ",", " , "]))
    text = sep.join((f"{scope}: " if scope else "") + sep.join(ds) for scope, ds in runs)
    return text, runs


@SETTINGS
@given(st.lists(header_line(), max_size=3))
def test_agrees_with_reference(lines) -> None:
    got = page_directives([text for text, _ in lines], tokens=TOKEN)
    search = train = follow = False
    for _, runs in lines:
        for scope, ds in runs:
            if scope is not None and scope.lower() not in ("robots", "examplebot"):
                continue
            train |= "noai" in ds or "noimageai" in ds
            search |= "noindex" in ds or "none" in ds
            follow |= "nofollow" in ds or "none" in ds
    assert got.usage["train-ai"] is (False if train else None)
    assert got.usage["search"] is (False if search else None)
    assert got.usage["ai-input"] is None
    assert got.nofollow is follow
    assert got.diagnostics == ()


@SETTINGS
@given(
    st.one_of(st.none(), st.binary(max_size=200), st.text(max_size=200), st.lists(st.binary(max_size=80), max_size=5)),
    st.lists(
        st.builds(
            MetaTag,
            st.sampled_from(["robots", "examplebot", "x"]),
            st.text(max_size=60),
            st.integers(0, 9),
            st.text(max_size=20),
        ),
        max_size=4,
    ),  # fmt: skip
    st.one_of(st.text(max_size=10), st.lists(st.text(max_size=10), max_size=3)),
)
def test_never_raises(header, metas, tokens) -> None:
    d = page_directives(header, metas, tokens)
    assert isinstance(d, PageDirectives)
    assert d.usage["ai-input"] is None  # nothing here speaks of ai-input
    assert all(v is not True for v in d.usage.values())  # directives only ever disallow


def _reference_value(value: str, scoped: bool, wanted: frozenset[str]) -> tuple[set[str], set[str]]:
    """The reading piece by piece, as the plugin read before its values were
    read at C speed (issue 37): the directives that apply, and the unknown ones."""
    from scrapy_rfc9309.robots import directives as m

    applies = True
    found: set[str] = set()
    unknown: set[str] = set()
    for piece in value.split(","):
        text = piece.strip(" \t\r\n\f").lower()
        if not text:
            continue
        colon = text.find(":")
        head = text if colon < 0 else text[:colon].rstrip(" \t")
        if scoped and colon > 0 and head not in m._KNOWN and m._is_name(head):
            applies = head in wanted
            text = text[colon + 1 :].strip(" \t")
            if not text:
                continue
            colon = text.find(":")
            head = text if colon < 0 else text[:colon].rstrip(" \t")
        if not applies:
            continue
        if colon < 0 and (head in m.USAGE_DIRECTIVES or head in m.NOFOLLOW_DIRECTIVES):
            found.add(head)
        elif head not in m.OTHER_DIRECTIVES and head not in m.VALUED_DIRECTIVES and m._is_name(head):
            unknown.add(m._clip(f"{m.CODES['directive_unknown']}: {text}"))
    return found, unknown


PIECES = [
    "noai", "NoImageAI", "noindex", "none", "nofollow", "index", "all", "max-snippet: 5", "max-snippet:",
    "unavailable_after: Wed", " 15-Nov-23 15:00:00 GMT", "bogus", "noai: x", "googlebot:", "ExampleBot:",
    "robots: noai", "otherbot: noindex", "a: b: noai", ":", "::", " ", "", "\t", "x y", "é", "no ai",
]  # fmt: skip


@SETTINGS
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.sampled_from([",", ", ", " ,", ",\t"]), st.booleans())
def test_values_read_as_piece_by_piece(pieces, sep, scoped) -> None:
    from scrapy_rfc9309.robots.directives import _read_value

    # (fewer than 16 pieces are read one by one, more at C speed: both ways agree with the reference)
    value = sep.join(pieces)
    wanted = frozenset({"robots", "examplebot"})
    found, unknown, cut = _read_value(value, scoped, wanted)
    assert (set(found), set(unknown), cut) == (*_reference_value(value, scoped, wanted), False), value
    assert len(found) == len(set(found)) and len(unknown) == len(set(unknown))


@SETTINGS
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.integers(0, 80), st.sampled_from([",", ", "]))
def test_long_lines_state_what_they_hold(pieces, padding, sep) -> None:
    # a long line without a stating word is only sampled for diagnostics: never one that states something
    value = sep.join(["index"] * padding + pieces + ["follow"] * padding)
    found, _ = _reference_value(value, True, frozenset({"robots", "examplebot"}))
    d = page_directives([value.encode("utf-8")], tokens=TOKEN)
    assert (d.usage["train-ai"] is False) == bool(found & {"noai", "noimageai"}), value
    assert (d.usage["search"] is False) == bool(found & {"noindex", "none"}), value
    assert d.nofollow == bool(found & {"nofollow", "none"}), value
