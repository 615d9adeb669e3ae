"""Hostile store contents and a store held by another process, in real crawls.

Garbage is written into a real SQLite file and a real ``redis-server`` the
way another program, an older version or an attacker could; each crawl then
shows what the plugin promises (issue 23, points 5 and 6): a bad entry is a
miss for its origin (robots.txt fetched again) with one warning and
``rfc9309/storage/invalid_entries``, never an error per request nor the store
down for every origin; an expiry is capped at 24 hours after the fetch; a
lock key without a TTL or a pace key far ahead holds nobody; a SQLite file
locked by another process stalls no lookup and stops no crawl.
"""

from __future__ import annotations

import logging
import math
import sqlite3
import struct
import time
import zlib
from pathlib import Path

import pytest_twisted
from twisted.internet.defer import Deferred

from scrapy_rfc9309.storage import entries
from scrapy_rfc9309.storage.redis import RedisStorage

from .harness import Req, check_accounting, clock, crawl
from .redisd import RedisServer
from .servers import robots

HOUR = 3600.0


def rules(i: int) -> str:
    """A robots.txt of its own per site (bodies are shared by their SHA-256)."""
    return f"# site {i}\nUser-agent: *\nDisallow: /private\n"


def start_sites(servers, count: int) -> list:
    sites = [servers(f"127.0.0.{2 + i}") for i in range(count)]
    for i, site in enumerate(sites):
        site.routes["/robots.txt"] = robots(rules(i))
    return sites


def pages(sites) -> list[str]:
    return [site.url(path) for site in sites for path in ("/a", "/private")]


def check_pages(result, sites) -> None:
    """Every site's rules applied: /a fetched, /private denied by its line."""
    assert result.stats["finish_reason"] == "finished"
    check_accounting(result)
    for site in sites:
        assert result.outcome(site.url("/a")).status == 200
        assert result.outcome(site.url("/private")).message.endswith("(line 3: Disallow: /private)")


def unusable(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "is unusable" in r.getMessage()]


def shifted(data: bytes, **values: float | int) -> bytes:
    """An encoded entry with some head fields replaced (access, fetched_at, expires_at)."""
    head = entries._HEAD
    version, access, status, fetched_at, expires_at, flags = head.unpack_from(data)
    fields = {"access": access, "fetched_at": fetched_at, "expires_at": expires_at, **values}
    packed = head.pack(version, fields["access"], status, fields["fetched_at"], fields["expires_at"], flags)
    return packed + data[head.size :]


# -- SQLite ------------------------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_sqlite_garbage_rows_are_misses_fetched_again(servers, tmp_path, caplog):
    sites = start_sites(servers, 6)
    db = tmp_path / "robots.sqlite"
    settings = {"RFC9309_STORAGE": f"sqlite://{db}"}
    await crawl(pages(sites), settings)
    assert all(site.count("/robots.txt") == 1 for site in sites)

    conn = sqlite3.connect(db)
    stored = dict(conn.execute("SELECT origin, entry FROM entries").fetchall())
    day_ago = time.time() - 25 * HOUR
    bad = {
        sites[0].origin: shifted(stored[sites[0].origin], access=9),  # an unknown access result
        sites[1].origin: shifted(stored[sites[1].origin], fetched_at=math.nan),
        sites[2].origin: b"\x02 not an entry at all",
        sites[3].origin: "a text where bytes belong",
        # fresh for ever by its expiry, fetched 25 hours ago: stale once capped at 24 hours
        sites[5].origin: shifted(stored[sites[5].origin], fetched_at=day_ago, expires_at=1e12),
    }
    with conn:
        for origin, data in bad.items():
            conn.execute("UPDATE entries SET entry = ? WHERE origin = ?", (data, origin))
        # a body that is not the one its SHA-256 names
        digest = entries.digest_of(rules(4).encode())
        conn.execute("UPDATE bodies SET body = ? WHERE digest = ?", (zlib.compress(b"Disallow: /a\n"), digest))
    conn.close()

    with caplog.at_level(logging.WARNING):
        result = await crawl(pages(sites), settings)
    check_pages(result, sites)
    assert all(site.count("/robots.txt") == 2 for site in sites)  # each fetched again
    warned = unusable(caplog)
    assert len(warned) == 5, warned
    assert {origin for origin in (s.origin for s in sites[:5]) if any(origin in m for m in warned)} == {
        s.origin for s in sites[:5]
    }
    assert result.stat("storage/invalid_entries") == 5
    assert result.stat("storage/expiries_capped") == 1
    assert result.stat("storage/outages") == 0  # the store stayed in use for every other origin

    # the entries fetched again replaced the bad ones: a third crawl fetches nothing
    third = await crawl(pages(sites), settings)
    check_pages(third, sites)
    assert all(site.count("/robots.txt") == 2 for site in sites)
    assert third.stat("cache/storage_hits") == 6 and third.stat("storage/invalid_entries") == 0


# -- Redis -------------------------------------------------------------------------------------
def keys_of(server: RedisServer, prefix: str) -> RedisStorage:
    """A store object only for its key names (not opened)."""
    return RedisStorage(server.url, prefix=prefix)


@pytest_twisted.ensureDeferred
async def test_redis_garbage_keys_are_misses_fetched_again(redis_server, servers, caplog):
    sites = start_sites(servers, 6)
    settings = {"RFC9309_STORAGE": f"{redis_server.url}?prefix=h:"}
    await crawl(pages(sites), settings)
    client = redis_server.client()
    names = keys_of(redis_server, "h:")
    key = {site.origin: names._key("robots", site.origin) for site in sites}
    stored = {origin: client.get(k) for origin, k in key.items()}
    assert all(stored.values())

    client.delete(key[sites[0].origin])
    client.hset(key[sites[0].origin], "access", "success")  # a hash where a string belongs: WRONGTYPE
    client.set(key[sites[1].origin], b"\x02garbage", keepttl=True)
    client.set(key[sites[2].origin], shifted(stored[sites[2].origin], access=7), keepttl=True)
    client.set(key[sites[3].origin], shifted(stored[sites[3].origin], expires_at=-1.0), keepttl=True)
    body = names._body_key(entries.digest_of(rules(4).encode()))
    client.set(body, zlib.compress(b"User-agent: *\nDisallow: /\n"), keepttl=True)  # not its SHA-256
    old = time.time() - 25 * HOUR
    client.set(key[sites[5].origin], shifted(stored[sites[5].origin], fetched_at=old, expires_at=1e12))

    with caplog.at_level(logging.WARNING):
        result = await crawl(pages(sites), settings)
    check_pages(result, sites)
    assert all(site.count("/robots.txt") == 2 for site in sites)
    warned = unusable(caplog)
    assert len(warned) == 5, warned
    assert result.stat("storage/invalid_entries") == 5
    assert result.stat("storage/outages") == 0 and result.stat("storage/errors") == 0
    # each key written again, in the layout: read back as the rules served
    for i, site in enumerate(sites):
        data = client.get(key[site.origin])
        digest = entries.entry_digest(data)
        entry = entries.decode(site.origin, data, client.get(names._body_key(digest)), time.time())
        assert entry.body == rules(i).encode()


@pytest_twisted.ensureDeferred
async def test_redis_lock_key_without_ttl_holds_nobody(redis_server, servers):
    """A lock key without a TTL used to hold its origin for the whole lease
    wait (fetch timeout x (redirects + 1) + 10 s: 40 s here), then every
    worker fetched; now it is taken over at once."""
    (locked,) = start_sites(servers, 1)
    client = redis_server.client()
    client.set(keys_of(redis_server, "p:")._key("lock", locked.origin), "a worker that never lets go")
    settings = {"RFC9309_STORAGE": f"{redis_server.url}?prefix=p:"}
    result = await crawl(pages([locked]), settings)
    check_pages(result, [locked])
    assert locked.count("/robots.txt") == 1
    assert result.stat("storage/lock_waits") == 0 and result.stat("storage/lock_timeouts") == 0
    assert client.pttl(keys_of(redis_server, "p:")._key("lock", locked.origin)) == -2  # taken, then given back


@pytest_twisted.ensureDeferred
async def test_redis_pace_keys_ahead_or_garbage_hold_nobody_past_the_floor(redis_server, servers):
    """A pace key an hour ahead held the origin's requests for the hour (the
    crawl never closed); garbage in one failed the script.  Now each holds a
    request one floor (at most RFC9309_CRAWL_DELAY's cap) and the Crawl-delay
    is still kept."""
    ahead, garbage, hashed = start_sites(servers, 3)
    for site in (ahead, garbage, hashed):
        site.routes["/robots.txt"] = robots("User-agent: *\nCrawl-delay: 1\nDisallow: /private\n")
    client = redis_server.client()
    names = keys_of(redis_server, "p:")
    seconds, micros = client.time()
    client.set(names._key("pace", ahead.origin), str((seconds + 3600) * 1_000_000 + micros))  # no TTL either
    client.set(names._key("pace", garbage.origin), "nan")
    client.hset(names._key("pace", hashed.origin), "start", "0")  # another type: WRONGTYPE for a GET
    settings = {"RFC9309_STORAGE": f"{redis_server.url}?prefix=p:"}
    plan = [site.url(p) for site in (ahead, garbage, hashed) for p in ("/a", "/b", "/c")]
    running = Deferred.fromCoroutine(crawl(plan, settings)).addTimeout(60, clock())  # the old code: an hour
    result = await running

    assert result.stats["finish_reason"] == "finished"
    check_accounting(result)
    assert all(o.status == 200 for o in result.outcomes)
    assert result.stat("storage/outages") == 0 and result.stat("storage/errors") == 0
    assert result.stat("crawl_delay/cluster/max_wait") <= 2.5  # a floor or two, not an hour
    for site in (ahead, garbage, hashed):
        times = sorted(hit.at for hit in site.hits if hit.path != "/robots.txt")
        assert len(times) == 3
        assert all(b - a >= 0.9 for a, b in zip(times, times[1:])), times  # the Crawl-delay still kept


# -- SQLite held by another process ------------------------------------------------------------
def hold(db: Path) -> sqlite3.Connection:
    """Another connection (as another process would) taking the file's write lock."""
    conn = sqlite3.connect(db, isolation_level=None, timeout=0, check_same_thread=False)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN EXCLUSIVE")
    return conn


@pytest_twisted.ensureDeferred
async def test_a_locked_sqlite_file_stalls_no_lookup(servers, tmp_path, caplog):
    """Another process takes the file's write lock mid-crawl; the new
    origins' entries wait for it while the stored origins are read.  Before,
    the blocked batch held the store's only thread for its 10 s busy timeout
    and every lookup queued behind it."""
    stored = start_sites(servers, 3)
    new = [servers(f"127.0.0.{10 + i}") for i in range(3)]
    for site in new:
        site.routes["/robots.txt"] = robots(rules(9))
    db = tmp_path / "robots.sqlite"
    settings = {"RFC9309_STORAGE": f"sqlite://{db}"}
    await crawl(pages(stored), settings)

    held: list[sqlite3.Connection] = []

    def lock_then_answer(hit):
        if not held:
            held.append(hold(db))
        return robots(rules(9))

    new[0].routes["/robots.txt"] = lock_then_answer
    # the new origins first (their batch meets the lock), then the stored origins are looked up
    later = [Req(url, pause=1.0 if i == 0 else 0.0) for i, url in enumerate(pages(stored))]
    plan = [Req(new[0].url("/a"), then=later)] + [site.url("/a") for site in new[1:]]
    began = time.monotonic()
    try:
        with caplog.at_level(logging.INFO):
            result = await crawl(plan, settings)
        took = time.monotonic() - began
    finally:
        for conn in held:
            conn.rollback()
            conn.close()
    assert held  # the lock was taken
    assert result.stats["finish_reason"] == "finished"
    check_accounting(result)
    assert all(site.count("/robots.txt") == 1 for site in stored)  # read from the file
    assert result.stat("cache/storage_hits") == 3
    assert took < 5.0, took  # unlocked: about 1.5 s; before: more than 10 s
    assert any("locked by another process" in r.getMessage() for r in caplog.records)


@pytest_twisted.ensureDeferred
async def test_a_crawl_started_on_a_locked_sqlite_file_runs_on_the_fallback(servers, tmp_path, caplog):
    """A new file another process holds cannot be set up: the crawl starts
    on the in-process store (one warning) instead of refusing to start."""
    sites = start_sites(servers, 2)
    db = tmp_path / "robots.sqlite"
    other = hold(db)
    try:
        with caplog.at_level(logging.WARNING):
            result = await crawl(pages(sites), {"RFC9309_STORAGE": f"sqlite://{db}"})
    finally:
        other.rollback()
        other.close()
    check_pages(result, sites)
    assert result.stat("storage/outages") == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("locked by another process" in m and "in-process cache" in m for m in warnings), warnings


def test_shifted_keeps_the_layout():
    data, _ = entries.encode("http://a:80", entries.RobotsEntry("unavailable", 404, b"", None, 5.0, 6.0, ""))
    again = shifted(data, expires_at=7.0)
    assert struct.unpack_from(">d", again, 12)[0] == 7.0
    assert entries.decode("http://a:80", again, None, 10.0).expires_at == 7.0
