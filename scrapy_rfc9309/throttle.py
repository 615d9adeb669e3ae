"""Crawl-delay and Request-rate as a floor under each download slot's delay.

Site owners write ``Crawl-delay`` because they mean it, but Scrapy only
parses it: a delay set on a slot by hand does not hold either, because
AutoThrottle pulls it down towards the server's latency and the default
jitter can halve it. This extension turns the larger of ``Crawl-delay`` and
``Request-rate`` (seconds / requests) of the group that applies to the crawler
into a floor for the download slot serving that origin: the time between the
starts of two requests on the slot never drops below it, while AutoThrottle,
``DOWNLOAD_DELAY`` or ``DOWNLOAD_SLOTS`` may still raise the delay above it.

The floors are kept here per origin (they outlive Scrapy's collection of
idle slots) and mapped to slot keys as requests reach the downloader, so a
user's ``DOWNLOAD_SLOTS`` and ``download_slot`` meta are respected; when
several origins share a slot (the default key is the host name, so two ports
of one host do) the largest floor wins. Every touch of the downloader's
internals is in :mod:`scrapy_rfc9309.slots`.

Stats (prefix ``rfc9309/crawl_delay/``):

* ``origins`` - origins whose robots.txt gave a floor (each counted once);
* ``max_floor`` - the largest floor applied, in seconds (after the cap);
* ``capped`` - origins whose value was cut to ``RFC9309_MAX_CRAWL_DELAY``;
* ``requests_delayed`` - requests that reached the downloader on a slot where
  the floor was binding: the slot's own delay (``DOWNLOAD_DELAY``,
  ``DOWNLOAD_SLOTS``, AutoThrottle) or its jitter range would have allowed a
  shorter gap;
* ``cluster/requests_held``, ``cluster/max_wait`` - with a shared store
  (Redis), requests held for a cluster-wide time slot, and the longest hold.

With a shared store, :class:`SharedPacing` adds the cluster-wide half: each
worker reserves every request's start time in the store, so all workers
together keep the floor, not only each worker's own slot.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import DeferredLock
from twisted.internet.task import deferLater

from .origins import origin_of_request
from .settings import Rfc9309Settings
from .signals import robots_txt_ready
from .slots import SlotFloors, seconds_until_free

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from .robots import RobotsTxt
    from .storage import RobotsStorage

__all__ = ["CrawlDelayExtension", "SharedPacing"]

logger = logging.getLogger(__name__)

STATS = "rfc9309/crawl_delay/"


class CrawlDelayExtension:
    """Keeps each download slot at or above its origins' Crawl-delay.

    Enabled by :class:`scrapy_rfc9309.Addon`, or by hand with
    ``EXTENSIONS = {"scrapy_rfc9309.CrawlDelayExtension": 0}`` next to
    :class:`scrapy_rfc9309.RobotsTxtMiddleware` (which sends the
    ``robots_txt_ready`` signal it listens to).
    """

    def __init__(self, crawler: Crawler, config: Rfc9309Settings) -> None:
        if not (config.enabled and config.crawl_delay):
            raise NotConfigured("RFC9309_CRAWL_DELAY (or RFC9309_ENABLED) is off")
        self._cap = config.max_crawl_delay
        self._stats = crawler.stats
        self._slots = SlotFloors(crawler)
        #: origin -> floor in force (seconds, after the cap)
        self._floors: dict[str, float] = {}
        #: slot key -> origins with a floor seen on it, and the reverse
        self._slot_origins: dict[str, set[str]] = {}
        self._origin_slots: dict[str, set[str]] = {}
        self._counted: set[str] = set()
        self._capped: set[tuple[str, float]] = set()
        self._capped_origins: set[str] = set()
        self._split: set[str] = set()
        crawler.signals.connect(self._robots_txt_ready, signal=robots_txt_ready)
        crawler.signals.connect(self._request_reached_downloader, signal=signals.request_reached_downloader)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlDelayExtension:
        return cls(crawler, Rfc9309Settings.from_settings(crawler.settings))

    def floor_of(self, origin: str) -> float | None:
        """The floor in force for *origin* (seconds), or None."""
        return self._floors.get(origin)

    # -- signal handlers ---------------------------------------------------------

    def _robots_txt_ready(
        self, origin: str, robots: RobotsTxt, user_agent: str, request: Request | None = None
    ) -> None:
        floor = self._floor_from(origin, robots, user_agent)
        if floor:
            self._floors[origin] = floor
            if origin not in self._counted:
                self._counted.add(origin)
                self._stats.inc_value(STATS + "origins")
            self._stats.max_value(STATS + "max_floor", floor)
        else:
            self._floors.pop(origin, None)
        if floor and request is not None:
            self._link(origin, self._slots.key_of(request))
        for key in self._origin_slots.get(origin, ()):
            self._refresh(key)

    def _request_reached_downloader(self, request: Request) -> None:
        # Sent after the request got its slot and before the slot's queue is
        # processed: the last moment to put the floor on a new or rebuilt slot.
        if not self._floors:
            return
        key = self._slots.key_of(request)
        origin = origin_of_request(request)
        if origin in self._floors and self._link(origin, key):
            self._refresh(key)
        if self._slots.enforce(key):
            self._stats.inc_value(STATS + "requests_delayed")

    # -- helpers -----------------------------------------------------------------

    def _floor_from(self, origin: str, robots: RobotsTxt, user_agent: str) -> float | None:
        delay = robots.min_delay(user_agent)
        if not delay or delay <= 0:
            return None
        if delay <= self._cap:
            return delay
        if origin not in self._capped_origins:
            self._capped_origins.add(origin)
            self._stats.inc_value(STATS + "capped")
        if (origin, delay) not in self._capped:  # warn once per origin and value
            self._capped.add((origin, delay))
            logger.warning(
                "robots.txt of %s asks for %g s between requests (Crawl-delay/Request-rate); "
                "using RFC9309_MAX_CRAWL_DELAY = %g s instead",
                origin,
                delay,
                self._cap,
            )
        return self._cap or None

    def _link(self, origin: str, key: str) -> bool:
        """Note that slot *key* serves *origin*; True when that is news."""
        keys = self._origin_slots.setdefault(origin, set())
        if key in keys:
            return False
        keys.add(key)
        self._slot_origins.setdefault(key, set()).add(origin)
        if len(keys) > 1 and origin not in self._split:
            self._split.add(origin)
            logger.warning(
                "%s (Crawl-delay floor %g s) is served by several download slots (%s): each slot keeps "
                "the floor on its own, so the origin may see requests closer together than it asked",
                origin,
                self._floors.get(origin, 0.0),
                ", ".join(sorted(keys)),
            )
        return True

    def _refresh(self, key: str) -> None:
        """Give slot *key* the largest floor of the origins it serves."""
        floor = max((self._floors.get(origin, 0.0) for origin in self._slot_origins.get(key, ())), default=0.0)
        if floor != (self._slots.floor_of(key) or 0.0):
            logger.debug("Crawl-delay floor of download slot %r: %g s", key, floor)
        self._slots.set_floor(key, floor or None)


class SharedPacing:
    """Crawl-delay across the processes that share a store (Redis).

    Each worker's download slot keeps the floor between *its own* requests
    (:class:`CrawlDelayExtension`); N workers would still reach the origin N
    times as often.  So before an allowed request leaves the middleware, it
    waits for a time slot reserved atomically in the store, at least the floor
    after the previous one of any worker.

    The request is held in the middleware's ``process_request`` (an ``await``
    on a reactor timer): the downloader's slot queue is synchronous and cannot
    wait on the store, and a held request counts against
    ``CONCURRENT_REQUESTS`` just as one waiting in a slot queue does.  To keep
    the time between the reservation and the real start short, a worker
    reserves one slot per origin at a time, and only once its own download
    slot would start the request at once; so the starts of all workers are
    the floor apart, give or take the milliseconds of the hand-over.
    """

    def __init__(self, crawler: Crawler, storage: RobotsStorage, cap: float) -> None:
        self._crawler = crawler
        self._stats = crawler.stats
        self._storage = storage
        self._cap = cap
        self._locks: dict[str, DeferredLock] = {}

    def floor(self, robots: RobotsTxt, user_agent: str) -> float:
        """The floor of ``robots`` for ``user_agent`` (capped), 0 for none."""
        delay = robots.min_delay(user_agent)
        if not delay or delay <= 0:
            return 0.0
        return min(delay, self._cap)

    async def wait_turn(self, origin: str, floor: float, request: Request) -> None:
        """Hold ``request`` until its cluster-wide time slot on ``origin``."""
        lock = self._locks.get(origin)
        if lock is None:
            lock = self._locks[origin] = DeferredLock()
        await maybe_deferred_to_future(lock.acquire())
        try:
            local = seconds_until_free(self._crawler, request)
            if local > 0:
                await _sleep(local)
            wait = await self._storage.reserve(origin, floor)
            if wait > 0:
                self._stats.inc_value(STATS + "cluster/requests_held")
                self._stats.max_value(STATS + "cluster/max_wait", round(wait, 3))
                await _sleep(wait)
        finally:
            lock.release()
            if not lock.locked and not lock.waiting:
                self._locks.pop(origin, None)

    async def note_fetch(self, origin: str, floor: float) -> None:
        """A robots.txt of ``origin`` was just fetched: the first page of any
        worker comes at least ``floor`` later."""
        if floor > 0:
            await self._storage.note_start(origin, floor)


async def _sleep(seconds: float) -> None:
    from twisted.internet import reactor

    await maybe_deferred_to_future(deferLater(reactor, seconds, lambda: None))
