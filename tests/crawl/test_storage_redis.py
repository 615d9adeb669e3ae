"""The Redis store, against a real ``redis-server`` started on a loopback port.

* three worker *processes* crawl one origin through one Redis: one robots.txt
  fetch in all, and the server sees the workers' requests, taken together, at
  least the Crawl-delay apart;
* the store's own guarantees: the fetch lease, atomic Crawl-delay turns,
  retention and the key prefix;
* faults: Redis unreachable at start-up stops the crawl with a clear error;
  Redis killed mid-crawl loses no request; a lease holder that died is waited
  for no longer than its lease.
"""

from __future__ import annotations

import asyncio
import logging
import select
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest
import pytest_twisted
from scrapy.utils.defer import deferred_from_coro
from twisted.internet.defer import Deferred

from scrapy_rfc9309.storage import FallbackStorage, RobotsEntry, entries
from scrapy_rfc9309.storage.redis import TURN_POLL_US, RedisStorage, key_of

from .accounting import read_report
from .harness import Req, check_accounting, clock, crawl
from .redisd import LEASE, RedisServer, require_redis
from .servers import Hit, Reply, check_paced, closed_port, gaps, robots

TOLERANCE = 0.1
WORKER = Path(__file__).with_name("cluster_worker.py")
WORKER_TIMEOUT = 60
RULES = "User-agent: *\nCrawl-delay: 1\nDisallow: /private\n"


def redis_settings(server: RedisServer, prefix: str = "test:") -> dict:
    return {"RFC9309_STORAGE": f"{server.url}?prefix={prefix}"}


def in_task(coro):
    """Run ``coro`` as an asyncio task (as Scrapy runs the middleware's code):
    redis.asyncio needs one; the test itself is driven by Twisted."""
    return deferred_from_coro(coro)


# -- a cluster of three processes ------------------------------------------------------
def test_three_workers_one_fetch_and_crawl_delay_across_the_cluster(redis_server, servers, tmp_path):
    three_workers_crawl(redis_server.url, servers("127.0.0.2"), tmp_path)


def three_workers_crawl(store_url: str, site, tmp_path: Path, prefix: str = "cluster:") -> list[dict]:
    """Three worker processes (``cluster_worker.py``) started at one moment, each
    crawling ``site`` (two pages and a disallowed one, ``Crawl-delay: 1``) through
    the store at ``store_url``: one robots.txt fetch in all, and every request of
    all three at least the Crawl-delay apart at the server.  Their reports."""
    # a slow robots.txt: all three workers ask for it while it is being fetched
    site.routes["/robots.txt"] = Reply(200, RULES, {"Content-Type": "text/plain"}, delay=0.3)
    workers = []
    for i in range(3):
        urls = [site.url(f"/w{i}/a"), site.url(f"/w{i}/b"), site.url(f"/private/w{i}")]
        out = tmp_path / f"worker{i}.json"
        log = open(tmp_path / f"worker{i}.log", "w")
        proc = subprocess.Popen(
            [sys.executable, str(WORKER), store_url, prefix, str(out), *urls],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        workers.append((proc, out, log))
    try:
        deadline = time.monotonic() + WORKER_TIMEOUT
        for proc, _, _ in workers:  # every worker imported Scrapy and set its crawl up
            ready = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]
            assert ready and proc.stdout.readline().strip() == "ready", f"a worker did not start; see {tmp_path}"
        for proc, _, _ in workers:
            proc.stdin.write("go\n")
            proc.stdin.flush()
        for proc, _, _ in workers:
            assert proc.wait(WORKER_TIMEOUT) == 0, f"a worker failed; see {tmp_path}"
    finally:
        for proc, _, log in workers:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
            log.close()
    reports = [read_report(out) for _, out, _ in workers]

    assert site.count("/robots.txt") == 1  # one fetch for the whole cluster
    pages = site.page_hits()
    assert sorted(hit.path for hit in pages) == sorted(f"/w{i}/{p}" for i in range(3) for p in "ab")
    # all requests, robots.txt included, of all workers together: Crawl-delay apart
    measured = gaps([hit.at for hit in site.hits])
    print(f"three workers on {store_url}, Crawl-delay: 1, server-side gaps:", measured)
    check_paced([hit.at for hit in site.hits], 1.0)
    for report in reports:
        assert report["finish_reason"] == "finished"
        outcomes = {o["url"].rsplit(":", 1)[1].split("/", 1)[1]: o for o in report["outcomes"]}
        assert len(outcomes) == 3
        denied = [o for o in outcomes.values() if o.get("error") == "IgnoreRequest"]
        assert len(denied) == 1 and "disallowed_explicit" in denied[0]["message"]
        assert sum(1 for o in outcomes.values() if o.get("status") == 200) == 2
    stats = [r["rfc9309"] for r in reports]
    assert sum(s.get("fetch/count", 0) for s in stats) == 1
    assert not any(s.get("storage/errors") for s in stats), stats  # the store answered throughout
    # the two others read the fetching worker's result from the store
    assert sum(s.get("cache/storage_hits", 0) for s in stats) == 2
    # the turns were waited for held, off the download slots; how many depends on when each
    # worker's requests came (fewer on a loaded machine): the gaps above are the guarantee
    assert sum(s.get("crawl_delay/cluster/requests_held", 0) for s in stats) >= 1
    return reports


# -- the store itself ------------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_a_turn_taken_while_the_store_was_down_is_kept_once_it_answers_again(redis_server):
    """While Redis is down a worker paces an origin itself; the turn it took
    then is unknown to Redis, so when Redis answers again the next request
    must still wait out the floor (the failover crawl once saw 0.13 s)."""

    async def scenario() -> None:
        store = FallbackStorage(RedisStorage(redis_server.url, prefix="f:"), retry_after=0.01)
        await store.open()
        origin, gap = "http://example.com:80", 0.5
        try:
            redis_server.kill()
            assert await store.take_turn(origin, gap) == 0  # down: this worker's own turn
            assert store.down
            redis_server.start()
            await asyncio.sleep(0.05)  # past retry_after: the next call asks Redis again
            wait = await store.take_turn(origin, gap)
            assert 0 < wait <= gap, wait  # Redis alone would say 0: it never saw that turn
            await asyncio.sleep(wait)
            assert await store.take_turn(origin, gap) == 0  # then Redis paces it again:
            # that turn is on its way until its request is noted done; meanwhile, ask again soon
            assert 0 < await store.take_turn(origin, gap) <= TURN_POLL_US / 1e6
            await store.note_start(origin, gap)
            assert 0.3 < await store.take_turn(origin, gap) <= gap
            assert not store.down
        finally:
            await store.close()

    await in_task(scenario())


@pytest_twisted.ensureDeferred
async def test_a_turn_taken_while_the_store_was_down_and_held_on_past_its_return_holds_the_other_workers(redis_server):
    """A worker paces an origin itself while Redis is down, and the request of
    the turn it took then still waits for a place in its downloader (or for
    its engine) when Redis answers again: the gate holds that turn on
    (``keep_turn``).  Redis never saw the turn, so another worker asking it
    would be given the origin at once and the two requests would reach the
    server together (seen in CI: 0.036 s apart under ``Crawl-delay: 1``).
    Held on once Redis answers, the turn becomes Redis's: the other worker
    waits until its request is done and a floor more."""

    async def scenario() -> None:
        mine = FallbackStorage(RedisStorage(redis_server.url, prefix="h:"), retry_after=0.01)
        other = FallbackStorage(RedisStorage(redis_server.url, prefix="h:"), retry_after=0.01)
        await mine.open()
        await other.open()
        origin, gap = "http://example.com:80", 0.5
        try:
            redis_server.kill()
            assert await mine.take_turn(origin, gap) == 0  # down: this worker's own turn
            redis_server.start()
            await asyncio.sleep(gap + 0.05)  # Redis back, and the floor past: the turn is held on
            await mine.keep_turn(origin, gap)  # (the gate's renewal of a turn waiting for the downloader)
            assert not mine.down
            for _ in range(3):  # however often the other worker asks while the request waits
                assert 0 < await other.take_turn(origin, gap), "another worker was given the held turn's origin"
                await mine.keep_turn(origin, gap)
            await mine.note_start(origin, gap)  # the held request is done: the next a floor from now
            wait = await other.take_turn(origin, gap)
            assert gap - 0.1 < wait <= gap, wait
            await asyncio.sleep(wait)
            assert await other.take_turn(origin, gap) == 0
        finally:
            await mine.close()
            await other.close()

    await in_task(scenario())


@pytest_twisted.ensureDeferred
async def test_while_the_store_is_down_a_workers_next_turn_counts_from_its_requests_end(redis_server):
    """While Redis is down a worker paces an origin itself as Redis would: its next turn
    comes a floor after the request before it ended (noted), not after that request's turn
    was given (a slow response would shorten the gap the server sees)."""

    async def scenario() -> None:
        store = FallbackStorage(RedisStorage(redis_server.url, prefix="e:"), retry_after=60)
        await store.open()
        origin, gap = "http://example.com:80", 0.5
        try:
            redis_server.kill()
            assert await store.take_turn(origin, gap) == 0  # down: this worker's own turn
            await asyncio.sleep(0.4)  # its request takes 0.4 s
            await store.note_start(origin, gap)
            wait = await store.take_turn(origin, gap)
            assert gap - 0.1 < wait <= gap, wait  # counted from the turn: 0.1 s
        finally:
            redis_server.start()
            await store.close()

    await in_task(scenario())


@pytest_twisted.ensureDeferred
async def test_turns_are_atomic_across_clients(redis_server):
    async def scenario() -> None:
        one = RedisStorage(redis_server.url, prefix="r:")
        two = RedisStorage(redis_server.url, prefix="r:")
        await one.open()
        await two.open()
        try:
            origin = "http://example.com:80"
            gap = 0.5
            # twelve asks at once from two clients: one turn taken, the others told to wait
            waits = await asyncio.gather(*[(one if i % 2 else two).take_turn(origin, gap) for i in range(12)])
            assert sorted(waits)[0] == 0 and sum(1 for w in waits if w == 0) == 1, waits
            assert all(0 < w <= gap for w in waits if w), waits
            # ... the turn taken is on its way (asked again within a poll) until its request is noted
            await asyncio.sleep(0.06)
            assert 0 < await one.take_turn(origin, gap) <= TURN_POLL_US / 1e6
            await two.note_start(origin, gap)
            assert 0.4 < await one.take_turn(origin, gap) <= gap
            # a robots.txt fetch noted on an idle origin makes the next turn wait a floor
            await one.note_start("http://other.example:80", gap)
            assert 0.4 < await two.take_turn("http://other.example:80", gap) <= gap
        finally:
            await one.close()
            await two.close()

    await in_task(scenario())


@pytest_twisted.ensureDeferred
async def test_fetch_lease_is_exclusive_renewed_and_expires_with_its_holder(redis_server):
    async def scenario() -> None:
        holder = RedisStorage(redis_server.url, prefix="l:", lock_seconds=LEASE)
        other = RedisStorage(redis_server.url, prefix="l:", lock_seconds=LEASE)
        await holder.open()
        await other.open()
        origin = "https://example.com:443"
        try:
            lease = await holder.claim(origin)
            assert lease is not None
            assert await other.claim(origin) is None
            await asyncio.sleep(3 * LEASE)  # 3 lease lifetimes: only renewal keeps it
            assert await other.claim(origin) is None
            await lease.release()
            second = await other.claim(origin)
            assert second is not None
            await second.release()

            # a holder that dies (its connection is gone, nobody renews) is waited
            # for no longer than the lease lifetime
            lease = await holder.claim(origin)
            assert lease is not None
            await holder.close()
            assert await other.claim(origin) is None
            await asyncio.sleep(1.5 * LEASE)
            taken = await other.claim(origin)
            assert taken is not None
            assert redis_server.client().get(key_of("l:", "lock", origin)) is not None
            await taken.release()
            assert redis_server.client().get(key_of("l:", "lock", origin)) is None
        finally:
            await other.close()

    await in_task(scenario())


@pytest_twisted.ensureDeferred
async def test_entries_round_trip_with_retention_and_prefix(redis_server):
    async def scenario() -> None:
        store = RedisStorage(redis_server.url, prefix="myproject:robots:")
        await store.open()
        try:
            now = time.time()
            entry = RobotsEntry(
                "success", 200, b"User-agent: *\nDisallow: /\x00x\n", None, now, now + 86_400, "http://a/r"
            )
            await store.put("http://a:80", entry)
            assert await store.get("http://a:80") == entry
            unreachable = RobotsEntry("unreachable", None, b"", "text/plain", now, now + 300, "http://b/robots.txt")
            await store.put("http://b:80", unreachable)
            assert await store.get("http://b:80") == unreachable
            # too old to be fresh or to stand in for an unreachable file: not kept
            old = RobotsEntry("success", 200, b"", None, now - 31 * 86_400, now - 30 * 86_400, "")
            await store.put("http://c:80", old)
            assert await store.get("http://c:80") is None
            await store.take_turn("http://a:80", 1.0)

            client = redis_server.client()
            keys = sorted(k.decode() for k in client.keys("*"))
            # every key of an origin carries it as a hash tag (one Redis Cluster slot); a body its digest
            body = entries.digest_of(entry.body).hex()
            assert keys == [
                f"myproject:robots:body:{{{body}}}",
                "myproject:robots:pace:{http://a:80}",
                "myproject:robots:robots:{http://a:80}",
                "myproject:robots:robots:{http://b:80}",
            ]
            # kept while the copy may stand in for an unreachable file: 30 days after the fetch
            ttl = client.pttl("myproject:robots:robots:{http://a:80}") / 1000
            assert 29.9 * 86_400 < ttl <= 30 * 86_400 + 1
        finally:
            await store.close()

    await in_task(scenario())


@pytest_twisted.ensureDeferred
async def test_a_burst_of_new_origins_waits_for_connections_instead_of_failing(redis_server):
    """300 lookups at once (a broad crawl's start, or its early fetches): each
    one answered, over a bounded number of connections.  redis-py's default
    pool refuses the 101st command in flight ("Too many connections"), which
    would have put the crawl on its in-memory fallback."""
    from scrapy_rfc9309.storage.redis import MAX_CONNECTIONS

    async def scenario() -> None:
        store = RedisStorage(redis_server.url, prefix="burst:")
        await store.open()
        try:
            now = time.time()
            looked = await asyncio.gather(*(store.lookup(f"http://site{i}:80", now) for i in range(300)))
            assert all(entry is None and lease is not None for entry, lease in looked)
            clients = redis_server.client().info("clients")["connected_clients"]
            assert clients <= MAX_CONNECTIONS + 1, clients  # + the test's own client
        finally:
            await store.close()

    await in_task(scenario())


@pytest_twisted.ensureDeferred
async def test_lookups_of_one_turn_share_one_round_trip(redis_server):
    """200 new origins looked up at once (a broad crawl's start): one pipeline
    on one connection, not a connection and a round trip each; every origin
    still gets its own answer (no entry, the lease)."""

    async def scenario() -> None:
        store = RedisStorage(redis_server.url, prefix="pipe:")
        await store.open()
        try:
            stats = redis_server.client().info("stats")
            now = time.time()
            looked = await asyncio.gather(*(store.lookup(f"http://site{i}:80", now) for i in range(200)))
            assert all(entry is None and lease is not None for entry, lease in looked)
            after = redis_server.client().info("stats")
            opened = after["total_connections_received"] - stats["total_connections_received"]
            assert opened <= 1, opened  # the test's own client's; the store's was opened at open
            assert len({lease.key for _, lease in looked}) == 200
        finally:
            await store.close()

    await in_task(scenario())


# -- crawls ----------------------------------------------------------------------------------
def starter(servers, action) -> Req:
    """A first request, to another origin, whose page runs ``action()`` (in
    the server's thread) when it is served; the crawl then requests the pages
    that follow it at once.  So ``action`` runs while the crawl is under way,
    however long the crawl took to start."""
    start = servers("127.0.0.3")
    start.routes["/robots.txt"] = Reply(404)

    def serve(hit: Hit) -> Reply:
        action()
        return Reply(200, "<html>start</html>", {"Content-Type": "text/html"})

    start.routes["/start"] = serve
    return Req(start.url("/start"))


@pytest_twisted.ensureDeferred
async def test_a_crawl_waits_for_the_result_another_worker_is_fetching(redis_server, servers):
    """Another worker holds the lease, and stores its result 0.8 s after this
    crawl first needs it: the crawl waits for it and fetches nothing."""
    site = servers()
    site.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    other = RedisStorage(redis_server.url, prefix="w:")

    async def hold() -> object:
        await other.open()
        return await other.claim(site.origin)

    lease = await in_task(hold())
    assert lease is not None
    published: list[Deferred] = []

    async def publish() -> None:
        await asyncio.sleep(0.8)
        now = time.time()
        body = b"User-agent: *\nDisallow: /theirs\n"
        await other.put(site.origin, RobotsEntry("success", 200, body, "text/plain", now, now + 3600, ""))
        await lease.release()

    loop = clock()
    first = starter(servers, lambda: loop.callFromThread(lambda: published.append(in_task(publish()))))
    first.then = [Req(site.url("/theirs")), Req(site.url("/page"))]
    try:
        result = await crawl([first], redis_settings(redis_server, "w:"))
    finally:
        for done in published:
            await done
        await in_task(other.close())
    assert len(published) == 1
    assert site.count("/robots.txt") == 0
    assert result.outcome(site.url("/theirs")).message.endswith("(line 2: Disallow: /theirs)")
    assert result.outcome(site.url("/page")).status == 200
    assert result.stat("storage/lock_waits") == 1
    assert result.stat("cache/storage_hits") == 1
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_a_dead_lease_holder_is_waited_for_no_longer_than_its_lease(redis_server, servers):
    site = servers()
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    left: list[float] = []

    def die_while_fetching() -> None:
        # what a worker that died while fetching leaves behind: a lease with 1.5 s to live
        redis_server.client().set(key_of("d:", "lock", site.origin), b"dead-worker", px=1500)
        left.append(time.monotonic())

    first = starter(servers, die_while_fetching)
    first.then = [Req(site.url("/private")), Req(site.url("/page"))]
    result = await crawl([first], redis_settings(redis_server, "d:"))

    assert site.count("/robots.txt") == 1
    waited = site.times("/robots.txt")[0] - left[0]
    assert 1.2 <= waited < 5, waited
    assert result.outcome(site.url("/private")).error == "IgnoreRequest"
    assert result.outcome(site.url("/page")).status == 200
    assert result.stat("storage/lock_waits") == 1
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_a_second_crawl_reads_robots_txt_from_redis(redis_server, servers):
    site = servers()
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    first = await crawl([site.url("/a")], redis_settings(redis_server))
    second = await crawl([site.url("/b"), site.url("/private")], redis_settings(redis_server))
    assert site.count("/robots.txt") == 1
    assert first.stat("fetch/count") == 1 and second.stat("fetch/count") == 0
    assert second.stat("cache/storage_hits") == 1
    assert second.outcome(site.url("/private")).error == "IgnoreRequest"
    check_accounting(second)


@pytest_twisted.ensureDeferred
async def test_redis_unreachable_at_start_stops_the_crawl_with_a_clear_error(servers, caplog):
    require_redis()
    site = servers()
    port = closed_port()
    with caplog.at_level(logging.INFO):
        result = await crawl([site.url("/a")], {"RFC9309_STORAGE": f"redis://bot:secret@127.0.0.1:{port}/0"})
    assert result.stats["finish_reason"] == "rfc9309_storage_unavailable"
    assert site.hits == [] and result.outcomes == []
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    # names the store (password masked) and what to do
    masked = f"redis://bot:***@127.0.0.1:{port}/0"
    assert any(masked in m and "RFC9309_STORAGE" in m and "'memory'" in m for m in errors), errors
    assert not any("secret" in r.getMessage() for r in caplog.records)


@pytest_twisted.ensureDeferred
async def test_redis_killed_mid_crawl_loses_no_request(redis_server, servers, caplog):
    one, two, three = servers("127.0.0.1"), servers("127.0.0.2"), servers("127.0.0.3")
    one.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    two.routes["/robots.txt"] = robots("User-agent: *\nCrawl-delay: 0.5\nDisallow: /private\n")
    three.routes["/robots.txt"] = Reply(503)
    seen_in_redis: list[list[bytes]] = []

    def kill(hit: Hit) -> Reply:
        seen_in_redis.append(sorted(redis_server.client().keys("k:*")))
        redis_server.kill()
        return Reply(200, "<html>killed</html>", {"Content-Type": "text/html"})

    one.routes["/kill"] = kill
    after = [
        Req(two.url("/x")),
        Req(two.url("/y")),
        Req(two.url("/w")),
        Req(two.url("/private")),
        Req(three.url("/z")),
        Req(one.url("/b")),
        Req(one.url("/private")),
    ]
    plan = [Req(one.url("/a"), then=[Req(one.url("/kill"), then=after)])]
    with caplog.at_level(logging.WARNING):
        result = await crawl(plan, redis_settings(redis_server, "k:"))

    assert not redis_server.running
    # Redis was in use until then: the first origin's entry, or its lease while the entry
    # waits (at most STORE_DELAY) to share a pipeline
    assert len(seen_in_redis) == 1
    assert {key_of("k:", "robots", one.origin).encode(), key_of("k:", "lock", one.origin).encode()} & set(
        seen_in_redis[0]
    ), seen_in_redis
    assert result.stats["finish_reason"] == "finished"
    check_accounting(result)  # every request ended once, as a response or an IgnoreRequest
    assert len(result.outcomes) == 9
    for url in (one.url("/a"), one.url("/kill"), two.url("/x"), two.url("/y"), two.url("/w"), one.url("/b")):
        assert result.outcome(url).status == 200
    # the rules still hold, from the in-process cache and fresh fetches
    assert result.outcome(two.url("/private")).message.endswith("(line 3: Disallow: /private)")
    assert result.outcome(one.url("/private")).message.endswith("(line 2: Disallow: /private)")
    assert result.outcome(three.url("/z")).message == "Forbidden by robots.txt: unknown_unreachable"
    assert two.count("/robots.txt") == 1 and three.count("/robots.txt") == 1
    # Crawl-delay of the second host is still kept, by this worker's own slot, between
    # its pages (the robots.txt request may reach the server late under load)
    page_gaps = gaps([hit.at for hit in two.page_hits()])
    assert len(page_gaps) == 2 and min(page_gaps) >= 0.5 - TOLERANCE, page_gaps
    assert result.stat("storage/outages") == 1 and result.stat("storage/errors") >= 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert sum("robots.txt store unreachable" in m for m in warnings) == 1, warnings


# -- what a resolution costs the server ---------------------------------------------------------
def command_counts(server: RedisServer) -> dict[str, int]:
    """``INFO commandstats``: calls of each command so far, the commands the
    scripts run included (``evalsha`` is what the client sent)."""
    stats = server.client().info("commandstats")
    return {name.removeprefix("cmdstat_"): int(values["calls"]) for name, values in stats.items()}


def spent(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {name: calls - before.get(name, 0) for name, calls in after.items() if calls > before.get(name, 0)}


ORIGINS = 8
#: commands of a crawl or a connection, not of an origin: the handshake, loading the scripts, this test's INFO
PER_CONNECTION = {"hello", "client|setinfo", "ping", "script|load", "info"}


@pytest_twisted.ensureDeferred
async def test_a_resolution_costs_two_round_trips_and_a_stored_entry_one(redis_server, servers):
    """Eight origins, two pages each: every origin resolved with two script
    calls (look up and claim; store and release) and nothing else; a second
    crawl finds every entry fresh with one call per origin.  The numbers are
    the server's own (``INFO commandstats``), printed for docs/storage.md."""
    sites = [servers(f"127.0.0.{2 + i}") for i in range(ORIGINS)]
    for site in sites:
        site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    urls = [site.url(path) for site in sites for path in ("/a", "/private/b")]
    settings = redis_settings(redis_server, "cost:")

    first_before = command_counts(redis_server)
    first = await crawl(urls, settings)
    first_cost = spent(first_before, command_counts(redis_server))
    second_before = command_counts(redis_server)
    second = await crawl(urls, settings)
    second_cost = spent(second_before, command_counts(redis_server))
    for label, cost in (("new origins", first_cost), ("fresh entries", second_cost)):
        scripts = {k: v for k, v in cost.items() if k not in ("evalsha", *PER_CONNECTION)}
        print(
            f"{label}: {cost.get('evalsha', 0) / ORIGINS:g} round trips per origin, "
            f"{sum(scripts.values()) / ORIGINS:g} commands run by the scripts per origin {scripts}"
        )

    for result in (first, second):
        check_accounting(result)
        assert result.stat("requests/denied/disallowed_explicit") == ORIGINS
    assert all(site.count("/robots.txt") == 1 for site in sites)
    assert first.stat("fetch/count") == ORIGINS and second.stat("fetch/count") == 0
    assert second.stat("cache/storage_hits") == ORIGINS
    # what the client sent: one script call per step, no other command per origin
    assert first_cost["evalsha"] == 2 * ORIGINS, first_cost
    assert second_cost["evalsha"] == ORIGINS, second_cost
    per_origin = {"evalsha", "set", "pttl", "get", "del"}
    for cost in (first_cost, second_cost):
        assert set(cost) <= per_origin | PER_CONNECTION, cost
    # inside the scripts: read the entry, claim; write the entry, the body's expiry and the
    # body (one key for the eight origins' identical file, written by each), compare and free the lease
    assert first_cost == {**first_cost, "set": 3 * ORIGINS, "pttl": ORIGINS, "get": 2 * ORIGINS, "del": ORIGINS}
    # a fresh entry: read it and its body
    assert second_cost.get("get") == 2 * ORIGINS and "set" not in second_cost and "del" not in second_cost


@pytest_twisted.ensureDeferred
async def test_bodies_kept_apart_from_their_origins_keys(redis_server):
    """On a Redis Cluster a body's key is on another node than its origin's:
    the store writes it with a command of its own in the same pipeline, and
    reads it after the entry.  Here on one server, with the same layout: one
    body key for two origins serving one file, and both read back."""

    async def scenario() -> None:
        store = RedisStorage(redis_server.url, prefix="apart:")
        store.bodies_apart = True
        await store.open()
        try:
            now = time.time()
            entry = RobotsEntry("success", 200, b"User-agent: *\nDisallow: /x\n", "text/plain", now, now + 60, "")
            before = command_counts(redis_server)
            await store.store("http://a:80", entry, await store.claim("http://a:80"))
            await store.put("http://b:80", replace(entry, url="http://b:80/robots.txt"))
            cost = spent(before, command_counts(redis_server))
            # per store: the body's script and the entry's, one pipeline (one round trip)
            assert cost["evalsha"] == 2 * 2 + 1, cost  # + the claim
            client = redis_server.client()
            assert len(client.keys("apart:body:*")) == 1
            before = command_counts(redis_server)
            found, lease = await store.lookup("http://a:80", time.time())
            assert lease is None and found == entry
            assert spent(before, command_counts(redis_server)).get("evalsha") == 1  # then a GET of the body
            assert await store.get("http://b:80") == replace(entry, url="http://b:80/robots.txt")
        finally:
            await store.close()

    await in_task(scenario())


@pytest_twisted.ensureDeferred
async def test_a_shared_body_lives_as_long_as_the_longest_kept_entry_naming_it(redis_server):
    async def scenario() -> None:
        store = RedisStorage(redis_server.url, prefix="ttl:")
        await store.open()
        try:
            now = time.time()
            body = b"User-agent: *\nDisallow: /wp-admin/\n"
            # kept 30 days after its fetch (it may stand in for an unreachable file), then 10 days
            recent = RobotsEntry("success", 200, body, "text/plain", now, now + 60, "")
            older = replace(recent, fetched_at=now - 20 * 86_400, expires_at=now - 20 * 86_400 + 60)
            await store.put("http://recent:80", recent)
            await store.put("http://older:80", older)  # a shorter life does not shorten the body's
            client = redis_server.client()
            key = store._body_key(entries.digest_of(body))
            entry_ttl = client.pttl(store._key("robots", "http://recent:80")) / 1000
            body_ttl = client.pttl(key) / 1000
            assert entry_ttl <= body_ttl <= entry_ttl + 61
            assert client.pttl(store._key("robots", "http://older:80")) / 1000 < 10.1 * 86_400
            # garbage under the body's key (a body of no SHA-256, no TTL) is replaced by the next store
            client.set(key, b"garbage")
            await store.put("http://third:80", recent)
            assert 29 * 86_400 < client.pttl(key) / 1000 and (await store.get("http://recent:80")) == recent
        finally:
            await store.close()

    await in_task(scenario())


@pytest_twisted.ensureDeferred
async def test_a_server_that_stops_answering_fails_a_call_after_one_timeout_and_serves_again(redis_server):
    """A server that hangs (SIGSTOP, its connections open): each call fails with
    StorageUnavailable after one socket timeout (2 s here), not tried again on a new
    connection (which would double the wait); the timeout is the store's, one timer for
    every call.  Once the server answers again, so does the store."""
    from scrapy_rfc9309.storage import StorageUnavailable

    async def scenario() -> None:
        store = RedisStorage(redis_server.url + "?socket_timeout=2", prefix="hung:")
        await store.open()
        try:
            assert (await store.lookup("http://a:80", time.time()))[1] is not None
            redis_server.freeze()
            try:
                for call in (lambda: store.lookup("http://b:80", time.time()), lambda: store.claim("http://c:80")):
                    started = time.monotonic()
                    with pytest.raises(StorageUnavailable, match="no answer within 2 s"):
                        await call()
                    # one timeout (2 to 2.5 s: checked every 0.5 s), not two (4 s)
                    assert 1.9 < time.monotonic() - started < 3.9
            finally:
                redis_server.freeze(False)
            entry, lease = await store.lookup("http://d:80", time.time())
            assert entry is None and lease is not None
        finally:
            await store.close()

    await in_task(scenario())


@pytest_twisted.ensureDeferred
async def test_a_prefix_of_any_characters_is_written_into_the_scripts_safely(redis_server):
    """The body key's text around its digest is written into the look-up script when the
    store opens: a prefix with quotes, backslashes, brackets and non-ASCII letters still
    finds the body it stored (and no prefix can end the Lua string)."""

    async def scenario() -> None:
        for prefix in ["we\"ird'\\]]:é{", "plain:"]:
            store = RedisStorage(redis_server.url, prefix=prefix)
            await store.open()
            try:
                now = time.time()
                _, lease = await store.lookup("http://x.example:80", now)
                body = b"User-agent: *\nDisallow: /p\n"
                entry = RobotsEntry(
                    "success", 200, body, "text/plain", now, now + 100, "http://x.example:80/robots.txt"
                )
                await store.store("http://x.example:80", entry, lease)
                found, again = await store.lookup("http://x.example:80", time.time())
                assert found == entry and again is None, (prefix, found)
                assert any(key.startswith(prefix.encode()) for key in redis_server.client().keys("*body*"))
            finally:
                await store.close()

    await in_task(scenario())
