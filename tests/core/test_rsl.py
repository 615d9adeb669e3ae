"""RSL 1.0 licenses (scrapy_rfc9309.robots.rsl) and robots.txt's License line: no network.

The documents follow rslstandard.org's own examples (the "Prohibit AI training" template, the
RSL Collective's royalty license); the hostile ones are the classic XML attacks.
"""

from __future__ import annotations

import time

from scrapy_rfc9309.robots import parse
from scrapy_rfc9309.robots.rsl import (
    EMPTY,
    MAX_CONTENTS,
    MAX_DIAGNOSTICS,
    MAX_ELEMENTS,
    MAX_FILE_BYTES,
    License,
    holds,
    link_licenses,
    page_licenses,
)
from scrapy_rfc9309.robots.steps import PAUSED, run

URL = "https://pub.example/license.xml"
SHA = "0" * 63 + "1"


def rsl(body: str, ns: str = "https://rslstandard.org/rsl") -> bytes:
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<rsl xmlns="{ns}">\n{body}\n</rsl>\n'.encode()


PROHIBIT_TRAINING = rsl(
    '  <content url="/">\n'
    "    <license>\n"
    '      <prohibits type="usage">ai-train</prohibits>\n'
    "    </license>\n"
    "  </content>"
)
ROYALTY = rsl(
    '  <content url="/" server="https://rslcollective.org/api">\n'
    "    <license>\n"
    '      <permits type="usage">ai-train</permits>\n'
    '      <payment type="royalty"><standard>https://rslcollective.org/license</standard></payment>\n'
    "    </license>\n"
    "  </content>"
)


def values(lic: License, url: str) -> dict[str, bool | None]:
    usage = lic.usage(url)
    return {c: usage[c] for c in usage}


# -- robots.txt's License line ------------------------------------------------------------------
def test_the_license_line_is_file_wide_absolute_and_kept_once_in_order():
    robots = parse(
        "License: https://a.example/l.xml\n"
        "User-agent: Googlebot\nDisallow: /x\n"
        "License: https://b.example/other.xml\n"  # inside a group: still file-wide
        "license: relative.xml\n"
        "LICENSE: https://a.example/l.xml\n"
    )
    assert robots.licenses == ("https://a.example/l.xml", "https://b.example/other.xml")
    assert [(d.line, d.code) for d in robots.diagnostics] == [(5, "license_not_absolute")]
    # the groups are read as before: the License lines take nothing from them
    assert not robots.check("https://e.com/x", "Googlebot").allowed
    assert parse("User-agent: *\nDisallow: /\n").licenses == ()


# -- terms --------------------------------------------------------------------------------------
def test_a_prohibited_use_is_reserved_and_the_source_names_url_hash_and_line():
    lic = License.parse(PROHIBIT_TRAINING, URL, SHA)
    assert not lic.diagnostics
    usage = lic.usage("https://pub.example/any/page")
    assert values(lic, "https://pub.example/a") == {"train-ai": False, "search": None, "ai-input": None}
    (source,) = usage.sources["train-ai"]
    assert (source.origin, source.line) == ("license", 4)
    assert URL in source.text and f"sha256={SHA[:16]}" in source.text and "prohibited" in source.text
    assert str(source).startswith("license line 4: ")


def test_a_use_permitted_against_payment_is_reserved_unless_the_license_is_held():
    assert values(License.parse(ROYALTY, URL, SHA), "https://pub.example/a")["train-ai"] is False
    held = License.parse(ROYALTY, URL, SHA, held=True)
    assert values(held, "https://pub.example/a")["train-ai"] is True
    text = held.usage("https://pub.example/a").sources["train-ai"][0].text
    assert "against royalty" in text and "license held" in text


def test_a_license_server_alone_is_a_condition_and_free_is_free():
    free = rsl(
        '<content url="/f/"><license><permits type="usage">all</permits><payment type="free"/></license></content>\n'
        '<content url="/s/" server="https://ls.example/api"><license><permits type="usage">search</permits></license></content>'
    )
    lic = License.parse(free, URL)
    assert values(lic, "https://pub.example/f/1") == {"train-ai": True, "search": True, "ai-input": True}
    assert values(lic, "https://pub.example/s/1") == {"train-ai": False, "search": False, "ai-input": False}
    assert values(License.parse(free, URL, held=True), "https://pub.example/s/1")["search"] is True


def test_tokens_map_onto_the_categories():
    def permitted(tokens: str) -> dict[str, bool | None]:
        doc = rsl(f'<content url="/"><license><permits type="usage">{tokens}</permits></license></content>')
        return values(License.parse(doc, URL), "https://pub.example/")

    assert permitted("all") == {"train-ai": True, "search": True, "ai-input": True}
    assert permitted("ai-all") == {"train-ai": True, "search": False, "ai-input": True}
    assert permitted("ai-train") == permitted("train-ai") == {"train-ai": True, "search": False, "ai-input": False}
    assert permitted("ai-input") == {"train-ai": False, "search": False, "ai-input": True}
    assert permitted("search, ai-index") == {"train-ai": False, "search": True, "ai-input": False}
    assert permitted("ai-index") == {"train-ai": False, "search": False, "ai-input": False}


def test_alternative_licenses_the_best_one_counts_and_prohibits_wins_within_one():
    doc = rsl(
        "<content url='/'>\n"
        "<license><permits type='usage'>all</permits><prohibits type='usage'>ai-train</prohibits></license>\n"
        "<license><permits type='usage'>ai-train</permits><payment type='subscription'/></license>\n"
        "</content>"
    )
    assert values(License.parse(doc, URL), "https://pub.example/") == {
        "train-ai": False,
        "search": True,
        "ai-input": True,
    }
    assert values(License.parse(doc, URL, held=True), "https://pub.example/")["train-ai"] is True


def test_content_urls_match_as_robots_txt_paths_longest_first_full_urls_on_their_origin():
    doc = rsl(
        '<content url="/"><license><permits type="usage">all</permits></license></content>\n'
        '<content url="/news/*.html$"><license><prohibits type="usage">ai-train</prohibits></license></content>\n'
        '<content url="https://pub.example/caf%C3%A9/"><license><prohibits type="usage">search</prohibits></license></content>'
    )
    lic = License.parse(doc, URL)
    assert values(lic, "https://pub.example/news/a.html")["train-ai"] is False
    assert values(lic, "https://pub.example/news/a.html?x")["train-ai"] is True  # "$" ends the path
    assert values(lic, "https://pub.example/café/x")["search"] is False  # percent-encoding as RFC 9309
    assert values(lic, "http://pub.example/café/x")["search"] is True  # another origin: the full URL does not apply
    nothing = License.parse(
        rsl('<content url="/only/"><license><permits type="usage">all</permits></license></content>')
    )
    assert nothing.usage("https://pub.example/other") == {"train-ai": None, "search": None, "ai-input": None}


def test_unknown_tokens_types_and_bad_urls_are_diagnostics_with_lines():
    doc = rsl(
        '<content url="/">\n<license>\n<permits type="usage">search teleport</permits>\n'
        '<permits type="user">commercial</permits>\n</license>\n</content>\n'
        '<content url="no-slash"><license/></content>'
    )
    lic = License.parse(doc, URL)
    assert [(d.line, d.code) for d in lic.diagnostics] == [
        (5, "rsl_unknown_usage"),
        (6, "rsl_type_not_read"),
        (9, "rsl_content_url_invalid"),
    ]
    assert values(lic, "https://pub.example/")["search"] is True


# -- hostile documents --------------------------------------------------------------------------
def test_entities_are_never_expanded_billion_laughs_and_external_entities_are_refused():
    laughs = b'<?xml version="1.0"?>\n<!DOCTYPE lolz [\n <!ENTITY lol "lol">\n'
    for i in range(1, 10):
        laughs += f' <!ENTITY lol{i} "{("&lol" + (str(i - 1) if i > 1 else "") + ";") * 10}">\n'.encode()
    laughs += b']>\n<rsl xmlns="https://rslstandard.org/rsl"><content url="/"><license>'
    laughs += b'<prohibits type="usage">&lol9;</prohibits></license></content></rsl>'
    external = (
        b'<?xml version="1.0"?><!DOCTYPE r [<!ENTITY x SYSTEM "file:///etc/passwd">]>'
        b'<rsl xmlns="https://rslstandard.org/rsl"><content url="/">&x;</content></rsl>'
    )
    began = time.process_time()
    for body in (laughs, external):
        lic = License.parse(body, URL)
        assert not lic and [(d.line, d.code) for d in lic.diagnostics] == [
            (1 if body is external else 2, "rsl_doctype")
        ]
    assert time.process_time() - began < 1.0  # (expanded, the laughs would be a billion: minutes and gigabytes)
    # an entity used without a DOCTYPE is undefined: not XML, nothing stated
    undefined = License.parse(rsl('<content url="/">&lol;</content>'))
    assert not undefined and undefined.diagnostics[0].code == "rsl_not_xml"


def test_size_elements_depth_and_contents_are_bounded():
    huge = License.parse(rsl("<!--" + "x" * MAX_FILE_BYTES + "-->"))
    assert not huge and huge.diagnostics[0].code == "rsl_too_large"
    many = License.parse(rsl("<x/>" * (MAX_ELEMENTS + 1)))
    assert not many and many.diagnostics[0].code == "rsl_too_many_elements"
    deep = License.parse(rsl("<x>" * 100 + "</x>" * 100))
    assert not deep and deep.diagnostics[0].code == "rsl_too_deep"
    contents = "".join(
        f'<content url="/c{i}/"><license><prohibits type="usage">ai-train</prohibits></license></content>'
        for i in range(MAX_CONTENTS + 10)
    )
    lic = License.parse(rsl(contents))
    assert len(lic) == MAX_CONTENTS and [d.code for d in lic.diagnostics] == ["rsl_too_many_contents"]
    noisy = License.parse(
        rsl('<content url="/"><license>' + "<permits type='geo'>x</permits>" * 100 + "</license></content>")
    )
    assert len(noisy.diagnostics) == MAX_DIAGNOSTICS + 1 and noisy.diagnostics[-1].code == "rsl_more_problems"


def test_wrong_namespace_not_xml_and_odd_bodies_state_nothing():
    wrong = License.parse(PROHIBIT_TRAINING.replace(b"https://rslstandard.org/rsl", b"https://rslstandard.org/rsl/"))
    assert not wrong and [d.code for d in wrong.diagnostics] == ["rsl_no_content"]
    no_ns = License.parse(PROHIBIT_TRAINING.replace(b' xmlns="https://rslstandard.org/rsl"', b""))
    assert not no_ns
    for body in (b"", b"not xml at all", b"\xff\xfe\x00garbage", b"<rsl", b'{"json": 1}', None, "<rsl/>"):
        lic = License.parse(body)
        assert not lic and lic.usage("https://pub.example/") == EMPTY.usage("https://pub.example/")


def test_an_rss_feed_with_the_rsl_module_is_read():
    feed = (
        b'<rss version="2.0" xmlns:rsl="https://rslstandard.org/rsl"><channel><item><title>t</title>'
        b'<rsl:content url="/post/1"><rsl:license><rsl:prohibits type="usage">ai-all</rsl:prohibits>'
        b"</rsl:license></rsl:content></item></channel></rss>"
    )
    assert values(License.parse(feed, URL), "https://pub.example/post/1") == {
        "train-ai": False,
        "search": None,
        "ai-input": False,
    }


def test_parsing_runs_in_steps():
    doc = rsl("<!-- " + "pad " * 8_000 + "-->\n" + PROHIBIT_TRAINING.decode().split("\n", 2)[2].rsplit("</rsl>", 1)[0])
    steps = License.parsing(doc, URL)
    assert run(steps, budget=0.0) is PAUSED  # one step, then the caller's loop may turn
    lic = run(steps)
    assert isinstance(lic, License) and values(lic, "https://pub.example/")["train-ai"] is False


# -- held licenses and Link headers -------------------------------------------------------------
def test_holds_by_url_or_host():
    assert holds(URL, [URL]) and holds(URL, ["pub.example"]) and holds(URL, ["PUB.example."])
    assert not holds(URL, ["https://pub.example/other.xml"]) and not holds(URL, ["example"]) and not holds(URL, [])


def test_link_headers_naming_an_rsl_license():
    lines = [
        b'<https://pub.example/license.xml>; rel="license"; type="application/rsl+xml"',
        b'<https://pub.example/cc>; rel="license", <https://pub.example/p2>; rel="next"',
        b'<https://pub.example/b.xml>; type=application/rsl+xml; rel="alternate license"',
    ]
    assert link_licenses(lines) == ("https://pub.example/license.xml", "https://pub.example/b.xml")
    assert link_licenses(None) == () and link_licenses([b"garbage;;,<>"]) == ()


def test_the_licenses_a_page_names_once_each_with_their_source():
    header = [
        b'</l.xml>; rel="license"; type="application/rsl+xml", <http://[x>; rel=license; type=application/rsl+xml'
    ]
    html = ("https://pub.example/l.xml", "https://pub.example/h.xml")
    assert page_licenses(header, html, "https://pub.example/a/p") == (
        ("https://pub.example/l.xml", "header"),  # resolved against the page, and named by both: once
        ("https://pub.example/h.xml", "html"),
    )
    assert page_licenses(None, (), "https://pub.example/") == ()


def test_the_usage_settings_licenses_key():
    from scrapy_rfc9309.settings import InvalidSetting, Rfc9309Settings

    read = Rfc9309Settings.from_settings
    held = read({"RFC9309_USAGE": {"purposes": ["train-ai"], "licenses": [URL, " pub.example "]}})
    assert held.usage == ("train-ai",) and held.usage_licenses == (URL, "pub.example")
    assert read({"RFC9309_USAGE": ["train-ai"]}).usage_licenses == ()
    for bad in ("pub.example", [1], [""]):
        try:
            read({"RFC9309_USAGE": {"purposes": ["train-ai"], "licenses": bad}})
        except InvalidSetting as exc:
            assert "RFC9309_USAGE['licenses']" in str(exc)
        else:
            raise AssertionError(bad)
