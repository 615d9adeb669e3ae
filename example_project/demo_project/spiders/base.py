"""What the example spiders share: the demo site lives exactly as long as the crawl."""

from __future__ import annotations

import logging
from typing import Any

import scrapy
from scrapy import signals
from scrapy.exceptions import IgnoreRequest

from ..demo_site import DemoSite
from ..report import DOWNLOADED
from ..table import PageRow

logger = logging.getLogger(__name__)

#: the finish reason of a crawl whose demo site could not start (a port in use)
SITE_UNAVAILABLE = "demo_site_unavailable"

FORBIDDEN = "Forbidden by robots.txt: "
#: a page whose usage preferences disallow a declared purpose (RFC9309_USAGE): not
#: downloaded (robots.txt said so), or downloaded and dropped (its Content-Usage header)
USAGE = {"Forbidden by usage preferences: ": "", "Dropped by usage preferences: ": DOWNLOADED}


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
    """Starts the embedded demo site when the crawler builds the spider, and
    when the engine stops prints :meth:`report` to stdout and stops the site.
    ``engine_stopped`` comes after Scrapy's closing logs, so the report is the
    last thing on the terminal.

    A port already in use stops the crawl at once: one ERROR line naming the
    address and what to do, no request, no table, exit status 1.  (Raised
    from here, the error would reach the user as a 40-line traceback under
    "Task exception was never retrieved".)  The crawl is refused as the
    plugin refuses one for a bad setting (``scrapy_rfc9309.compat``, which
    knows how each Scrapy release honours it)."""

    site: DemoSite
    #: whether the site is served (False: the crawl is refused when the spider opens)
    site_up: bool = False

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
        spider = super().from_crawler(crawler, *args, **kwargs)
        try:
            spider.site, spider.site_up = DemoSite.start(), True
        except RuntimeError as exc:  # the address, and another port to choose
            logger.error("%s", exc)
            spider.site = DemoSite([])  # serves nothing: start() yields no request
            crawler.signals.connect(spider._refuse, signal=signals.spider_opened)
        crawler.signals.connect(spider._engine_stopped, signal=signals.engine_stopped)
        return spider

    def _refuse(self) -> None:
        from scrapy_rfc9309 import compat

        compat.fail_exit_status(self.crawler)
        compat.close_at_open(self.crawler, SITE_UNAVAILABLE)

    def _engine_stopped(self) -> None:
        try:
            if self.site_up:
                print(self.report(), end="", flush=True)
        finally:
            self.site.stop()

    def report(self) -> str:
        return ""
