"""The whole plugin's memory over ten times its cache's capacity in origins
(issue: bounded memory everywhere).

A real crawl with the add-on (middleware and Crawl-delay extension) and
``RFC9309_CACHE_MAX_ORIGINS = 2000`` goes through 20,000 origins (the suite's
size; ``MEMTEST_CAP=10000 MEMTEST_ORIGINS=100000`` runs the size the README
cites, in about two minutes).  Their
robots.txt files are already in the SQLite store (as for a worker that joins
a cluster, or a crawl resumed with ``JOBDIR``): that many loopback servers are
not possible, and the store is the real one.  Every file has a Crawl-delay,
so the extension keeps a floor for every origin, and disallows the page, so
no request needs a server.  One origin in ten gets a page request (through
the scheduler, the middleware and a held wait: what links origins to download
slots); the others are asked for through ``governing_robots``, the documented
way for code of a project, which resolves them through the same service and
extension at a fraction of Scrapy's cost per request (so the test takes
seconds, not minutes).

What the plugin holds is read when the cache is full twice over and at the
end: the counts of the per-origin structures of every part, the
live parsed files, and Scrapy's download slots (held requests make them) may
not grow.
"""

from __future__ import annotations

import gc
import os
import time
from typing import Any

import pytest
import pytest_twisted
import scrapy
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from twisted.internet.defer import Deferred, DeferredList

from scrapy_rfc9309 import RobotsTxt, governing_robots, robots_service
from scrapy_rfc9309.lifecycle import crawl_state
from scrapy_rfc9309.storage import RobotsEntry
from scrapy_rfc9309.storage.sqlite import SqliteStorage

from .faults import statm_rss
from .harness import MODE_SETTINGS, Runner, run

pytestmark = pytest.mark.main_run_only  # not again on the oldest Scrapy, nor without a reactor (setup.cfg)

CAP = int(os.environ.get("MEMTEST_CAP", 2_000))
ORIGINS = int(os.environ.get("MEMTEST_ORIGINS", 10 * CAP))
FIRST_LOOK = 2 * CAP
#: RSS the unpruned Crawl-delay extension gained per origin (0.85 KiB), in MiB
LEAK_MIB_PER_ORIGIN = 0.85 / 1024


def origin(i: int) -> str:
    return f"http://h{i}.example:80"


def body(i: int) -> bytes:
    return f"User-agent: *\nDisallow: /page\nAllow: /p{i % 97}\nCrawl-delay: {1 + i % 4}\n".encode()


class ManyOriginsSpider(scrapy.Spider):
    name = "many"
    looks: list[dict[str, Any]]

    async def start(self):
        asked: list[Deferred] = []
        for i in range(ORIGINS):
            url = f"http://h{i}.example/page"
            if i % 10 == 0:
                yield scrapy.Request(url, errback=self.dropped, dont_filter=True)
            else:
                asked.append(deferred_from_coro(governing_robots(self.crawler, url)))
            if len(asked) >= 100 or i == ORIGINS - 1:
                await maybe_deferred_to_future(DeferredList(asked, fireOnOneErrback=True))
                asked = []
            if i + 1 == FIRST_LOOK:
                self.looks.append(look(self.crawler))

    def dropped(self, failure) -> None:
        self.dropped_count = getattr(self, "dropped_count", 0) + 1

    def closed(self, reason: str) -> None:
        self.looks.append(look(self.crawler))


def look(crawler) -> dict[str, Any]:
    """How much the plugin holds now, by structure."""
    gc.collect()
    service = robots_service(crawler)
    gate = crawl_state(crawler).gate
    return {
        "cache": len(service._known),
        "pending": len(service._pending),
        "floored slots": len(gate._floored),
        "held": gate.held,
        "gate slots": len(crawl_state(crawler).gate._slots),
        "download slots": len(crawler.engine.downloader.slots),
        "parsed files alive": sum(1 for o in gc.get_objects() if isinstance(o, RobotsTxt)),
        "rss MiB": statm_rss() / 2**20,
    }


@pytest_twisted.ensureDeferred
async def test_memory_of_the_whole_plugin_is_flat_over_ten_times_its_cache(tmp_path):
    path = tmp_path / "robots.sqlite"
    store = SqliteStorage(str(path), threaded=False)
    await store.open()
    now = time.time()
    for i in range(ORIGINS):
        url = origin(i) + "/robots.txt"
        await store.put(origin(i), RobotsEntry("success", 200, body(i), "text/plain", now, now + 3600, url))
    await store.close()

    runner = Runner(
        {
            **MODE_SETTINGS,
            "ADDONS": {"scrapy_rfc9309.Addon": 0},
            "RFC9309_STORAGE": f"sqlite://{path}",
            "RFC9309_CACHE_MAX_ORIGINS": CAP,
            "CONCURRENT_REQUESTS": 64,
            "USER_AGENT": "ExampleBot/1.0",
            "TELNETCONSOLE_ENABLED": False,
            "LOG_LEVEL": "WARNING",
            # each errback result starts CONCURRENT_ITEMS tasks in Scrapy 2.19: not the plugin's cost
            "CONCURRENT_ITEMS": 1,
        }
    )
    looks: list[dict[str, Any]] = []
    gc.collect()
    before = sum(1 for o in gc.get_objects() if isinstance(o, RobotsTxt))  # other tests' files
    crawler = runner.create_crawler(type("ManyOriginsSpider", (ManyOriginsSpider,), {"looks": looks}))
    started = time.monotonic()
    await run(runner, crawler)
    took = time.monotonic() - started

    stats = crawler.stats.get_stats()
    print(f"\n{ORIGINS:,} origins in {took:.1f} s; at {FIRST_LOOK:,}: {looks[0]}\nat {ORIGINS:,}: {looks[1]}")
    assert stats["rfc9309/requests/denied/disallowed_explicit"] == ORIGINS // 10
    assert stats["rfc9309/cache/storage_hits"] == ORIGINS and "rfc9309/fetch/count" not in stats
    assert stats["rfc9309/crawl_delay/origins"] == ORIGINS
    assert stats["rfc9309/cache/evictions"] == ORIGINS - CAP
    first, last = looks
    for name in ("cache", "floored slots"):
        assert first[name] <= CAP and last[name] <= CAP, (name, first, last)
    # the unpruned extension held ~0.85 KiB per origin (13 MiB for 16,000 more, 66 MiB for 80,000);
    # the allocator's own noise (pools part-used after the cache turns over) stays well under that
    if first["rss MiB"]:
        leak = LEAK_MIB_PER_ORIGIN * (ORIGINS - FIRST_LOOK)
        assert last["rss MiB"] - first["rss MiB"] < max(5.0, leak * 0.4), (first, last)
    for name, value in last.items():
        if name == "rss MiB":
            continue
        # flat: no structure grew by more than a few in-flight entries between the looks
        assert value <= first[name] + 100, (name, first, last)
    assert last["parsed files alive"] - before <= CAP + 200
