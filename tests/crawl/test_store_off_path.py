"""The store's write is not on the way of the requests waiting for robots.txt.

A store whose ``put`` takes 1.5 s (a slow disk, a far Redis): the page that
waited for robots.txt is downloaded before the write ends, and the crawl
still ends with the entry written (closing waits for it).  With a
Crawl-delay to record, the write comes first (see docs/storage.md).
"""

from __future__ import annotations

import time

import pytest_twisted

from scrapy_rfc9309 import compat
from scrapy_rfc9309.storage import RobotsEntry
from scrapy_rfc9309.storage.memory import MemoryStorage

from .harness import check_accounting, crawl
from .servers import robots

PUT_SECONDS = 1.5
WRITES: list[tuple[str, float, float]] = []  # (origin, began, ended) of each put


class SlowStorage(MemoryStorage):
    async def put(self, origin: str, entry: RobotsEntry) -> None:
        began = time.monotonic()
        await compat.sleep(PUT_SECONDS)
        await super().put(origin, entry)
        WRITES.append((origin, began, time.monotonic()))


@pytest_twisted.ensureDeferred
async def test_pages_go_on_while_the_entry_is_written_and_the_crawl_waits_for_it(servers):
    WRITES.clear()
    site = servers()
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    settings = {"RFC9309_STORAGE": f"{__name__}.SlowStorage"}
    result = await crawl([site.url("/page"), site.url("/private")], settings)
    check_accounting(result)
    assert result.outcome(site.url("/private")).error == "IgnoreRequest"
    assert [origin for origin, _, _ in WRITES] == [site.origin], "the entry was written, once"
    _, began, ended = WRITES[0]
    page = result.outcome(site.url("/page"))
    assert page.status == 200
    assert page.at < ended, "the page waited for the write"
    assert page.at - began < PUT_SECONDS / 2
