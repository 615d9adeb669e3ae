"""What ``scrapy robots`` accepts as a URL (scrapy_rfc9309.commands.inputs), no process."""

from __future__ import annotations

import pytest

from scrapy_rfc9309.commands.inputs import url_problem
from scrapy_rfc9309.origins import origin_of


@pytest.mark.parametrize(
    "url",
    [
        "http://example.com",
        "HTTPS://EXAMPLE.COM/Path",
        "https://user:pw@example.com:8443/x?y=1#z",
        "http://[::1]:8000/",
        "http://[2001:db8::1]/",
        "http://127.0.0.1:1/",
        "http://bücher.example/",
        "http://example.com./",
        "http://a_b.example/",
        "http://example.com:/",
        "http://example.com/%20encoded?q=a%20b",
        "http://example.com/ünïcode-path",
        f"http://{'a' * 63}.example/",
    ],
)
def test_a_good_url_passes_and_has_an_origin(url):
    assert url_problem(url) is None
    assert origin_of(url) is not None


@pytest.mark.parametrize(
    "url",
    [
        "",
        "http://[::1",
        "http://exa mple.com/",
        "http://%zz/x",
        "ftp://x/",
        "http://x:99999/",
        "http://x:0/",
        "http://x:-1/",
        "http://x:٣/",  # an Arabic-Indic digit: str.isdigit, not a port
        "http://a.com/a b",
        "http://a.com/\x01",
        "http://a.com/\u2028",
        "http://a.com/\u00a0",
        "http://" + "a" * 254 + "/",
        "http://" + "a" * 64 + ".com/",
        "http://" + "ü" * 70 + ".com/",
        "http://.example.com/",
        "http://[zz]/",
        "http://[::1]x/",
        "http://::1/",
        "http://user@/",
        "example.com",
        "//example.com/x",
        "/relative",
        "javascript:alert(1)",
    ],
)
def test_a_bad_url_is_one_line_that_names_it(url):
    problem = url_problem(url)
    assert problem is not None
    assert len(problem.splitlines()) == 1 and problem.isprintable(), problem


def test_paths_are_fine_only_with_a_file_and_still_without_spaces():
    assert url_problem("/private/page?x=1", paths=True) is None
    assert url_problem("/private/page", paths=False) is not None
    assert url_problem("/a b", paths=True) is not None
    assert url_problem("page", paths=True) is not None


def test_the_url_shown_is_masked_and_short():
    problem = url_problem("http://u:topsecret@exa mple.com/" + "x" * 10_000 + "?api_key=topsecret")
    assert problem is not None and "topsecret" not in problem and len(problem) < 600
