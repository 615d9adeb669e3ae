"""One Crawl-delay mechanism, the gate's, per download slot (issue 36, items 2 and 4).

Every request a floored slot's server sees is at least the floor after the one
before it: robots.txt, tdmrep.json (a purpose declared) and the first page;
``dont_obey_robotstxt`` requests and ``obey: False`` origins on the slot;
whatever AutoThrottle and ``DOWNLOAD_DELAY``'s jitter would allow, nothing of
the slot passing the gate before its turn.  A request robots.txt's
``Content-Usage`` denies for the declared purpose takes no turn.

Gaps are measured at the server (the time each request was read); a gap may
lose a little of the floor to a request a busy loop sends late (``LATE_SEND``
of servers.py: 0.9 of the floor is the promise), and with AutoThrottle the
floor is asked of every gap at 0.95.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Any

import pytest
import pytest_twisted
from scrapy import signals
from scrapy.exceptions import IgnoreRequest

from scrapy_rfc9309 import compat

from .faults import crawl_within
from .harness import MIDDLEWARES, ProbeSpider, Req, check_accounting
from .servers import Reply, gaps, robots

TDM = "/.well-known/tdmrep.json"
TRAIN = {"RFC9309_USAGE": ["train-ai"]}
#: the floor of every test: Crawl-delay: 1
FLOOR = 1.0
#: the share of the floor a server-side gap keeps at least (LATE_SEND of servers.py)
MARGIN = 0.9
PAGE = Reply(200, "<html><body>page</body></html>", {"Content-Type": "text/html"})
NOT_FOUND = Reply(404, "not found", {"Content-Type": "text/plain"})
ADDON = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "DOWNLOADER_MIDDLEWARES": {}}
#: the plugin enabled with the add-on, or by hand (the harness's settings: the
#: middleware and the gate in SCHEDULER, nothing else)
ENABLINGS: dict[str, dict[str, Any]] = {"addon": ADDON, "by_hand": {}}


def floored(servers: Any, host: str = "127.0.0.2", extra: str = "", delay: float = 0.0) -> Any:
    server = servers(host)
    body = f"User-agent: *\nCrawl-delay: {FLOOR:g}\n{extra}"
    server.routes["/robots.txt"] = Reply(200, body, {"Content-Type": "text/plain"}, delay=delay)
    server.routes[TDM] = NOT_FOUND
    return server


def slow_origin(servers: Any, pages: int, delay: float) -> tuple[Any, list[Req]]:
    """An origin whose ``pages`` pages each answer after ``delay`` seconds (they fill the
    downloader beside a floored one), and requests for them."""
    slow = servers("127.0.0.3")
    slow.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    for i in range(pages):
        slow.routes[f"/s{i}"] = Reply(200, "<html><body>slow</body></html>", {"Content-Type": "text/html"}, delay=delay)
    return slow, [Req(slow.url(f"/s{i}")) for i in range(pages)]


def _prioritised(self: Any, spec: Req) -> Any:
    """ProbeSpider's request with the priority its spec's meta names."""
    request = ProbeSpider._request(self, spec)
    return request.replace(priority=spec.meta.get("priority", 0))


# -- the per-origin fetches are paced like the pages ----------------------------------------
@pytest.mark.parametrize("purpose", [True, False], ids=["purpose_declared", "no_purpose"])
@pytest_twisted.ensureDeferred
async def test_robots_txt_tdmrep_json_and_the_first_page_are_a_floor_apart(servers, purpose):
    """Under ``Crawl-delay: 1`` the server sees robots.txt, then (a purpose declared)
    tdmrep.json, then the pages, each at least the floor after the one before
    (before: all within 6 ms, robots.txt then the first page 3 ms apart without a
    purpose, though docs/crawl_delay.md says the first page waits a floor)."""
    site = floored(servers)
    plan = [Req(site.url(f"/p{i}")) for i in range(2)]
    result, _ = await crawl_within(30, plan, TRAIN if purpose else {})

    hits = sorted(site.hits, key=lambda hit: hit.at)
    expected = ["/robots.txt", TDM] if purpose else ["/robots.txt"]
    assert [hit.path for hit in hits[: len(expected)]] == expected, [hit.path for hit in hits]
    assert sorted(hit.path for hit in hits[len(expected) :]) == ["/p0", "/p1"], [hit.path for hit in hits]
    measured = gaps([hit.at for hit in hits])
    print("server-side gaps:", list(zip([hit.path for hit in hits[1:]], measured)))
    assert min(measured) >= MARGIN * FLOOR, list(zip([hit.path for hit in hits[1:]], measured))
    assert all(o.status == 200 for o in result.outcomes), result.outcomes
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_each_redirect_of_tdmrep_json_is_a_floor_after_the_one_before(servers):
    """Under ``Crawl-delay: 1``, tdmrep.json redirects twice on its own origin: the
    server sees each hop at least the floor after the one before, and the pages after
    them (before: the three hops within 3 ms, one turn taken for the whole chain)."""
    site = floored(servers)
    site.routes[TDM] = Reply(301, b"", {"Location": "/tdm/a.json"})
    site.routes["/tdm/a.json"] = Reply(301, b"", {"Location": "/tdm/b.json"})
    site.routes["/tdm/b.json"] = Reply(200, "[]", {"Content-Type": "application/json"})
    plan = [Req(site.url(f"/p{i}")) for i in range(2)]

    result, _ = await crawl_within(30, plan, TRAIN)

    hits = sorted(site.hits, key=lambda hit: hit.at)
    paths = [hit.path for hit in hits]
    assert paths[:4] == ["/robots.txt", TDM, "/tdm/a.json", "/tdm/b.json"], paths
    measured = gaps([hit.at for hit in hits])
    assert min(measured) >= MARGIN * FLOOR, list(zip(paths[1:], measured))
    assert all(o.status == 200 for o in result.outcomes), result.outcomes
    check_accounting(result)


@pytest.mark.parametrize(
    ("host", "store"), [("another_host", "memory"), ("same_host_another_port", "memory"), ("another_host", "redis")]
)
@pytest_twisted.ensureDeferred
async def test_redirects_of_several_files_to_a_floored_host_are_a_floor_apart_there(servers, host, store, request):
    """Three origins' tdmrep.json redirect to one file on a host whose robots.txt says
    ``Crawl-delay: 1`` (another host, or the first origin's own host on another port, itself
    floored: the hop goes while that chain holds its slot's turn): after its robots.txt,
    the host sees each hop at least the floor after the one before, and the crawl ends
    (an outsider's check, before: 10 hops to such a host within 70 ms)."""
    first = floored(servers) if host == "same_host_another_port" else servers("127.0.0.5")
    cdn = floored(servers, "127.0.0.2" if host == "same_host_another_port" else "127.0.0.4")
    cdn.routes["/tdm/rules.json"] = Reply(200, "[]", {"Content-Type": "application/json"})
    origins = [first] + [servers(f"127.0.0.{n}") for n in (6, 7)]
    for server in origins:
        if server is not first or host == "another_host":
            server.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
        server.routes[TDM] = Reply(301, b"", {"Location": cdn.url("/tdm/rules.json")})
    plan = [Req(server.url("/p")) for server in origins]

    settings = {**TRAIN, "RFC9309_STORAGE": request.getfixturevalue("redis_server").url} if store == "redis" else TRAIN
    result, _ = await crawl_within(30, plan, settings)

    on_host = [cdn, first] if host == "same_host_another_port" else [cdn]
    at_host = sorted((hit for server in on_host for hit in server.hits), key=lambda hit: hit.at)
    assert cdn.count("/robots.txt") == 1 and cdn.count("/tdm/rules.json") == 3, cdn.paths()
    # (two origins' first robots.txt on one host come before either floor is known: the rest, from the last of them)
    last = max(i for i, hit in enumerate(at_host) if hit.path == "/robots.txt")
    measured = gaps([hit.at for hit in at_host[last:]])
    assert min(measured) >= MARGIN * FLOOR, list(zip([hit.path for hit in at_host[last + 1 :]], measured))
    assert all(o.status == 200 for o in result.outcomes), result.outcomes
    check_accounting(result)


@pytest.mark.parametrize("source", ["floored", "not_floored"])
@pytest_twisted.ensureDeferred
async def test_pages_redirected_to_a_floored_host_are_paced_there(servers, source):
    """A page of one origin redirects to a page of another host whose robots.txt says
    ``Crawl-delay: 1``, whose own pages are crawled too: the host sees every request at
    least the floor after the one before. Scrapy copies the first request's meta, its
    ``download_slot`` among them, onto the redirect: the redirect is paced on its own
    host's slot, not on the slot it was copied from (an outsider's check, before: the
    redirected page and one of the host's own within 1 ms, 19 to 28 ms when the first
    origin had no floor)."""
    first = floored(servers) if source == "floored" else servers("127.0.0.2")
    if source == "not_floored":
        first.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    host = floored(servers, "127.0.0.4")
    plan = []
    for i in range(3):
        first.routes[f"/r{i}"] = Reply(302, b"", {"Location": host.url(f"/y{i}")})
        host.routes[f"/y{i}"] = host.routes[f"/q{i}"] = PAGE
        plan += [Req(first.url(f"/r{i}")), Req(host.url(f"/q{i}"))]

    result, _ = await crawl_within(40, plan, {"CONCURRENT_REQUESTS_PER_DOMAIN": 4})

    hits = sorted(host.hits, key=lambda hit: hit.at)
    assert sorted(hit.path for hit in hits) == sorted(["/robots.txt"] + [f"/{p}{i}" for p in "qy" for i in range(3)])
    measured = gaps([hit.at for hit in hits])
    assert min(measured) >= MARGIN * FLOOR, list(zip([hit.path for hit in hits[1:]], measured))
    assert sorted(o.status for o in result.outcomes) == [200] * 6, result.outcomes


@pytest_twisted.ensureDeferred
async def test_robots_txt_redirected_to_a_floored_host_is_paced_there(servers):
    """Three origins' robots.txt redirect to one file on a host whose own robots.txt says
    ``Crawl-delay: 1`` and is known (a page of it came first): the host sees each hop at
    least the floor after the one before (an outsider's check, before: six hops within
    14 ms; robots.txt's hops are not checked against the host's robots.txt, RFC 9309 2.3.1.2,
    but they are paced like any request it sees)."""
    host = floored(servers, "127.0.0.4")
    host.routes["/q0"] = PAGE
    host.routes["/shared.txt"] = robots("User-agent: *\nAllow: /\n")
    origins = [servers(f"127.0.0.{n}") for n in (5, 6, 7)]
    for server in origins:
        server.routes["/robots.txt"] = Reply(301, b"", {"Location": host.url("/shared.txt")})
    plan = [Req(host.url("/q0"), then=[Req(server.url("/p")) for server in origins])]

    result, _ = await crawl_within(40, plan)

    hits = sorted(host.hits, key=lambda hit: hit.at)
    assert [hit.path for hit in hits] == ["/robots.txt", "/q0"] + ["/shared.txt"] * 3, [hit.path for hit in hits]
    measured = gaps([hit.at for hit in hits])
    assert min(measured) >= MARGIN * FLOOR, list(zip([hit.path for hit in hits[1:]], measured))
    assert sorted(o.status for o in result.outcomes) == [200] * 4, result.outcomes


@pytest_twisted.ensureDeferred
async def test_two_robots_txt_redirected_to_each_other_end(servers):
    """Two origins whose robots.txt redirect to each other's host, and on, in a loop: the
    hops wait for no resolution (a floor is taken only where one is known), so both end
    (more than 5 redirects: unavailable, RFC 9309 2.3.1.2) and the crawl finishes."""
    one, two = servers("127.0.0.5"), servers("127.0.0.6")
    one.routes["/robots.txt"] = Reply(301, b"", {"Location": two.url("/from-one.txt")})
    two.routes["/robots.txt"] = Reply(301, b"", {"Location": one.url("/from-two.txt")})
    one.routes["/from-two.txt"] = Reply(301, b"", {"Location": two.url("/robots.txt")})
    two.routes["/from-one.txt"] = Reply(301, b"", {"Location": one.url("/robots.txt")})
    plan = [Req(one.url("/p")), Req(two.url("/p"))]

    result, took = await crawl_within(40, plan)

    assert result.stats["finish_reason"] == "finished", result.stats["finish_reason"]
    assert len(result.outcomes) == 2, result.outcomes  # each ended, as robots.txt's access result says
    assert took < 20, took
    check_accounting(result)


@pytest.mark.parametrize("store", ["memory", "redis"])
@pytest_twisted.ensureDeferred
async def test_a_robots_txt_fetched_again_waits_its_turn(servers, store, request):
    """A ``Crawl-delay: 1`` robots.txt kept 1.5 s (``RFC9309_CACHE_SECONDS``), so two floors (2 s,
    from the fetch): a page asked for 1.2 s after the first page's response (itself a floor after the
    fetch) finds it expired and waits while it is fetched again; the server sees that fetch, like
    every request, at least the floor after the page before it (before: at once).  (Asked 0.7 s
    after, the page's turn came within milliseconds of the expiry: a race a Redis round trip lost.)"""
    site = floored(servers)
    plan = [Req(site.url("/p0"), then=[Req(site.url("/p1"), pause=1.2)])]

    settings = {"RFC9309_CACHE_SECONDS": 1.5}
    if store == "redis":  # (the fetch again takes a cluster-wide turn)
        settings["RFC9309_STORAGE"] = request.getfixturevalue("redis_server").url
    result, _ = await crawl_within(40, plan, settings)

    hits = sorted(site.hits, key=lambda hit: hit.at)
    assert site.count("/robots.txt") >= 2, site.paths()  # fetched again as it expired
    measured = gaps([hit.at for hit in hits])
    assert min(measured) >= MARGIN * FLOOR, list(zip([hit.path for hit in hits[1:]], measured))
    assert sorted(o.status for o in result.outcomes) == [200] * 2, result.outcomes
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_a_robots_txt_kept_less_than_the_floor_leaves_room_for_pages(servers):
    """``Crawl-delay: 1`` and a robots.txt kept 1 s (``RFC9309_CACHE_SECONDS``): each page's
    turn would find it expired and fetch it again, and that fetch's turn push the page a floor
    further, when it is expired again. robots.txt is kept two floors at least, so the pages go,
    each re-fetch with a floor before and after it (an outsider's check, before: robots.txt
    every 2 floors and 1 page of 8 in 45 s)."""
    site = floored(servers)
    plan = [Req(site.url(f"/p{i}")) for i in range(4)]

    result, took = await crawl_within(40, plan, {"RFC9309_CACHE_SECONDS": 1})

    hits = sorted(site.hits, key=lambda hit: hit.at)
    assert sorted(o.status for o in result.outcomes) == [200] * 4, result.outcomes
    assert took < 20, (took, [hit.path for hit in hits])  # before: no end in sight
    measured = gaps([hit.at for hit in hits])
    assert min(measured) >= MARGIN * FLOOR, list(zip([hit.path for hit in hits[1:]], measured))
    check_accounting(result)


#: the slow origin's page time: with Redis longer than a turn's hold in the store (TURN_HOLD_US, 5 s)
SLOW_PAGES = {"memory": 2.0, "redis": 6.0}


@pytest.mark.parametrize("store", sorted(SLOW_PAGES))
@pytest_twisted.ensureDeferred
async def test_the_floor_holds_while_a_slow_origin_fills_the_downloader(servers, store, request):
    """A slow origin takes every ``CONCURRENT_REQUESTS`` place beside a ``Crawl-delay: 1``
    origin: each of the latter's pages still reaches its server at least the floor after
    the one before (outsiders' checks, before: with the memory store, a page the gate let
    go but the full downloader did not take for 0.25 s counted as gone, the next was let
    go a floor later, and three reached the server within 15 ms; with Redis, a page that
    waited for room longer than its cluster turn's hold let the next turns be taken, and
    the pages reached the server in pairs a few ms apart)."""
    site = floored(servers)
    _, plan = slow_origin(servers, 4 * (3 if store == "memory" else 2), SLOW_PAGES[store])
    plan += [Req(site.url(f"/p{i}")) for i in range(4)]
    settings = {"CONCURRENT_REQUESTS": 4, "CONCURRENT_REQUESTS_PER_DOMAIN": 4, "DOWNLOAD_TIMEOUT": 20}
    if store == "redis":
        settings["RFC9309_STORAGE"] = request.getfixturevalue("redis_server").url

    result, _ = await crawl_within(60, plan, settings)

    pages = sorted(site.page_hits(), key=lambda hit: hit.at)
    assert sorted(hit.path for hit in pages) == [f"/p{i}" for i in range(4)], [hit.path for hit in pages]
    measured = gaps([hit.at for hit in pages])
    assert min(measured) >= MARGIN * FLOOR, list(zip([hit.path for hit in pages[1:]], measured))
    check_accounting(result)


async def crawl_beside_a_greedy_worker(
    plan: list, settings: dict, url: str, origin: str, asking: Any = lambda: True, one_after: bool = False
) -> tuple[Any, list[float]]:
    """Crawl ``plan`` with the Redis store at ``url`` while another worker of the cluster (a
    client of its own, in this loop) starts a request of ``origin`` whenever Redis gives it a
    turn, as a busy worker would (while ``asking()``; a store error is a turn not given).
    ``one_after``: it goes on until it has started once after the crawl (whose pages may take
    every turn till then), 3 floors at most.  Returns the crawl's result and its starts."""
    from scrapy_rfc9309.storage import StorageUnavailable
    from scrapy_rfc9309.storage.redis import RedisStorage

    from .test_storage_redis import in_task

    other, theirs, ended = RedisStorage(url), [], []

    def going() -> bool:
        if not ended:
            return True
        return one_after and max(theirs, default=0) < ended[0] and time.monotonic() < ended[0] + 3 * FLOOR

    async def work() -> None:
        await other.open()
        try:
            while going():
                with contextlib.suppress(StorageUnavailable):
                    if asking() and await other.take_turn(origin, FLOOR) == 0:
                        theirs.append(time.monotonic())
                        await other.note_start(origin, FLOOR)
                await asyncio.sleep(0.01)
        finally:
            await other.close()

    working = in_task(work())
    try:
        result, _ = await crawl_within(60, plan, {**settings, "RFC9309_STORAGE": url})
    finally:
        ended.append(time.monotonic())
        await working
    return result, theirs


@pytest_twisted.ensureDeferred
async def test_a_turn_waiting_for_a_full_downloader_is_held_against_another_worker(servers, redis_server):
    """With Redis, a page whose cluster turn is taken waits for a full downloader (6.5 s
    pages of a slow origin) longer than the store holds a turn (5 s) when nothing renews
    it.  Another worker that takes every turn it can (as a busy worker of the cluster
    would) never starts a request of the origin within the floor of one of the crawl's
    pages (before: the hold ran out while the page waited, the other worker took its turns,
    and the page followed one of them by less than the floor)."""
    site = floored(servers)
    _, plan = slow_origin(servers, 8, 6.5)
    plan += [Req(site.url(f"/p{i}")) for i in range(3)]
    settings = {"CONCURRENT_REQUESTS": 4, "CONCURRENT_REQUESTS_PER_DOMAIN": 4, "DOWNLOAD_TIMEOUT": 20}
    result, theirs = await crawl_beside_a_greedy_worker(plan, settings, redis_server.url, site.origin)

    ours = sorted(hit.at for hit in site.page_hits())
    assert len(ours) == 3 and theirs, (ours, theirs)
    nearest = min(abs(mine - other_start) for mine in ours for other_start in theirs)
    assert nearest >= MARGIN * FLOOR, (nearest, [round(t - ours[0], 3) for t in sorted(ours + theirs)])
    assert min(gaps(ours)) >= MARGIN * FLOOR, gaps(ours)
    check_accounting(result)


@pytest.mark.parametrize("theirs_from", [0.0, 1.5], ids=["theirs_first", "ours_first"])
@pytest_twisted.ensureDeferred
async def test_a_turn_taken_while_redis_was_down_and_held_past_its_return_is_not_shared(
    servers, redis_server, monkeypatch, theirs_from
):
    """Redis is killed as the floored origin's robots.txt is fetched, so its first page's
    turn is the worker's own (Redis down); the page then waits for a full downloader (6.5 s
    pages of a slow origin) while Redis comes back and another worker takes every turn
    Redis gives it (asking every 10 ms from Redis's return, or 1.5 s later).  Redis never
    saw the page's turn: held on, it becomes Redis's (the page's renewal, every second,
    came first), or, the other worker's turn under way, the page goes back to the gate for
    a new one (theirs came first: ``gate/returned``).  Either way no page starts within
    the floor of the other worker's requests.  Before, the page left on its own turn beside
    theirs: CI saw two workers 0.036 s apart under ``Crawl-delay: 1``, their engines
    waiting on scrapy-redis (whose queue shared the Redis) with such pages ready."""
    from scrapy_rfc9309 import settings as settings_module

    monkeypatch.setattr(settings_module, "STORAGE_RETRY_SECONDS", 0.3)  # the store tried again soon
    site, back = floored(servers), threading.Event()

    def robots_then_redis_down(hit: Any) -> Reply:
        redis_server.kill()
        threading.Timer(2.5, redis_server.start).start()  # (the page's turn, 1 s after robots.txt, is held on from 2 s)
        threading.Timer(2.5 + theirs_from, back.set).start()
        return Reply(200, f"User-agent: *\nCrawl-delay: {FLOOR:g}\n", {"Content-Type": "text/plain"})

    site.routes["/robots.txt"] = robots_then_redis_down
    _, plan = slow_origin(servers, 4, 6.5)
    plan += [Req(site.url(f"/p{i}")) for i in range(3)]
    settings = {"CONCURRENT_REQUESTS": 4, "CONCURRENT_REQUESTS_PER_DOMAIN": 4, "DOWNLOAD_TIMEOUT": 20}
    result, theirs = await crawl_beside_a_greedy_worker(
        plan, settings, redis_server.url, site.origin, asking=back.is_set, one_after=True
    )

    ours = sorted(hit.at for hit in site.page_hits())
    assert len(ours) == 3 and theirs, (ours, theirs)
    assert result.stats.get("rfc9309/storage/outages") == 1, result.stats
    if not theirs_from:  # their turn came first: the page's could not be Redis's, and it took a new one
        assert result.stats.get("rfc9309/gate/returned", 0) >= 1, result.stats
    nearest = min(abs(mine - other_start) for mine in ours for other_start in theirs)
    assert nearest >= MARGIN * FLOOR, (nearest, [round(t - ours[0], 3) for t in sorted(ours + theirs)])
    assert min(gaps(ours)) >= MARGIN * FLOOR, gaps(ours)
    check_accounting(result)


class _OtherWorker:
    """Another worker of the cluster: a thread with a loop and a Redis client of its own that,
    once ``go`` is set, takes the origin's turn as soon as the store gives it, starts a request
    (0.5 s on its way) and notes it.  ``started``: when it started."""

    def __init__(self, url: str, origin: str) -> None:
        self.url, self.origin = url, origin
        self.go, self.taken, self.started = threading.Event(), threading.Event(), []
        self.thread = threading.Thread(target=asyncio.run, args=(self._work(),), daemon=True)
        self.thread.start()

    async def _work(self) -> None:
        from scrapy_rfc9309.storage.redis import RedisStorage

        other = RedisStorage(self.url)
        await other.open()
        try:
            while not self.go.is_set():
                await asyncio.sleep(0.01)
            while await other.take_turn(self.origin, FLOOR) > 0:
                await asyncio.sleep(0.01)
            self.started.append(time.monotonic())
            self.taken.set()
            await asyncio.sleep(0.5)
            await other.note_start(self.origin, FLOOR)
        finally:
            await other.close()

    def hold_the_loop(self, seconds: float) -> None:
        """Hold the crawl's loop (a callback's CPU) ``seconds``, then let the other worker ask (up to 3 s more)."""
        time.sleep(seconds)
        self.go.set()
        self.taken.wait(3.0)

    def stop(self) -> None:
        self.go.set()
        self.thread.join(10)


@pytest_twisted.ensureDeferred
async def test_a_turn_held_on_outlasts_a_held_loop_before_the_page_is_sent(servers, redis_server):
    """With Redis, a page that waited for a full downloader with its cluster turn (held on
    every second) leaves the gate as a slow page's response makes room, and that page's
    callback holds the loop 6 s before the page is sent: longer than a turn is held when
    taken (5 s), shorter than a turn held on (15 s, KEEP_HOLD_US).  Another worker asking
    for the origin's turn once the loop is free gets it only after the page is done (an
    outsider's check, before: the hold lapsed and the page reached the server 0.2 to 0.5 s
    after the other worker's request)."""
    site = floored(servers)
    slow, plan = slow_origin(servers, 2, 4.0)
    plan += [Req(site.url(f"/p{i}")) for i in range(2)]
    settings = {"CONCURRENT_REQUESTS": 2, "DOWNLOAD_TIMEOUT": 20, "RFC9309_STORAGE": redis_server.url}
    other = _OtherWorker(redis_server.url, site.origin)

    def hold_once(outcomes: list[Any]) -> bool:  # (the spider's close_when hook: called per outcome)
        if len(outcomes) == 1 and outcomes[0].url.startswith(slow.origin):
            other.hold_the_loop(6.0)
        return False

    try:
        result, _ = await crawl_within(60, plan, settings, spider_attrs={"close_when": hold_once})
    finally:
        other.stop()

    ours = sorted(hit.at for hit in site.page_hits())
    assert len(ours) == 2 and len(other.started) == 1, (ours, other.started)
    nearest = min(abs(mine - other.started[0]) for mine in ours)
    assert nearest >= MARGIN * FLOOR, [round(t - other.started[0], 3) for t in ours]
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_a_turn_that_lapsed_before_the_page_left_the_gate_is_taken_anew(servers, redis_server):
    """With Redis, the loop is held 6 s just as a page gets its cluster turn (before the
    turn is first held on): its 5 s hold in the store lapses, and another worker takes
    the origin's turn and starts a request.  The middleware sees the turn was not held
    on and sends the page back to the gate for a new one (``gate/returned``): it reaches
    the server at least the floor after the other worker's request (before: at once,
    a few ms after it)."""
    from scrapy_rfc9309.gate import RELEASED

    site = floored(servers)
    plan = [Req(site.url(f"/p{i}")) for i in range(2)]
    other = _OtherWorker(redis_server.url, site.origin)
    held: list[bool] = []

    class HoldOnRelease:
        """An extension: the first page let go with its turn holds the loop as it is scheduled."""

        @classmethod
        def from_crawler(cls, crawler: Any) -> Any:
            crawler.signals.connect(cls.scheduled, signal=signals.request_scheduled)
            return cls()

        @staticmethod
        def scheduled(request: Any, **_: Any) -> None:
            if request.meta.get(RELEASED) and not held:
                held.append(True)
                other.hold_the_loop(6.0)

    settings = {"RFC9309_STORAGE": redis_server.url, "EXTENSIONS": {HoldOnRelease: 0}}
    try:
        result, _ = await crawl_within(60, plan, settings)
    finally:
        other.stop()

    ours = sorted(hit.at for hit in site.page_hits())
    assert held and len(ours) == 2 and len(other.started) == 1, (held, ours, other.started)
    assert min(ours) > other.started[0], (ours, other.started)
    assert min(ours) - other.started[0] >= MARGIN * FLOOR, [round(t - other.started[0], 3) for t in ours]
    assert min(gaps(ours)) >= MARGIN * FLOOR, gaps(ours)
    assert result.stat("gate/returned") == 1, result.rfc()
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_pages_served_from_the_http_cache_end_their_cluster_turn_at_once(servers, redis_server, tmp_path):
    """With Redis and Scrapy's HTTP cache, a second crawl of a ``Crawl-delay: 1`` origin's
    pages gets them from the cache: none reaches the server, and each ends its cluster
    turn when its response comes (the middleware sees it), so the next page waits the
    floor, not the 5 s a turn whose request never reached the downloader is held in the
    store (before: 5 s between two cached pages)."""
    site = floored(servers)
    plan = [Req(site.url(f"/p{i}")) for i in range(4)]
    settings = {
        "RFC9309_STORAGE": redis_server.url,
        "HTTPCACHE_ENABLED": True,
        "HTTPCACHE_DIR": str(tmp_path / "cache"),
        "HTTPCACHE_IGNORE_MISSING": False,
    }
    first, _ = await crawl_within(60, plan, settings)
    assert all(o.status == 200 for o in first.outcomes), first.outcomes
    pages_before = len(site.page_hits())

    second, _ = await crawl_within(60, plan, settings)

    assert len(site.page_hits()) == pages_before  # all four from the cache
    assert second.stats.get("httpcache/hit") == 4, second.stats
    ended = sorted(o.at for o in second.outcomes if o.status == 200)
    assert len(ended) == 4 and max(gaps(ended)) < 3.0, gaps(ended)  # a floor each, not the store's 5 s hold
    check_accounting(first)
    check_accounting(second)


async def _one_by_one_beside(
    servers: Any, redis_server: Any, middleware: type, odd: list[str]
) -> tuple[Any, Any, list]:
    """A Redis crawl of a ``Crawl-delay: 1`` origin's pages /p0, odd[0], /p2, odd[1], /p4, one at a time, with
    ``middleware`` after the plugin's: the site, the result and when the server saw each page."""
    site = floored(servers)
    for path in odd:
        site.routes[path.replace("/old", "/new")] = PAGE
    settings = {
        "RFC9309_STORAGE": redis_server.url,
        "DOWNLOADER_MIDDLEWARES": {**MIDDLEWARES, middleware: 500},
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
    }
    paths = ["/p0", odd[0], "/p2", odd[1], "/p4"]
    result, _ = await crawl_within(60, [Req(site.url(path)) for path in paths], settings)
    return site, result, sorted(hit.at for hit in site.page_hits())


class DropSome:
    """A project's downloader middleware, after the plugin's: drops the pages under /drop."""

    @compat.request_method  # (the spider argument of Scrapy 2.13)
    def process_request(self, request: Any) -> None:
        if "/drop" in request.url:
            raise IgnoreRequest("dropped by the project's middleware")


@pytest_twisted.ensureDeferred
async def test_a_page_a_later_middleware_drops_ends_its_cluster_turn_at_once(servers, redis_server):
    """With Redis, a project's downloader middleware after the plugin's drops two of a
    ``Crawl-delay: 1`` origin's pages after they took their cluster turn: the plugin's
    ``process_exception`` ends each turn at once, so the next page waits a floor after
    it, not the 5 s the store holds a turn whose request never reached the downloader
    (an outsider's check, before: each drop held the origin about 6 s for every worker)."""
    site, result, served = await _one_by_one_beside(servers, redis_server, DropSome, ["/drop1", "/drop3"])
    assert sorted(hit.path for hit in site.page_hits()) == ["/p0", "/p2", "/p4"], site.paths()
    for path in ("/drop1", "/drop3"):
        assert result.outcome(site.url(path)).error == "IgnoreRequest", result.outcome(site.url(path))
    assert max(gaps(served)) < 4.0, gaps(served)  # a floor for the drop and a floor for the page, not 5 s more
    assert min(gaps(served)) >= MARGIN * FLOOR, gaps(served)
    check_accounting(result)


class SwapSome:
    """A project's downloader middleware, after the plugin's: replaces each page under /old by
    a new request for /new (as a middleware may return a Request from ``process_request``)."""

    @compat.request_method  # (the spider argument of Scrapy 2.13)
    def process_request(self, request: Any) -> Any:
        return request.replace(url=request.url.replace("/old", "/new")) if "/old" in request.url else None


@pytest_twisted.ensureDeferred
async def test_a_page_a_later_middleware_replaces_ends_its_cluster_turn_soon(servers, redis_server):
    """With Redis, a project's downloader middleware after the plugin's replaces two of a
    ``Crawl-delay: 1`` origin's pages by new requests once they took their cluster turn:
    neither the plugin's ``process_response`` nor its ``process_exception`` sees the old one,
    which never reaches the downloader; its turn ends when the gate finds it gone, so the
    next page waits about a floor, not the 5 s the store holds a turn (an outsider's check,
    before: the replaced pages came 5.0 s apart)."""
    site, _, served = await _one_by_one_beside(servers, redis_server, SwapSome, ["/old1", "/old3"])
    assert sorted(hit.path for hit in site.page_hits()) == ["/new1", "/new3", "/p0", "/p2", "/p4"], site.paths()
    assert max(gaps(served)) < 4.0, gaps(served)  # a floor or two, not 5 s more
    assert min(gaps(served)) >= MARGIN * FLOOR, gaps(served)


# -- requests that do not obey robots.txt, on a floored slot ---------------------------------
@pytest.mark.parametrize("enabling", sorted(ENABLINGS))
@pytest_twisted.ensureDeferred
async def test_requests_that_do_not_obey_robots_txt_on_a_floored_slot_are_paced(servers, enabling):
    """One host, two origins (one download slot): the first says ``Crawl-delay: 1``;
    once it is known, two of its pages sent with ``dont_obey_robotstxt`` and two
    pages of the other origin, ``{"obey": False}``, reach the host at least the
    floor apart, as docs/crawl_delay.md promises (by hand: before, they went on at once)."""
    site = floored(servers)
    unruled = servers("127.0.0.2")  # same host: same download slot
    unruled.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\n")  # never asked: obey False
    follow = [Req(site.url(f"/d{i}"), meta={"dont_obey_robotstxt": True}) for i in range(2)]
    follow += [Req(unruled.url(f"/b{i}")) for i in range(2)]
    plan = [Req(site.url("/first"), then=follow)]
    settings = {**ENABLINGS[enabling], "RFC9309_ORIGINS": {unruled.origin: {"obey": False}}}

    result, _ = await crawl_within(40, plan, settings)

    assert unruled.count("/robots.txt") == 0
    pages = sorted((hit for server in (site, unruled) for hit in server.page_hits()), key=lambda hit: hit.at)
    assert sorted(hit.path for hit in pages) == ["/b0", "/b1", "/d0", "/d1", "/first"], [h.path for h in pages]
    measured = gaps([hit.at for hit in pages])
    print("server-side gaps:", list(zip([hit.path for hit in pages[1:]], measured)))
    assert min(measured) >= MARGIN * FLOOR, list(zip([hit.path for hit in pages[1:]], measured))
    assert all(o.status == 200 for o in result.outcomes), result.outcomes
    check_accounting(result)


# -- the gate's floor against AutoThrottle and DOWNLOAD_DELAY's jitter -------------------------
@pytest.mark.parametrize("enabling", sorted(ENABLINGS))
@pytest_twisted.ensureDeferred
async def test_autothrottle_and_jitter_never_go_below_the_floor(servers, enabling):
    """AutoThrottle on (starting at 0), ``DOWNLOAD_DELAY = 0.5`` with Scrapy's
    default jitter (0.25-0.75 s), 8 requests a domain allowed at once: every
    request the server sees, robots.txt included, at least 0.95 of the floor after
    the one before (the slot's own delay is never raised to the floor any more:
    nothing of the slot passes the gate before its turn)."""
    site = floored(servers)
    plan = [Req(site.url(f"/p{i}")) for i in range(5)]
    settings = {
        **ENABLINGS[enabling],
        "AUTOTHROTTLE_ENABLED": True,
        "AUTOTHROTTLE_START_DELAY": 0,
        "DOWNLOAD_DELAY": 0.5,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    }

    result, _ = await crawl_within(40, plan, settings)

    hits = sorted(site.hits, key=lambda hit: hit.at)
    assert len(site.page_hits()) == 5 and hits[0].path == "/robots.txt", [hit.path for hit in hits]
    measured = gaps([hit.at for hit in hits])
    print("server-side gaps:", list(zip([hit.path for hit in hits[1:]], measured)))
    assert min(measured) >= 0.95 * FLOOR, list(zip([hit.path for hit in hits[1:]], measured))
    check_accounting(result)


# -- a denied request takes no turn ---------------------------------------------------------------
DENIED = 6


@pytest_twisted.ensureDeferred
async def test_pages_denied_by_usage_preferences_take_no_turn(servers):
    """``Content-Usage: /denied/ train-ai=n`` in a ``Crawl-delay: 1`` robots.txt,
    ``RFC9309_USAGE = ["train-ai"]``: six pages under /denied/ (first in priority)
    are denied before the download and take no turn; the allowed page after them
    reaches the server two floors after robots.txt was answered (tdmrep.json in
    between), well under four (before: each denied page held the slot a floor,
    the allowed one came six floors later)."""
    # robots.txt answers late: every request is held for it, in the order the scheduler gave them
    site = floored(servers, extra="Content-Usage: /denied/ train-ai=n\n", delay=0.5)
    plan = [Req(site.url(f"/denied/d{i}"), meta={"priority": 10 + i}) for i in range(DENIED)]
    plan.append(Req(site.url("/ok"), meta={"priority": 0}))

    result, _ = await crawl_within(40, plan, TRAIN, spider_attrs={"_request": _prioritised})

    for spec in plan[:DENIED]:
        assert result.outcome(spec.url).message.startswith("Forbidden by usage preferences: train-ai"), spec.url
    assert result.outcome(site.url("/ok")).status == 200
    assert [hit.path for hit in site.page_hits() if hit.path != TDM] == ["/ok"]
    [robots_at] = site.answered["/robots.txt"]
    [ok_at] = site.times("/ok")
    # paced: robots.txt, a floor, tdmrep.json, a floor, /ok; the denied pages' turns would add six floors
    print(f"/ok reached the server {ok_at - robots_at:.2f} s after robots.txt was answered")
    assert ok_at - robots_at < 4 * FLOOR, ok_at - robots_at
    assert result.stat("requests/denied/usage_preferences") == DENIED
    check_accounting(result)


# -- a floored slot free when its origin is resolved -----------------------------------------
@pytest_twisted.ensureDeferred
async def test_a_request_released_on_a_free_floored_slot_takes_one_turn(servers, tmp_path):
    """robots.txt of ``Crawl-delay: 2`` read from a SQLite store an earlier crawl
    filled: nothing was fetched, the slot is free when the page's origin is
    resolved, so the page takes its turn in the gate and goes at once (before: the
    gate's turn was forgotten and the page waited for a second one in the
    middleware, a floor later), the next a floor after it."""
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = Reply(200, "User-agent: *\nCrawl-delay: 2\n", {"Content-Type": "text/plain"})
    site.routes["/p0"] = site.routes["/p1"] = site.routes["/p2"] = PAGE
    store = {"RFC9309_STORAGE": f"sqlite://{tmp_path / 'robots.sqlite'}"}
    await crawl_within(30, [Req(site.url("/p0"))], store)
    site.hits.clear()

    result, _ = await crawl_within(30, [Req(site.url("/p1")), Req(site.url("/p2"))], store)

    hits = sorted(site.hits, key=lambda hit: hit.at)
    assert sorted(hit.path for hit in hits) == ["/p1", "/p2"], [hit.path for hit in hits]  # robots.txt from the store
    (ready, _), *_ = result.ready
    assert hits[0].at - ready < 1.0, hits[0].at - ready  # the floor is 2 s
    assert gaps([hit.at for hit in hits])[0] >= MARGIN * 2, gaps([hit.at for hit in hits])
    check_accounting(result)
