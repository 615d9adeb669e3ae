"""``scrapy_rfc9309.sitemaps.robots_sitemaps`` in real crawls: the sitemaps
come from the file the middleware fetched, which no server sees requested twice."""

from __future__ import annotations

from typing import Any

import pytest_twisted
import scrapy

from scrapy_rfc9309.sitemaps import robots_sitemaps

from .harness import BASE_SETTINGS, Runner, run
from .servers import Reply, robots


class SitemapProbe(scrapy.Spider):
    """Requests one page, then asks for the sitemaps of each URL in ``asks``."""

    name = "sitemap_probe"

    def __init__(self, first: str, asks: list[str], found: dict[str, Any], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.first, self.asks, self.found = first, asks, found

    async def start(self):
        yield scrapy.Request(self.first, callback=self.after_page, errback=self.after_page, dont_filter=True)

    async def after_page(self, _response_or_failure: Any) -> None:
        for url in self.asks:
            try:
                self.found[url] = await robots_sitemaps(self.crawler, url)
            except Exception as exc:  # the test looks at which
                self.found[url] = exc


async def ask(first: str, asks: list[str], settings: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict]:
    runner = Runner({**BASE_SETTINGS, **(settings or {})})
    crawler = runner.create_crawler(SitemapProbe)
    found: dict[str, Any] = {}
    await run(runner, crawler, first=first, asks=asks, found=found)
    return found, crawler.stats.get_stats()


@pytest_twisted.ensureDeferred
async def test_sitemaps_come_from_the_one_fetch_of_each_origin(servers):
    crawled, fresh = servers("127.0.0.1"), servers("127.0.0.2")
    crawled.routes["/robots.txt"] = robots(
        "User-agent: *\nDisallow: /private\n"
        f"Sitemap: {crawled.url('/sitemap-1.xml')}\n"
        "Sitemap: https://cdn.example/sitemap-2.xml\n"
        f"Sitemap: {crawled.url('/sitemap-1.xml')}\n"
    )
    fresh.routes["/robots.txt"] = robots(f"User-agent: *\nDisallow:\nSitemap: {fresh.url('/s.xml')}\n")

    found, stats = await ask(crawled.url("/page"), [crawled.url("/other"), fresh.url("/"), fresh.url("/again")])

    assert found[crawled.url("/other")] == [crawled.url("/sitemap-1.xml"), "https://cdn.example/sitemap-2.xml"]
    assert found[fresh.url("/")] == found[fresh.url("/again")] == [fresh.url("/s.xml")]
    # one robots.txt request per origin: the page's, then the helper's lookups share it
    assert crawled.paths() == ["/robots.txt", "/page"]
    assert fresh.paths() == ["/robots.txt"]
    assert stats["rfc9309/fetch/count"] == 2
    # lookups are not requests: only the page was checked
    assert stats["rfc9309/requests/checked"] == 1
    assert "rfc9309/requests/allowed/allowed_robots_txt" not in stats


@pytest_twisted.ensureDeferred
async def test_no_sitemaps_when_robots_txt_is_unreachable_unavailable_or_not_obeyed(servers):
    page, down, gone, own = servers("127.0.0.1"), servers("127.0.0.2"), servers("127.0.0.3"), servers("127.0.0.4")
    # the bodies list sitemaps, but none of them is a file the plugin reads
    down.routes["/robots.txt"] = Reply(503, f"Sitemap: {down.url('/s.xml')}\n")
    gone.routes["/robots.txt"] = Reply(404, f"Sitemap: {gone.url('/s.xml')}\n")
    own.routes["/robots.txt"] = robots(f"Sitemap: {own.url('/s.xml')}\n")

    found, _ = await ask(
        page.url("/"),
        [down.url("/"), gone.url("/"), own.url("/")],
        {"RFC9309_ORIGINS": {own.origin: {"obey": False}}},
    )

    assert found == {down.url("/"): [], gone.url("/"): [], own.url("/"): []}
    assert down.paths() == ["/robots.txt"] and gone.paths() == ["/robots.txt"]
    assert own.paths() == []  # obey: False: robots.txt is not fetched for the helper either


@pytest_twisted.ensureDeferred
async def test_misuse_is_an_error_not_an_empty_list(servers):
    page = servers("127.0.0.1")
    found, _ = await ask(page.url("/"), ["ftp://example.com/", page.url("/")], {"RFC9309_ENABLED": False})
    assert isinstance(found["ftp://example.com/"], ValueError)
    assert isinstance(found[page.url("/")], RuntimeError)
    assert "not enabled" in str(found[page.url("/")])
