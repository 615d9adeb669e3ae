"""Closing the spider ends the requests waiting inside the middleware (issue 23, point 8).

Requests of a ``Crawl-delay`` origin that arrived while its robots.txt was
fetched wait in the middleware for a downloader place (taken out of
``CONCURRENT_REQUESTS`` meanwhile, see :mod:`scrapy_rfc9309.slots`).  Once the
spider starts closing they end at once, as ``IgnoreRequest`` counted in
``requests/dropped/spider_closing``, instead of being handed to the
downloader one Crawl-delay apart: after the close, the origin sees no more
pages than Scrapy alone would still download (the ``CONCURRENT_REQUESTS``
already in the downloader), and the process ends as soon.
"""

from __future__ import annotations

import time

import pytest
import pytest_twisted

from .faults import crawl_within
from .harness import Req, check_accounting
from .redisd import RedisServer, require_redis
from .servers import Reply

CONCURRENT = 4
DELAYED = 40


@pytest.mark.parametrize("store", ["memory", "redis"])
@pytest_twisted.ensureDeferred
async def test_closing_drops_the_requests_waiting_for_a_place(servers, tmp_path, store):
    """Memory store: the requests wait for a downloader place (the slot keeps
    the floor).  Redis: they also wait for their cluster-wide turn."""
    redis = None
    if store == "redis":
        require_redis()
        redis = RedisServer(tmp_path / "redis")
    try:
        await _close_mid_crawl(servers, {"RFC9309_STORAGE": redis.url} if redis else {})
    finally:
        if redis is not None:
            redis.stop()


async def _close_mid_crawl(servers, store: dict) -> None:
    site = servers("127.0.0.2")
    # slow enough that every request reaches the middleware while it is fetched
    site.routes["/robots.txt"] = Reply(
        200, "User-agent: *\nCrawl-delay: 1\n", {"Content-Type": "text/plain"}, delay=0.5
    )
    plan = [Req(site.url(f"/p{i}")) for i in range(DELAYED)]
    settings = {
        "ADDONS": {"scrapy_rfc9309.Addon": 0},
        "DOWNLOADER_MIDDLEWARES": {},
        "CONCURRENT_REQUESTS": CONCURRENT,
        "CONCURRENT_REQUESTS_PER_DOMAIN": CONCURRENT,
        **store,
    }

    def two_pages(outcomes) -> bool:
        return sum(1 for o in outcomes if o.status == 200) >= 2

    result, took = await crawl_within(20, plan, settings, spider_attrs={"close_when": two_pages})
    ended = time.monotonic()
    closed_at = result.spider_cls.closed_at
    assert "finish_reason" in result.stats, "the crawl did not end within 20 s of its start"
    assert result.stats["finish_reason"] == "probe_done"

    after = [hit for hit in site.page_hits() if hit.at > closed_at]
    # Scrapy alone would still download what is in its downloader: CONCURRENT_REQUESTS at most
    assert len(after) <= CONCURRENT, len(after)
    assert ended - closed_at < CONCURRENT * 1.0 + 2.0, ended - closed_at
    downloaded = [o for o in result.outcomes if o.status == 200]
    dropped = [o for o in result.outcomes if o.status is None]
    assert len(downloaded) == len(site.page_hits())
    assert all(o.error == "IgnoreRequest" and "spider closed" in o.message for o in dropped), dropped
    assert len(dropped) >= DELAYED - 2 - CONCURRENT - 1
    assert result.stat("requests/dropped/spider_closing") == len(dropped)
    check_accounting(result)
