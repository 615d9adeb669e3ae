"""One worker of a scrapy-redis cluster, run as its own process by test_scrapy_redis_cluster.py.

    python scrapy_redis_worker.py REDIS_URL WORKER OUT_DIR [SETTING=JSON ...]

A ``RedisSpider`` on scrapy-redis's own scheduler and dupefilter, set up as a
scrapy-redis user sets it up: start URLs are JSON messages (``{"url": ...}``)
pushed to the Redis list ``cluster:start_urls``, and every worker pops the
requests from the shared queue ``cluster:requests``.  The plugin is enabled by
the add-on alone: ``RFC9309_STORAGE`` is *not* set, so the plugin finds the
Redis server through ``REDIS_URL``, as scrapy-redis does.  The User-Agent
names the worker (``ClusterBot/1.0 (worker 2)``), so the test servers can tell
the workers apart; the product token is ``ClusterBot`` for all.

Prints ``ready`` once Scrapy is imported and the crawl is set up, then waits
for one line on stdin, so the test can start every worker at the same moment.
The spider never closes by itself (scrapy-redis workers wait for more work);
the test ends it with SIGTERM, Scrapy's graceful stop.

Writes, in OUT_DIR:

* ``worker<N>.jsonl``: one line per request as it ends, flushed (a worker
  killed with SIGKILL leaves what it had finished): the URL, the status or the
  exception and its message, the worker, and ``time.monotonic()`` (one clock
  for every process of the machine) when the request entered the downloader
  middlewares and when it ended;
* ``worker<N>.json`` at the end: the finish reason, the ``rfc9309/`` and
  ``scheduler/`` stats, every warning raised in the process (pytest's
  ``filterwarnings`` does not reach a subprocess, so the test checks them), and
  ``store``: when the plugin logged its store unreachable and answering again.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from accounting import check_crawler  # this directory: sys.path[0] of the script
from scrapy_redis.spiders import RedisSpider

from scrapy_rfc9309 import compat
from scrapy_rfc9309 import settings as rfc9309_settings

try:  # Scrapy 2.14+
    from scrapy.crawler import AsyncCrawlerProcess as Process
except ImportError:  # Scrapy 2.13
    from scrapy.crawler import CrawlerProcess as Process  # type: ignore[assignment]

SEEN: list[dict[str, str]] = []
#: (time.monotonic(), "down" | "up") each time the plugin's store fallback logged the store
#: unreachable or answering again, in order
STORE: list[tuple[float, str]] = []


class _WarningsSeen(logging.Handler):
    """The warnings Scrapy's logging captures (``logging.captureWarnings``),
    ``path:line: Category: message``, each once per place."""

    def emit(self, record: logging.LogRecord) -> None:
        where, _, rest = record.getMessage().strip().partition(": ")
        category, _, message = rest.partition(": ")
        SEEN.append({"where": where, "category": category, "message": message.split("\n", 1)[0]})


class _StoreSeen(logging.Handler):
    """When the store went and came back, on the clock the test servers use."""

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "robots.txt store unreachable" in message:
            STORE.append((time.monotonic(), "down"))
        elif "answers again" in message:
            STORE.append((time.monotonic(), "up"))


class TakenAt:
    """First downloader middleware: when the worker took the request up."""

    @compat.request_method
    def process_request(self, request: Any) -> None:
        request.meta.setdefault("taken_at", time.monotonic())


class ClusterSpider(RedisSpider):
    name = "cluster"

    def __init__(self, *args: Any, worker: str = "", log: Any = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.worker = worker
        self.log_file = log

    def make_request_from_data(self, data: bytes) -> Any:
        # scrapy-redis's own request (a GET FormRequest, dont_filter), with callbacks that record
        request = super().make_request_from_data(data)
        return request.replace(callback=self.ok, errback=self.failed)

    def ok(self, response: Any) -> None:
        self._write(response.request, status=response.status)
        # a spider that works on its pages (TEST_CALLBACK_CPU_SECONDS): the worker's loop is busy
        end = time.monotonic() + self.settings.getfloat("TEST_CALLBACK_CPU_SECONDS")
        while time.monotonic() < end:
            pass

    def failed(self, failure: Any) -> None:
        self._write(failure.request, error=type(failure.value).__name__, message=str(failure.value))

    def _write(self, request: Any, **fields: Any) -> None:
        line = {"url": request.url, "worker": self.worker, "taken": request.meta.get("taken_at"), **fields}
        line["ended"] = time.monotonic()
        self.log_file.write(json.dumps(line) + "\n")
        self.log_file.flush()


#: an extra argument ``settings.NAME=<JSON>`` sets the constant NAME of scrapy_rfc9309.settings
#: (``settings.STORAGE_RETRY_SECONDS=1``), as monkeypatch does in the tests' own process
CONSTANT = "settings."


def main(argv: list[str]) -> None:
    redis_url, worker, out_dir, *extra = argv
    out = Path(out_dir)
    warnings.simplefilter("default")  # every warning, once per place, whatever its category
    logging.getLogger("py.warnings").addHandler(_WarningsSeen())
    logging.getLogger("scrapy_rfc9309").addHandler(_StoreSeen())
    settings: dict[str, Any] = {
        "ADDONS": {"scrapy_rfc9309.Addon": 0},
        "SCHEDULER": "scrapy_redis.scheduler.Scheduler",
        "DUPEFILTER_CLASS": "scrapy_redis.dupefilter.RFPDupeFilter",
        # a worker that stops must not empty the queue the others still work on
        "SCHEDULER_PERSIST": True,
        "REDIS_URL": redis_url,
        "DOWNLOADER_MIDDLEWARES": {TakenAt: 1},
        "USER_AGENT": f"ClusterBot/1.0 (worker {worker})",
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_DELAY": 0,
        "RETRY_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "DOWNLOAD_TIMEOUT": 10,
        "RFC9309_FETCH_TIMEOUT": 10,
        "LOG_LEVEL": "INFO",
    }
    for item in extra:
        key, _, value = item.partition("=")
        if key.startswith(CONSTANT):  # a constant of the plugin's settings module, as a test sets it
            name = key[len(CONSTANT) :]
            assert hasattr(rfc9309_settings, name), f"scrapy_rfc9309.settings has no {name}"
            setattr(rfc9309_settings, name, json.loads(value))
        else:
            settings[key] = json.loads(value)
    if os.environ.get("RFC9309_TEST_REACTORLESS") == "1":  # tests/conftest.py: --reactor=none
        settings["TWISTED_REACTOR_ENABLED"] = False
    process = Process(settings)
    crawler = process.create_crawler(ClusterSpider)
    print("ready", flush=True)
    sys.stdin.readline()
    with open(out / f"worker{worker}.jsonl", "a", encoding="utf-8") as log:
        process.crawl(crawler, worker=worker, log=log)
        process.start()
    stats = crawler.stats.get_stats()
    report = {
        "accounting": check_crawler(crawler),  # its stats add up (accounting.py, read_report)
        "finish_reason": stats.get("finish_reason"),
        "rfc9309": {k[len("rfc9309/") :]: v for k, v in stats.items() if k.startswith("rfc9309/")},
        "scheduler": {k: v for k, v in stats.items() if k.startswith("scheduler/")},
        "warnings": SEEN,
        "store": STORE,
    }
    (out / f"worker{worker}.json").write_text(json.dumps(report, default=str), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
