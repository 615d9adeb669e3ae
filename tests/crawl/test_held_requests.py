"""Requests that wait inside the middleware, in real crawls on loopback.

A request waits for its origin's robots.txt (pending, or retried in
``"wait"`` mode) or, with a shared store, for a cluster-wide Crawl-delay
turn.  These tests check that such a wait is accounted as a slow site's is
(other sites go on), that it ends when the spider closes, that the release
keeps the per-domain limit, and that the early fetch asks Scrapy's own
offsite rule.  Durations are compared with a run of the same crawl without
the waiting site, made in the same test (generous bounds: machines are shared).
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest
import pytest_twisted
from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware
from scrapy.exceptions import IgnoreRequest

from scrapy_rfc9309 import compat, robots_service

from .harness import Req, check_accounting, crawl
from .redisd import RedisServer, require_redis
from .servers import Reply, robots

DAPQ = "scrapy.pqueues.DownloaderAwarePriorityQueue"
#: a healthy site's pages: slow enough that 20 of them take a measurable time
PAGE = Reply(200, "<html>page</html>", {"Content-Type": "text/html"}, delay=0.1)
#: the healthy site finishes within its time alone and this (a loaded machine's room; the stalls
#: these tests guard against cost 4 s and 5 s; the issue's 1.25 x alone is benchmarks/hang_bench.py's)
SLACK = 2.0


def healthy_pages(server, count: int = 20) -> list[Req]:
    for i in range(count):
        server.routes[f"/page{i}"] = PAGE
    return [Req(server.url(f"/page{i}")) for i in range(count)]


async def time_of_healthy(plan: list[Req], healthy, settings: dict[str, Any]) -> tuple[float, Any]:
    """Seconds from the crawl's start to the healthy site's last page, and the result."""
    started = time.monotonic()
    result = await crawl(plan, settings)
    urls = {healthy.url(f"/page{i}") for i in range(20)}
    done = [o for o in result.outcomes if o.url in urls]
    assert len(done) == 20 and all(o.status == 200 for o in done), done
    return max(o.at for o in done) - started, result


STALL_SETTINGS = {
    "CONCURRENT_REQUESTS": 4,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 4,
    "SCHEDULER_PRIORITY_QUEUE": DAPQ,
}


@pytest_twisted.ensureDeferred
async def test_a_site_waiting_for_robots_txt_does_not_stall_a_healthy_one(servers):
    """Fault 1(a): a 503 origin in "wait" mode, its 10 requests held 4 s."""
    stalled, healthy = servers("127.0.0.2"), servers("127.0.0.3")
    stalled.routes["/robots.txt"] = Reply(503)
    healthy.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    pages = healthy_pages(healthy)
    settings = {**STALL_SETTINGS, "RFC9309_UNREACHABLE": "wait:4"}

    alone, _ = await time_of_healthy(pages, healthy, settings)
    waiting = [Req(stalled.url(f"/held{i}")) for i in range(10)]
    together, result = await time_of_healthy(waiting + pages, healthy, settings)

    # a stall is the 4 s wait
    assert together <= alone + SLACK, (alone, together)
    # the stalled site was still waiting long after the healthy one was done
    assert max(stalled.times("/robots.txt")) - min(stalled.times("/robots.txt")) > 2.5
    assert all(
        result.outcome(r.url).message.startswith("Forbidden by robots.txt: unknown_unreachable") for r in waiting
    )
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_a_cluster_crawl_delay_does_not_pace_other_sites(servers, tmp_path):
    """Fault 1(b): with the Redis store a ``Crawl-delay: 1`` site's requests
    wait for their cluster-wide turn; an unrelated site is not paced."""
    require_redis()
    redis = RedisServer(tmp_path / "redis")
    try:
        delayed, healthy = servers("127.0.0.2"), servers("127.0.0.3")
        delayed.routes["/robots.txt"] = robots("User-agent: *\nCrawl-delay: 1\n")
        healthy.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
        pages = healthy_pages(healthy)
        settings = {**STALL_SETTINGS, "RFC9309_STORAGE": f"{redis.url}?prefix=stall:"}

        alone, _ = await time_of_healthy(pages, healthy, settings)
        redis.client().flushall()
        slow = [Req(delayed.url(f"/slow{i}")) for i in range(6)]
        together, result = await time_of_healthy(slow + pages, healthy, settings)
    finally:
        redis.stop()

    # paced with the delayed site, the healthy one would take 5 s more
    assert together <= alone + SLACK, (alone, together)
    hits = sorted(h.at for h in delayed.page_hits())
    assert len(hits) == 6 and min(b - a for a, b in zip(hits, hits[1:])) >= 0.9, hits
    assert result.stat("crawl_delay/cluster/requests_held") >= 4
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_closing_ends_the_waits_at_once_and_fetches_nothing_more(servers, caplog):
    """Fault 2: CLOSESPIDER_TIMEOUT = 1 with an origin whose robots.txt is
    retried for 8 s: the crawl closes in under 2 s, its held requests end as
    IgnoreRequest (counted), and no robots.txt fetch starts after the close."""
    stalled, healthy = servers("127.0.0.2"), servers("127.0.0.3")
    stalled.routes["/robots.txt"] = Reply(503)
    healthy.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    plan = [Req(stalled.url(f"/held{i}")) for i in range(5)] + [Req(healthy.url("/ok"))]
    settings = {"CLOSESPIDER_TIMEOUT": 1, "RFC9309_UNREACHABLE": "wait:8"}

    seen: list[bool] = []

    def closed(self, reason) -> None:  # the spider's receiver of spider_closed: the first one
        seen.append(robots_service(self.crawler).closed)

    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        result = await crawl(plan, settings, spider_attrs={"closed": closed})
    # from spider_opened (the timeout counts from there) to spider_closed, not the crawler's own set-up
    took = (result.stats["finish_time"] - result.stats["start_time"]).total_seconds()
    # the gate stopped the robots service when the engine closed it (before spider_closed):
    # no fetch, retry or turn starts while the rest of the close runs
    assert seen == [True], seen

    assert took < 2.0, took
    assert result.stats["finish_reason"] == "closespider_timeout"
    assert result.outcome(healthy.url("/ok")).status == 200
    for spec in plan[:5]:
        outcome = result.outcome(spec.url)
        assert outcome.error == "IgnoreRequest" and "spider closed" in outcome.message, outcome
    assert result.stat("requests/dropped/spider_closing") == 5
    # the close began 1 s after the spider opened, i.e. after the first fetch; nothing after it
    first = min(stalled.times("/robots.txt"))
    assert all(at < first + 1.05 for at in stalled.times("/robots.txt")), stalled.times("/robots.txt")
    assert any("dropped as the spider closed: 5" in r.getMessage() for r in caplog.records)
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_released_requests_keep_the_per_domain_limit(servers):
    """Fault 9: 20 requests held for a slow robots.txt are released together;
    the server never sees more than CONCURRENT_REQUESTS_PER_DOMAIN at once."""
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = Reply(200, "User-agent: *\nAllow: /\n", {"Content-Type": "text/plain"}, delay=0.5)
    for i in range(20):
        site.routes[f"/p{i}"] = Reply(200, "<html>p</html>", {"Content-Type": "text/html"}, delay=0.05)
    plan = [Req(site.url(f"/p{i}")) for i in range(20)]
    settings = {
        "ADDONS": {"scrapy_rfc9309.Addon": 0},
        "DOWNLOADER_MIDDLEWARES": {},
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
    }
    result = await crawl(plan, settings)
    assert all(result.outcome(r.url).status == 200 for r in plan)
    assert site.count("/robots.txt") == 1
    assert site.max_in_flight == 2, site.max_in_flight
    check_accounting(result)


class RefusingOffsite(OffsiteMiddleware):
    """A project's own offsite rule: one allowed domain is refused after all."""

    def should_follow(self, request, spider) -> bool:
        if "127.0.0.3" in request.url:
            return False
        return super().should_follow(request, spider)


@pytest_twisted.ensureDeferred
async def test_early_fetch_asks_the_projects_own_offsite_rule(servers):
    """Fault 7: the early fetch asks the enabled OffsiteMiddleware (a subclass
    here) whether it will drop the request, so no robots.txt is fetched for a
    request it refuses although ``allowed_domains`` names its host."""
    kept, refused = servers("127.0.0.2"), servers("127.0.0.3")
    kept.routes["/robots.txt"] = refused.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    middlewares = {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "scrapy_rfc9309.RobotsTxtMiddleware": 100,
        "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware": None,
        f"{__name__}.RefusingOffsite": 50,
    }
    result = await crawl(
        [Req(kept.url("/a"), dont_filter=False), Req(refused.url("/b"), dont_filter=False)],
        {"DOWNLOADER_MIDDLEWARES": middlewares, "RFC9309_EARLY_FETCH": True},
        {"allowed_domains": ["127.0.0.2", "127.0.0.3"]},
    )
    assert result.outcome(kept.url("/a")).status == 200
    # dropped by the offsite rule (at scheduling on Scrapy 2.14+, in the downloader before)
    assert result.stats.get("offsite/filtered") == 1
    assert all(o.error == "IgnoreRequest" for o in result.outcomes if o.url == refused.url("/b"))
    assert refused.paths() == []  # not even robots.txt
    assert kept.count("/robots.txt") == 1


class BrokenMiddleware:
    """A user's downloader middleware with a bug that only robots.txt requests reach."""

    @compat.request_method
    def process_request(self, request):
        if "rfc9309_robots_fetch" in request.meta:
            raise TypeError("unsupported operand type(s) for +: 'int' and 'str'")


class UrlFilterMiddleware:
    """A user's URL filter that drops every URL ending in .txt."""

    @compat.request_method
    def process_request(self, request):
        if request.url.endswith(".txt"):
            raise IgnoreRequest("no .txt files")


@pytest.mark.parametrize(
    ("component", "error"), [("BrokenMiddleware", "TypeError"), ("UrlFilterMiddleware", "IgnoreRequest")]
)
@pytest_twisted.ensureDeferred
async def test_an_error_that_is_not_the_networks_is_an_error_and_still_denies(servers, caplog, component, error):
    """Fault 5: not "unreachable" with an INFO line, but an ERROR with its
    traceback and its own stat; the site is still denied (fail-safe)."""
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    middlewares = {
        "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
        "scrapy_rfc9309.RobotsTxtMiddleware": 100,
        f"{__name__}.{component}": 543,
    }
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        result = await crawl([site.url("/a"), site.url("/b")], {"DOWNLOADER_MIDDLEWARES": middlewares})

    assert all(o.message.startswith("Forbidden by robots.txt: unknown_unreachable") for o in result.outcomes)
    assert result.stat(f"fetch/error/internal/{error}") == 1
    errors = [r for r in caplog.records if r.levelno == logging.ERROR and "not the network" in r.getMessage()]
    assert len(errors) == 1 and errors[0].exc_info is not None and errors[0].exc_info[0].__name__ == error
    assert not [r for r in caplog.records if "is unreachable" in r.getMessage()]
    assert site.paths() == []
    # the robots.txt lane gave back its widening although the hop never reached the network
    assert result.crawler.engine.downloader.total_concurrency == 16
    check_accounting(result)


# deprecated in Scrapy 2.19 (in favour of per-domain slots), still what many crawls set
@pytest.mark.filterwarnings("ignore:The CONCURRENT_REQUESTS_PER_IP setting is deprecated")
@pytest.mark.needs_reactor  # Scrapy's caching resolver is installed on the reactor
@pytest_twisted.ensureDeferred
async def test_per_ip_slots_give_two_sites_on_one_address_the_larger_floor(servers):
    """Fault 8: with CONCURRENT_REQUESTS_PER_IP the slot key is the address;
    ``localhost`` and ``127.0.0.1`` share it, so both keep the larger floor.

    ``scrapy crawl`` installs Scrapy's caching resolver (whose cache gives the
    per-IP slot keys); a CrawlerRunner does not, so the test installs it."""
    from scrapy.resolver import CachingThreadedResolver, dnscache
    from twisted.internet import reactor

    previous = reactor.resolver
    CachingThreadedResolver(reactor, 100, 10.0).install_on_reactor()
    dnscache.pop("localhost", None)
    try:
        await _crawl_two_sites_on_one_address(servers)
    finally:
        reactor.installResolver(previous)


async def _crawl_two_sites_on_one_address(servers) -> None:
    one, two = servers("127.0.0.1"), servers("127.0.0.1")
    one.routes["/robots.txt"] = robots("User-agent: *\nCrawl-delay: 0.5\n")
    two.routes["/robots.txt"] = robots("User-agent: *\nCrawl-delay: 1\n")
    by_name = f"http://localhost:{two.port}"
    plan = [Req(one.url(f"/a{i}")) for i in range(3)] + [Req(f"{by_name}/b{i}") for i in range(3)]
    settings = {
        "CONCURRENT_REQUESTS_PER_IP": 1,
        "DOWNLOAD_DELAY": 0,
        # DownloaderAwarePriorityQueue (the default since Scrapy 2.14) refuses per-IP slots
        "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue",
    }
    result = await crawl(plan, settings)
    assert all(o.status == 200 for o in result.outcomes), result.outcomes
    hits = sorted(h.at for server in (one, two) for h in server.page_hits())
    assert len(hits) == 6
    assert min(b - a for a, b in zip(hits, hits[1:])) >= 1.0 - 0.1, hits
    assert result.stats["rfc9309/crawl_delay/max_floor"] == 1.0
