"""One worker of a cluster crawl, run as its own process by test_storage_redis.py.

    python cluster_worker.py REDIS_URL PREFIX OUT_JSON URL [URL ...]

Prints ``ready`` once Scrapy is imported and the crawl is set up, then waits
for one line on stdin before it starts, so the test can start all workers at
the same moment.  The crawl uses the add-on (middleware + Crawl-delay floor)
with the Redis store, AutoThrottle on and every Scrapy delay at zero.  Writes
what became of each URL, the ``rfc9309/`` stats and the finish reason to
OUT_JSON.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import scrapy
from accounting import check_crawler  # this directory: sys.path[0] of the script

try:  # Scrapy 2.14+
    from scrapy.crawler import AsyncCrawlerProcess as Process
except ImportError:  # Scrapy 2.13
    from scrapy.crawler import CrawlerProcess as Process  # type: ignore[assignment]


class WorkerSpider(scrapy.Spider):
    name = "cluster_worker"

    def __init__(self, *args: Any, urls: list[str], outcomes: list[dict], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.urls = urls
        self.outcomes = outcomes

    async def start(self):
        for url in self.urls:
            yield scrapy.Request(url, callback=self.ok, errback=self.failed, dont_filter=True)

    def ok(self, response):
        self.outcomes.append({"url": response.url, "status": response.status})

    def failed(self, failure):
        self.outcomes.append(
            {"url": failure.request.url, "error": type(failure.value).__name__, "message": str(failure.value)}
        )


def main(argv: list[str]) -> None:
    redis_url, prefix, out, *urls = argv
    settings = {
        "ADDONS": {"scrapy_rfc9309.Addon": 0},
        "RFC9309_STORAGE": f"{redis_url}?prefix={prefix}",
        "USER_AGENT": "ClusterBot/1.0",
        "AUTOTHROTTLE_ENABLED": True,
        "AUTOTHROTTLE_START_DELAY": 0,
        "DOWNLOAD_DELAY": 0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "RETRY_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 10,
        "RFC9309_FETCH_TIMEOUT": 5,
        "LOG_LEVEL": "INFO",
    }
    if os.environ.get("RFC9309_TEST_REACTORLESS") == "1":  # tests/conftest.py: --reactor=none
        settings["TWISTED_REACTOR_ENABLED"] = False
    process = Process(settings)
    crawler = process.create_crawler(WorkerSpider)
    outcomes: list[dict] = []
    print("ready", flush=True)
    sys.stdin.readline()
    process.crawl(crawler, urls=urls, outcomes=outcomes)
    process.start()
    stats = crawler.stats.get_stats()
    report = {
        "accounting": check_crawler(crawler),  # its stats add up (accounting.py, read_report)
        "outcomes": outcomes,
        "finish_reason": stats.get("finish_reason"),
        "rfc9309": {k[len("rfc9309/") :]: v for k, v in stats.items() if k.startswith("rfc9309/")},
    }
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(report, fh, default=str)


if __name__ == "__main__":
    main(sys.argv[1:])
