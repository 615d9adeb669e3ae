"""The spider middleware that does not follow the links of a ``nofollow`` page.

A page whose robots directives address the crawler with ``nofollow`` (or
``none``), in an ``X-Robots-Tag`` header line or a robots meta tag, asks that
the links found on it are not followed.  The downloader middleware reads the
directives where a purpose is declared (docs/usage_preferences.md) and puts
them in ``response.meta["rfc9309"]["nofollow"]`` (``sources``, and
``enforced``: a purpose is declared for the response, and this middleware
runs).  This middleware then drops every :class:`~scrapy.Request` the
callback yields from such a response, before it is scheduled (items and
everything else go on): counted (``rfc9309/nofollow/requests_dropped``,
``rfc9309/nofollow/pages``) and logged once per page at INFO, naming the page,
the count and the directive.

Enabled by the add-on (``SPIDER_MIDDLEWARES``, priority :data:`PRIORITY`, nearest
the spider so that no other middleware counts the dropped requests); by hand::

    SPIDER_MIDDLEWARES = {"scrapy_rfc9309.NofollowMiddleware": 950}

It runs only where a purpose is declared for the crawl or an origin
(``RFC9309_USAGE``, ``RFC9309_ORIGINS``): a crawl that declares none pays
nothing, and a request's own ``rfc9309_usage`` there reports a page's
nofollow without acting on it.  ``RFC9309_USAGE``'s ``"nofollow": False`` (or the plugin
off) leaves it out too (``NotConfigured``); the directives are still reported.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.exceptions import NotConfigured

from .audit import META_KEY
from .lifecycle import rfc9309_settings, robots_service
from .masking import mask_url
from .robots.text import shorten
from .robots.usage import Source

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    # typing.Self requires Python 3.11
    from typing_extensions import Self

__all__ = ["PRIORITY", "NofollowMiddleware"]

logger = logging.getLogger(__name__)

#: its place in SPIDER_MIDDLEWARES: after (nearer the spider than) Scrapy's own, DepthMiddleware's 900
PRIORITY = 950


class NofollowMiddleware:
    """Drops the requests yielded from a response whose directives say nofollow."""

    def __init__(self, crawler: Crawler) -> None:
        settings = rfc9309_settings(crawler)
        if not settings.enabled or not settings.follows_nofollow:
            raise NotConfigured  # (it would cost every response a pass over what its callback yields)
        self.crawler = crawler
        self.counts = robots_service(crawler).counts

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_spider_output(self, response: Response, result: Iterable[Any], spider: Any = None) -> Iterable[Any]:
        if _directive(response) is None:
            return result
        return self._filter(response, result)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        directive = _directive(response)
        dropped = 0
        try:
            async for item in result:
                if directive is not None and isinstance(item, Request):
                    dropped += 1
                    continue
                yield item
        finally:
            if dropped:
                self._dropped(response, directive, dropped)

    def _filter(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        directive = _directive(response)
        dropped = 0
        try:
            for item in result:
                if isinstance(item, Request):
                    dropped += 1
                    continue
                yield item
        finally:
            if dropped:
                self._dropped(response, directive, dropped)

    def _dropped(self, response: Response, directive: Any, count: int) -> None:
        self.counts.inc("nofollow/pages")
        self.counts.inc("nofollow/requests_dropped", count)
        logger.info(
            "Not following %d link%s of %s: nofollow (%s)",
            count, "s" if count > 1 else "", shorten(mask_url(response.url)), directive,
            extra={"spider": self.crawler.spider},
        )  # fmt: skip


def _directive(response: Response) -> str | None:
    """The page's nofollow statements when they are enforced, else None."""
    prov = response.meta.get(META_KEY) if response.request is not None else None
    said = prov.get("nofollow") if isinstance(prov, dict) else None
    if not said or not said.get("enforced"):
        return None
    return "; ".join(str(Source.from_dict(s)) for s in said.get("sources") or ()) or "nofollow"
