"""The downloader middleware: every request waits for its origin's robots.txt.

Per origin (scheme, host, port) there is at most one fetch in flight; every
request for that origin awaits the same result and is then allowed or dropped
with ``IgnoreRequest("Forbidden by robots.txt: <reason>")``.  The fetch starts
when the first request of a new origin is *scheduled* (``request_scheduled``),
not when it reaches the downloader, so it is usually done before the request
gets there.  Fetching, status classes, cache lifetimes and storage live in
their own modules; this one holds the futures, the decision, the stats and the
logs.

Stats (all under ``rfc9309/``) add up:

* ``requests/checked`` = sum of ``requests/allowed/<verdict>`` + sum of
  ``requests/denied/<verdict>`` (+ ``requests/errors``, internal failures);
* every request that consulted robots.txt is one ``cache/hits`` or one
  ``cache/misses`` (``allowed_not_obeyed`` and ``invalid_user_agent`` did not);
* ``fetch/count`` = sum of ``access/<result>`` = number of final hop classes
  (``fetch/2xx``, ``fetch/4xx``, ``fetch/429``, ``fetch/5xx``, ``fetch/other``,
  ``fetch/error/<Class>``, ``fetch/too_many_redirects``,
  ``fetch/3xx_unfollowable``); ``fetch/3xx`` counts redirects followed.

The store behind the cache (``RFC9309_STORAGE``: memory, SQLite, Redis) is
wrapped in :class:`~scrapy_rfc9309.storage.FallbackStorage`: unreachable at
start-up it stops the crawl before its first request (finish reason
``rfc9309_storage_unavailable``); lost mid-crawl, process memory stands in.
With a store that other processes share, one of them fetches each origin's
robots.txt while the others wait for the stored result, and allowed requests
wait for a cluster-wide Crawl-delay slot (:class:`~scrapy_rfc9309.throttle.SharedPacing`).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from dataclasses import replace
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.http.request import NO_CALLBACK
from scrapy.exceptions import CloseSpider, IgnoreRequest, NotConfigured
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet.defer import Deferred

from .fetch import FETCH_META_KEY, FetchResult, RobotsFetcher
from .interop import RobotParserAdapter
from .origins import origin_of, origin_of_request, robots_url
from .robots import RobotsTxt, Verdict, parse
from .robots.text import shorten
from .robots.access import Access, cache_seconds, policy_for
from .settings import OriginPolicy, Rfc9309Settings
from .signals import robots_txt_ready
from .storage import (
    STALE_MAX_SECONDS,
    FallbackStorage,
    Lease,
    LruDict,
    RobotsEntry,
    StorageUnavailable,
    build_storage,
    display_url,
)
from .throttle import SharedPacing
from .useragent import derive_token

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler

    # typing.Self requires Python 3.11
    from typing_extensions import Self

logger = logging.getLogger(__name__)

STATS = "rfc9309/"
META_USER_AGENT = "robotstxt_user_agent"
#: wait-mode backoff: first retry after this many seconds, doubling up to the cap
WAIT_FIRST_DELAY = 1.0
WAIT_MAX_DELAY = 60.0
#: at most max(this, 4 x CONCURRENT_REQUESTS) fetches are started early (at scheduling time);
#: beyond that a fetch starts when its request reaches the middleware
PREFETCH_MIN = 64
#: counts are kept locally and added to Scrapy's stats at most this often (and at close):
#: one StatsCollector.inc_value costs about 2 us, as much as the rest of a check
STATS_FLUSH_SECONDS = 1.0
#: a shared store's fetch lease: poll for the holder's result this often (doubling)
CLAIM_POLL_FIRST = 0.05
CLAIM_POLL_MAX = 0.5
#: seconds waited for a live lease holder beyond its longest possible fetch
CLAIM_MARGIN = 10.0
#: finish reason of a crawl whose store cannot be reached at start-up
STORAGE_UNAVAILABLE = "rfc9309_storage_unavailable"
_ALLOWED = {v: f"requests/allowed/{v.value}" for v in Verdict}
_DENIED = {v: f"requests/denied/{v.value}" for v in Verdict}


class _Pending:
    """The one fetch in flight for an origin, and the requests awaiting it."""

    __slots__ = ("waiters", "result", "error", "done")

    def __init__(self) -> None:
        self.waiters: list[Deferred] = []
        self.result: RobotsTxt | None = None
        self.error: BaseException | None = None
        self.done = False

    async def wait(self) -> RobotsTxt:
        if not self.done:
            waiter: Deferred = Deferred()
            self.waiters.append(waiter)
            return await maybe_deferred_to_future(waiter)
        if self.error is not None:
            raise self.error
        assert self.result is not None
        return self.result

    def finish(self, result: RobotsTxt | None, error: BaseException | None = None) -> None:
        self.done, self.result, self.error = True, result, error
        waiters, self.waiters = self.waiters, []
        for waiter in waiters:
            if error is not None:
                waiter.errback(error)
            else:
                waiter.callback(result)


class RobotsTxtMiddleware:
    """RFC 9309 robots.txt for Scrapy; replaces Scrapy's RobotsTxtMiddleware."""

    def __init__(self, crawler: Crawler, settings: Rfc9309Settings) -> None:
        self.crawler = crawler
        self.settings = settings
        self.stats = crawler.stats
        self.fetcher = RobotsFetcher(crawler, settings)
        self.storage = FallbackStorage(build_storage(settings), count=self._inc)
        self._pacing: SharedPacing | None = None
        if self.storage.shared and settings.crawl_delay:
            self._pacing = SharedPacing(crawler, self.storage, settings.max_crawl_delay)
        # origin -> (entry, governing RobotsTxt); the parsed files live only here
        self._known: LruDict[str, tuple[RobotsEntry, RobotsTxt]] = LruDict(
            settings.cache_max_origins, on_evict=self._evicted
        )
        self._pending: dict[str, _Pending] = {}
        self._tasks: set[Deferred] = set()
        self._counts: defaultdict[str, int] = defaultdict(int)
        self._flushed_at = time.monotonic()
        self._default_policy = OriginPolicy(True, settings.user_agent, settings.unreachable)
        self._prefetch_cap = max(PREFETCH_MIN, 4 * crawler.settings.getint("CONCURRENT_REQUESTS", 16))
        crawler.signals.connect(self._request_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = Rfc9309Settings.from_settings(crawler.settings)
        if not settings.enabled:
            raise NotConfigured("RFC9309_ENABLED is False")
        logger.info(
            "RFC 9309 robots.txt: product token %r (from %s); unreachable robots.txt: %s; "
            "cache %gs, at most %d origins",
            settings.user_agent,
            settings.user_agent_source,
            settings.unreachable,
            settings.cache_seconds,
            settings.cache_max_origins,
            extra={"spider": crawler.spider},
        )
        if settings.storage != "memory":
            logger.info(
                "RFC 9309 robots.txt store: %s; stored copies used when robots.txt is unreachable: %s",
                display_url(settings.storage),
                "up to 30 days" if settings.stale_if_unreachable else "no",
                extra={"spider": crawler.spider},
            )
        return cls(crawler, settings)

    # -- the decision ----------------------------------------------------------
    async def process_request(self, request: Request) -> None:
        meta = request.meta
        if FETCH_META_KEY in meta:
            return None  # our own robots.txt fetch
        origin = origin_of_request(request)
        if origin is None:
            return None  # data:, file: and other non-HTTP URLs are never checked
        self._inc("requests/checked")
        if time.monotonic() - self._flushed_at > STATS_FLUSH_SECONDS:
            self._flush()
        policy = self.settings.origins.get(origin, self._default_policy)
        if meta.get("dont_obey_robotstxt") or not policy.obey:
            self._inc(_ALLOWED[Verdict.ALLOWED_NOT_OBEYED])
            return None
        token = policy.user_agent
        if meta.get(META_USER_AGENT):
            try:
                token = _request_token(meta[META_USER_AGENT])
            except ValueError as exc:
                self._inc("requests/denied/invalid_user_agent")
                message = f"Forbidden by robots.txt: invalid {META_USER_AGENT} ({shorten(exc)})"
                logger.debug("%s: %s", message, _show(request), extra={"spider": self.crawler.spider})
                raise IgnoreRequest(message) from None

        known = self._known.get(origin)
        if known is not None and known[0].is_fresh():
            self._inc("cache/hits")
            robots = known[1]
        else:
            self._inc("cache/misses")
            try:
                robots = await self._robots_for(origin, request, policy).wait()
            except Exception:
                self._inc("requests/errors")
                raise
        decision = robots.check(request.url, token)
        if decision.allowed:
            self._inc(_ALLOWED[decision.verdict])
            if self._pacing is not None and decision.verdict is not Verdict.ALLOWED_ROBOTS_TXT:
                floor = self._pacing.floor(robots, token)
                if floor:
                    await self._pacing.wait_turn(origin, floor, request)
            return None
        self._inc(_DENIED[decision.verdict])
        reason = decision.reason
        logger.debug("Forbidden by robots.txt: %s: %s", reason, _show(request), extra={"spider": self.crawler.spider})
        raise IgnoreRequest(f"Forbidden by robots.txt: {reason}")

    # -- one result per origin -------------------------------------------------
    async def robots_txt(self, url: str) -> RobotsTxt | None:
        """The :class:`RobotsTxt` governing ``url``'s origin (the parsed file, or
        the allow-all / deny-all policy), from the cache or from the one fetch
        in flight, started if needed.  None when the origin is not obeyed;
        ``ValueError`` for a URL that is not http(s).  Counts no request."""
        origin = origin_of(url)
        if origin is None:
            raise ValueError(f"{shorten(url)!r} is not an http(s) URL")
        policy = self.settings.origins.get(origin, self._default_policy)
        if not policy.obey:
            return None
        known = self._known.get(origin)
        if known is not None and known[0].is_fresh():
            return known[1]
        probe = Request(robots_url(origin), callback=NO_CALLBACK, dont_filter=True)
        return await self._robots_for(origin, probe, policy).wait()

    def _robots_for(self, origin: str, request: Request, policy: OriginPolicy) -> _Pending:
        """The pending result of ``origin``, starting its fetch if none is in flight."""
        pending = self._pending.get(origin)
        if pending is None:
            pending = self._pending[origin] = _Pending()
            task = deferred_from_coro(self._resolve(origin, request, policy, pending))
            self._tasks.add(task)
            task.addBoth(lambda _: self._tasks.discard(task))
        return pending

    async def _resolve(self, origin: str, request: Request, policy: OriginPolicy, pending: _Pending) -> None:
        try:
            robots = await self._obtain(origin, request, policy)
        except Exception as exc:  # a bug, not a network problem: fail the waiters loudly
            logger.error(
                "rfc9309: could not resolve robots.txt of %s", origin, exc_info=True, extra={"spider": self.crawler.spider}
            )
            pending.finish(None, exc)
        else:
            pending.finish(robots)
        finally:
            if not pending.done:  # cancelled (shutdown): the waiters must not hang
                pending.finish(None, IgnoreRequest(f"robots.txt fetch of {origin} was cancelled"))
            if self._pending.get(origin) is pending:
                del self._pending[origin]

    async def _obtain(self, origin: str, request: Request, policy: OriginPolicy) -> RobotsTxt:
        previous = self._known.peek(origin)
        stale, stale_robots = previous if previous is not None else (None, None)
        stored = await self.storage.get(origin)
        if stored is not None and stored.is_fresh():
            self._inc("cache/storage_hits")
            return await self._publish(origin, stored, request, policy)
        if stored is not None and (stale is None or stored.fetched_at > stale.fetched_at):
            stale, stale_robots = stored, None  # newer than ours: another worker's, or an earlier run's

        lease, stored = await self._claim(origin, policy)
        if stored is not None:  # another worker fetched it meanwhile
            self._inc("cache/storage_hits")
            return await self._publish(origin, stored, request, policy)
        if stale is not None:
            self._inc("cache/expiries")
        try:
            entry, robots = await self._fetch(origin, request, policy, stale, stale_robots)
            if self._pacing is not None:
                # before the entry is visible: no worker's first page may follow the fetch too closely
                await self._pacing.note_fetch(origin, self._pacing.floor(robots, policy.user_agent))
            await self.storage.put(origin, entry)
        finally:
            if lease is not None:
                await self.storage.release(lease)
        return await self._publish(origin, entry, request, policy, robots)

    async def _fetch(
        self,
        origin: str,
        request: Request,
        policy: OriginPolicy,
        stale: RobotsEntry | None,
        stale_robots: RobotsTxt | None,
    ) -> tuple[RobotsEntry, RobotsTxt]:
        """Fetch robots.txt (retrying in "wait" mode) into the entry to store
        and the policy it means."""
        usable = self._stale_usable(stale)
        result = await self.fetcher.fetch(origin, request)
        self._count_fetch(origin, result)
        if result.access is Access.UNREACHABLE and policy.unreachable == "wait" and not usable:
            deadline = time.monotonic() + self.settings.unreachable_wait
            delay = WAIT_FIRST_DELAY
            while result.access is Access.UNREACHABLE and (left := deadline - time.monotonic()) > 0:
                await _sleep(min(delay, left))
                delay = min(delay * 2, WAIT_MAX_DELAY)
                result = await self.fetcher.fetch(origin, request)
                self._count_fetch(origin, result)

        entry = self._entry(result)
        if result.access is Access.UNREACHABLE and usable:
            # RFC 9309 sections 2.3.1.4 and 2.4: an unreachable file may be replaced
            # by a stored copy (younger than 30 days); it is kept until the next
            # retry of the unreachable one.  fetched_at stays that of the copy.
            assert stale is not None
            self._inc("cache/stale_used")
            entry = replace(stale, expires_at=entry.expires_at)
            return entry, stale_robots if stale_robots is not None else self._policy_of(entry, policy)
        return entry, self._policy_of(entry, policy)

    async def _claim(self, origin: str, policy: OriginPolicy) -> tuple[Lease | None, RobotsEntry | None]:
        """Become the process that fetches ``origin``'s robots.txt: ``(lease,
        None)``; or get the entry another process stored meanwhile: ``(None,
        entry)``; or, after waiting longer than any fetch can take, ``(None,
        None)`` (fetch anyway).  A store of one process grants at once."""
        storage = self.storage
        settings = self.settings
        bound = settings.fetch_timeout * (settings.max_redirects + 1) + CLAIM_MARGIN
        if policy.unreachable == "wait":
            bound += settings.unreachable_wait
        deadline = time.monotonic() + bound
        delay = CLAIM_POLL_FIRST
        waited = False
        while True:
            lease = await storage.claim(origin)
            if lease is not None:
                if storage.shared and not storage.down:
                    # the holder may have stored its result and let go just before we asked
                    entry = await storage.get(origin)
                    if entry is not None and entry.is_fresh():
                        await storage.release(lease)
                        return None, entry
                return lease, None
            if not waited:
                waited = True
                self._inc("storage/lock_waits")
            if time.monotonic() > deadline:
                self._inc("storage/lock_timeouts")
                logger.warning(
                    "robots.txt of %s: another worker has been fetching it for %g s; fetching it here too",
                    origin, bound, extra={"spider": self.crawler.spider},
                )  # fmt: skip
                return None, None
            await _sleep(delay)
            delay = min(delay * 2, CLAIM_POLL_MAX)
            entry = await storage.get(origin)
            if entry is not None and entry.is_fresh():
                return None, entry

    def _stale_usable(self, entry: RobotsEntry | None) -> bool:
        """Whether a stale entry may stand in for an unreachable file: a real
        file, younger than 30 days, and RFC9309_STALE_IF_UNREACHABLE on."""
        return (
            entry is not None
            and self.settings.stale_if_unreachable
            and entry.access == Access.SUCCESS.value
            and entry.age() < STALE_MAX_SECONDS
        )

    def _policy_of(self, entry: RobotsEntry, policy: OriginPolicy) -> RobotsTxt:
        access = Access(entry.access)
        parsed = parse(entry.body, entry.content_type, self.settings.max_bytes) if access is Access.SUCCESS else None
        return policy_for(access, policy.unreachable, parsed)

    async def _publish(
        self,
        origin: str,
        entry: RobotsEntry,
        request: Request,
        policy: OriginPolicy,
        robots: RobotsTxt | None = None,
    ) -> RobotsTxt:
        """Remember the result and tell everyone, before the waiters go on.
        ``robots`` is the entry's policy when it is already parsed."""
        access = Access(entry.access)
        if robots is None:
            robots = self._policy_of(entry, policy)
        self._known.put(origin, (entry, robots))
        self._inc(f"origins/{access.value}")
        self.crawler.signals.send_catch_log(
            signal=robots_txt_ready, origin=origin, robots=robots, user_agent=policy.user_agent, request=request
        )
        await self.crawler.signals.send_catch_log_async(
            signal=signals.robots_parsed,
            robotparser=RobotParserAdapter(robots, policy.user_agent),
            request=request,
        )
        return robots

    def _entry(self, result: FetchResult) -> RobotsEntry:
        now = time.time()
        lifetime = cache_seconds(
            result.access,
            result.fresh_for,
            cap=self.settings.cache_seconds,
            floor=self.settings.cache_min_seconds,
            unreachable_retry=self.settings.retry_unreachable_seconds,
        )
        return RobotsEntry(
            access=result.access.value,
            status=result.status,
            body=result.body if result.access is Access.SUCCESS else b"",
            content_type=result.content_type,
            fetched_at=now,
            expires_at=now + lifetime,
            url=result.url,
        )

    # -- early start -------------------------------------------------------------
    def _request_scheduled(self, request: Request, spider: Spider | None = None) -> None:
        """Start the fetch of a new origin as soon as one of its requests is
        scheduled: requests held in the downloader count against
        CONCURRENT_REQUESTS, so the file should be there before they are."""
        meta = request.meta
        if FETCH_META_KEY in meta or meta.get("dont_obey_robotstxt"):
            return
        origin = origin_of_request(request)
        if origin is None or origin in self._pending or len(self._pending) >= self._prefetch_cap:
            return
        policy = self.settings.origins.get(origin, self._default_policy)
        if not policy.obey:
            return
        known = self._known.peek(origin)
        if known is not None and known[0].is_fresh():
            return
        if _likely_offsite(request, spider or self.crawler.spider):
            return  # OffsiteMiddleware will drop it; do not fetch for nothing
        self._robots_for(origin, request, policy)

    # -- accounting --------------------------------------------------------------
    def _inc(self, key: str, count: int = 1) -> None:
        self._counts[key] += count

    def _flush(self) -> None:
        """Add the local counts to Scrapy's stats."""
        counts, self._counts = self._counts, defaultdict(int)
        self._flushed_at = time.monotonic()
        for key, count in counts.items():
            self.stats.inc_value(STATS + key, count)

    def _evicted(self, origin: str) -> None:
        self._inc("cache/evictions")

    def _count_fetch(self, origin: str, result: FetchResult) -> None:
        self._inc("fetch/count")
        if result.redirects:
            self._inc("fetch/3xx", result.redirects)
        self._inc(f"fetch/{result.outcome}")
        self._inc(f"access/{result.access.value}")
        spider = {"spider": self.crawler.spider}
        if result.truncated_bytes:
            self._inc("fetch/truncated")
            self._inc("fetch/bytes_truncated", result.truncated_bytes)
            logger.info(
                "robots.txt of %s is larger than %d bytes: the rest (at least %d bytes) was ignored",
                origin, self.settings.max_bytes, result.truncated_bytes, extra=spider,
            )  # fmt: skip
        if result.note:
            logger.warning(
                "robots.txt of %s: %s (last %s); treating it as unavailable: all allowed",
                origin, result.note, shorten(result.url), extra=spider,
            )  # fmt: skip
        elif result.access is Access.UNREACHABLE:
            cause = f"{type(result.error).__name__}: {result.error}" if result.error else f"status {result.status}"
            logger.info("robots.txt of %s is unreachable (%s)", origin, shorten(cause), extra=spider)
        else:
            logger.debug(
                "robots.txt of %s: %s, status %s, %d bytes, %d redirect(s)",
                origin, result.access.value, result.status, len(result.body), result.redirects, extra=spider,
            )  # fmt: skip

    # -- crawl life --------------------------------------------------------------
    async def _spider_opened(self, spider: Spider) -> None:
        try:
            await self.storage.open()
        except StorageUnavailable as exc:
            logger.error(
                "RFC9309_STORAGE: cannot use the robots.txt store (%s). Start it, correct RFC9309_STORAGE, "
                "or set RFC9309_STORAGE = 'memory' to keep robots.txt in this process only. "
                "The crawl stops before its first request.",
                exc, extra={"spider": spider},
            )  # fmt: skip
            raise CloseSpider(STORAGE_UNAVAILABLE) from exc

    async def _spider_closed(self, spider: Spider, reason: str) -> None:
        self._flush()
        get = self.stats.get_value
        origins = {a.value: get(STATS + f"origins/{a.value}", 0) for a in Access if a is not Access.REDIRECT}
        allowed = sum(get(STATS + f"requests/allowed/{v.value}", 0) for v in Verdict)
        denied = sum(
            get(STATS + f"requests/denied/{v}", 0) for v in [*(v.value for v in Verdict), "invalid_user_agent"]
        )
        logger.info(
            "RFC 9309 robots.txt: origins with a file: %d, unavailable (allow all): %d, unreachable: %d; "
            "requests checked: %d, allowed: %d, denied: %d",
            origins["success"], origins["unavailable"], origins["unreachable"],
            get(STATS + "requests/checked", 0), allowed, denied, extra={"spider": spider},
        )  # fmt: skip
        await self.storage.close()


# -- helpers -------------------------------------------------------------------
def _show(request: Request) -> str:
    """A request as Scrapy prints it, with its URL length-bounded for logs."""
    return f"<{request.method} {shorten(request.url)}>"


@lru_cache(maxsize=256)
def _request_token(value: str | bytes) -> str:
    return derive_token(value)


def _likely_offsite(request: Request, spider: Any) -> bool:
    """Whether Scrapy's OffsiteMiddleware would drop ``request`` (same rule:
    the host is an allowed domain or a subdomain of one)."""
    if request.dont_filter or request.meta.get("allow_offsite"):
        return False
    domains = [d.lower() for d in getattr(spider, "allowed_domains", None) or () if d]
    if not domains:
        return False
    host = (urlparse_cached(request).hostname or "").lower()
    return not any(host == d or host.endswith("." + d) for d in domains)


async def _sleep(seconds: float) -> None:
    from twisted.internet import reactor
    from twisted.internet.task import deferLater

    await maybe_deferred_to_future(deferLater(reactor, seconds, lambda: None))
