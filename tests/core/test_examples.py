"""RFC 9309's examples and every semantic of issue 2, one test (or one
parametrised family) per rule.

Each expected answer is derived from the RFC text or the issue, never copied
from the code's output: the comments say why a verdict follows.
"""

from __future__ import annotations

import time

import pytest

from scrapy_rfc9309 import Decision, Diagnostic, RobotsTxt, Rule, Verdict, parse
from scrapy_rfc9309.robots import check_token

ALLOWED_EXPLICIT = Verdict.ALLOWED_EXPLICIT
ALLOWED_IMPLICIT = Verdict.ALLOWED_IMPLICIT
DISALLOWED = Verdict.DISALLOWED_EXPLICIT


def verdict(body: str | bytes, url: str, token: str = "ExampleBot", **kwargs) -> Verdict:
    return parse(body, **kwargs).check(url, token).verdict


def codes(robots: RobotsTxt) -> set[tuple[int, str]]:
    return {(d.line, d.code) for d in robots.diagnostics}


def comment_filler(size: int) -> bytes:
    """Exactly ``size`` bytes of comment lines (``size`` is 0 or at least 2)."""
    assert size == 0 or size >= 2
    full, rest = divmod(size, 100)
    out = (b"#" * 99 + b"\n") * full
    if rest == 1:  # fold the odd byte into the last full line
        out = out[:-100] + b"#" * 100 + b"\n"
    elif rest:
        out += b"#" * (rest - 1) + b"\n"
    assert len(out) == size
    return out


# -- the worked table of issue 2 -----------------------------------------------

DOCS = "User-agent: *\nDisallow: /docs\nAllow: /docs/public\n"


@pytest.mark.parametrize(
    "body, url, expected",
    [
        ("User-agent: *\nDisallow: /private\n", "/private/a", DISALLOWED),
        ("User-agent: *\nDisallow: /private\n", "/public", ALLOWED_IMPLICIT),
        (DOCS, "/docs/public/a", ALLOWED_EXPLICIT),
        (DOCS, "/docs/secret", DISALLOWED),
        ("User-agent: *\nDisallow: /*.pdf$\n", "/file.pdf", DISALLOWED),
        ("User-agent: *\nDisallow: /*.pdf$\n", "/file.pdf?x=1", ALLOWED_IMPLICIT),
    ],
)
def test_issue_worked_table(body: str, url: str, expected: Verdict) -> None:
    assert verdict(body, url) is expected
    assert verdict(body, "https://example.com" + url) is expected


# -- RFC 9309 section 5 ----------------------------------------------------------

RFC_SIMPLE = """\
User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
"""


@pytest.mark.parametrize(
    "token, path, expected, line",
    [
        # "*": /publications/ allowed, /example/ and *.gif disallowed
        ("OtherBot", "/publications/paper", ALLOWED_EXPLICIT, 4),
        ("OtherBot", "/example/thing", DISALLOWED, 3),
        ("OtherBot", "/images/logo.gif", DISALLOWED, 2),
        ("OtherBot", "/images/logo.gif?v=2", ALLOWED_IMPLICIT, None),  # '$' ends the match
        ("OtherBot", "/a/b", ALLOWED_IMPLICIT, None),
        # "/publications/" (14 octets) is longer than "*.gif$" (6)
        ("OtherBot", "/publications/figure.gif", ALLOWED_EXPLICIT, 4),
        # foobot: only its own group; '*' rules (*.gif$) do not apply
        ("foobot", "/example/page.html", ALLOWED_EXPLICIT, 8),
        ("foobot", "/example/allowed.gif", ALLOWED_EXPLICIT, 9),
        ("foobot", "/example/other.gif", DISALLOWED, 7),
        ("foobot", "/publications/paper", DISALLOWED, 7),
        # barbot and bazbot share the group; everything else is allowed
        ("barbot", "/example/page.html", DISALLOWED, 13),
        ("bazbot", "/example/page.html", DISALLOWED, 13),
        ("barbot", "/example/other", ALLOWED_IMPLICIT, None),
        ("bazbot", "/images/logo.gif", ALLOWED_IMPLICIT, None),
        # quxbot: empty group at the end of the file allows everything
        ("quxbot", "/example/page.html", ALLOWED_IMPLICIT, None),
        ("quxbot", "/images/logo.gif", ALLOWED_IMPLICIT, None),
    ],
)
def test_rfc_simple_example(token: str, path: str, expected: Verdict, line: int | None) -> None:
    decision = parse(RFC_SIMPLE).check(path, token)
    assert decision.verdict is expected
    assert (decision.rule.line if decision.rule else None) == line


def test_rfc_longest_match_example() -> None:
    robots = parse("User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n")
    assert robots.check("https://example.com/example/page/disallowed.gif", "foobot").verdict is DISALLOWED
    assert robots.check("https://example.com/example/page/other.gif", "foobot").verdict is ALLOWED_EXPLICIT


def test_rfc_merge_example() -> None:
    robots = parse("user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: ExampleBot\ndisallow: /baz\n")
    for path, line in (("/foo", 2), ("/bar", 3), ("/baz", 6)):
        decision = robots.check(path, "ExampleBot")
        assert decision.verdict is DISALLOWED and decision.rule.line == line
    assert robots.check("/qux", "ExampleBot").verdict is ALLOWED_IMPLICIT


def test_rfc_star_fallback_example() -> None:
    robots = parse("user-agent: *\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: BazBot\ndisallow: /baz\n")
    assert robots.check("/foo", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/bar", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/baz", "ExampleBot").verdict is ALLOWED_IMPLICIT


@pytest.mark.parametrize(
    "body",
    ["", "\n\n", "# only a comment\n", "Sitemap: https://example.com/s.xml\n", "User-agent: BazBot\nDisallow: /\n"],
)
def test_rfc_no_group_applies(body: str) -> None:
    decision = parse(body).check("/anything", "ExampleBot")
    assert decision.verdict is ALLOWED_IMPLICIT and decision.allowed and decision.rule is None


# -- input: bytes, str, BOM, charset -------------------------------------------------


def test_bytes_and_str_read_alike() -> None:
    text = "User-agent: *\nDisallow: /private\n"
    assert verdict(text, "/private/a") is DISALLOWED
    assert verdict(text.encode(), "/private/a") is DISALLOWED


@pytest.mark.parametrize("bom", [b"\xef\xbb\xbf", b"\xef\xbb", b"\xef"])
def test_utf8_bom_full_or_partial_is_skipped(bom: bytes) -> None:
    # Kept, the BOM would glue onto "User-agent" and the only rule would be
    # outside any group, allowing everything.
    robots = parse(bom + b"User-agent: *\nDisallow: /x\n")
    assert robots.check("/x", "ExampleBot").verdict is DISALLOWED
    assert (1, "bom") in codes(robots)


def test_bom_in_str_is_skipped() -> None:
    robots = parse("\ufeffUser-agent: *\nDisallow: /x\n")
    assert robots.check("/x", "ExampleBot").verdict is DISALLOWED
    assert (1, "bom") in codes(robots)


def test_invalid_utf8_falls_back_to_latin1_with_diagnostic() -> None:
    robots = parse(b"User-agent: *\nDisallow: /caf\xe9\nDisallow: /other\n")
    # \xe9 is "é" in ISO-8859-1; the rest of the file is still read
    assert robots.check("/caf\u00e9", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/other", "ExampleBot").verdict is DISALLOWED
    assert (2, "invalid_utf8") in codes(robots)


@pytest.mark.parametrize("content_type", ["text/plain; charset=windows-1252", b"text/plain;charset=Windows-1252"])
def test_invalid_utf8_uses_content_type_charset(content_type: str | bytes) -> None:
    body = b"User-agent: *\nDisallow: /price-\x80\n"  # 0x80 is the euro sign in windows-1252
    robots = parse(body, content_type=content_type)
    assert robots.check("/price-\u20ac", "ExampleBot").verdict is DISALLOWED
    assert (2, "invalid_utf8") in codes(robots)
    # without the header, ISO-8859-1 reads 0x80 as U+0080, not the euro sign
    assert verdict(body, "/price-\u20ac") is ALLOWED_IMPLICIT


def test_valid_utf8_wins_over_content_type_charset() -> None:
    body = "User-agent: *\nDisallow: /caf\u00e9\n".encode()
    robots = parse(body, content_type="text/plain; charset=iso-8859-1")
    assert robots.check("/caf\u00e9", "ExampleBot").verdict is DISALLOWED
    assert not any(d.code == "invalid_utf8" for d in robots.diagnostics)


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "text/plain; charset=utf-8",  # declared UTF-8 but is not: ISO-8859-1
        "text/plain; charset=no-such-codec",
        "text/plain; charset=base64",  # a codec, but not a text encoding
        "text/plain; charset=undefined",  # a codec whose decoding always fails
    ],
)
def test_unusable_charset_falls_back_to_latin1(content_type: str | None) -> None:
    robots = parse(b"User-agent: *\nDisallow: /caf\xe9\n", content_type=content_type)
    assert robots.check("/caf\u00e9", "ExampleBot").verdict is DISALLOWED
    assert (2, "invalid_utf8") in codes(robots)


@pytest.mark.parametrize("end", [b"\n", b"\r", b"\r\n"])
def test_one_bad_line_leaves_the_other_lines_utf8(end: bytes) -> None:
    # with no charset declared, only the lines with invalid bytes are ISO-8859-1
    body = end.join([b"User-agent: *", "Disallow: /caf\u00e9".encode(), b"Disallow: /x\xff", b""])
    robots = parse(body)
    assert robots.check("/caf\u00e9", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/x\u00ff", "ExampleBot").verdict is DISALLOWED
    assert (3, "invalid_utf8") in codes(robots)


def test_character_starting_like_a_bom_is_kept() -> None:
    # U+FF01 is EF BC 81: its first octet is not a partial byte order mark
    robots = parse("Disallow: /\uff01\nUser-agent: *\nDisallow: /x\n".encode())
    assert not any(d.code == "bom" for d in robots.diagnostics)
    assert robots.check("/x", "ExampleBot").verdict is DISALLOWED


def test_invalid_utf8_line_number_with_cr_line_ends() -> None:
    robots = parse(b"User-agent: *\rDisallow: /a\rDisallow: /\xff\r")
    assert (3, "invalid_utf8") in codes(robots)


def test_lines_split_on_cr_lf_and_crlf() -> None:
    robots = parse(b"User-agent: *\rDisallow: /a\r\nDisallow: /b\nDisallow: /c\r\rDisallow: /d")
    # "\r\n" is one line end; "\r\r" is two (an empty line 5)
    for path, line in (("/a", 2), ("/b", 3), ("/c", 4), ("/d", 6)):
        decision = robots.check(path, "ExampleBot")
        assert decision.verdict is DISALLOWED and decision.rule.line == line


@pytest.mark.parametrize("sep", ["\u2028", "\u2029", "\x0b", "\x0c", "\x85", "\x1c", "\x1d", "\x1e"])
def test_no_split_on_other_line_separators(sep: str) -> None:
    body = f"User-agent: *\nDisallow: /a{sep}Disallow: /b\n"
    for robots in (parse(body), parse(body.encode())):
        # one rule whose pattern contains the separator: "/b" is not a rule
        assert robots.check("/b", "ExampleBot").verdict is ALLOWED_IMPLICIT
        assert robots.check("/a", "ExampleBot").verdict is ALLOWED_IMPLICIT
        decision = robots.check(f"/a{sep}Disallow: /b", "ExampleBot")
        assert decision.verdict is DISALLOWED and decision.rule.line == 2


def test_only_space_and_tab_are_whitespace() -> None:
    robots = parse("User-agent: *\nDisallow: \t/y \t\nDisallow:\x0c/x\nDisallow:\u00a0/z\n")
    assert robots.check("/y", "ExampleBot").verdict is DISALLOWED
    # "\x0c/x" and "\u00a0/z" do not start with "/": they match no path
    assert robots.check("/x", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert robots.check("/z", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert {(3, "pattern_not_absolute"), (4, "pattern_not_absolute")} <= codes(robots)


# -- limits ------------------------------------------------------------------------------

HEAD = b"User-agent: *\nDisallow: /early\n"
LATE = b"Disallow: /late"


def _limit_body() -> bytes:
    """ "Disallow: /late" ends exactly at byte 512,000; "Disallow: /after" follows."""
    filler = comment_filler(512_000 - len(HEAD) - len(LATE))
    body = HEAD + filler + LATE
    assert len(body) == 512_000
    return body + b"\nDisallow: /after\n"


def test_first_512000_bytes_are_parsed() -> None:
    robots = parse(_limit_body())
    assert robots.check("/early", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/late", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/after", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert any(d.code == "truncated" for d in robots.diagnostics)


def test_exactly_512000_bytes_is_not_truncated() -> None:
    robots = parse(_limit_body()[:512_000])
    assert robots.check("/late", "ExampleBot").verdict is DISALLOWED
    assert not any(d.code == "truncated" for d in robots.diagnostics)


def test_parse_limit_is_configurable_upwards() -> None:
    robots = parse(_limit_body(), max_bytes=600_000)
    assert robots.check("/after", "ExampleBot").verdict is DISALLOWED
    assert not any(d.code == "truncated" for d in robots.diagnostics)


@pytest.mark.parametrize("max_bytes", [0, 1_000, 500_000, 511_999])
def test_parse_limit_never_below_500_kib(max_bytes: int) -> None:
    robots = parse(_limit_body(), max_bytes=max_bytes)
    assert robots.check("/late", "ExampleBot").verdict is DISALLOWED  # bytes 511,985..512,000
    assert robots.check("/after", "ExampleBot").verdict is ALLOWED_IMPLICIT


def test_parse_limit_counts_utf8_bytes_of_str() -> None:
    # 300,000 characters of "é" are 600,000 bytes: "/late" is past the limit
    body = "User-agent: *\nDisallow: /early\n#" + "\u00e9" * 300_000 + "\nDisallow: /late\n"
    for robots in (parse(body), parse(body.encode())):
        assert robots.check("/early", "ExampleBot").verdict is DISALLOWED
        assert robots.check("/late", "ExampleBot").verdict is ALLOWED_IMPLICIT
        assert any(d.code == "truncated" for d in robots.diagnostics)


def test_long_line_cut_at_16663_bytes() -> None:
    # "Disallow: " is 10 bytes, so 16,653 bytes of the pattern are kept
    body = "User-agent: *\nDisallow: /" + "a" * 20_000 + "\nDisallow: /next\n"
    robots = parse(body)
    assert robots.check("/" + "a" * 16_652 + "Z", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/" + "a" * 16_651 + "Z", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert robots.check("/next", "ExampleBot").rule.line == 3
    assert (2, "line_too_long") in codes(robots)


def test_long_line_cut_inside_a_character_drops_it() -> None:
    # 12 bytes of "Disallow: /x" + 16,651 bytes = 8,325 "é" and half of one
    body = "User-agent: *\nDisallow: /x" + "\u00e9" * 9_000 + "\n"
    robots = parse(body.encode())
    assert robots.check("/x" + "\u00e9" * 8_325, "ExampleBot").verdict is DISALLOWED
    assert robots.check("/x" + "\u00e9" * 8_324 + "a", "ExampleBot").verdict is ALLOWED_IMPLICIT


# -- records and leniency ------------------------------------------------------------


@pytest.mark.parametrize(
    "ua, dis", [("user-agent", "disallow"), ("USER-AGENT", "DISALLOW"), ("uSeR-aGeNt", "dIsAlLoW")]
)
def test_keys_are_case_insensitive(ua: str, dis: str) -> None:
    robots = parse(f"{ua}: *\n{dis}: /x\n")
    assert robots.check("/x", "ExampleBot").verdict is DISALLOWED
    assert not robots.diagnostics


def test_comments_anywhere() -> None:
    robots = parse("User-agent: * # everyone\nDisallow: /a#b\n# Disallow: /c\nDisallow: /d   # note\n")
    decision = robots.check("/ab", "ExampleBot")
    assert decision.verdict is DISALLOWED and decision.rule.pattern == "/a"
    assert robots.check("/c", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert robots.check("/d", "ExampleBot").rule.pattern == "/d"


def test_key_by_prefix() -> None:
    robots = parse("User-agent: *\nDisallowed: /x\n")
    assert robots.check("/x", "ExampleBot").verdict is DISALLOWED
    assert (2, "key_typo") in codes(robots)


@pytest.mark.parametrize("typo", ["disalow", "dissallow", "dissalow", "diasllow", "disallaw", "Dissallow", "DISALOW"])
def test_disallow_typos(typo: str) -> None:
    robots = parse(f"User-agent: *\n{typo}: /x\n")
    assert robots.check("/x", "ExampleBot").verdict is DISALLOWED
    assert (2, "key_typo") in codes(robots)


@pytest.mark.parametrize("typo", ["useragent", "user agent", "User Agent", "UserAgent"])
def test_user_agent_typos(typo: str) -> None:
    robots = parse(f"{typo}: ExampleBot\nDisallow: /x\n")
    assert robots.check("/x", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/x", "OtherBot").verdict is ALLOWED_IMPLICIT
    assert (1, "key_typo") in codes(robots)


@pytest.mark.parametrize("typo", ["alow", "allw", "allo", "Alow", "ALOW"])
def test_no_typo_leniency_for_allow(typo: str) -> None:
    robots = parse(f"User-agent: *\nDisallow: /\n{typo}: /x\n")
    decision = robots.check("/x", "ExampleBot")
    assert decision.verdict is DISALLOWED and decision.rule.line == 2
    assert (3, "unknown_key") in codes(robots)


def test_missing_colon_with_two_tokens() -> None:
    robots = parse("User-agent ExampleBot\nDisallow /x\nDisallow\t/y\n")
    assert robots.check("/x", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/y", "ExampleBot").verdict is DISALLOWED
    assert {(1, "missing_colon"), (2, "missing_colon"), (3, "missing_colon")} <= codes(robots)


@pytest.mark.parametrize("line", ["Disallow /x /y", "Disallow /x extra words", "Disallow/x"])
def test_missing_colon_otherwise_no_record(line: str) -> None:
    robots = parse(f"User-agent: *\n{line}\n")
    assert robots.check("/x", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert (2, "unparsable_line") in codes(robots)


def test_bare_key_is_no_record() -> None:
    # "Disallow" alone (no colon, no value) is not a rule, so it does not end
    # the run of User-agent lines; "User-agent" alone starts no group.
    robots = parse("User-agent: a\nDisallow\nUser-agent: ExampleBot\nDisallow: /x\n")
    assert robots.check("/x", "a").verdict is DISALLOWED
    robots = parse("User-agent: *\nDisallow: /a\nUser-agent\nDisallow: /b\n")
    assert robots.check("/b", "ExampleBot").verdict is DISALLOWED
    assert (3, "unparsable_line") in codes(robots)


def test_unknown_keys_are_ignored() -> None:
    robots = parse("User-agent: *\nNoindex: /x\nFrobnicate: /y\nDisallow: /z\n")
    assert robots.check("/x", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert robots.check("/y", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert robots.check("/z", "ExampleBot").verdict is DISALLOWED
    assert {(2, "unknown_key"), (3, "unknown_key")} <= codes(robots)


def test_every_leniency_is_reported_with_its_line() -> None:
    body = "\n".join(
        [
            "Disallow: /first",  # 1 outside_group
            "User-agent: ExampleBot/2.1",  # 2 user_agent_trimmed
            "Disallowed: /a",  # 3 key_typo
            "Disallow /b",  # 4 missing_colon
            "Crawl-delay: soon",  # 5 invalid_crawl_delay
            "Request-rate: fast",  # 6 invalid_request_rate
            "Frobnicate: yes",  # 7 unknown_key
            "Disallow: c",  # 8 pattern_not_absolute
            "this is not a record",  # 9 unparsable_line
            "Sitemap: /relative.xml",  # 10 sitemap_not_absolute
            "User-agent: %%%",  # 11 user_agent_invalid
        ]
    )
    robots = parse(body)
    expected = {
        (1, "outside_group"),
        (2, "user_agent_trimmed"),
        (3, "key_typo"),
        (4, "missing_colon"),
        (5, "invalid_crawl_delay"),
        (6, "invalid_request_rate"),
        (7, "unknown_key"),
        (8, "pattern_not_absolute"),
        (9, "unparsable_line"),
        (10, "sitemap_not_absolute"),
        (11, "user_agent_invalid"),
    }
    assert expected <= codes(robots)
    for diag in robots.diagnostics:
        assert isinstance(diag, Diagnostic) and diag.message
        assert str(diag).startswith(f"line {diag.line}: {diag.code}")
    # the leniencies took effect: /a and /b are rules of ExampleBot's group
    assert robots.check("/a", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/b", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/first", "ExampleBot").verdict is ALLOWED_IMPLICIT


def test_clean_file_has_no_diagnostics() -> None:
    assert parse(RFC_SIMPLE.replace("EOF\n", "")).diagnostics == []


# -- groups -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "between",
    [
        "",
        "# a comment",
        "Crawl-delay: 5",
        "Request-rate: 1/5",
        "Sitemap: https://example.com/sitemap.xml",
        "Host: example.com",
        "Frobnicate: yes",
        "Crawl-delay: 5\n\nSitemap: https://example.com/s.xml",
    ],
)
def test_user_agent_run_not_ended_by_other_lines(between: str) -> None:
    robots = parse(f"User-agent: a\n{between}\nUser-agent: ExampleBot\nDisallow: /x\n")
    assert robots.check("/x", "a").verdict is DISALLOWED
    assert robots.check("/x", "ExampleBot").verdict is DISALLOWED


@pytest.mark.parametrize("rule", ["Disallow: /y", "Allow: /y", "Disallow:", "Allow:"])
def test_allow_or_disallow_line_ends_the_run(rule: str) -> None:
    robots = parse(f"User-agent: a\n{rule}\nUser-agent: ExampleBot\nDisallow: /x\n")
    assert robots.check("/x", "a").verdict is ALLOWED_IMPLICIT
    assert robots.check("/x", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/y", "ExampleBot").verdict is ALLOWED_IMPLICIT


def test_records_before_first_user_agent_are_ignored() -> None:
    robots = parse("Disallow: /x\nAllow: /y\nCrawl-delay: 3\nUser-agent: *\nDisallow: /z\n")
    assert robots.check("/x", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert robots.check("/z", "ExampleBot").verdict is DISALLOWED
    assert robots.crawl_delay("ExampleBot") is None
    assert {(1, "outside_group"), (2, "outside_group"), (3, "outside_group")} <= codes(robots)


def test_star_groups_are_merged() -> None:
    robots = parse("User-agent: *\nDisallow: /a\n\nUser-agent: x\nDisallow: /b\n\nUser-agent: *\nDisallow: /c\n")
    assert robots.check("/a", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/b", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert robots.check("/c", "ExampleBot").verdict is DISALLOWED


def test_star_ignored_when_a_group_names_the_token() -> None:
    robots = parse("User-agent: *\nDisallow: /a\nCrawl-delay: 9\n\nUser-agent: ExampleBot\nDisallow: /b\n")
    assert robots.check("/a", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert robots.check("/b", "ExampleBot").verdict is DISALLOWED
    assert robots.crawl_delay("ExampleBot") is None
    assert robots.check("/a", "OtherBot").verdict is DISALLOWED
    assert robots.check("/b", "OtherBot").verdict is ALLOWED_IMPLICIT
    assert robots.crawl_delay("OtherBot") == 9.0


def test_star_ignored_even_when_the_named_group_is_empty() -> None:
    robots = parse("User-agent: *\nDisallow: /\n\nUser-agent: ExampleBot\n")
    assert robots.check("/a", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert robots.check("/a", "OtherBot").verdict is DISALLOWED


def test_group_naming_star_and_token() -> None:
    robots = parse("User-agent: *\nUser-agent: ExampleBot\nDisallow: /a\n\nUser-agent: *\nDisallow: /b\n")
    # ExampleBot is named by the first group only; OtherBot gets both '*' groups
    assert robots.check("/a", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/b", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert robots.check("/a", "OtherBot").verdict is DISALLOWED
    assert robots.check("/b", "OtherBot").verdict is DISALLOWED


# -- product tokens -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "token", ["", "Example Bot", "ExampleBot/1.0", "ExampleBot1", "Ex\u00e4mpleBot", "*", "bot.", " ExampleBot"]
)
def test_invalid_product_token_is_a_value_error(token: str) -> None:
    robots = parse("User-agent: *\nDisallow: /\n")
    for ask in (robots.check, robots.can_fetch):
        with pytest.raises(ValueError, match="product token") as info:
            ask("/", token)
        assert repr(token) in str(info.value)
    for ask_token in (robots.crawl_delay, robots.request_rate, check_token):
        with pytest.raises(ValueError, match="product token"):
            ask_token(token)


@pytest.mark.parametrize("token", ["a", "Example_Bot", "example-bot", "EXAMPLEBOT", "_-"])
def test_valid_product_tokens(token: str) -> None:
    assert check_token(token) == token.lower()
    assert parse("User-agent: *\nDisallow: /\n").check("/x", token).verdict is DISALLOWED


@pytest.mark.parametrize("value", ["ExampleBot/2.1", "ExampleBot 2.1", "ExampleBot (compatible)", "ExampleBot;"])
def test_user_agent_value_cut_to_product_token(value: str) -> None:
    robots = parse(f"User-agent: {value}\nDisallow: /x\n")
    assert robots.check("/x", "ExampleBot").verdict is DISALLOWED
    assert (1, "user_agent_trimmed") in codes(robots)


@pytest.mark.parametrize("value", ["* anything", "*\tfoo", "*"])
def test_star_followed_by_blank_is_star(value: str) -> None:
    assert verdict(f"User-agent: {value}\nDisallow: /x\n", "/x") is DISALLOWED


def test_star_glued_to_text_is_no_agent() -> None:
    # the leading [A-Za-z_-] run of "*bot" is empty: the group names no crawler
    assert verdict("User-agent: *bot\nDisallow: /x\n", "/x") is ALLOWED_IMPLICIT


@pytest.mark.parametrize("token", ["ExampleBot", "examplebot", "EXAMPLEBOT", "eXaMpLeBoT"])
def test_user_agent_match_is_case_insensitive(token: str) -> None:
    assert verdict("User-agent: EXAMPLEbot\nDisallow: /x\n", "/x", token) is DISALLOWED


@pytest.mark.parametrize(
    "value",
    [
        "ExampleBotPlus",
        "Example",
        "MyExampleBot",
        "ExampleBot-News",
        "ExampleBot_News",
        "Mozilla/5.0 (compatible; ExampleBot/1.0)",
    ],
)
def test_user_agent_match_is_whole_not_substring(value: str) -> None:
    robots = parse(f"User-agent: {value}\nDisallow: /named\n\nUser-agent: *\nDisallow: /star\n")
    assert robots.check("/named", "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert robots.check("/star", "ExampleBot").verdict is DISALLOWED


def test_longer_crawler_token_does_not_match_its_prefix() -> None:
    robots = parse("User-agent: ExampleBot\nDisallow: /named\n\nUser-agent: *\nDisallow: /star\n")
    assert robots.check("/named", "ExampleBot-News").verdict is ALLOWED_IMPLICIT
    assert robots.check("/star", "ExampleBot-News").verdict is DISALLOWED


# -- the path of a URL -----------------------------------------------------------------


def test_fragment_is_dropped() -> None:
    body = "User-agent: *\nDisallow: /page$\n"
    assert verdict(body, "https://example.com/page#section") is DISALLOWED
    assert verdict(body, "/page#section") is DISALLOWED


def test_empty_path_is_slash() -> None:
    body = "User-agent: *\nDisallow: /$\n"
    assert verdict(body, "https://example.com") is DISALLOWED
    assert verdict(body, "https://example.com#top") is DISALLOWED
    assert verdict(body, "https://example.com?q=1") is ALLOWED_IMPLICIT  # path "/?q=1"
    assert verdict(body, "https://example.com/index") is ALLOWED_IMPLICIT


def test_params_and_query_are_kept() -> None:
    body = "User-agent: *\nDisallow: /a;jsessionid\nDisallow: /search?q=secret\n"
    assert verdict(body, "https://example.com/a;jsessionid=1") is DISALLOWED
    assert verdict(body, "https://example.com/a") is ALLOWED_IMPLICIT
    assert verdict(body, "https://example.com/search?q=secret&page=2") is DISALLOWED
    assert verdict(body, "https://example.com/search?q=public") is ALLOWED_IMPLICIT


@pytest.mark.parametrize(
    "url",
    [
        "https://user:pw@example.com:8443/a",
        "HTTP://EXAMPLE.COM/a",
        "//example.com/a",
        "https://[::1]:8080/a",
        "/a",
    ],
)
def test_authority_is_not_part_of_the_path(url: str) -> None:
    assert verdict("User-agent: *\nDisallow: /a$\n", url) is DISALLOWED


def test_matching_is_case_sensitive() -> None:
    body = "User-agent: *\nDisallow: /Private\n"
    assert verdict(body, "/Private/x") is DISALLOWED
    assert verdict(body, "/private/x") is ALLOWED_IMPLICIT


# -- "*" and "$" ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path, expected",
    [
        ("/ab", DISALLOWED),
        ("/a/x/y/b", DISALLOWED),
        ("/axb/c", DISALLOWED),
        ("/a", ALLOWED_IMPLICIT),
        ("/ba", ALLOWED_IMPLICIT),
    ],
)
def test_star_matches_any_run_including_empty_and_slash(path: str, expected: Verdict) -> None:
    assert verdict("User-agent: *\nDisallow: /a*b\n", path) is expected


@pytest.mark.parametrize(
    "path, expected",
    [("/a", DISALLOWED), ("/a/", ALLOWED_IMPLICIT), ("/a?x", ALLOWED_IMPLICIT), ("/ab", ALLOWED_IMPLICIT)],
)
def test_dollar_anchors_at_the_end(path: str, expected: Verdict) -> None:
    assert verdict("User-agent: *\nDisallow: /a$\n", path) is expected


@pytest.mark.parametrize(
    "path, expected",
    [
        ("/a$b", DISALLOWED),
        ("/a$bc", DISALLOWED),
        ("/a%24b", DISALLOWED),
        ("/a", ALLOWED_IMPLICIT),
        ("/ab", ALLOWED_IMPLICIT),
    ],
)
def test_dollar_is_literal_when_not_last(path: str, expected: Verdict) -> None:
    assert verdict("User-agent: *\nDisallow: /a$b\n", path) is expected


@pytest.mark.parametrize(
    "pattern, path, expected",
    [
        ("/*a*b*c", "/xaybzc", DISALLOWED),
        ("/*a*b*c", "/xcba", ALLOWED_IMPLICIT),
        ("/*a*b*c$", "/abcabc", DISALLOWED),
        ("/*a*b*c$", "/abcab", ALLOWED_IMPLICIT),
        ("/a*", "/a", DISALLOWED),  # a trailing '*' changes nothing
        ("/a**b", "/ab", DISALLOWED),
        ("*", "/anything", DISALLOWED),
        ("/*$", "/anything", DISALLOWED),
        ("/x*$", "/x", DISALLOWED),
        ("/x*y$", "/xy/y", DISALLOWED),
        ("/x*y$", "/xy/z", ALLOWED_IMPLICIT),
        ("*.gif$", "/a/b.gif", DISALLOWED),
        ("$", "/", ALLOWED_IMPLICIT),  # matches only an empty path, and paths start with '/'
        ("x*a", "/xa", ALLOWED_IMPLICIT),  # not starting with '/' or '*': matches no path
    ],
)
def test_wildcard_patterns(pattern: str, path: str, expected: Verdict) -> None:
    assert verdict(f"User-agent: *\nDisallow: {pattern}\n", path) is expected


def test_many_patterns_not_starting_with_slash_match_nothing() -> None:
    # several "x*..." rules together must still match no path
    body = "User-agent: *\n" + "".join(f"Disallow: x*{c}\n" for c in "pqrstu")
    for c in "pqrstu":
        assert verdict(body, f"/{c}") is ALLOWED_IMPLICIT
        assert verdict(body, f"/x{c}") is ALLOWED_IMPLICIT


def test_many_contains_patterns() -> None:
    words = ("alpha", "beta", "gamma", "delta", "eps")
    body = "User-agent: *\nAllow: /*keep\n" + "".join(f"Disallow: /*{w}\n" for w in words)
    assert verdict(body, "/x/gamma/y") is DISALLOWED
    assert parse(body).check("/x/gamma/y", "ExampleBot").rule.pattern == "/*gamma"
    assert verdict(body, "/x/zeta") is ALLOWED_IMPLICIT
    # "/*keep" (6) loses to the longer "/*alpha" (7) and beats "/*beta" (6, tie: Allow)
    assert verdict(body, "/alpha/keep") is DISALLOWED
    assert verdict(body, "/beta/keep") is ALLOWED_EXPLICIT


# -- longest match ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rules, path, expected, line",
    [
        # '*' counts: "/a*" and "/ab" are 3 octets each, Allow wins the tie
        ("Allow: /a*\nDisallow: /ab", "/abc", ALLOWED_EXPLICIT, 2),
        ("Allow: /a*\nDisallow: /abc", "/abcd", DISALLOWED, 3),
        # '$' counts: "/p*$" and "/pag" are 4 octets each
        ("Allow: /p*$\nDisallow: /pag", "/page", ALLOWED_EXPLICIT, 2),
        ("Allow: /p*$\nDisallow: /page", "/page", DISALLOWED, 3),
        # octets, not characters: "/ü" is "/%C3%BC", 7 octets, longer than "/*abc" (5)
        ("Allow: /*abc\nDisallow: /\u00fc", "/\u00fcabc", DISALLOWED, 3),
        ("Allow: /*abcdefg\nDisallow: /\u00fc", "/\u00fcabcdefg", ALLOWED_EXPLICIT, 2),
        # a tie goes to Allow whatever the order
        ("Allow: /page\nDisallow: /page", "/page", ALLOWED_EXPLICIT, 2),
        ("Disallow: /page\nAllow: /page", "/page", ALLOWED_EXPLICIT, 3),
        ("Disallow: /page\nAllow: /pag*", "/page", ALLOWED_EXPLICIT, 3),
        # the longer rule wins whatever the order
        ("Disallow: /folder/secret\nAllow: /folder/", "/folder/secret.html", DISALLOWED, 2),
        ("Allow: /folder/public\nDisallow: /folder/", "/folder/public.html", ALLOWED_EXPLICIT, 2),
    ],
)
def test_longest_match(rules: str, path: str, expected: Verdict, line: int) -> None:
    decision = parse(f"User-agent: *\n{rules}\n").check(path, "ExampleBot")
    assert decision.verdict is expected
    assert decision.rule.line == line


def test_decision_carries_the_winning_rule() -> None:
    robots = parse("User-agent: *\nAllow: /docs/public\nDisallow: /docs\n")
    decision = robots.check("/docs/secret", "ExampleBot")
    assert isinstance(decision, Decision) and decision.allowed is False
    assert isinstance(decision.rule, Rule)
    assert (decision.rule.allow, decision.rule.pattern, decision.rule.line) == (False, "/docs", 3)
    assert str(decision.rule) == "Disallow: /docs"
    assert decision.reason == "disallowed_explicit (line 3: Disallow: /docs)"
    allowed = robots.check("/docs/public/x", "ExampleBot")
    assert allowed.allowed and str(allowed.rule) == "Allow: /docs/public" and allowed.rule.line == 2
    assert robots.can_fetch("/docs/secret", "ExampleBot") is False
    assert robots.can_fetch("/docs/public/x", "ExampleBot") is True


def test_empty_disallow_is_no_rule() -> None:
    decision = parse("User-agent: *\nDisallow:\n").check("/anything", "ExampleBot")
    assert decision.verdict is ALLOWED_IMPLICIT and decision.rule is None


def test_empty_allow_is_no_rule() -> None:
    decision = parse("User-agent: *\nDisallow: /\nAllow:\n").check("/x", "ExampleBot")
    assert decision.verdict is DISALLOWED and decision.rule.line == 2


# -- /robots.txt and index.htm -------------------------------------------------------


@pytest.mark.parametrize(
    "rule, other",
    [("Disallow: /", DISALLOWED), ("Disallow: /robots", DISALLOWED), ("Disallow: /robots.txt$", ALLOWED_IMPLICIT)],
)
def test_robots_txt_is_always_allowed(rule: str, other: Verdict) -> None:
    robots = parse(f"User-agent: *\n{rule}\n")
    for url in ("/robots.txt", "https://example.com/robots.txt", "https://example.com/robots.txt#x"):
        decision = robots.check(url, "ExampleBot")
        assert decision.allowed and decision.verdict is Verdict.ALLOWED_ROBOTS_TXT
    # only /robots.txt itself
    assert robots.check("/robots.txt.bak", "ExampleBot").verdict is other


@pytest.mark.parametrize("allow", ["/d/index.htm", "/d/index.html", "/d/index.htm*"])
def test_index_htm_allows_the_directory(allow: str) -> None:
    robots = parse(f"User-agent: *\nDisallow: /d/\nAllow: {allow}\n")
    decision = robots.check("/d/", "ExampleBot")
    assert decision.verdict is ALLOWED_EXPLICIT and decision.rule.line == 3
    assert robots.check("/d/index.html", "ExampleBot").verdict is ALLOWED_EXPLICIT
    assert robots.check("/d/other", "ExampleBot").verdict is DISALLOWED
    assert robots.check("/d/?q=1", "ExampleBot").verdict is DISALLOWED  # exactly "/d/"


def test_index_htm_at_the_root() -> None:
    robots = parse("User-agent: *\nDisallow: /\nAllow: /index.html\n")
    assert robots.check("https://example.com/", "ExampleBot").verdict is ALLOWED_EXPLICIT
    assert robots.check("https://example.com", "ExampleBot").verdict is ALLOWED_EXPLICIT
    assert robots.check("/other", "ExampleBot").verdict is DISALLOWED


def test_other_allowed_files_do_not_allow_the_directory() -> None:
    assert verdict("User-agent: *\nDisallow: /d/\nAllow: /d/index.php\n", "/d/") is DISALLOWED
    assert verdict("User-agent: *\nDisallow: /d/\nAllow: /d/myindex.html\n", "/d/") is DISALLOWED


# -- percent-encoding (RFC 9309 section 2.2.2) -------------------------------------


@pytest.mark.parametrize(
    "pattern, url",
    [
        # RFC 9309 section 2.2.2, table 3: the rule and the URL meet in the middle column
        ("/foo/bar?baz=quz", "/foo/bar?baz=quz"),
        ("/foo/bar?baz=https%3A%2F%2Ffoo.bar", "/foo/bar?baz=https%3A%2F%2Ffoo.bar"),
        ("/foo/bar/\u30c4", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%E3%83%84", "/foo/bar/\u30c4"),
        ("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84"),
        ("/foo/bar/%62%61%7A", "/foo/bar/baz"),
        ("/foo/bar/baz", "/foo/bar/%62%61%7A"),
        # lower-case hex is the same escape
        ("/a%2fb", "/a%2Fb"),
        ("/a%2Fb", "/a%2fb"),
        ("/caf%c3%a9", "/caf\u00e9"),
        ("/caf\u00e9", "/caf%c3%a9"),
        # escapes of unreserved characters are the characters
        ("/%7Euser", "/~user"),
        ("/~user", "/%7euser"),
        ("/a%2Db%2Ec%5Fd", "/a-b.c_d"),
        ("/%41%5a%30", "/AZ0"),
    ],
)
def test_percent_encoding_is_normalised_on_both_sides(pattern: str, url: str) -> None:
    body = f"User-agent: *\nDisallow: {pattern}$\n"
    assert verdict(body, url) is DISALLOWED
    assert verdict(body, "https://example.com" + url) is DISALLOWED


@pytest.mark.parametrize(
    "pattern, url",
    [
        ("/a%2Fb", "/a/b"),  # %2F is not '/'
        ("/a/b", "/a%2Fb"),
        ("/a%3Fb", "/a?b"),  # %3F is not '?'
        ("/a?b", "/a%3Fb"),
        ("/a%26b", "/a&b"),
        ("/%C3%A9", "/%E9"),  # different octets
    ],
)
def test_reserved_escapes_stay_encoded(pattern: str, url: str) -> None:
    assert verdict(f"User-agent: *\nDisallow: {pattern}\n", url) is ALLOWED_IMPLICIT


@pytest.mark.parametrize("escape", ["%2A", "%2a"])
def test_escaped_star_in_a_rule_is_a_literal_star(escape: str) -> None:
    # RFC 9309 section 2.2.3
    body = f"User-agent: *\nDisallow: /path/file-with-a-{escape}.html\n"
    assert verdict(body, "https://www.example.com/path/file-with-a-*.html") is DISALLOWED
    assert verdict(body, "https://www.example.com/path/file-with-a-%2A.html") is DISALLOWED
    assert verdict(body, "https://www.example.com/path/file-with-a-b.html") is ALLOWED_IMPLICIT
    assert verdict(body, "https://www.example.com/path/file-with-a-.html") is ALLOWED_IMPLICIT


def test_escaped_dollar_in_a_rule_is_a_literal_dollar() -> None:
    # RFC 9309 section 2.2.3
    body = "User-agent: *\nDisallow: /path/foo-%24\n"
    assert verdict(body, "https://www.example.com/path/foo-$") is DISALLOWED
    assert verdict(body, "https://www.example.com/path/foo-$bar") is DISALLOWED  # not an anchor
    assert verdict(body, "https://www.example.com/path/foo-") is ALLOWED_IMPLICIT
    assert verdict(body, "https://www.example.com/path/foo-bar") is ALLOWED_IMPLICIT


# -- Crawl-delay, Request-rate, Sitemap -------------------------------------------------


@pytest.mark.parametrize("value, expected", [("5", 5.0), ("0.5", 0.5), ("0", 0.0), ("10.", 10.0), (".25", 0.25)])
def test_crawl_delay(value: str, expected: float) -> None:
    robots = parse(f"User-agent: *\nCrawl-delay: {value}\nDisallow: /x\n")
    assert robots.crawl_delay("ExampleBot") == expected
    assert not robots.diagnostics


@pytest.mark.parametrize(
    "value",
    ["-1", "soon", "5s", "1e3", "", "nan", "inf", "9" * 400],
    ids=lambda v: v if len(v) < 20 else f"{len(v)}-digits",
)
def test_invalid_crawl_delay_is_a_diagnostic(value: str) -> None:
    robots = parse(f"User-agent: *\nCrawl-delay: {value}\nDisallow: /x\n")
    assert robots.crawl_delay("ExampleBot") is None
    assert (2, "invalid_crawl_delay") in codes(robots)
    assert robots.check("/x", "ExampleBot").verdict is DISALLOWED  # the group still works


def test_crawl_delay_is_per_group() -> None:
    robots = parse(
        "User-agent: *\nDisallow: /s\nCrawl-delay: 2\n\n"
        "User-agent: ExampleBot\nDisallow: /e\nCrawl-delay: 7\n\n"
        "User-agent: QuickBot\nDisallow: /x\n"
    )
    assert robots.crawl_delay("ExampleBot") == 7.0
    assert robots.crawl_delay("OtherBot") == 2.0
    assert robots.crawl_delay("QuickBot") is None


def test_crawl_delay_between_user_agents_belongs_to_both() -> None:
    robots = parse("User-agent: a\nCrawl-delay: 3\nUser-agent: ExampleBot\nDisallow: /x\n")
    assert robots.crawl_delay("a") == 3.0
    assert robots.crawl_delay("ExampleBot") == 3.0


@pytest.mark.parametrize(
    "value, expected",
    [("1/5", (1, 5.0)), ("1/5s", (1, 5.0)), ("2/1m", (2, 60.0)), ("1/2h", (1, 7200.0)), ("3/10", (3, 10.0))],
)
def test_request_rate(value: str, expected: tuple[int, float]) -> None:
    robots = parse(f"User-agent: *\nRequest-rate: {value}\n")
    assert robots.request_rate("ExampleBot") == expected
    assert not robots.diagnostics


@pytest.mark.parametrize(
    "value",
    ["fast", "5", "0/5", "1/0", "/5", "1/5x", "1/5 minutes", "1/", "1" * 5000 + "/5"],
    ids=lambda v: v if len(v) < 20 else f"{len(v)}-chars",
)
def test_invalid_request_rate_is_a_diagnostic(value: str) -> None:
    robots = parse(f"User-agent: *\nRequest-rate: {value}\n")
    assert robots.request_rate("ExampleBot") is None
    assert (2, "invalid_request_rate") in codes(robots)


@pytest.mark.parametrize(
    "lines, expected",
    [
        ("Crawl-delay: 2\nRequest-rate: 1/5", 5.0),
        ("Crawl-delay: 10\nRequest-rate: 1/5", 10.0),
        ("Request-rate: 2/1m", 30.0),
        ("Crawl-delay: 1.5", 1.5),
        ("Disallow: /x", None),
    ],
)
def test_min_delay(lines: str, expected: float | None) -> None:
    assert parse(f"User-agent: *\n{lines}\n").min_delay("ExampleBot") == expected


def test_sitemaps_anywhere_in_order_without_duplicates() -> None:
    robots = parse(
        "Sitemap: https://example.com/a.xml\n"
        "User-agent: *\n"
        "sitemap: https://example.com/b.xml\n"
        "Disallow: /x\n"
        "SITEMAP: https://example.com/a.xml\n"
        "\n"
        "Sitemap: https://example.com/c.xml # comment\n"
    )
    assert robots.sitemaps == ["https://example.com/a.xml", "https://example.com/b.xml", "https://example.com/c.xml"]
    assert robots.check("/x", "ExampleBot").verdict is DISALLOWED


def test_sitemap_never_ends_a_group() -> None:
    robots = parse("User-agent: a\nSitemap: https://example.com/s.xml\nUser-agent: ExampleBot\nDisallow: /x\n")
    assert robots.check("/x", "a").verdict is DISALLOWED
    assert robots.sitemaps == ["https://example.com/s.xml"]


# -- the URLs asked before do not change an answer ---------------------------------------


@pytest.mark.parametrize(
    "before",
    [
        "https://example.com/a",  # the usual case: the same origin
        "https://?/a",  # no host: "https:/" is not an origin to cut others with
        "https://example.co/a",  # a prefix of the next URL's host
        "https://example.com:8080/a",
        "//example.com/a",
        "https://example.com/a#frag",
        "/a",
    ],
)
def test_a_previous_url_does_not_change_how_the_next_is_cut(before: str) -> None:
    # check() remembers the origin of the last plain URL to cut the next
    # ones with one startswith(); the next URL's path must be the same.
    robots = parse("User-agent: *\nDisallow: /private\nAllow: /\n")
    robots.check(before, "ExampleBot")
    for url, expected in [
        ("https://example.com/private/x", DISALLOWED),
        ("https://example.com/privat", Verdict.ALLOWED_EXPLICIT),
        ("https://example.com.evil/private", DISALLOWED),
        ("https://example.com:8080/private", DISALLOWED),
        ("https://example.com?/private", Verdict.ALLOWED_EXPLICIT),  # the path is "/?/private"
        ("https://example.com/%70rivate", DISALLOWED),  # %70 is "p"
        ("https://example.com/x#/private", Verdict.ALLOWED_EXPLICIT),
        ("https://example.com/robots.txt", Verdict.ALLOWED_ROBOTS_TXT),
    ]:
        assert robots.check(url, "ExampleBot").verdict is expected, (before, url)


# -- allow-all and deny-all ----------------------------------------------------------------


def test_allow_all() -> None:
    robots = RobotsTxt.allow_all()
    decision = robots.check("https://example.com/anything", "ExampleBot")
    assert decision.allowed and decision.verdict is Verdict.ALLOWED_UNAVAILABLE and decision.rule is None
    assert robots.fixed_verdict is Verdict.ALLOWED_UNAVAILABLE
    assert robots.can_fetch("/x", "ExampleBot") is True
    assert robots.crawl_delay("ExampleBot") is None and robots.sitemaps == []


def test_deny_all() -> None:
    robots = RobotsTxt.deny_all()
    decision = robots.check("https://example.com/anything", "ExampleBot")
    assert not decision.allowed and decision.verdict is Verdict.UNKNOWN_UNREACHABLE and decision.rule is None
    assert robots.fixed_verdict is Verdict.UNKNOWN_UNREACHABLE
    assert robots.can_fetch("/", "ExampleBot") is False


def test_allow_all_with_another_verdict() -> None:
    robots = RobotsTxt.allow_all(Verdict.ALLOWED_NOT_OBEYED)
    decision = robots.check("/x", "ExampleBot")
    assert decision.allowed and decision.verdict is Verdict.ALLOWED_NOT_OBEYED


def test_parsed_file_has_no_fixed_verdict() -> None:
    assert parse("User-agent: *\nDisallow: /\n").fixed_verdict is None
    assert parse(b"").fixed_verdict is None


# -- no catastrophic matching -----------------------------------------------------------------


def test_pathological_pattern_answers_quickly() -> None:
    body = "User-agent: *\nDisallow: /*a*a*a*a*a*a*a*a*a*a*b\nDisallow: /*a*a*a*a*a*a*a*a*a*a*c$\n"
    robots = parse(body)
    start = time.perf_counter()
    # no 'b' and no final 'c': neither rule matches
    assert robots.check("/" + "a" * 5000, "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert robots.check("/" + "a" * 4999 + "ca", "ExampleBot").verdict is ALLOWED_IMPLICIT
    # ten 'a's then a 'b' (or a final 'c'): a match
    assert robots.check("/" + "a" * 5000 + "b", "ExampleBot").rule.line == 2
    assert robots.check("/" + "a" * 5000 + "c", "ExampleBot").rule.line == 3
    assert robots.check("/" + "a" * 9 + "b" + "a" * 4990, "ExampleBot").verdict is ALLOWED_IMPLICIT
    assert time.perf_counter() - start < 1.0
