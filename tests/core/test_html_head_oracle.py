"""The head reader against a browser-grade parser (issue 37, item 1).

html5lib follows the HTML standard's parser to the letter (tokenizer, tree
construction, encoding sniffing).  What it puts in ``<head>`` is what a
browser that runs no script puts there (scripting disabled: ``<noscript>``'s
content is parsed; ``<template>``'s content is no part of the document), and
the meta name/content pairs our reader finds must be exactly those, in order:

* the five variants of the issue, written out;
* generated heads mixing comments closed every way the standard closes them
  (``--!>``, ``<!-->``, ``<!--->``, bogus comments), raw text holding
  look-alike tags (script data's escapes included), meta tags after
  ``</head>``, ``<noscript>`` and ``<template>`` in the head, text and tags
  that open the body, and encodings (byte order marks, the header's charset,
  UTF-16 both ways, a meta charset).
"""

from __future__ import annotations

from email.message import Message
from typing import Any
from urllib.parse import urljoin, urlsplit

import html5lib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from selectolax.lexbor import LexborHTMLParser

from scrapy_rfc9309.robots.html_head import read_head

NOAI = '<meta name="robots" content="noai">'
LICENSE = '<link rel="license" type="application/rsl+xml" href="license.xml">'


def _head(body: bytes, http_charset: str | None) -> Any:
    """The ``<head>`` element html5lib builds from ``body`` (the header's charset given as its transport encoding)."""
    header = Message()
    header["Content-Type"] = http_charset or "text/html"
    tree = html5lib.parse(
        body,
        treebuilder="etree",
        namespaceHTMLElements=False,
        transport_encoding=header.get_param("charset"),
        default_encoding="utf-8",  # (ours when nothing names one; html5lib's own is windows-1252)
        useChardet=False,
    )
    return tree.find("head")


def oracle(body: bytes, http_charset: str | None = None) -> list[tuple[str, str]]:
    """The meta name/content pairs html5lib puts in the document's head
    (names as the usage model reads them: stripped, lower-cased)."""
    head = _head(body, http_charset)
    found = []
    for meta in head.iter("meta"):
        name, content = meta.get("name"), meta.get("content")
        if name is not None and content is not None:
            found.append((name.strip(" \t\n\r\f").lower(), content))
    return found


URL = "https://site.example/dir/page.html"


def oracle_licenses(body: bytes, http_charset: str | None = None) -> list[str]:
    """The RSL licenses the ``<link>`` elements html5lib puts in the head name: ``rel`` with the
    token ``license`` and ``type`` ``application/rsl+xml`` (ASCII case-insensitive, parameters
    ignored), a non-empty ``href`` resolved against the document's base URL (the first
    ``<base href>``, not data: or javascript:), kept when http(s), once each.  The base is
    looked for in the head only: our reader stops at the body, and says so (the standard
    would also use a ``<base>`` in the body)."""
    head = _head(body, http_charset)
    base = URL
    for element in head.iter("base"):
        if element.get("href") is not None:
            frozen = urljoin(URL, element.get("href").strip(" \t\n\r\f"))
            if urlsplit(frozen).scheme not in ("data", "javascript"):
                base = frozen
            break
    found: list[str] = []
    for link in head.iter("link"):
        rel = [t.lower() for t in link.get("rel", "").replace("\t", " ").replace("\n", " ").split(" ")]
        media = link.get("type", "").split(";")[0].strip(" \t\n\r\f").lower()
        href = (link.get("href") or "").strip(" \t\n\r\f")
        if "license" in rel and media == "application/rsl+xml" and href:
            url = urljoin(base, href)
            if urlsplit(url).scheme in ("http", "https") and url not in found:
                found.append(url)
    return found


def lexbor(text: str) -> list[tuple[str, str]]:
    """The same from Lexbor (through selectolax), which follows today's standard where
    html5lib 1.1 does not: a ``<template>`` in the head stays in the head."""
    head = LexborHTMLParser(text).head
    found = []
    for meta in head.css("meta") if head is not None else ():
        name, content = meta.attributes.get("name"), meta.attributes.get("content")
        if name is not None and content is not None:
            found.append((name.strip(" \t\n\r\f").lower(), content))
    return found


def ours(body: bytes, http_charset: str | None = None) -> list[tuple[str, str]]:
    return [(m.name, m.content) for m in read_head(body, http_charset).metas]


#: the issue's variants: what html5lib puts in the head, and ours
ISSUE_VARIANTS = {
    "comment closed by --!>": (f"<html><head><!-- a comment --!>{NOAI}</head><body>x</body></html>".encode(), None),
    "meta after </head>": (f"<html><head><title>t</title></head>\n{NOAI}\n<body>x</body></html>".encode(), None),
    "UTF-16LE named by the header": (
        f"<html><head>{NOAI}</head><body>x</body></html>".encode("utf-16-le"),
        "text/html; charset=utf-16le",
    ),
    "UTF-16BE named by the header": (
        f"<html><head>{NOAI}</head><body>x</body></html>".encode("utf-16-be"),
        "text/html; charset=UTF-16BE",
    ),
}


def test_the_issue_variants() -> None:
    for name, (body, charset) in ISSUE_VARIANTS.items():
        expected = oracle(body, charset)
        assert expected == [("robots", "noai")], name
        assert ours(body, charset) == expected, name


PIECES = [
    # comments, closed as the standard closes them
    "<!-- a -->", "<!-- a --!>", "<!-->", "<!--->", "<!---->", "<!-- <!-- a -->", "<!-- a -- b --->",
    "<!---!> still a comment -->", "<!-- --!-->", "<!x>", "<?x ?>", "</ x>", "</>", "</3 y>",
    "<!DOCTYPE html>", "<![CDATA[ x ]]>",
    # look-alike tags inside comments and raw text
    f"<!-- {NOAI} -->", f"<!-- --!> {NOAI} -->", f"<!-- -- !> {NOAI} -->",
    f"<script>'{NOAI}'</script>", f"<script><!-- {NOAI} --></script>",
    f"<script><!--<script></script>{NOAI}--></script>", f"<script><!--<script>--></script>{NOAI}",
    f"<script></scriptx>{NOAI}</script>", f"<SCRIPT type=x>{NOAI}</Script >",
    f"<style>{NOAI}</style>", "<style></style x='>'>", f"<title>{NOAI}</title>", f"<title></titlex>{NOAI}</title>",
    f"<noframes>{NOAI}</noframes>", f"<textarea>{NOAI}</textarea>",
    # the head's structure
    "<html>", "<head>", "</head>", "<head>", "<body>", "</body>", "</html>", "</br>", "<br>", "<div>", "</div>",
    "x", "&amp;", " ", "\n", "\t", "<link rel=x>", "<base href=/>", "<noscript>", "</noscript>",
    "<template>", "</template>", f"<template>{NOAI}</template>", "<frameset>", "< x", "<p>",
    # meta tags
    NOAI, NOAI, NOAI, '<meta name="ExampleBot" content="noindex">', "<meta name=tdm-reservation content=1>",
    "<meta content=x name=viewport>", "<META NAME=ROBOTS CONTENT=NOAI/>", '<meta charset="latin1">',
    '<meta http-equiv="content-type" content="text/html; charset=utf-16">',
    # RSL license links, and the base URL they are resolved against
    LICENSE, LICENSE, f"<!-- {LICENSE} -->", f"<script>{LICENSE}</script>", f"<title>{LICENSE}</title>",
    '<LINK REL="Alternate  LICENSE" TYPE="Application/RSL+XML; charset=utf-8" href=l2.xml>',
    '<link rel="&#108;icense" type="application/rsl&#43;xml" href="&#47;l3.xml?a=1&amp;b=2">',
    '<link rel="license" type="application/rsl+xml" href="https://other.example/l4.xml">',
    "<link rel=licenses type=application/rsl+xml href=/no1>", "<link rel=license type=text/xml href=/no2>",
    "<link rel=license type=application/rsl+xml>", '<link rel=license type=application/rsl+xml href=" ">',
    "<link rel=license type=application/rsl+xml href=mailto:a@b>", '<link rel="stylesheet" href="/s.css?a&amp;b">',
    '<base href="/sub/">', '<base href="https://cdn.example/x/">', "<base target=_blank>", '<base href="javascript:x">',
]  # fmt: skip
ENCODINGS = [
    ("utf-8", b"", None),
    ("utf-8", b"\xef\xbb\xbf", None),
    ("utf-16-le", b"\xff\xfe", None),
    ("utf-16-be", b"\xfe\xff", None),
    ("utf-16-le", b"", "text/html; charset=utf-16le"),
    ("utf-16-be", b"", "text/html; charset=utf-16be"),
    ("utf-16-le", b"", "text/html; charset=utf-16"),
    ("utf-8", b"", "text/html; charset=utf-8"),
    ("cp1252", b"", "text/html; charset=iso-8859-1"),
    ("utf-16-le", b"\xff\xfe", "text/html; charset=utf-8"),  # the BOM wins
]


SETTINGS = settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: html5lib 1.1 predates ``<template>`` (it ends the head there, as any unknown element)
NO_TEMPLATE = [p for p in PIECES if "template" not in p]


@SETTINGS
@given(st.lists(st.sampled_from(NO_TEMPLATE), max_size=14), st.sampled_from(ENCODINGS))
def test_agrees_with_html5lib(pieces: list[str], encoding: tuple[str, bytes, str | None]) -> None:
    codec, bom, header = encoding
    body = bom + "".join(pieces).encode(codec)
    assert ours(body, header) == oracle(body, header)
    assert list(read_head(body, header, url=URL).licenses) == oracle_licenses(body, header)


def test_license_links_as_html5lib_finds_them() -> None:
    cases = {
        f"<head>{LICENSE}</head><body>x": [f"{URL.rsplit('/', 1)[0]}/license.xml"],
        f'<head><base href="/sub/"></head>{LICENSE}<body>': ["https://site.example/sub/license.xml"],
        f'<!-- x --!>{LICENSE}<base href="//cdn.example/"><body>': ["https://cdn.example/license.xml"],
        '<link rel="&#108;icense" type="application/rsl&#43;xml" href="&#47;l3.xml?a=1&amp;b=2">'
        f"<script>{LICENSE}</script>" + LICENSE.replace("license.xml", "https://other.example/l4.xml"): [
            "https://site.example/l3.xml?a=1&b=2",
            "https://other.example/l4.xml",
        ],
        '<LINK REL="Alternate  LICENSE" TYPE="Application/RSL+XML; charset=utf-8" href=l2.xml>'
        '<base href="javascript:x"><link rel=licenses type=application/rsl+xml href=/no1>': [
            "https://site.example/dir/l2.xml"
        ],
    }
    for doc, expected in cases.items():
        assert oracle_licenses(doc.encode()) == expected, doc
        assert list(read_head(doc.encode(), url=URL).licenses) == expected, doc


@SETTINGS
@given(st.lists(st.sampled_from(PIECES), max_size=14))
def test_agrees_with_lexbor(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert ours(text.encode()) == lexbor(text)


# -- attributes in every form, and tags around them ----------------------------------------------

WORDS = ["robots", "ExampleBot", "tdm-reservation", "noai", "1", "a b", "x&amp;y", "&#65;", "caf\u00e9", ""]


@st.composite
def attribute(draw) -> str:
    name = draw(st.sampled_from(["name", "NAME", "content", "Content", "charset-x", "id", "data-a"]))
    value = draw(st.sampled_from(WORDS))
    form = draw(st.sampled_from(["dq", "sq", "bare", "spaced", "none"]))
    if form == "bare":
        value = value.replace(" ", "").replace("&", "") or "v"
        return f"{name}={value}"
    if form == "none":
        return name
    if form == "sq":
        return f"{name}='{value}'"
    if form == "spaced":
        return f'{name} = "{value}"'
    return f'{name}="{value}"'


@st.composite
def document(draw) -> str:
    parts = []
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.sampled_from(["meta", "meta", "meta", "comment", "script", "title", "text", "other", "end"]))
        if kind == "meta":
            attrs = draw(st.lists(attribute(), max_size=4))
            close = draw(st.sampled_from([">", "/>", " />"]))
            parts.append(f"<{draw(st.sampled_from(['meta', 'META', 'Meta']))} {' '.join(attrs)}{close}")
        elif kind == "comment":
            parts.append('<!-- <meta name="robots" content="hidden"> -->')
        elif kind == "script":
            parts.append('<script>var a = "<meta name=robots content=hidden>";</script>')
        elif kind == "title":
            parts.append("<title>a <b> c</title>")
        elif kind == "text":
            parts.append(draw(st.sampled_from(["\n", "  ", "text", "a < b"])))
        elif kind == "other":
            parts.append(draw(st.sampled_from(['<link rel="x" href="/a>b">', "<div class=a>", "<br/>", "<x-y z>"])))
        else:
            parts.append(draw(st.sampled_from(["</head>", "<body>", "</div>"])))
    return "".join(parts)


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document())
def test_attribute_forms_agree_with_html5lib(doc: str) -> None:
    body = doc.encode("utf-8")
    assert ours(body) == oracle(body)
