"""The gate (scrapy_rfc9309/gate.py): requests wait before the downloader, in real crawls.

Each test is about what a user sees: pages of a known origin keep flowing
whatever waits for robots.txt, a JOBDIR crawl paused while requests are held
loses none, the bound on held requests slows the crawl and loses nothing,
the middleware's check is synchronous for what the gate let through and still
waits for a request that came another way, and the Crawl-delay floor holds
whatever order signal receivers run in.
"""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest_twisted
from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future

from scrapy_rfc9309 import compat

from .command_runner import scrapy_crawl
from .faults import FaultServer, crawl_within
from .harness import MIDDLEWARES, Req, check_accounting, crawl, record_middleware_waits
from .servers import Reply, gaps, robots

PAGE = Reply(200, "<html>page</html>", {"Content-Type": "text/html"}, delay=0.02)


def _site(servers, host: str, rules: str = "User-agent: *\nDisallow: /private\n", pages: int = 0, page=PAGE):
    site = servers(host)
    site.routes["/robots.txt"] = robots(rules)
    for i in range(pages):
        site.routes[f"/p{i}"] = page
    return site


def _hosts(count: int) -> list[str]:
    """``count`` loopback addresses, one download slot each (127.1.x.y)."""
    return [f"127.1.{i // 250}.{i % 250 + 1}" for i in range(count)]


async def _known_then_hanging(servers, hanging: int, timeout: float) -> tuple[float, Any]:
    """A healthy origin's 120 pages, its robots.txt known from the first page on;
    ``hanging`` origins whose robots.txt never answers appear after its tenth
    page.  Returns the longest gap between two healthy pages reaching the spider."""
    site = _site(servers, "127.0.0.2", pages=120)
    pages = [Req(site.url(f"/p{i}")) for i in range(120)]
    done = site.origin + "/"

    def healthy_done(outcomes) -> bool:
        return sum(1 for o in outcomes if o.url.startswith(done)) >= 120

    with FaultServer(["hang"] * hanging, hosts=_hosts(hanging), max_seconds=60) as web:
        stalled = [Req(web.url(i, "/public")) for i in range(hanging)]
        plan = [Req(site.url("/first"), then=[*pages[:10], *stalled, *pages[10:]])]
        settings = {
            "ADDONS": {"scrapy_rfc9309.Addon": 0},
            "DOWNLOADER_MIDDLEWARES": {},
            "CONCURRENT_REQUESTS": 16,
            "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
            "RFC9309_FETCH_TIMEOUT": timeout,
        }
        site.routes["/first"] = PAGE
        result, _ = await crawl_within(60, plan, settings, spider_attrs={"close_when": healthy_done})
    healthy = sorted(o.at for o in result.outcomes if o.url.startswith(done) and o.status == 200)
    assert len(healthy) == 121, len(healthy)
    return max(gaps(healthy)), result


@pytest_twisted.ensureDeferred
async def test_hundreds_of_hanging_robots_txt_servers_leave_a_known_origin_flowing(servers):
    """Issue 31: 300 origins whose robots.txt never answers appear in a crawl
    (1,000 in benchmarks/hang_bench.py --known-first); the known origin's pages
    go on: before the gate, past 8 x CONCURRENT_REQUESTS waiting requests, the
    longest gap between its pages was 15 s and more.  The test bound is generous
    (3 s, a fifth of that) as this runs beside other suites on a shared
    machine; how close the gap stays to the gap alone is measured by the
    benchmark."""
    together, result = await _known_then_hanging(servers, 300, 30)
    print(f"longest gap between healthy pages with 300 hanging origins: {together:.3f} s")
    assert together < 3.0, together
    assert result.stat("gate/held") >= 300
    assert result.stat("requests/dropped/spider_closing") == 300  # still held when the spider closed
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_a_jobdir_crawl_paused_while_requests_are_held_loses_none(servers, tmp_path):
    """The spider closes while ten requests wait for a slow robots.txt: with
    JOBDIR they go back to the scheduler's disk queue, and the next run with the
    same JOBDIR downloads each of them once."""
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = Reply(200, "User-agent: *\nAllow: /\n", {"Content-Type": "text/plain"}, delay=1.5)
    for i in range(10):
        site.routes[f"/p{i}"] = PAGE
    plan = [Req(site.url(f"/p{i}"), dont_filter=False) for i in range(10)]

    paused = await crawl(plan, {"JOBDIR": str(tmp_path / "job")}, {"close_once_held": 10})
    assert paused.stats["finish_reason"] == "probe_done"
    assert site.page_hits() == [] and paused.outcomes == []
    assert paused.stat("gate/handed_back") == 10
    assert paused.stat("requests/dropped/spider_closing") == 0

    resumed = await crawl([], {"JOBDIR": str(tmp_path / "job")})
    assert sorted(hit.path for hit in site.page_hits()) == sorted(f"/p{i}" for i in range(10))
    assert sorted(o.url for o in resumed.outcomes if o.status == 200) == sorted(r.url for r in plan)
    allowed = sum(v for k, v in resumed.rfc().items() if k.startswith("requests/allowed/"))
    assert resumed.stat("requests/checked") == allowed == 10


@pytest_twisted.ensureDeferred
async def test_past_the_bound_the_gate_takes_nothing_more_and_loses_nothing(servers, caplog):
    """RFC9309_MAX_HELD = 5 with 20 requests of four origins whose robots.txt
    answers after 0.5 s: the gate holds 5 and leaves the rest in the scheduler;
    every request is downloaded in the end, an INFO line (a documented setting used as
    documented: no WARNING) says why it slowed, each time the bound is met."""
    sites = []
    for n in range(4):
        site = servers(f"127.0.0.{2 + n}")
        site.routes["/robots.txt"] = Reply(200, "User-agent: *\nAllow: /\n", {"Content-Type": "text/plain"}, delay=0.5)
        for i in range(5):
            site.routes[f"/p{i}"] = PAGE
        sites.append(site)
    plan = [Req(site.url(f"/p{i}")) for i in range(5) for site in sites]
    caplog.set_level(logging.INFO, logger="scrapy_rfc9309")
    result = await crawl(plan, {"RFC9309_MAX_HELD": 5})

    assert all(result.outcome(r.url).status == 200 for r in plan)
    assert result.stat("gate/full") >= 1
    full = [r for r in caplog.records if "RFC9309_MAX_HELD" in r.getMessage()]
    assert len(full) == result.stat("gate/full") and {r.levelno for r in full} == {logging.INFO}
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_the_check_is_synchronous_behind_the_gate_and_waits_without_it(servers, monkeypatch):
    """Behind the gate no request waits in the middleware; without the gate (a
    project that did not install it) the first requests of an origin wait
    there, as the design card says, and the crawl's results are the same."""
    waited = record_middleware_waits(monkeypatch)
    site = _site(servers, "127.0.0.2", pages=10)
    plan = [Req(site.url(f"/p{i}")) for i in range(10)] + [Req(site.url("/private"))]

    gated = await crawl(plan)
    assert waited == []
    ungated = await crawl(plan, {"SCHEDULER": "scrapy.core.scheduler.Scheduler"})
    assert len(waited) >= 1
    for result in (gated, ungated):
        assert [result.outcome(r.url).status for r in plan[:10]] == [200] * 10
        assert result.outcome(site.url("/private")).message.startswith("Forbidden by robots.txt: disallowed")
        check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_a_download_that_bypasses_the_gate_waits_for_robots_txt(servers):
    """An extension's ``engine.download_async`` (``engine.download`` on Scrapy
    2.13) of a new origin's page: the middleware waits for its robots.txt,
    then decides (here: denied)."""
    site = _site(servers, "127.0.0.2")
    other = _site(servers, "127.0.0.3", rules="User-agent: *\nDisallow: /secret\n")
    site.routes["/a"] = PAGE
    other.routes["/secret"] = PAGE
    seen: dict[str, Any] = {}

    async def ok(self, response):
        if response.url == site.url("/a"):
            try:
                engine, request = self.crawler.engine, Request(other.url("/secret"))
                if hasattr(engine, "download_async"):  # Scrapy 2.14 and later
                    await engine.download_async(request)
                else:  # Scrapy 2.13: the Deferred form, as extensions call it there
                    await maybe_deferred_to_future(engine.download(request))
            except Exception as exc:  # noqa: BLE001 - what the download raised is the answer
                seen["error"] = exc
        async for request in type(self).__mro__[1].ok(self, response):
            yield request

    await crawl([site.url("/a")], spider_attrs={"ok": ok})
    assert type(seen["error"]).__name__ == "IgnoreRequest"
    assert "disallowed" in str(seen["error"])
    assert other.count("/robots.txt") == 1 and other.page_hits() == []


class LateLowering:
    """An extension that, like a throttle of the project's own, sets every
    slot's delay to 10 ms after each response, its receiver connected last."""

    def __init__(self, crawler) -> None:
        self.crawler = crawler
        crawler.signals.connect(self.opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def opened(self, spider) -> None:
        # connected when the spider opens, after every other receiver
        self.crawler.signals.connect(self.lower, signal=signals.response_downloaded)

    def lower(self, response, request, spider) -> None:
        slot = self.crawler.engine.downloader.slots.get(request.meta.get("download_slot"))
        if slot is not None:
            slot.delay = 0.01


@pytest_twisted.ensureDeferred
async def test_the_floor_holds_whatever_order_the_receivers_run_in(servers):
    """A receiver connected after the plugin's lowers the delay after each
    response: the requests the server sees are still a floor apart."""
    site = _site(servers, "127.0.0.2", rules="User-agent: *\nCrawl-delay: 0.5\n", pages=6)
    settings = {
        "ADDONS": {"scrapy_rfc9309.Addon": 0},
        "DOWNLOADER_MIDDLEWARES": {},
        "EXTENSIONS": {f"{__name__}.LateLowering": 900},
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "DOWNLOAD_DELAY": 0,
    }
    started = time.monotonic()
    result = await crawl([Req(site.url(f"/p{i}")) for i in range(6)], settings)
    hits = sorted(hit.at for hit in site.page_hits())
    assert len(hits) == 6
    assert min(gaps(hits)) >= 0.5 - 0.05, gaps(hits)
    assert time.monotonic() - started < 15
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_requests_released_together_keep_the_per_domain_limit_by_hand_too(servers):
    """The same as with the add-on, with the plugin enabled by hand (the gate
    named in SCHEDULER, as the README shows): 20 requests held for a slow
    robots.txt never exceed CONCURRENT_REQUESTS_PER_DOMAIN at the server."""
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = Reply(200, "User-agent: *\nAllow: /\n", {"Content-Type": "text/plain"}, delay=0.5)
    for i in range(20):
        site.routes[f"/p{i}"] = Reply(200, "<html>p</html>", {"Content-Type": "text/html"}, delay=0.05)
    plan = [Req(site.url(f"/p{i}")) for i in range(20)]
    result = await crawl(
        plan, {"DOWNLOADER_MIDDLEWARES": MIDDLEWARES, "CONCURRENT_REQUESTS": 16, "CONCURRENT_REQUESTS_PER_DOMAIN": 3}
    )
    assert all(result.outcome(r.url).status == 200 for r in plan)
    assert site.max_in_flight <= 3, site.max_in_flight
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_held_requests_of_one_origin_on_two_slots_keep_each_slots_concurrency(servers):
    """Three pages of one origin wait for its robots.txt; two of them carry a ``download_slot`` of
    their own whose ``DOWNLOAD_SLOTS`` concurrency is 1.  The origin's slot has room for all three, but
    the release follows each slot: the two of the small slot never download at once (the server sees
    at most two pages in flight).  On Scrapy 2.14 and later, whose download slot lets requests that
    reach it together start together, a release that looked only at the first page's slot sent
    three at once."""
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = Reply(200, "User-agent: *\nAllow: /\n", {"Content-Type": "text/plain"}, delay=0.5)
    slow = Reply(200, "<html>page</html>", {"Content-Type": "text/html"}, delay=0.5)
    site.routes["/a"] = site.routes["/b"] = site.routes["/c"] = slow
    own = {"download_slot": "small"}
    plan = [Req(site.url("/a")), Req(site.url("/b"), meta=dict(own)), Req(site.url("/c"), meta=dict(own))]
    settings = {"DOWNLOAD_SLOTS": {"small": {"concurrency": 1}}, "CONCURRENT_REQUESTS_PER_DOMAIN": 4}
    result = await crawl(plan, {"DOWNLOADER_MIDDLEWARES": MIDDLEWARES, **settings})
    assert all(result.outcome(r.url).status == 200 for r in plan)
    assert site.count("/robots.txt") == 1
    assert site.max_in_flight == 2, site.max_in_flight
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_requests_released_beside_denied_ones_on_one_slot_all_end(servers):
    """Two origins on one host (one download slot, one request at a time): the
    first's robots.txt answers 503 (its 30 requests denied, never downloaded),
    the second's late; both release their held requests together, some of
    them dropped by a middleware of the project's own; every request ends, in
    seconds (a denied request once held the slot for a second each, and one
    that never reached the downloader left it counted as busy forever when a
    new request took its id)."""
    denied, pages = servers("127.0.0.2"), servers("127.0.0.2")
    denied.routes["/robots.txt"] = Reply(503, delay=0.3)
    pages.routes["/robots.txt"] = Reply(200, "User-agent: *\nAllow: /\n", {"Content-Type": "text/plain"}, delay=0.3)
    plan = []
    for i in range(30):
        plan.append(Req(denied.url(f"/d{i}")))
        if i < 15:
            pages.routes[f"/p{i}"] = PAGE
            plan.append(Req(pages.url(f"/p{i}")))
    for i in range(15):  # allowed by robots.txt, dropped by a middleware of the project's own
        plan.append(Req(pages.url(f"/drop{i}")))
    settings = {
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOADER_MIDDLEWARES": {**MIDDLEWARES, f"{__name__}.DropSome": 200},
    }
    result, _ = await crawl_within(40, plan, settings)
    assert len(result.outcomes) == 60
    assert all(result.outcome(pages.url(f"/p{i}")).status == 200 for i in range(15))
    assert all(result.outcome(denied.url(f"/d{i}")).error == "IgnoreRequest" for i in range(30))
    assert all(result.outcome(pages.url(f"/drop{i}")).message == "dropped by the project" for i in range(15))
    check_accounting(result)


class DropSome:
    """A project's own downloader middleware that drops some requests."""

    @compat.request_method
    def process_request(self, request):
        if "/drop" in request.url:
            raise IgnoreRequest("dropped by the project")


def test_the_add_on_wraps_a_scheduler_chosen_with_s_or_in_custom_settings(servers, tmp_path):
    """docs/middleware.md: the add-on puts the gate in front of the project's
    scheduler wherever it is chosen; a project that sets ``SCHEDULER`` with
    ``-s`` or in a spider's ``custom_settings`` is not bypassed (issue 38: the
    doc said it was).  Both schedulers ran: the project's was given the
    requests, the gate held them until robots.txt was known."""
    site = servers("127.0.0.2")
    own = "own_scheduler.OwnScheduler"
    for where, args, custom in (("-s", ("-s", f"SCHEDULER={own}"), None), ("custom_settings", (), {"SCHEDULER": own})):
        (tmp_path / where).mkdir()
        process = scrapy_crawl(tmp_path / where, [site.url("/a"), site.url("/b")], *args, custom=custom)
        assert process.returncode == 0, process.stderr[-3000:]
        log = process.stderr
        assert "'own_scheduler/enqueued': 2" in log, (where, log[-3000:])
        assert "'rfc9309/gate/held': 2" in log, (where, log[-3000:])


class DropFirstPage:
    """A project's downloader middleware, after the plugin's: drops ``/p0`` before
    the downloader ever sees it (as a cache or a filter of the project's own would)."""

    def process_request(self, request, spider=None):
        if request.url.endswith("/p0"):
            raise IgnoreRequest("dropped by the project")
        return None


@pytest_twisted.ensureDeferred
async def test_a_turn_taken_by_a_request_that_never_reached_the_downloader_still_holds_the_floor(servers):
    """A paced request dropped on its way to the downloader is never seen there: its
    turn still counts, so the slot's next request goes a floor after it went (two
    floors after robots.txt), not as soon as the gate stops following it."""
    site = _site(servers, "127.0.0.2", rules="User-agent: *\nCrawl-delay: 1\n", pages=2)
    settings = {"DOWNLOADER_MIDDLEWARES": {**MIDDLEWARES, f"{__name__}.DropFirstPage": 200}}
    result = await crawl([Req(site.url("/p0")), Req(site.url("/p1"))], settings)
    assert result.outcome(site.url("/p0")).message == "dropped by the project"
    assert result.outcome(site.url("/p1")).status == 200
    robots_at = min(h.at for h in site.hits if h.path == "/robots.txt")
    (page,) = site.page_hits()
    assert page.at - robots_at >= 2 * 1.0 - 0.2, page.at - robots_at
    check_accounting(result)
