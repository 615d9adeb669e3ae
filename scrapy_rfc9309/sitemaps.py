"""Sitemap URLs from robots.txt without downloading it twice: Scrapy's ``SitemapSpider`` fetches a
``sitemap_urls`` entry ending in ``/robots.txt`` as a page, after the plugin fetched it (docs/first_hour.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .lifecycle import governing_robots

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["robots_sitemaps"]


async def robots_sitemaps(crawler: Crawler, url: str) -> list[str]:
    """The ``Sitemap:`` URLs of the robots.txt of ``url``'s origin, in file order, once (none: unavailable, not
    obeyed).  Call it once the crawl runs (``start()``, a callback); each sitemap is checked like any page."""
    robots = await governing_robots(crawler, url)
    return list(robots.sitemaps) if robots is not None else []
