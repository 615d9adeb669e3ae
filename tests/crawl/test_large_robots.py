"""A large robots.txt is parsed in steps: other origins keep downloading.

One origin serves a 500 KiB robots.txt of 20,000 rules; its parse and the
compiling of its rules for the crawler run in short steps with the reactor
getting a turn between them (``service.STEPPED_PARSE_BYTES``), so the pages
of another origin are downloaded and handed to the spider *while* that file
is being parsed.  Parsed in one go, no other download could make progress
meanwhile.
"""

from __future__ import annotations

import logging
import string
import time

import pytest_twisted

from scrapy_rfc9309.service import STEPPED_PARSE_BYTES

from .harness import check_accounting, crawl
from .servers import Reply, robots

LETTERS = string.ascii_letters + string.digits


def hostile_body() -> bytes:
    """512,000 bytes: 10,000 wildcard rules that belong to every path bucket,
    then 10,000 rules spread over 62 buckets (the costliest shape to compile)."""
    generic = "".join(f"Disallow: /*x{i}*y{i}$\n" for i in range(10_000))
    spread = "".join(f"Disallow: /{LETTERS[i % 62]}s-{i:05d}/*/page$\n" for i in range(10_000))
    return ("User-agent: *\nAllow: /open/\n" + generic + spread).encode()[:512_000]


class _Stamps(logging.Handler):
    """time.monotonic() of the service's "parsing" / "parsed" log lines."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.began: list[float] = []
        self.ended: list[float] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "in steps" in message:
            (self.began if ": parsing " in message else self.ended).append(time.monotonic())


@pytest_twisted.ensureDeferred
async def test_other_origins_download_while_a_large_file_is_parsed(servers):
    big, small = servers("127.0.0.2"), servers("127.0.0.3")
    body = hostile_body()
    assert len(body) > STEPPED_PARSE_BYTES
    big.routes["/robots.txt"] = robots(body)
    small.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    # 60 pages, 4 at a time, 50 ms each: about 0.75 s of pages, so that some still come while the
    # large file is parsed even when a loaded machine is slow to download it (20 ms each, 0.3 s
    # in all, once missed the parse under CI's four suites)
    for i in range(60):
        small.routes[f"/p/{i}"] = Reply(200, f"page {i}", {"Content-Type": "text/html"}, delay=0.05)
    big_pages = [big.url("/open/x"), big.url("/as-00000/x/page"), big.url("/zzz"), big.url("/q/x7/y7")]
    # the large file's origin first, so that its robots.txt is fetched first
    plan = big_pages + [small.url(f"/p/{i}") for i in range(60)] + [small.url("/private/1")]

    stamps = _Stamps()
    service_log = logging.getLogger("scrapy_rfc9309.service")
    service_log.addHandler(stamps)
    level = service_log.level
    service_log.setLevel(logging.DEBUG)
    try:
        result = await crawl(plan, {"CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 4})
    finally:
        service_log.removeHandler(stamps)
        service_log.setLevel(level)

    check_accounting(result)
    assert result.stat("parse/stepped") == 1
    assert len(stamps.began) == len(stamps.ended) == 1
    began, ended = stamps.began[0], stamps.ended[0]
    during = [o for o in result.outcomes if o.url.startswith(small.origin) and o.status == 200 and began < o.at < ended]
    assert during, f"no page of {small.origin} arrived during the {(ended - began) * 1e3:.0f} ms parse"
    # and the verdicts are those of the file
    assert result.outcome(big.url("/open/x")).status == 200
    assert result.outcome(big.url("/zzz")).status == 200
    for denied in ("/as-00000/x/page", "/q/x7/y7"):
        assert result.outcome(big.url(denied)).message.startswith("Forbidden by robots.txt: "), denied
    assert result.outcome(small.url("/private/1")).message.startswith("Forbidden by robots.txt: ")
    assert sum(1 for o in result.outcomes if o.url.startswith(small.origin) and o.status == 200) == 60


@pytest_twisted.ensureDeferred
async def test_a_stored_large_file_is_parsed_off_the_reactor_too(servers, tmp_path):
    """An SQLite entry read back by a second crawl is parsed in steps too."""
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots(hostile_body())
    settings = {"RFC9309_STORAGE": f"sqlite://{tmp_path / 'robots.sqlite'}", "RFC9309_CACHE_MIN_SECONDS": 3600}
    pages = [site.url("/open/x"), site.url("/bs-00001/x/page")]

    first = await crawl(pages, settings)
    second = await crawl(pages, settings)

    assert site.count("/robots.txt") == 1
    assert second.stat("cache/storage_hits") == 1
    for result in (first, second):
        check_accounting(result)
        assert result.stat("parse/stepped") == 1
        assert result.outcome(site.url("/open/x")).status == 200
        assert result.outcome(site.url("/bs-00001/x/page")).message.startswith("Forbidden by robots.txt: ")
