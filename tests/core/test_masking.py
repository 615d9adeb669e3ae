"""The one masking function: secrets in URLs never reach what the plugin writes."""

from __future__ import annotations

import pytest

from scrapy_rfc9309.masking import mask_text, mask_url
from scrapy_rfc9309.storage import display_url


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("http://example.com/a?b=1", "http://example.com/a?b=1"),
        ("http://alice:pw@example.com/", "http://alice:***@example.com/"),
        ("https://ghp_token@example.com/repo", "https://***@example.com/repo"),
        ("http://example.com/a@b", "http://example.com/a@b"),  # an @ in the path is no userinfo
        ("redis://:pw@h:6379/0?password=x&db=1", "redis://:***@h:6379/0?password=***&db=1"),
        ("unix://:pw@/run/redis.sock?db=0", "unix://:***@/run/redis.sock?db=0"),
        (
            "http://h/p?access_token=a&q=ok&API_KEY=b&sessionid=c",
            "http://h/p?access_token=***&q=ok&API_KEY=***&sessionid=***",
        ),
        ("http://h/p?X-Amz-Signature=abc&X-Amz-Credential=def", "http://h/p?X-Amz-Signature=***&X-Amz-Credential=***"),
        ("http://h/cb#access_token=abc&state=1", "http://h/cb#access_token=***&state=1"),
        ("http://h/p?password", "http://h/p?password"),  # no value, nothing to hide
        ("memory", "memory"),
        ("sqlite:///var/cache/robots.sqlite", "sqlite:///var/cache/robots.sqlite"),
    ],
)
def test_mask_url(url, masked):
    assert mask_url(url) == masked
    assert display_url(url) == masked  # the stores' name for it is the same function


def test_mask_text_masks_every_url_in_a_message():
    text = "Getting http://a:pw@h/x?token=t took longer than 5 s; then https://h2/?key=k failed"
    assert mask_text(text) == "Getting http://a:***@h/x?token=*** took longer than 5 s; then https://h2/?key=*** failed"
