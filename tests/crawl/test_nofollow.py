"""The nofollow spider middleware's synchronous path, in a real crawl.

Scrapy 2.13 hands a synchronous callback's output to ``process_spider_output``;
newer Scrapy hands every output to ``process_spider_output_async``, so no crawl
on them reaches the synchronous path.  Here the spider's own callback passes
what it would yield through that path, on the live crawl's response and
middleware (built from the crawl's crawler, as Scrapy builds it).
"""

from __future__ import annotations

import logging
from typing import Any

import pytest_twisted
import scrapy

from scrapy_rfc9309 import NofollowMiddleware

from .harness import Outcome, Req, crawl
from .servers import Reply, robots

PAGE = "<!DOCTYPE html>\n<html>\n<head>\n<title>t</title>\n{head}\n</head>\n<body>page</body>\n</html>\n"
NOFOLLOW = '<meta name="robots" content="nofollow">'


def html(head: str = "") -> Reply:
    return Reply(200, PAGE.format(head=head), {"Content-Type": "text/html; charset=utf-8"})


@pytest_twisted.ensureDeferred
async def test_the_synchronous_path_drops_a_nofollow_pages_requests_and_keeps_its_items(servers, caplog):
    s = servers("127.0.0.2")
    s.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    s.routes["/nofollow"], s.routes["/plain"] = html(NOFOLLOW), html()
    passed: dict[str, Any] = {}

    def ok(self: Any, response: Any) -> None:
        self.outcomes.append(Outcome(response.url, status=response.status))
        middleware = NofollowMiddleware.from_crawler(self.crawler)
        output = [scrapy.Request(s.url("/a")), {"item": 1}, scrapy.Request(s.url("/b")), {"item": 2}]
        passed[response.url] = list(middleware.process_spider_output(response, iter(output)))

    caplog.set_level(logging.INFO, logger="scrapy_rfc9309")
    result = await crawl([Req(s.url("/nofollow")), Req(s.url("/plain"))], {"RFC9309_USAGE": ["train-ai"]}, {"ok": ok})
    assert passed[s.url("/nofollow")] == [{"item": 1}, {"item": 2}]  # the requests dropped, the items kept
    assert [type(x).__name__ for x in passed[s.url("/plain")]] == ["Request", "dict", "Request", "dict"]
    assert result.stat("nofollow/pages") == 1 and result.stat("nofollow/requests_dropped") == 2
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Not following ")]
    assert said == [f"Not following 2 links of {s.url('/nofollow')}: nofollow (html line 5: {NOFOLLOW})"]
