"""Conformance edges the Google differential cannot see (Google's parser
shares them, or the corpus never holds them): characters RFC 3986 allows in
a URI only percent-encoded, keys read by prefix, Sitemap lines without a
colon, Request-rate time windows, UTF-16 files, bare URL lines."""

from __future__ import annotations

import re

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from scrapy_rfc9309 import Verdict, parse

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
ALLOWED_IMPLICIT = Verdict.ALLOWED_IMPLICIT
ALLOWED = Verdict.ALLOWED_EXPLICIT
DISALLOWED = Verdict.DISALLOWED_EXPLICIT
TOKEN = "ExampleBot"


def codes(robots) -> set[tuple[int, str]]:
    return {(d.line, d.code) for d in robots.diagnostics}


# -- characters outside RFC 3986's unreserved and reserved sets ------------------------
#
# RFC 3986 2.2/2.3 name the characters a URI may hold as they are; every other
# octet is percent-encoded (2.1), and RFC 9309 2.2.2 compares rule and URL
# after that encoding.  Scrapy always sends them encoded ("/a%3Cd.html"); a
# rule written raw ("/a<d.html"), or a URL given to check() raw, must meet it.

UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
RESERVED = set(":/?#[]@!$&'()*+,;=")
# Written here from the RFC's sets, not taken from the code under test.
OUTSIDE = [c for c in map(chr, range(128)) if c not in UNRESERVED | RESERVED | {"%"}]
# What a rule line can hold raw: not a line end; blanks only inside a value.
RAW_IN_RULE = [c for c in OUTSIDE if c not in "\r\n"]
assert len(OUTSIDE) == 43 and {"<", ">", '"', "{", "}", "|", "\\", "^", "`", " ", "\x00", "\x7f"} <= set(OUTSIDE)
# "[" and "]" are reserved, but RFC 3986 allows them raw only in a host (3.2.2); a path
# or query holds them escaped (3.3, 3.4), as Scrapy (w3lib) sends them: one with their
# escape too (a rule "Allow: /search.php?filter[type]=thread" meets "filter%5Btype%5D")
OUTSIDE += ["[", "]"]
RAW_IN_RULE += ["[", "]"]


def spellings(c: str) -> list[str]:
    """``c`` raw, and escaped with upper- and lower-case hex."""
    hx = f"{ord(c):02X}"
    return [c, "%" + hx, "%" + hx.lower()]


@pytest.mark.parametrize("char", ["<", ">", '"', "{", "}", "|", "\\", "^", "`", " ", "[", "]"])
@pytest.mark.parametrize("allow", [False, True])
def test_issue_characters_raw_in_the_rule_meet_scrapys_escapes(char: str, allow: bool) -> None:
    # the issue's case: "Disallow: /a<d.html" and Scrapy's "/a%3Cd.html"
    key = "Allow" if allow else "Disallow"
    robots = parse(f"User-agent: *\nDisallow: /\n{key}: /a{char}d.html\n")
    expected = ALLOWED if allow else DISALLOWED
    for url in (f"https://example.com/a%{ord(char):02X}d.html", f"/a%{ord(char):02x}d.html", f"/a{char}d.html"):
        decision = robots.check(url, TOKEN)
        assert decision.verdict is expected and decision.rule.line == 3, url


@SETTINGS
@given(
    char=st.sampled_from(OUTSIDE),
    rule_spelling=st.integers(0, 2),
    url_spelling=st.integers(0, 2),
    allow=st.booleans(),
    before=st.sampled_from(["", "a", "dir/", "x%2F"]),
    after=st.sampled_from(["", "b", "/page.html", "?q=1"]),
    absolute=st.booleans(),
)
def test_any_character_outside_the_uri_grammar_raw_or_escaped_gives_one_answer(
    char: str, rule_spelling: int, url_spelling: int, allow: bool, before: str, after: str, absolute: bool
) -> None:
    if char in "\r\n" or (char in " \t" and not after):
        rule_spelling = max(rule_spelling, 1)  # a line end cannot be in a line, a trailing blank is cut
    rule = "/" + before + spellings(char)[rule_spelling] + after
    robots = parse(f"User-agent: *\n{'Allow' if allow else 'Disallow'}: {rule}\nDisallow: /\n")
    origin = "https://example.com" if absolute else ""
    url = origin + "/" + before + spellings(char)[url_spelling] + after + "-tail"
    # asked twice: the second answer comes from the fast path that cuts the remembered origin
    for _ in range(2):
        decision = robots.check(url, TOKEN)
        assert decision.allowed is allow and decision.rule.line == 2, (rule, url)
    # a neighbouring character is another path
    other = chr(ord(char) + 1) if char != "\x7f" else "~"
    if other not in "#%?":
        assert robots.check(origin + "/" + before + other + after, TOKEN).rule.line == 3


@SETTINGS
@given(char=st.sampled_from(RAW_IN_RULE), raw_allow=st.booleans(), upper=st.booleans())
def test_raw_and_escaped_rules_have_one_priority(char: str, raw_allow: bool, upper: bool) -> None:
    # The same pattern in two spellings is one rule length: Allow wins the tie
    # (RFC 9309 2.2.2), whichever spelling each rule uses.  A character
    # outside the grammar counts its three encoded octets either way.
    escaped = spellings(char)[1 if upper else 2]
    allow_value, disallow_value = ("/p" + char + "q", "/p" + escaped + "q")
    if not raw_allow:
        allow_value, disallow_value = disallow_value, allow_value
    robots = parse(f"User-agent: *\nDisallow: {disallow_value}\nAllow: {allow_value}\n")
    decision = robots.check("/p" + escaped.upper() + "q", TOKEN)
    assert decision.verdict is ALLOWED and decision.rule.line == 3
    # "/p" + char + "q" is 6 octets encoded, more than the 4 of "/p*q"
    robots = parse(f"User-agent: *\nDisallow: {disallow_value}\nAllow: /p*q\n")
    assert robots.check("/p" + char + "q", TOKEN).rule.line == 2


def test_priority_counts_the_encoded_octets() -> None:
    # "/a<" is "/a%3C": 5 octets, more than the 4 of "/a*b"
    robots = parse("User-agent: *\nAllow: /a*b\nDisallow: /a<\n")
    assert robots.check("/a<b", TOKEN).verdict is DISALLOWED
    robots = parse("User-agent: *\nAllow: /a<b\nDisallow: /a%3C\n")
    assert robots.check("/a%3Cb", TOKEN).verdict is ALLOWED


@pytest.mark.parametrize(
    "rule, url, expected",
    [
        ("/100%", "/100%25", DISALLOWED),  # a "%" that starts no escape is the octet %25 (RFC 3986 2.4)
        ("/100%", "/100%", DISALLOWED),
        ("/100%25", "/100%", DISALLOWED),
        ("/a%zz", "/a%25zz", DISALLOWED),
        ("/a%2", "/a%2F", ALLOWED_IMPLICIT),  # half an escape is not the escape
        ("/a%", "/a%41", ALLOWED_IMPLICIT),  # "/a%41" is "/aA"
        ("/a%2*", "/a%2Fx", ALLOWED_IMPLICIT),
        ("/a%2*", "/a%2x", DISALLOWED),
    ],
)
def test_percent_that_starts_no_escape(rule: str, url: str, expected: Verdict) -> None:
    assert parse(f"User-agent: *\nDisallow: {rule}\n").check(url, TOKEN).verdict is expected


@SETTINGS
@given(
    before=st.sampled_from(["", "a", "%2F", "\u00e9"]),
    after=st.sampled_from(["", "x", "/", "-1", "%", "%2"]),
    raw_in_rule=st.booleans(),
    raw_in_url=st.booleans(),
)
def test_lone_percent_raw_or_escaped_gives_one_answer(
    before: str, after: str, raw_in_rule: bool, raw_in_url: bool
) -> None:
    # "%" followed by anything but two hex digits; "x", "/" and "-" are not hex
    rule = "/" + before + ("%" if raw_in_rule else "%25") + after
    url = "/" + before + ("%" if raw_in_url else "%25") + after + "/more"
    robots = parse(f"User-agent: *\nDisallow: {rule}\n")
    assert robots.check(url, TOKEN).verdict is DISALLOWED
    assert robots.check("/" + before + "%41" + after, TOKEN).verdict is ALLOWED_IMPLICIT


# -- keys read by prefix -----------------------------------------------------------------


def test_prose_starting_with_a_key_is_no_record() -> None:
    # the issue's case: read as "User-agent: see the docs", the line would
    # end the group of "a" and give its Disallow lines to a crawler "see"
    body = (
        "User-agent: a\n"
        "Allow: /public\n"
        "User-agent must match exactly: see the docs\n"
        "Disallow: /private\n"
        "Sitemap index: see https://example.com/sitemaps.html\n"
    )
    robots = parse(body)
    decision = robots.check("/private", "a")
    assert decision.verdict is DISALLOWED and decision.rule.line == 4
    assert robots.check("/private", "see").verdict is ALLOWED_IMPLICIT
    assert robots.sitemaps == []
    assert {(3, "unknown_key"), (5, "unknown_key")} <= codes(robots)
    messages = {d.line: d.message for d in robots.diagnostics}
    assert "user-agent must match exactly" in messages[3] and "sitemap index" in messages[5]


@pytest.mark.parametrize(
    "key, kind",
    [
        ("Disallowed", "disallow"),
        ("Disallows", "disallow"),
        ("DISALLOWED", "disallow"),
        ("Dissallowed", "disallow"),
        ("disalows", "disallow"),
        ("Allowed", "allow"),
        ("User-agents", "agent"),
        ("useragents", "agent"),
        ("User agents", "agent"),
        ("Disallow ", "disallow-exact"),
        ("Disallow\t", "disallow-exact"),
    ],
)
def test_typo_and_ending_forms_are_still_read(key: str, kind: str) -> None:
    if kind == "agent":
        robots = parse(f"{key}: ExampleBot\nDisallow: /x/y\n")
        assert robots.check("/x/y", "OtherBot").verdict is ALLOWED_IMPLICIT
    elif kind == "allow":
        robots = parse(f"User-agent: *\nDisallow: /x/\n{key}: /x/y\n")
    else:
        robots = parse(f"User-agent: *\nAllow: /x/\n{key}: /x/y\n")
    decision = robots.check("/x/y", TOKEN)
    assert decision.verdict is (ALLOWED if kind == "allow" else DISALLOWED)
    assert decision.rule.pattern == "/x/y"
    if kind == "disallow-exact":
        assert not robots.diagnostics
    else:
        assert any(code == "key_typo" for _, code in codes(robots))


@pytest.mark.parametrize(
    "key",
    ["Disallowance", "Disallow-ish", "Disallow these", "Allowance", "Allow all", "User-agent names",
     "User-agent must match exactly", "Useragent string", "Sitemap index", "Sitemap-url", "Crawl-delayed-by"],
)  # fmt: skip
def test_longer_keys_are_unknown(key: str) -> None:
    _assert_no_record(f"{key}: /x/y")
    _assert_no_record(f"{key}: https://example.com/s.xml")


KEY_FORMS = ["User-agent", "useragent", "user agent", "Allow", "Disallow", "dissallow", "dissalow", "disalow",
             "diasllow", "disallaw", "Sitemap", "site-map", "Crawl-delay", "crawldelay", "Request-rate"]  # fmt: skip


@SETTINGS
@given(
    key=st.sampled_from(KEY_FORMS),
    rest=st.text(alphabet=st.characters(blacklist_characters="#:\r\n", max_codepoint=0x17F), min_size=1, max_size=12),
)
def test_a_key_followed_by_anything_but_an_ending_is_no_record(key: str, rest: str) -> None:
    # Only "s", "ed" or blanks may follow a key (or its typo) before the colon.
    assume(rest.strip(" \t").lower() not in ("", "s", "ed"))
    _assert_no_record(f"{key}{rest}: /x/y")


def _assert_no_record(line: str) -> None:
    """``line``, put between the rules of a group, changes nothing but the
    diagnostics: no rule, no group ended, no sitemap, no crawl rate."""
    robots = parse(f"User-agent: *\nDisallow: /\nAllow: /x/\n{line}\nAllow: /w\n")
    decision = robots.check("/x/y", TOKEN)
    assert decision.verdict is ALLOWED and decision.rule.line == 3  # not a rule of line 4
    decision = robots.check("/w", TOKEN)
    assert decision.verdict is ALLOWED and decision.rule.line == 5  # line 4 started no group
    assert robots.sitemaps == [] and robots.crawl_delay(TOKEN) is None and robots.request_rate(TOKEN) is None
    assert {code for n, code in codes(robots) if n == 4} in ({"unknown_key"}, {"unparsable_line"})


# -- Sitemap (and other keys) with the colon only in the value --------------------------


@pytest.mark.parametrize(
    "line",
    [
        "Sitemap https://example.com/sitemap.xml",
        "Sitemap\thttps://example.com/sitemap.xml",
        "  sitemap   https://example.com/sitemap.xml  # main",
        "SITEMAP https://example.com/sitemap.xml",
        "Sitemaps https://example.com/sitemap.xml",
    ],
)
def test_sitemap_without_colon_is_the_whole_url(line: str) -> None:
    robots = parse(f"User-agent: *\nDisallow: /x\n{line}\n")
    assert robots.sitemaps == ["https://example.com/sitemap.xml"]
    assert (3, "missing_colon") in codes(robots)


@SETTINGS
@given(
    url=st.builds(
        lambda scheme, host, path: f"{scheme}://{host}/{path}",
        st.sampled_from(["http", "https", "HTTPS"]),
        st.sampled_from(["example.com", "example.com:8080", "a.b.example"]),
        st.text(alphabet="abc/.:-_=?&%", max_size=20),
    ),
    sep=st.sampled_from([" ", "\t", "  ", ": ", ":", " : "]),
)
def test_a_sitemap_line_gives_its_whole_url(url: str, sep: str) -> None:
    robots = parse(f"Sitemap{sep}{url}\n")
    assert robots.sitemaps == [url]


@pytest.mark.parametrize("line", ["Sitemap - https://example.com/s.xml", "Sitemap at https://example.com/s.xml"])
def test_sitemap_line_with_more_words_is_dropped(line: str) -> None:
    robots = parse(f"{line}\n")
    assert robots.sitemaps == []
    assert (1, "unknown_key") in codes(robots)


def test_rule_without_colon_keeps_the_colon_of_its_value() -> None:
    # read by its colon, "Disallow /a:b" would be the rule "b", and the
    # User-agent line the agent "1"
    robots = parse("user-agent ExampleBot:1\nDisallow /a:b\n")
    decision = robots.check("/a:b", TOKEN)
    assert decision.verdict is DISALLOWED and decision.rule.pattern == "/a:b"
    assert robots.check("/b", TOKEN).verdict is ALLOWED_IMPLICIT
    assert robots.check("/a:b", "OtherBot").verdict is ALLOWED_IMPLICIT
    assert {(1, "missing_colon"), (2, "missing_colon")} <= codes(robots)


def test_bare_url_line_is_no_sitemap() -> None:
    # docs/deviations.md: a line with no key is no record, whatever it holds
    robots = parse("https://example.com/sitemap.xml\nUser-agent: *\nDisallow: /x\n")
    assert robots.sitemaps == []
    assert (1, "unknown_key") in codes(robots)  # its key is "https"


# -- Request-rate with trailing text --------------------------------------------------


@pytest.mark.parametrize(
    "value, expected",
    [
        ("1/5 9-17", (1, 5.0)),
        ("1/10m 1300-1659", (1, 600.0)),
        ("1/10m 1300 - 1659", (1, 600.0)),
        ("2/1m 08:00-17:30 UTC", (2, 60.0)),
        ("1/5s\t0900-1700 gmt", (1, 5.0)),
    ],
)
def test_request_rate_time_window_is_ignored_with_a_diagnostic(value: str, expected: tuple[int, float]) -> None:
    robots = parse(f"User-agent: *\nRequest-rate: {value}\n")
    assert robots.request_rate(TOKEN) == expected  # kept for all hours
    assert codes(robots) == {(2, "request_rate_window")}


@pytest.mark.parametrize("value", ["1/5 !!", "1/5 per page", "1/5 9-17 weekdays", "1/5 9", "1/5/7", "1/5,2/10"])
def test_request_rate_other_trailing_text_is_invalid(value: str) -> None:
    robots = parse(f"User-agent: *\nRequest-rate: {value}\n")
    assert robots.request_rate(TOKEN) is None
    assert codes(robots) == {(2, "invalid_request_rate")}


# -- UTF-16 ---------------------------------------------------------------------------------

USPS_LIKE = (
    "User-agent: *\r\n\r\nDisallow: /store/ajax/\r\nDisallow: /store/cart/\r\n\r\n"
    "Sitemap: https://store.example.com/store/siteindex.xml"
)


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_with_bom_is_decoded_with_a_diagnostic(codec: str) -> None:
    robots = parse(("\ufeff" + USPS_LIKE).encode(codec))
    assert robots.check("/store/cart/", TOKEN).verdict is DISALLOWED
    assert robots.check("/store/item", TOKEN).verdict is ALLOWED_IMPLICIT
    assert robots.sitemaps == ["https://store.example.com/store/siteindex.xml"]
    assert codes(robots) == {(1, "utf16")}
    assert "UTF-8" in robots.diagnostics[0].message


def test_utf16_non_ascii_and_odd_length() -> None:
    body = "\ufeffUser-agent: *\nDisallow: /caf\u00e9\U0001f600\n".encode("utf-16-le") + b"\x00"
    robots = parse(body)
    assert robots.check("/caf%C3%A9%F0%9F%98%80", TOKEN).verdict is DISALLOWED
    assert (1, "utf16") in codes(robots)


def test_utf16_limit_counts_octets() -> None:
    line = "Disallow: /x\n"
    body = ("\ufeffUser-agent: *\n" + line * 40_000 + "Disallow: /late\n").encode("utf-16-le")
    assert len(body) > 1_000_000
    robots = parse(body)
    assert robots.check("/x", TOKEN).verdict is DISALLOWED
    assert robots.check("/late", TOKEN).verdict is ALLOWED_IMPLICIT
    assert {(1, "utf16")} <= codes(robots) and any(code == "truncated" for _, code in codes(robots))
    assert parse(body, max_bytes=len(body)).check("/late", TOKEN).verdict is DISALLOWED


_SURROGATE = re.compile("[\ud800-\udfff]")
text_line = st.one_of(
    st.sampled_from(["User-agent: *", "User-agent: ExampleBot", "Disallow: /a", "Allow: /a/b", "Disallow: /caf\u00e9",
                     "Sitemap: https://example.com/s.xml", "Crawl-delay: 2", "# \u30c4", "", "Disallow: /*.pdf$"]),
    st.text(max_size=20),
)  # fmt: skip


@SETTINGS
@given(lines=st.lists(text_line, max_size=10), codec=st.sampled_from(["utf-16-le", "utf-16-be"]))
def test_utf16_reads_as_the_same_text_in_utf8(lines: list[str], codec: str) -> None:
    text = "\n".join(lines)
    assume(not _SURROGATE.search(text) and not text.startswith("\ufeff"))
    from_utf8 = parse(text.encode("utf-8"))
    from_utf16 = parse(("\ufeff" + text).encode(codec))
    assert from_utf16.diagnostics[0].code == "utf16"
    assert from_utf16.diagnostics[1:] == from_utf8.diagnostics
    assert from_utf16.sitemaps == from_utf8.sitemaps
    for path in ("/", "/a", "/a/b", "/caf%C3%A9", "/x.pdf"):
        one, other = from_utf16.check(path, TOKEN), from_utf8.check(path, TOKEN)
        assert (one.verdict, one.rule) == (other.verdict, other.rule)
