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
from scrapy_rfc9309.robots.directives import MAX_HEADER_BYTES, NOTHING, PageDirectives, page_directives
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
    # diagnostics are bounded
    assert len(page_directives(",".join(["bogus"] * 1000), tokens=TOKEN).diagnostics) == 20


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


def test_header_bound() -> None:
    big = "x" * (MAX_HEADER_BYTES - 2)
    d = page_directives([big.encode(), b"noai"], tokens=TOKEN)
    assert d.usage == UNKNOWN
    assert "header_too_long" in [x.code for x in d.diagnostics]
    assert values(page_directives([b"noai", big.encode()], tokens=TOKEN))["train-ai"] is False


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
