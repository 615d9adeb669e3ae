"""What the example spiders share: the demo site lives exactly as long as the crawl."""

from __future__ import annotations

from typing import Any

import scrapy
from scrapy import signals

from ..demo_site import DemoSite


class DemoSiteSpider(scrapy.Spider):
    """Starts the embedded demo site when the crawler builds the spider (a
    port already in use fails the crawl at once, naming the address), and
    when the engine stops prints :meth:`report` to stdout and stops the site.
    ``engine_stopped`` comes after Scrapy's closing logs, so the report is the
    last thing on the terminal."""

    site: DemoSite

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.site = DemoSite.start()
        crawler.signals.connect(spider._engine_stopped, signal=signals.engine_stopped)
        return spider

    def _engine_stopped(self) -> None:
        try:
            print(self.report(), end="", flush=True)
        finally:
            self.site.stop()

    def report(self) -> str:
        return ""
