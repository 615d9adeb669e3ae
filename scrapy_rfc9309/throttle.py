"""Crawl-delay and Request-rate as a floor under each download slot's delay.

Scrapy only parses ``Crawl-delay``: a delay set on a slot by hand does not
hold, because AutoThrottle pulls it towards the server's latency and jitter
can halve it.  This extension turns the larger of ``Crawl-delay`` and
``Request-rate`` of the group that applies into a floor under the delay of the
download slot serving the origin (the largest when origins share a slot),
mapped as requests reach the downloader so that ``DOWNLOAD_SLOTS`` and
``download_slot`` meta are respected.  The floor itself is the service's
(:meth:`~scrapy_rfc9309.service.RobotsService.floor_for`, cached per origin);
this extension keeps only which slots serve which floored origins, forgotten
with the cache and with Scrapy's discarded slots.  A floored slot's requests
wait for their turn in the gate (:mod:`.gate`); the slots' internals are in
:mod:`.slots`.  Stats: docs/crawl_delay.md.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from .lifecycle import crawl_state, rfc9309_settings, robots_service
from .origins import origin_of_request
from .slots import SlotFloors

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from .service import Known

__all__ = ["CrawlDelayExtension"]

logger = logging.getLogger(__name__)

STATS = "rfc9309/crawl_delay/"
#: the same keys as the service's batched counts write them (they add the "rfc9309/")
COUNTS = "crawl_delay/"


class CrawlDelayExtension:
    """Keeps each download slot at or above its origins' Crawl-delay.

    Enabled by :class:`scrapy_rfc9309.Addon`, or by hand with
    ``EXTENSIONS = {"scrapy_rfc9309.CrawlDelayExtension": 0}`` next to
    :class:`scrapy_rfc9309.RobotsTxtMiddleware`.  It listens to the crawl's
    robots service, not to the middleware.
    """

    def __init__(self, crawler: Crawler) -> None:
        config = rfc9309_settings(crawler)
        if not config.enabled:
            raise NotConfigured  # said once, at INFO, by rfc9309_settings
        if not config.crawl_delay:
            raise NotConfigured("RFC9309_CRAWL_DELAY is False")
        self._service = service = robots_service(crawler)
        self._stats = crawler.stats
        #: counts are batched with the service's (one ``inc_value`` per request costs as much as a check)
        self._counts = service.counts
        self._slots = crawl_state(crawler).floors = SlotFloors(crawler, on_gone=self._slot_gone)
        #: origin with a floor -> the slot keys seen serving it (empty until its first request)
        self._origin_slots: dict[str, set[str]] = {}
        #: slot key -> the origins with a floor it serves
        self._slot_origins: dict[str, set[str]] = {}
        self._signals = crawler.signals
        #: whether _request_reached_downloader is connected: only while some origin has a
        #: floor, so a crawl without Crawl-delay pays no receiver per request
        self._listening = False
        service.on_ready(self._ready)
        service.on_forget(self._forget)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlDelayExtension:
        return cls(crawler)

    def floor_of(self, origin: str) -> float | None:
        """The floor in force for *origin* (seconds), or None."""
        known = self._service.known(origin)
        return known.floor if known is not None and known.floor else None

    # -- what the service tells -------------------------------------------------------

    def _ready(self, origin: str, known: Known, previous: Known | None, trigger: Any) -> None:
        """An origin's result took effect (before its waiting requests go on)."""
        floor = known.floor
        had = previous is not None and previous.floor > 0
        if known.capped_from is not None:
            if previous is None or previous.capped_from is None:
                self._counts.inc(COUNTS + "capped")
            if previous is None or previous.capped_from != known.capped_from:
                logger.warning(
                    "robots.txt of %s asks for %g s between requests (Crawl-delay/Request-rate); "
                    "using RFC9309_MAX_CRAWL_DELAY = %g s instead",
                    origin, known.capped_from, floor,
                )  # fmt: skip
        if floor:
            if not had:
                self._counts.inc(COUNTS + "origins")
            self._stats.max_value(STATS + "max_floor", floor)
            self._origin_slots.setdefault(origin, set())
            if trigger is not None and hasattr(trigger, "meta"):
                self._link(origin, self._slots.key_of(trigger))
        keys = self._origin_slots.get(origin, ())
        if not floor:
            self._origin_slots.pop(origin, None)
        for key in list(keys):
            if not floor:
                self._unlink(origin, key)
            self._refresh(key)
        self._listen()

    def _forget(self, origin: str) -> None:
        """The cache forgot ``origin``: so does the extension."""
        for key in self._origin_slots.pop(origin, ()):
            self._unlink(origin, key)
            self._refresh(key)
        self._listen()

    def _slot_gone(self, key: str) -> None:
        """Scrapy discarded slot ``key`` (idle): its next request links it again."""
        for origin in self._slot_origins.pop(key, ()):
            keys = self._origin_slots.get(origin)
            if keys is not None:
                keys.discard(key)

    def _request_reached_downloader(self, request: Request) -> None:
        # Sent after the request got its slot and before the slot's queue is
        # processed: the last moment to put the floor on a new or rebuilt slot.
        if not self._origin_slots:
            return
        key = self._slots.key_of(request)
        origin = origin_of_request(request)
        keys = self._origin_slots.get(origin) if origin is not None else None
        if keys is not None and key not in keys:
            self._link(origin, key)  # type: ignore[arg-type]
            self._refresh(key)
        if self._slots.enforce(key):
            self._counts.inc(COUNTS + "requests_delayed")

    # -- helpers -----------------------------------------------------------------

    def _listen(self) -> None:
        """Receive ``request_reached_downloader`` while an origin has a floor, only."""
        wanted = bool(self._origin_slots)
        if wanted is self._listening:
            return
        self._listening = wanted
        if wanted:
            self._signals.connect(self._request_reached_downloader, signal=signals.request_reached_downloader)
        else:
            self._signals.disconnect(self._request_reached_downloader, signal=signals.request_reached_downloader)

    def _link(self, origin: str, key: str) -> None:
        """Note that slot *key* serves *origin*."""
        keys = self._origin_slots.setdefault(origin, set())
        keys.add(key)
        self._slot_origins.setdefault(key, set()).add(origin)
        if len(keys) == 2:
            logger.warning(
                "%s (Crawl-delay floor %g s) is served by several download slots (%s): each slot keeps "
                "the floor on its own, so the origin may see requests closer together than it asked",
                origin, self.floor_of(origin) or 0.0, ", ".join(sorted(keys)),
            )  # fmt: skip

    def _unlink(self, origin: str, key: str) -> None:
        origins = self._slot_origins.get(key)
        if origins is not None:
            origins.discard(origin)
            if not origins:
                del self._slot_origins[key]

    def _refresh(self, key: str) -> None:
        """Give slot *key* the largest floor of the origins it serves."""
        floor = max((self.floor_of(origin) or 0.0 for origin in self._slot_origins.get(key, ())), default=0.0)
        if floor != (self._slots.floor_of(key) or 0.0):
            logger.debug("Crawl-delay floor of download slot %r: %g s", key, floor)
        self._slots.set_floor(key, floor or None)
