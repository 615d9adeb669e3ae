"""The spider middleware that does not follow the links of a ``nofollow`` page: where a purpose is declared, the
requests a callback yields from a page whose directives say ``nofollow`` or ``none`` are dropped (items go on),
counted and logged once per page; at :data:`PRIORITY`, nearest the spider, so no other middleware counts them."""

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
    from typing_extensions import Self  # (typing.Self requires Python 3.11)

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
        self.crawler, self.counts = crawler, robots_service(crawler).counts

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    def process_spider_output(self, response: Response, result: Iterable[Any], spider: Any = None) -> Iterator[Any]:
        """A synchronous callback's output, where Scrapy keeps it synchronous (2.13)."""
        directive, dropped = _directive(response), 0
        try:
            for item in result:
                if directive is not None and isinstance(item, Request):
                    dropped += 1
                else:
                    yield item
        finally:
            self._dropped(response, directive, dropped)

    async def process_spider_output_async(
        self, response: Response, result: AsyncIterator[Any], spider: Any = None
    ) -> AsyncIterator[Any]:
        directive, dropped = _directive(response), 0
        try:
            async for item in result:
                if directive is not None and isinstance(item, Request):
                    dropped += 1
                else:
                    yield item
        finally:
            self._dropped(response, directive, dropped)

    def _dropped(self, response: Response, directive: str | None, count: int) -> None:
        if count:
            self.counts.inc("nofollow/pages")
            self.counts.inc("nofollow/requests_dropped", count)
            logger.info("Not following %d link%s of %s: nofollow (%s)", count, "s" if count > 1 else "",
                        shorten(mask_url(response.url)), directive, extra={"spider": self.crawler.spider})  # fmt: skip


def _directive(response: Response) -> str | None:
    """The page's nofollow statements when they are enforced, else None."""
    prov = response.meta.get(META_KEY) if response.request is not None else None
    said = prov.get("nofollow") if isinstance(prov, dict) else None
    if said and said.get("enforced"):
        return "; ".join(str(Source.from_dict(s)) for s in said.get("sources") or ()) or "nofollow"
    return None
