"""What the plugin costs a page request in signal receivers.

Scrapy calls every receiver of a signal on each send, whether or not it acts
on the request (a pydispatch call, a few microseconds).  The plugin listens
to per-request signals only while it has something to do there:

* ``bytes_received`` for its own robots.txt downloads (the body limit):
  connected while one is in flight;
* ``request_reached_downloader`` / ``request_left_downloader`` for the gate's
  Crawl-delay turns: connected while a paced request is in the downloader (its
  leaving starts the slot's next turn), so not once it is in;
* none for ``RFC9309_EARLY_FETCH``: the gate sees each request as it is
  scheduled (it is the scheduler).

Counted with real crawls, against Scrapy's built-in RobotsTxtMiddleware.
"""

from __future__ import annotations

import pytest_twisted
from pydispatch import dispatcher
from scrapy import signals

from .harness import Req, crawl
from .servers import robots

PER_REQUEST = (
    "request_scheduled",
    "request_reached_downloader",
    "headers_received",
    "bytes_received",
    "response_downloaded",
    "response_received",
    "request_left_downloader",
)
BUILTIN = {"DOWNLOADER_MIDDLEWARES": {}, "ROBOTSTXT_OBEY": True}
ADDON = {"DOWNLOADER_MIDDLEWARES": {}, "ADDONS": {"scrapy_rfc9309.Addon": 0}}


def receivers(crawler) -> dict[str, int]:
    counts = {}
    for name in PER_REQUEST:
        found = dispatcher.getAllReceivers(crawler.signals.sender, getattr(signals, name))
        counts[name] = sum(1 for _ in dispatcher.liveReceivers(found))
    return counts


async def counted(site_rules: str, settings: dict) -> tuple[dict[str, int], dict[str, int]]:
    """Receivers while the second page of a site is handled (its robots.txt
    known for a while, no fetch in flight), and after the crawl."""
    seen: list[dict[str, int]] = []

    async def ok(self, response):
        if response.url.endswith("/second"):
            seen.append(receivers(self.crawler))
        async for request in type(self).__mro__[1].ok(self, response):
            yield request

    from .servers import Server

    site = Server("127.0.0.2")
    try:
        site.routes["/robots.txt"] = robots(site_rules)
        first = Req(site.url("/first"), then=[Req(site.url("/second"))])
        result = await crawl([first], settings, spider_attrs={"ok": ok})
    finally:
        site.stop()
    assert result.outcome(site.url("/second")).status == 200
    assert len(seen) == 1
    return seen[0], receivers(result.crawler)


@pytest_twisted.ensureDeferred
async def test_a_page_pays_no_receiver_more_than_with_the_builtin_middleware():
    builtin, _ = await counted("User-agent: *\nDisallow: /private\n", BUILTIN)
    plugin, after = await counted("User-agent: *\nDisallow: /private\n", ADDON)
    print("receivers of per-request signals, built-in:", builtin, "plugin:", plugin)
    assert plugin == builtin
    assert after == plugin


@pytest_twisted.ensureDeferred
async def test_the_early_fetch_costs_no_receiver():
    plain, _ = await counted("User-agent: *\nDisallow: /private\n", ADDON)
    early, _ = await counted("User-agent: *\nDisallow: /private\n", {**ADDON, "RFC9309_EARLY_FETCH": True})
    assert early == plain, (plain, early)


@pytest_twisted.ensureDeferred
async def test_crawl_delay_turns_listen_only_while_a_paced_request_is_in_the_downloader():
    plain, _ = await counted("User-agent: *\nDisallow: /private\n", ADDON)
    floored, after = await counted("User-agent: *\nCrawl-delay: 0.2\n", ADDON)
    # in the callback of a paced page its download is over: nothing is followed any more
    assert floored == plain, (plain, floored)
    assert after == plain
