"""``scrapy crawl demo_cluster``: one worker of the demo on a scrapy-redis cluster.

Start as many as you like; they share one Redis server with scrapy-redis's
scheduler and dupefilter, and the plugin keeps robots.txt and the Crawl-delay
turns on the same server (``RFC9309_STORAGE`` is not set: with scrapy-redis as
the scheduler the plugin uses ``REDIS_URL``).  The demo site is served on its
own (``python -m demo_project.demo_site``) and the start URLs are pushed with
``python -m demo_project.cluster push``; docs/storage.md has the recipe.

Each page's outcome is recorded in Redis (:func:`demo_project.cluster.record`)
and, when the worker stops (10 s without work), it prints the demo's table of
the whole cluster so far: any worker's table covers every worker's pages.
Without scrapy-redis installed the spider only says how to install it, so
``scrapy crawl demo`` never needs it.
"""

from __future__ import annotations

from typing import Any

import scrapy
from scrapy import signals

from scrapy_rfc9309 import Verdict, robots_service
from scrapy_rfc9309.lifecycle import rfc9309_settings
from scrapy_rfc9309.origins import origin_of

from ..cluster import REDIS_URL, cluster_table, record
from ..table import PageRow
from .base import dropped_row

try:
    from scrapy_redis.spiders import RedisSpider
except ImportError:  # pragma: no cover - without the cluster extra
    RedisSpider = None


CUSTOM_SETTINGS: dict[str, Any] = {
    # scrapy-redis: one queue and one dupefilter for every worker
    "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
    "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
    # a worker that stops leaves the queue to the others (the default empties it)
    "SCHEDULER_PERSIST": True,
    # the one Redis server: scrapy-redis's and, since RFC9309_STORAGE is not set, the plugin's
    # (its keys under the default prefix, rfc9309:, apart from scrapy-redis's)
    "REDIS_URL": REDIS_URL,
    # a worker stops after 10 s without work, and prints the table
    "MAX_IDLE_TIME_BEFORE_CLOSE": 10,
    # small workers, so that the demo's 26 pages are shared by three of them: a worker
    # takes at most CONCURRENT_REQUESTS + RFC9309_MAX_HELD requests off the shared queue
    # (the gate's default bound, 100,000, would let the first worker take them all)
    "CONCURRENT_REQUESTS": 4,
    "RFC9309_MAX_HELD": 4,
    # as the one-process demo
    "ROBOTSTXT_USER_AGENT": "DemoBot",
    "RFC9309_FETCH_TIMEOUT": 5,
}

if RedisSpider is None:  # pragma: no cover - without the cluster extra

    class DemoClusterSpider(scrapy.Spider):
        name = "demo_cluster"
        custom_settings = CUSTOM_SETTINGS

        @classmethod
        def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
            raise RuntimeError("demo_cluster needs scrapy-redis: pip install -e '.[cluster]' (see docs/storage.md)")

else:

    class DemoClusterSpider(RedisSpider):  # type: ignore[no-redef]
        name = "demo_cluster"
        custom_settings = CUSTOM_SETTINGS

        @classmethod
        def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> Any:
            spider = super().from_crawler(crawler, *args, **kwargs)
            crawler.signals.connect(spider._print_table, signal=signals.spider_closed)
            return spider

        def make_request_from_data(self, data: bytes) -> Any:
            # scrapy-redis builds the request from the pushed JSON (its URL and meta)
            request = super().make_request_from_data(data)
            return request.replace(callback=self.page, errback=self.dropped)

        def page(self, response: scrapy.http.Response) -> None:
            request = response.request
            known = robots_service(self.crawler).known(origin_of(request.url) or "")
            if known is None:
                reason = Verdict.ALLOWED_NOT_OBEYED.value  # robots.txt never consulted
            else:
                reason = known.robots.check(request.url, known.token).reason
            self._record(request, PageRow(request.meta["demo_path"], "allowed", reason))

        def dropped(self, failure: Any) -> None:
            self._record(failure.request, dropped_row(failure))

        def _record(self, request: scrapy.Request, row: PageRow) -> None:
            record(self.server, request.url, request.meta["demo_origin"], row)

        async def _print_table(self, spider: Any, reason: str) -> None:
            try:
                table = await cluster_table(rfc9309_settings(self.crawler))
            except OSError as exc:
                self.logger.warning("no table: the demo site does not answer (%s)", exc)
                return
            print(table, end="", flush=True)
