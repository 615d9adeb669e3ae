"""RobotParserAdapter built the way Scrapy's own parser-interface tests build
every ``ROBOTSTXT_PARSER`` backend: ``from_crawler(None, body)``."""

from __future__ import annotations

import pytest

from scrapy_rfc9309.interop import RobotParserAdapter

BODY = (
    b"User-agent: *\n"
    b"Disallow: /disallowed\n"
    b"Allow: /allowed\n"
    b"Crawl-delay: 10\n"
    b"\n"
    b"User-agent: ExampleBot\n"
    b"Disallow: /\n"
    b"Crawl-delay: 2.5\n"
)


@pytest.mark.parametrize(
    "body",
    [BODY, BODY.decode(), b"", b"\xff\xfe" + BODY.decode().encode("utf-16-le")],
    ids=["bytes", "str", "empty", "utf16"],
)
def test_from_crawler_without_a_crawler_uses_the_default_settings(body) -> None:
    parser = RobotParserAdapter.from_crawler(None, body)
    assert parser.default_token == "Scrapy"  # from Scrapy's default USER_AGENT
    expect_rules = bool(body)
    assert parser.allowed("https://site.local/allowed", "*") is True
    assert parser.allowed("https://site.local/disallowed", "*") is not expect_rules
    assert parser.allowed(b"https://site.local/disallowed", b"OtherBot/1.0") is not expect_rules
    assert parser.allowed("https://site.local/allowed", "ExampleBot/1.0 (+https://e.com)") is not expect_rules
    assert parser.crawl_delay("*") == (10.0 if expect_rules else None)
    assert parser.crawl_delay("ExampleBot") == (2.5 if expect_rules else None)


def test_default_token_answers_for_an_agent_with_no_token() -> None:
    parser = RobotParserAdapter.from_crawler(None, b"User-agent: Scrapy\nDisallow: /x\n")
    assert parser.allowed("https://site.local/x", None) is False
    assert parser.allowed("https://site.local/x", "OtherBot") is True
