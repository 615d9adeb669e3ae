"""What the example spiders share: the demo site lives exactly as long as the crawl."""

from __future__ import annotations

from typing import Any

import scrapy
from scrapy import signals
from scrapy.exceptions import IgnoreRequest

from ..demo_site import DemoSite
from ..table import PageRow

FORBIDDEN = "Forbidden by robots.txt: "
#: a page whose usage preferences disallow a declared purpose (RFC9309_USAGE): not
#: downloaded (robots.txt said so), or downloaded and dropped (its Content-Usage header)
USAGE = {"Forbidden by usage preferences: ": "", "Dropped by usage preferences: ": " (downloaded, dropped)"}


def dropped_row(failure: Any) -> PageRow:
    """The table row of a page request that failed: DENIED with the plugin's
    verdict and deciding line, or ERROR with the exception."""
    request = failure.request
    message = str(failure.value)
    if failure.check(IgnoreRequest) and message.startswith(FORBIDDEN):
        return PageRow(request.meta["demo_path"], "DENIED", message[len(FORBIDDEN) :])
    for prefix, note in USAGE.items():
        if failure.check(IgnoreRequest) and message.startswith(prefix):
            return PageRow(request.meta["demo_path"], "SKIPPED", message[len(prefix) :] + note)
    return PageRow(request.meta["demo_path"], "ERROR", f"{type(failure.value).__name__}: {message}")


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
