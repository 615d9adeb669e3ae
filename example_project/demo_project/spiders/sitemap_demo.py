"""``scrapy crawl sitemap_demo``: a SitemapSpider fed from robots.txt, which is downloaded once.

Scrapy's own way, ``sitemap_urls = [".../robots.txt"]``, downloads robots.txt
as a page after the middleware already fetched it.  Here the ``Sitemap:``
lines come from the plugin's cache through
:func:`scrapy_rfc9309.sitemaps.robots_sitemaps`.  The pages the sitemap lists
are still checked against robots.txt: /private/salaries.html is dropped.

Its items carry the provenance of the page they came from (which robots.txt
allowed it, by which line, fetched when, its SHA-256), copied from
``response.meta["rfc9309"]`` by :mod:`demo_project.provenance`; run
``scrapy crawl sitemap_demo -O items.jsonl`` to keep them.
"""

from __future__ import annotations

import json
from typing import Any

from scrapy import signals
from scrapy.spiders import SitemapSpider

from scrapy_rfc9309.sitemaps import robots_sitemaps

from ..demo_site import ORIGINS
from .base import DemoSiteSpider


class SitemapDemoSpider(DemoSiteSpider, SitemapSpider):
    name = "sitemap_demo"
    custom_settings = {
        "ROBOTSTXT_USER_AGENT": "DemoBot",
        # every item gets item["robots_txt"]: the provenance of the page it came from
        "SPIDER_MIDDLEWARES": {"demo_project.provenance.RobotsProvenanceMiddleware": 900},
    }
    sitemap_rules = [("", "parse_page")]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.sitemaps: list[str] = []
        self.pages: list[str] = []
        self.dropped: list[str] = []
        self.items: list[dict[str, Any]] = []

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(spider.item_scraped, signal=signals.item_scraped)
        return spider

    def item_scraped(self, item: Any) -> None:
        self.items.append(dict(item))

    async def start(self):
        if not self.site_up:  # the crawl is being refused (a port in use)
            return
        self.sitemaps = self.sitemap_urls = await robots_sitemaps(self.crawler, ORIGINS["rules"])
        async for request in super().start():
            yield request

    def _parse_sitemap(self, response: Any) -> Any:
        # the page requests a sitemap yields get an errback, so the report can show the drops
        for request in super()._parse_sitemap(response):
            yield request.replace(errback=self.page_dropped) if hasattr(request, "errback") else request

    def page_dropped(self, failure: Any) -> None:
        self.dropped.append(f"{failure.request.url} ({failure.value})")

    def parse_page(self, response: Any) -> Any:
        self.pages.append(response.url)
        yield {"url": response.url}

    def report(self) -> str:
        hits = self.site.hits("rules")
        lines = [
            f"sitemaps listed in {ORIGINS['rules']}/robots.txt: {', '.join(self.sitemaps) or 'none'}",
            *(f"crawled from the sitemap: {url}" for url in sorted(self.pages)),
            *(f"dropped from the sitemap: {drop}" for drop in sorted(self.dropped)),
            f"robots.txt requests seen by the server: {sum(hit.path == '/robots.txt' for hit in hits)}",
            f"sitemap.xml requests seen by the server: {sum(hit.path == '/sitemap.xml' for hit in hits)}",
            *(
                f"item {item['url']} robots_txt: {json.dumps(item.get('robots_txt'), sort_keys=True)}"
                for item in sorted(self.items, key=lambda i: i["url"])
            ),
        ]
        return "\n".join(lines) + "\n"
