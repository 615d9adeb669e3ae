"""Sitemap URLs from robots.txt, without downloading robots.txt twice.

Scrapy's ``SitemapSpider`` reads sitemaps from robots.txt when a
``sitemap_urls`` entry ends in ``/robots.txt``: it downloads the file as a
page, after the robots.txt middleware has already downloaded it once.
:func:`robots_sitemaps` returns the ``Sitemap:`` lines of the file the plugin
already holds (fetching it once, through the crawl's robots service, if the
origin is new)::

    from scrapy.spiders import SitemapSpider
    from scrapy_rfc9309.sitemaps import robots_sitemaps

    class ShopSpider(SitemapSpider):
        name = "shop"
        sitemap_rules = [("/product/", "parse_product")]

        async def start(self):
            self.sitemap_urls = await robots_sitemaps(self.crawler, "https://shop.example")
            async for request in super().start():
                yield request
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lifecycle import governing_robots

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["robots_sitemaps"]


async def robots_sitemaps(crawler: Crawler, url: str) -> list[str]:
    """The ``Sitemap:`` URLs of the robots.txt of ``url``'s origin, in file
    order (duplicates removed).

    Empty when the file lists none, when robots.txt is unavailable or
    unreachable, or when the origin is not obeyed (``RFC9309_ORIGINS``).
    Call it once the crawl runs (``start()``, a callback).  The sitemap URLs
    themselves are checked against their own origin's robots.txt when they
    are requested, like any page.
    """
    robots = await governing_robots(crawler, url)
    return list(robots.sitemaps) if robots is not None else []
