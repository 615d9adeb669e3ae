"""Product tokens from User-Agent strings (pure)."""

from __future__ import annotations

import pytest

from scrapy_rfc9309.useragent import derive_token, lenient_token


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("ExampleBot", "ExampleBot"),
        ("ExampleBot/1.0", "ExampleBot"),
        ("ExampleBot/1.0 (+https://example.com/bot)", "ExampleBot"),
        ("  ExampleBot/1.0  ", "ExampleBot"),
        ("Scrapy/2.19.0 (+https://scrapy.org)", "Scrapy"),
        ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", "Googlebot"),
        ("Mozilla/5.0 (compatible;ExampleBot/1.0)", "ExampleBot"),
        ("Mozilla/5.0 (COMPATIBLE; example-bot)", "example-bot"),
        (
            "Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0; "
            "+http://www.bing.com/bingbot.htm) Chrome/116.0.1938.76 Safari/537.36",
            "bingbot",
        ),
        ("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "Mozilla"),
        ("Mozilla/5.0 (compatible; ) Foo", "Mozilla"),  # nothing after compatible;
        (b"ExampleBot/1.0", "ExampleBot"),
        ("my_bot", "my_bot"),
    ],
)
def test_derive_token(user_agent, token):
    assert derive_token(user_agent) == token


@pytest.mark.parametrize(
    "user_agent", ["Bot2000/1.0", "my.bot/1", "", "   ", None, "/1.0", "Mozilla/5.0 (compatible; B0t/1)"]
)
def test_invalid_user_agents_are_refused(user_agent):
    with pytest.raises(ValueError):
        derive_token(user_agent)


def test_refusal_says_what_to_do():
    with pytest.raises(ValueError, match="ROBOTSTXT_USER_AGENT"):
        derive_token("Bot2000/1.0")


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [("Bot2000/1.0", "Bot"), ("ExampleBot/1.0", "ExampleBot"), (b"2000", None), ("", None), (None, None)],
)
def test_lenient_token(user_agent, token):
    assert lenient_token(user_agent) == token


@pytest.mark.parametrize(
    "user_agent",
    [
        "my bot/1.0 (+http://x)",
        "Other Bot/2.0",
        "my bot",
        "Example\tBot/1",
        # one rule: the product after "compatible;" is held to it too (it used to give "Foo")
        "Mozilla/5.0 (compatible; Foo Bar/1.0)",
        "Mozilla/5.0 (compatible; Foo Bar/1.0; +https://example.com/bot)",
        b"Mozilla/5.0 (compatible; my bot)",
    ],
)
def test_a_name_with_a_space_is_ambiguous_and_refused_not_cut(user_agent):
    with pytest.raises(ValueError, match="ambiguous"):
        derive_token(user_agent)


@pytest.mark.parametrize(
    ("user_agent", "token"), [("ExampleBot (+https://example.com/bot)", "ExampleBot"), ("ExampleBot ", "ExampleBot")]
)
def test_a_name_followed_by_a_comment_is_not_ambiguous(user_agent, token):
    assert derive_token(user_agent) == token
