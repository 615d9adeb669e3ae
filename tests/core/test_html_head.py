"""The bounded reader of an HTML head's meta tags (robots/html_head.py).

* the TDMRep report's own HTML example (#sec-tdm-html-meta) gives its two tags;
* attributes in every usual form (quoting, case, order, character
  references, duplicates) are read as the HTML standard's tokenizer reads
  them (against a browser-grade parser: test_html_head_oracle.py);
* what is not the head is not read: comments, raw text (``<script>`` ...),
  the body (its first text or tag) and what follows, or past the byte bound;
  a meta tag between ``</head>`` and the body is in the head;
* the charset: byte order mark, HTTP header, ``<meta charset>``, UTF-8;
* hostile documents of 1 MB never raise and are read in bounded time.
"""

from __future__ import annotations

import gc
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scrapy_rfc9309.robots.html_head import (
    MAX_ATTRIBUTES,
    MAX_HEAD_BYTES,
    MAX_LICENSES,
    MAX_METAS,
    MAX_STEPS,
    MAX_URL_CHARS,
    MetaTag,
    _Scanner,
    is_html,
    read_head,
)

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# TDM Reservation Protocol, CG final report 10 May 2024, #sec-tdm-html-meta "TDM Metadata in HTML Content"
TDMREP_EXAMPLE = b"""<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="tdm-reservation" content="1">
    <meta name="tdm-policy" content="https://provider.com/policies/policy.json">
    <title>Document title</title>
  </head>
  <body>
    ...
    <!-- body content -->
    ...
  </body>
</html>
"""


def pairs(body: bytes, **kwargs) -> list[tuple[str, str]]:
    return [(m.name, m.content) for m in read_head(body, **kwargs).metas]


def test_tdmrep_example() -> None:
    head = read_head(TDMREP_EXAMPLE)
    assert head.metas == (
        MetaTag("tdm-reservation", "1", 5, '<meta name="tdm-reservation" content="1">'),
        MetaTag(
            "tdm-policy",
            "https://provider.com/policies/policy.json",
            6,
            '<meta name="tdm-policy" content="https://provider.com/policies/policy.json">',
        ),
    )
    assert head.charset == "utf-8"
    assert head.complete
    assert head.diagnostics == ()


def test_attribute_forms() -> None:
    doc = (
        b"<head>"
        b"<META NAME=Robots CONTENT=NoIndex>"
        b"<meta content='noai' name='ExampleBot'>"
        b'<meta\tname = "robots"\ncontent = "a &amp; b &#x41;&#66;&lt;" />'
        b'<meta name="robots" name="other" content="first" content="second">'
        b'<meta/name="x"/content="y">'
        b'<meta name="robots" content="">'
        b"<meta name=robots>"  # no content: no pair
        b'<meta content="z">'  # no name: no pair
        b"</head>"
    )
    assert pairs(doc) == [
        ("robots", "NoIndex"),
        ("examplebot", "noai"),
        ("robots", "a & b AB<"),
        ("robots", "first"),
        ("x", "y"),
        ("robots", ""),
    ]


def test_names_filter_and_text() -> None:
    doc = b'<meta name="robots" content="noindex">\n<meta name="viewport" content="w">\n<meta name="r&#111;bots" content="x">'
    head = read_head(doc, names={"robots"})
    assert [(m.name, m.content, m.line) for m in head.metas] == [("robots", "noindex", 1), ("robots", "x", 3)]
    # the tag as written names the statement; line ends inside it are spaces
    head = read_head(b'<meta name="robots"\r\n content="noai">')
    assert head.metas[0].text == '<meta name="robots"   content="noai">'


def test_not_the_head_is_not_read() -> None:
    hidden = [
        b'<!-- <meta name="robots" content="noindex"> -->',
        b'<!--> <meta name="a" content="abrupt comment closed, this is read">',
        b'<!-- x --!> <meta name="b" content="a comment closed by --!>, this is read">',
        b'<script>document.write(\'<meta name="robots" content="noindex">\')</script>',
        b'<script><!--<script></script><meta name="robots" content="escaped script data"></script>-->',
        b'<style>/* <meta name="robots" content="noindex"> */</style>',
        b'<title><meta name="robots" content="noindex"></titles></title>',
        b'<!DOCTYPE html><?xml version="1.0"?><![CDATA[x]]></ <meta name="robots" content="bogus comment">',
        b'<template><meta name="robots" content="template content"></template>',
    ]
    assert pairs(b"<head>" + b"".join(hidden) + b"</head>") == [
        ("a", "abrupt comment closed, this is read"),
        ("b", "a comment closed by --!>, this is read"),
    ]
    after = b'<meta name="robots" content="noai">'
    # between </head> and the body's first content: in the head ("after head" mode)
    assert pairs(b"<head></head>\n" + after) == [("robots", "noai")]
    assert pairs(b"<head></HEAD >" + after) == [("robots", "noai")]
    assert pairs(b"<head><noscript>" + after + b"</noscript></head>") == [("robots", "noai")]
    # the body: its tag, its first text or any other tag, and all that follows
    for body in (b"<body>", b"<html><BODY class=x>", b"text", b"&amp;", b"<div>", b"a < b", b"</br>", b"<textarea>"):
        assert pairs(b"<head>" + body + after) == [], body
        assert pairs(b"<head></head>" + body + after) == [], body
    # an unclosed comment or script consumes the rest, as in a browser
    head = read_head(b"<head><!-- " + after)
    assert head.metas == () and not head.complete and [d.code for d in head.diagnostics] == ["head_cut"]
    assert pairs(b"<script>" + after) == []
    # end tags of other elements are ignored
    assert pairs(b"<head></div> </x-y>" + after) == [("robots", "noai")]


def test_charset() -> None:
    e_acute = '<meta name="robots" content="caf\u00e9">'
    assert pairs(b"\xef\xbb\xbf" + e_acute.encode("utf-8")) == [("robots", "caf\u00e9")]
    assert pairs(b"\xff\xfe" + e_acute.encode("utf-16-le")) == [("robots", "caf\u00e9")]
    assert pairs(b"\xfe\xff" + e_acute.encode("utf-16-be")) == [("robots", "caf\u00e9")]
    latin = e_acute.encode("latin-1")
    assert pairs(latin) == [("robots", "caf\ufffd")]  # assumed UTF-8, invalid byte replaced
    assert pairs(latin, http_charset="iso-8859-1") == [("robots", "caf\u00e9")]
    assert pairs(latin, http_charset=b"text/html; charset=ISO-8859-1") == [("robots", "caf\u00e9")]
    # latin1 is windows-1252 (the Encoding standard's labels)
    assert read_head(latin, http_charset="text/html; charset=ISO-8859-1").charset == "cp1252"
    assert pairs(b'<meta name="robots" content="\x80">', http_charset="latin1") == [("robots", "\u20ac")]
    # the meta charset, even after the tag it decodes
    assert pairs(latin + b'<meta charset="windows-1252">') == [("robots", "caf\u00e9")]
    assert pairs(b'<meta http-equiv="Content-Type" content="text/html; charset=latin1">' + latin) == [
        ("robots", "caf\u00e9")
    ]
    # the HTTP header wins over the meta tag, the BOM over both
    assert pairs(b'<meta charset="utf-8">' + latin, http_charset="latin-1") == [("robots", "caf\u00e9")]
    assert pairs(b"\xef\xbb\xbf" + e_acute.encode(), http_charset="latin-1") == [("robots", "caf\u00e9")]
    # a meta charset in a template is the document's (its meta tags are processed as the head's)
    assert pairs(b"<template><meta charset=latin1></template>" + latin) == [("robots", "caf\u00e9")]
    # UTF-16 named by the header: decoded, then read (the BOM still wins)
    for label, codec in (("utf-16le", "utf-16-le"), ("UTF-16BE", "utf-16-be"), ("utf-16", "utf-16-le")):
        head = read_head(e_acute.encode(codec), http_charset=f"text/html; charset={label}")
        assert [(m.name, m.content, m.text) for m in head.metas] == [("robots", "caf\u00e9", e_acute)], label
        assert head.charset == codec
    assert pairs(b"\xef\xbb\xbf" + e_acute.encode(), http_charset="utf-16le") == [("robots", "caf\u00e9")]
    # UTF-16 named by the document is UTF-8 (the bytes were read as ASCII to find it)
    assert read_head(b'<meta charset="utf-16">').charset == "utf-8"
    assert pairs(b'<meta charset="utf-16le">' + e_acute.encode()) == [("robots", "caf\u00e9")]
    # unknown, not in the standard, or no text codec at all: ignored (a later meta tag may name one)
    for label in ("utf-7", "utf-32", "x-no-such", "rot13", "base64", "hex", "zlib", "a" * 100):
        assert read_head(b'<meta charset="' + label.encode() + b'">').charset == "utf-8", label
        assert read_head(b'<meta charset="' + label.encode() + b'"><meta charset=latin1>').charset == "cp1252", label
        assert read_head(b"<p>", http_charset=label).charset == "utf-8", label


def test_bounds() -> None:
    late = b'<meta name="robots" content="noai">'
    head = read_head(b"<head>" + b" " * MAX_HEAD_BYTES + late)
    assert head.metas == () and not head.complete
    assert [d.code for d in head.diagnostics] == ["head_truncated"]
    assert pairs(b"<head>" + b" " * 100 + late, limit=50) == []
    many = b"".join(b'<meta name="m" content="%d">' % i for i in range(MAX_METAS + 10))
    head = read_head(many)
    assert len(head.metas) == MAX_METAS and head.metas[-1].content == str(MAX_METAS - 1)
    assert [d.code for d in head.diagnostics] == ["too_many_metas"]
    head = read_head(b'<meta name="robots" content="' + b"x" * 10_000 + b'">')
    assert len(head.metas[0].content) == 4_096
    assert [d.code for d in head.diagnostics] == ["content_clipped"]
    assert len(head.metas[0].text) <= 203


def test_step_bound() -> None:
    # a head of many tiny tags or attributes stops at the step budget, keeping what it read
    late = b'<meta name="robots" content="noai">'
    head = read_head(late + b"<link>" * MAX_STEPS + late)
    assert [m.content for m in head.metas] == ["noai"] and not head.complete
    assert [d.code for d in head.diagnostics] == ["head_too_complex"]
    # (a tag of two values: four steps)
    assert pairs(b'<link a="1" b=2 c>' * (MAX_STEPS // 3) + late) == []
    assert pairs(b'<link a="1" b=2 c>' * (MAX_STEPS // 8) + late) == [("robots", "noai")]
    # so does the raw text of many scripts, and many templates (a step each)
    assert pairs(b"<script></script>" * MAX_STEPS + late) == []
    assert pairs(b"<template>" * MAX_STEPS + b"</template>" * MAX_STEPS + late) == []
    # a meta tag's attributes past the first MAX_ATTRIBUTES are not read; its end is still found
    padding = b" ".join(b"a%d=1" % i for i in range(MAX_ATTRIBUTES))
    assert pairs(b"<meta " + padding + b' name="robots" content="x">' + late) == [("robots", "noai")]
    assert pairs(b'<meta name="robots" content="x" ' + padding + b">" + late) == [("robots", "x"), ("robots", "noai")]


def test_is_html() -> None:
    assert is_html("text/html")
    assert is_html(b"Text/HTML; charset=utf-8")
    assert is_html("application/xhtml+xml")
    assert not is_html("application/json")
    assert not is_html("text/plain; x=text/html")
    assert not is_html(None)
    assert not is_html("")


def test_empty_and_odd_inputs() -> None:
    for body in (None, b"", b"<", b"<!", b"<!-", b"<meta", b"<meta name", b"<meta name=", b'<meta name="', b"</"):
        head = read_head(body)
        assert head.metas == ()


# -- hostile input -------------------------------------------------------------------------------


@SETTINGS
@given(st.binary(max_size=2_000), st.one_of(st.none(), st.sampled_from(["utf-8", "latin-1", "utf-16", "junk"])))
def test_never_raises(body: bytes, charset: str | None) -> None:
    head = read_head(body, http_charset=charset)
    assert all(isinstance(m, MetaTag) for m in head.metas)


@SETTINGS
@given(st.lists(st.sampled_from(["<", ">", "<meta", " name=", "content=", '"', "'", "=", "/", "<!--", "-->", "<script>",
                                 "</script", "</head>", "<body", "robots", "noai", "&amp;", "&#", "\n", "\x00", "\xe9"]),
                max_size=40).map("".join))  # fmt: skip
def test_never_raises_on_tag_soup(doc: str) -> None:
    for encoding in ("utf-8", "utf-16"):
        head = read_head(doc.encode(encoding, "surrogatepass"))
        assert len(head.metas) <= MAX_METAS


@settings(max_examples=2_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from(["a", "b", "=", " ", "\t", "/", '"', "'", ">", "<", "x=", '="', "='", " = ", "/>", "=="]), max_size=30).map("".join))  # fmt: skip
def test_skip_finds_the_end_attributes_finds(rest: str) -> None:
    # the fast skip over a tag that is not a meta tag ends it where the full attribute reader does
    scan = _Scanner(("<p" + rest).encode(), None)
    full = scan._attributes(2)
    assert scan._skip(2) == (None if full is None else full[1])


def timed(fn, *args):
    enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.process_time()
        value = fn(*args)
        return value, time.process_time() - start
    finally:
        if enabled:
            gc.enable()


#: process seconds a 1 MB hostile document may take (measured: at most about 8 ms on a loaded machine)
BOUND = 0.5
MB = 1_000_000
HOSTILE = {
    "metas": b'<meta name="robots" content="noai">' * (MB // 35),
    "bare <meta": b"<meta" * (MB // 5),
    "unclosed comment": b"<!--" + b"a" * MB,
    "comment openers": b"<!--" * (MB // 4),
    "lone <": b"<" * MB,
    "tag names": b"<a" * (MB // 2),
    "attributes, no >": b"<meta " + b"a=b " * (MB // 4),
    "bare attributes": b"<meta " + b"a " * (MB // 2),
    "unclosed quote": b'<meta name="' + b"x" * MB,
    "unclosed script": b"<script>" + b"<meta name=robots content=noai>" * (MB // 31),
    "references": b'<meta name="robots" content="' + b"&#" * (MB // 2) + b'">',
    "utf-16": b"\xff\xfe" + '<meta name="robots" content="noai">'.encode("utf-16-le") * (MB // 70),
    "equals": b"<meta " + b"=" * MB,
    "line ends": (b"\n" * 20 + b"<meta name=robots content=noindex>") * (MB // 54),
    "tiny tags": b"<p>" * (MB // 3),
    "tiny metas": b"<meta name=robots content=x>" * (MB // 30),
    "tags of 100 attributes": (b"<p " + b"a=b " * 100 + b">") * (MB // 404),
    "metas of 100 names": (b"<meta " + b"name=b " * 100 + b">") * (MB // 707),
    "blank = pairs": (b"<p " + b"a = = " * 100 + b">") * (MB // 606),
    "script escapes": b"<script>" + b"<!--<script>-->" * (MB // 15),
    "script escapes, never closed": b"<script>" + b"<!--<script></script>" * (MB // 21),
    "a comment of >": b"<!--" + b">" * MB,
    "templates": b"<template>" * (MB // 10),
    "noscripts": b"<noscript></noscript>" * (MB // 21),
    "metas after </head>": b"</head>" + b"<meta name=robots content=x>\n" * (MB // 29),
}


def test_hostile_documents_bounded() -> None:
    for name, doc in HOSTILE.items():
        head, took = timed(read_head, doc)
        assert took < BOUND, (name, took)
        assert len(head.metas) <= MAX_METAS, name


def test_a_tag_met_again_is_read_as_the_first_time() -> None:
    """A meta tag read before is not parsed again (issue 32: pages repeat their tags);
    what it gives never depends on what was read before: its line, the names
    wanted, the charset, a cut document, and the same tag bytes inside a comment.
    (A guard for that cache: the code before it reads every tag afresh.)"""
    from scrapy_rfc9309.robots import html_head

    tag = b'<meta name="Robots" content="no&amp;ai">'
    docs = [
        b"<head>" + tag + b"</head>",
        b"<head>\n\n" + tag + b"</head>",
        b"<head><!-- " + tag + b" --></head>",
        b"<head>" + tag[:-1],
        b'<head><meta charset="latin-1">' + tag.replace(b"no&amp;ai", b"caf\xe9") + b"</head>",
        b"<head>" + tag.replace(b'content="', b'content=">') + b"</head>",
    ]
    names = [None, frozenset({"robots"}), frozenset({"other"})]
    first = [read_head(doc, names=n) for doc in docs for n in names]
    again = [read_head(doc, names=n) for doc in docs for n in names]
    html_head._TAGS.clear()
    html_head._METAS.clear()
    fresh = [read_head(doc, names=n) for doc in docs for n in names]
    assert first == again == fresh
    assert [m.line for m in read_head(docs[1]).metas] == [3]
    assert read_head(docs[0]).metas[0].content == "no&ai"
    assert read_head(docs[2]).metas == ()
    assert read_head(docs[4]).metas[0].content == "café"
    assert read_head(docs[5]).metas[0].content == ">no&ai"  # its first ">" is inside the value


# -- RSL license links ------------------------------------------------------------------------------
PAGE = "https://site.example/dir/page.html"


def lic(href: str, rel: str = "license", media: str = "application/rsl+xml") -> bytes:
    return f'<link rel="{rel}" type="{media}" href="{href}">'.encode()


def test_license_links_are_bounded_and_the_later_ones_counted() -> None:
    many = b"<head>" + b"".join(lic(f"/l{i}.xml") for i in range(20)) + lic("/l0.xml") + b"</head>"
    head = read_head(many, url=PAGE)
    assert head.licenses == tuple(f"https://site.example/l{i}.xml" for i in range(MAX_LICENSES))
    (problem,) = head.diagnostics
    assert problem.code == "too_many_licenses" and problem.message.endswith(": 12 more")  # (l0 again is not more)
    # the same link repeated is read once and kept once
    assert read_head(lic("/a.xml") * 50 + lic("/b.xml"), url=PAGE).licenses == (
        "https://site.example/a.xml",
        "https://site.example/b.xml",
    )


def test_license_links_far_apart_and_among_other_links() -> None:
    # the "+" of a license link's type far after other links, and links whose "&" is no character reference
    filler = b'<link rel="stylesheet" href="/s.css?a=1&amp;b=2">' * 200
    body = b"<head>" + filler + lic("/far.xml") + filler + lic("/LIC.xml", "LICENSE", "APPLICATION/RSL+XML") + b"<body>"
    assert read_head(body, url=PAGE).licenses == ("https://site.example/far.xml", "https://site.example/LIC.xml")


def test_license_links_that_name_nothing_usable() -> None:
    body = lic("javascript:alert(1)") + lic("/" + "x" * MAX_URL_CHARS) + lic("http://[::1") + lic("") + lic("ok.xml")
    head = read_head(body, url=PAGE)
    assert head.licenses == ("https://site.example/dir/ok.xml",)
    assert [d.code for d in head.diagnostics] == ["license_refused"] * 4
    # without the page's URL, only an absolute link, or one a <base href> makes absolute, is kept
    assert read_head(lic("ok.xml") + lic("https://a.example/l.xml")).licenses == ("https://a.example/l.xml",)
    assert read_head(b'<base href="https://b.example/d/">' + lic("ok.xml")).licenses == ("https://b.example/d/ok.xml",)


def test_a_base_after_the_link_and_in_a_template() -> None:
    # the first <base href> is the document's base URL wherever it stands in the head
    assert read_head(lic("l.xml") + b'<base href="/b/"><base href="/c/">', url=PAGE).licenses == (
        "https://site.example/b/l.xml",
    )
    # a template's content is no part of the head: neither its base nor its links
    body = b"<head><template>" + lic("t.xml") + b'<base href="/t/"></template>' + lic("l.xml")
    assert read_head(body, url=PAGE).licenses == ("https://site.example/dir/l.xml",)
