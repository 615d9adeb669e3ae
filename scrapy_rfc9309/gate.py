"""The gate: requests wait before the downloader, not inside it.

A Scrapy scheduler that wraps the project's own (``RFC9309_SCHEDULER``: Scrapy's,
scrapy-redis's, a custom one; the add-on puts the gate in place).  Every request
is enqueued in the project's scheduler as usual (duplicate filter, priorities,
``JOBDIR``, a shared scrapy-redis queue).  When the engine asks for the next
request, the gate looks at each one it takes out:

* its origin's robots.txt is not known: the request is **held** here, the
  origin's one fetch starts, and the gate looks at the next request;
* its download slot has a Crawl-delay floor and its turn has not come (or, with
  a store shared by several workers, its cluster-wide turn is not taken yet):
  held until then, in order, one slot at a time;
* otherwise it goes on to the downloader, where the middleware's check is a
  synchronous look-up and match.

A held request takes no ``CONCURRENT_REQUESTS`` or per-domain place.  When it
may go on, it is scheduled again with ``engine.crawl()`` (which also wakes the
engine; ``request_scheduled`` is sent a second time for it) and the gate hands
it out before anything else.  Requests an origin's fetch released together
leave at most the slot's concurrency at a time (Scrapy 2.14+ would otherwise
start all that reach a slot in one turn of the loop).

Held requests are bounded (``RFC9309_MAX_HELD``): past the bound the gate takes
nothing more from the project's scheduler until some are released; requests
stay there, on disk with ``JOBDIR``; nothing is lost, the crawl slows.  When the
spider closes, held requests go back into a scheduler that keeps them
(``JOBDIR``, scrapy-redis) or are dropped, each with an ``IgnoreRequest`` to its
errback, counted (``requests/dropped/spider_closing``) and logged.
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy import signals
from scrapy.exceptions import DontCloseSpider, IgnoreRequest
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.python.failure import Failure

from . import compat
from .fetch import FETCH_META_KEY
from .lifecycle import crawl_state, rfc9309_settings, robots_service
from .origins import origin_of_request
from .service import NotResolved
from .settings import project_scheduler
from .storage.factory import uses_scrapy_redis

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

    from .service import Known

__all__ = ["GateScheduler", "Held"]

logger = logging.getLogger(__name__)

#: a released request not seen in the downloader after this many seconds (a
#: middleware dropped it, a cache answered) no longer counts against its slot
UNSEEN_SECONDS = 1.0
DROPPED_MESSAGE = "Dropped: the spider closed before robots.txt allowed it"


@dataclass(slots=True)
class Held:
    """Why a request the gate released was held (the middleware reads it)."""

    #: it waited for its origin's robots.txt (its look-up was a cache miss)
    for_robots: bool = False
    #: it took its Crawl-delay turn here (cluster-wide too, with a shared store)
    paced: bool = False


@dataclass(eq=False)
class _Slot:
    """The requests of one download slot that wait for their turn."""

    queue: deque[Request] = field(default_factory=deque)
    #: monotonic time before which no request of the slot leaves (Crawl-delay)
    due: float = 0.0
    #: released and not yet out of the downloader (a burst is bounded by the slot's concurrency)
    out: int = 0
    waking: bool = False


class GateScheduler:
    """Scheduler wrapper that holds requests before the downloader (see the module docstring)."""

    def __init__(self, crawler: Crawler, inner: Any) -> None:
        self.crawler = crawler
        self.inner = inner
        self.settings = settings = rfc9309_settings(crawler)
        self.service = robots_service(crawler)
        self._counts = self.service.counts
        self.max_held = settings.max_held
        #: origin -> requests waiting for its robots.txt
        self._held: dict[str, list[Request]] = defaultdict(list)
        self._slots: dict[str, _Slot] = {}
        self._count = 0
        #: released, to be handed out next; the ids being scheduled again right now
        self._ready: deque[Request] = deque()
        self._releasing: set[int] = set()
        #: released requests -> why they were held; requests counted against their slot
        self.released: WeakKeyDictionary[Request, Held] = WeakKeyDictionary()
        self._out: dict[int, tuple[str, float, bool]] = {}
        #: released after their cluster-wide turn, noted in the store when they leave the downloader:
        #: (origin, floor, when released; -1 once in the downloader)
        self._noting: dict[int, tuple[str, float, float]] = {}
        self._listening = False
        self._sweeper: Any = None
        self._full_said = False
        self._closed = False
        #: the scheduler keeps what is handed back at close (JOBDIR, scrapy-redis)
        self._keeps = bool(crawler.settings.get("JOBDIR")) or uses_scrapy_redis(project_scheduler(crawler.settings))
        crawl_state(crawler).gate = self
        self._offsite: Any = None
        self._floors: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        inner = build_from_crawler(load_object(project_scheduler(crawler.settings)), crawler)
        if not rfc9309_settings(crawler).enabled:
            return inner  # the plugin is off in this crawl: the project's scheduler alone
        return cls(crawler, inner)

    # -- Scrapy's scheduler interface ------------------------------------------------------
    def open(self, spider: Any) -> Any:
        self._offsite = compat.offsite_filter(self.crawler)
        self._floors = crawl_state(self.crawler).floors
        self.service.on_ready(self._floor_changed)
        self.crawler.signals.connect(self._idle, signal=signals.spider_idle)
        return self.inner.open(spider) if hasattr(self.inner, "open") else None

    def has_pending_requests(self) -> bool:
        # held requests are not "pending": while only they wait, the engine sends
        # spider_idle, so a spider that feeds itself then (scrapy-redis's RedisSpider,
        # a sitemap loop) adds work meanwhile; _idle keeps the spider open
        return bool(self._ready) or self.inner.has_pending_requests()

    def _idle(self, spider: Any = None) -> None:
        if self._count:
            raise DontCloseSpider

    def enqueue_request(self, request: Request) -> bool:
        if id(request) in self._releasing:  # one of ours, scheduled again: next out
            self._releasing.discard(id(request))
            self._ready.append(request)
            return True
        if self.settings.early_fetch:
            self._prefetch(request)
        return bool(self.inner.enqueue_request(request))

    def next_request(self) -> Request | None:
        if self._ready:
            return self._ready.popleft()
        while self._count < self.max_held:
            request = self.inner.next_request()
            if request is None or self._admit(request):
                return request
        if not self._full_said:
            self._full_said = True
            logger.warning(
                "scrapy-rfc9309: %d requests are held for robots.txt or Crawl-delay (RFC9309_MAX_HELD); "
                "no more are taken from the scheduler until some are released",
                self._count,
            )
        self._counts.inc("gate/full")
        return None

    def close(self, reason: str) -> Any:
        self._closed = True
        self.service.shutdown()
        self._noting.clear()
        self._out.clear()
        self._listen(False)
        waiting = list(self._ready) + [r for rs in self._held.values() for r in rs]
        waiting += [r for slot in self._slots.values() for r in slot.queue]
        self._ready.clear()
        self._held.clear()
        self._slots.clear()
        self._count = 0
        if waiting and self._keeps:
            for request in waiting:
                request.dont_filter = True  # already seen by the duplicate filter: keep it anyway
                self.inner.enqueue_request(request)
            self._counts.inc("gate/handed_back", len(waiting))
            logger.info("scrapy-rfc9309: %d held requests handed back to the scheduler, kept for the next run", len(waiting))
        elif waiting:
            self._drop(waiting)
        return self.inner.close(reason) if hasattr(self.inner, "close") else None

    def __len__(self) -> int:
        """Requests held here now (the project's scheduler has its own ``len``)."""
        return self._count + len(self._ready)

    # -- holding ---------------------------------------------------------------------------
    def _admit(self, request: Request) -> bool:
        """Whether ``request`` goes on now; else the gate keeps it."""
        meta = request.meta
        if FETCH_META_KEY in meta or meta.get("dont_obey_robotstxt"):
            return True
        origin = origin_of_request(request)
        if origin is None or not self.settings.for_origin(origin).obey:
            return True
        known = self.service.fresh(origin)
        if known is None:
            if self._offsite is not None and self._offsite(request):
                return True  # OffsiteMiddleware drops it: no robots.txt for it
            self._hold(origin, request)
            return False
        return self._route(request, known, Held())

    def _hold(self, origin: str, request: Request) -> None:
        held = self._held[origin]
        held.append(request)
        self._count += 1
        self._counts.inc("gate/held")
        if len(held) == 1:
            compat.spawn(self._resolve(origin, request))

    async def _resolve(self, origin: str, trigger: Request) -> None:
        try:
            await self.service.resolve(origin, trigger)
        except NotResolved:
            return  # the spider is closing: close() ends what is held
        except Exception:  # noqa: S110 - logged by the service; the middleware fails each request
            pass
        if self._closed:
            return
        waiting = self._held.pop(origin, [])
        self._count -= len(waiting)
        known = self.service.fresh(origin)
        for request in waiting:
            if known is None or self._route(request, known, Held(for_robots=True)):
                self._release(request, Held(for_robots=True))

    def _route(self, request: Request, known: Known, held: Held) -> bool:
        """A request of a known origin: on now (True), or kept for its slot's turn.
        Requests an origin's fetch released together (``held.for_robots``) go at
        most the slot's concurrency at a time; a slot with a floor, one per floor."""
        floor = self._floor(request, known)
        if floor and not known.robots.check(request.url, known.token).allowed:
            return True  # the middleware denies it at once: no turn to wait for
        if not floor and not held.for_robots:
            return True
        key = self._key(request)
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot()
        now = time.monotonic()
        if not slot.queue:
            if floor and now >= slot.due and not self.service.paces:
                slot.due = now + floor
                return True
            if not floor and slot.out < self._concurrency(key):
                self._track(request, key, slot)
                return True
        slot.queue.append(request)
        self._count += 1
        self._wake(key, slot, floor, now)
        return False

    def _floor(self, request: Request, known: Known) -> float:
        floor = known.floor
        if self._floors is not None:
            floor = max(floor, self._floors.floor_of(self._key(request)) or 0.0)
        return floor

    def _key(self, request: Request) -> str:
        """The download slot key Scrapy gives ``request``."""
        return str(self.crawler.engine.downloader.get_slot_key(request))  # type: ignore[union-attr]

    def _concurrency(self, key: str) -> int:
        settings = self.crawler.settings
        own = settings.getdict("DOWNLOAD_SLOTS").get(key, {})
        default = settings.getint("CONCURRENT_REQUESTS_PER_IP") or settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
        return int(own.get("concurrency", default)) or 1

    # -- turns -----------------------------------------------------------------------------
    def _wake(self, key: str, slot: _Slot, floor: float, now: float) -> None:
        """Make sure the slot's next request is looked at when it may go."""
        if slot.waking or not slot.queue:
            return
        if self.service.paces and floor:
            slot.waking = True
            compat.spawn(self._take_turns(key, slot))
        elif floor:
            slot.waking = True
            compat.call_later(max(0.0, slot.due - now), lambda: self._turn(key, slot))
        # else: a request of the slot leaving the downloader (or unseen) makes room

    def _turn(self, key: str, slot: _Slot) -> None:
        slot.waking = False
        if self._closed or self._slots.get(key) is not slot:
            return
        now = time.monotonic()
        while slot.queue:
            request = slot.queue[0]
            floor = self._floor_of_queued(request)
            if floor and now < slot.due:
                break
            if not floor and slot.out >= self._concurrency(key):
                break
            slot.queue.popleft()
            self._count -= 1
            if floor:
                slot.due = now + floor
                self._release(request, Held(paced=True))
                break
            self._track(request, key, slot)
            self._release(request, Held(for_robots=True))
        if slot.queue:
            self._wake(key, slot, self._floor_of_queued(slot.queue[0]), now)
        elif not slot.out and now >= slot.due:
            del self._slots[key]

    def _floor_of_queued(self, request: Request) -> float:
        origin = origin_of_request(request)
        known = self.service.known(origin) if origin is not None else None
        return self._floor(request, known) if known is not None else 0.0

    async def _take_turns(self, key: str, slot: _Slot) -> None:
        """With a shared store: each request of the slot in turn takes its
        cluster-wide turn (the store's clock), then goes on."""
        try:
            while slot.queue and not self._closed:
                request = slot.queue[0]
                origin = origin_of_request(request)
                floor = self._floor_of_queued(request)
                if origin is None or not floor:
                    break
                since = time.monotonic()
                local = slot.due - since
                if local > 0:
                    await compat.sleep(local)
                await self.service.wait_turn(origin, floor, since)
                if self._closed or not slot.queue or slot.queue[0] is not request:
                    break
                slot.queue.popleft()
                self._count -= 1
                slot.due = time.monotonic() + floor
                # the next worker's turn counts from when this request really leaves
                self._noting[id(request)] = (origin, floor, time.monotonic())
                self._listen(True)
                self._release(request, Held(paced=True))
        except NotResolved:
            return
        finally:
            slot.waking = False
        if slot.queue and not self._closed:
            self._turn(key, slot)

    def _floor_changed(self, origin: str, known: Known, previous: Known | None, trigger: Any) -> None:
        """A re-fetched robots.txt may lower or drop a floor: look at the waiting slots now."""
        if previous is not None and previous.floor > known.floor:
            for key, slot in list(self._slots.items()):
                if slot.queue and not self.service.paces:
                    slot.due = min(slot.due, time.monotonic() + known.floor)
                    self._turn(key, slot)

    # -- releasing ---------------------------------------------------------------------------
    def _release(self, request: Request, held: Held) -> None:
        """Schedule ``request`` again: the engine wakes and takes it from :attr:`_ready`."""
        engine = self.crawler.engine
        if self._closed or engine is None or engine.spider is None:
            return
        self.released[request] = held
        self._releasing.add(id(request))
        try:
            engine.crawl(request)
        finally:
            # not enqueued: a request_scheduled receiver dropped it, as Scrapy lets it
            self._releasing.discard(id(request))

    def _track(self, request: Request, key: str, slot: _Slot) -> None:
        """Count a released request against its slot until it leaves the downloader."""
        slot.out += 1
        self._out[id(request)] = (key, time.monotonic(), False)
        self._listen(True)

    def _untrack(self, request_id: int) -> None:
        key, _, _ = self._out.pop(request_id)
        slot = self._slots.get(key)
        if slot is not None:
            slot.out -= 1
            self._turn(key, slot)
        if not self._out and not self._noting:
            self._listen(False)

    def _reached(self, request: Request, spider: Any = None) -> None:
        entry = self._out.get(id(request))
        if entry is not None:
            self._out[id(request)] = (entry[0], entry[1], True)
        turn = self._noting.get(id(request))
        if turn is not None:  # in the downloader: noted when it leaves it, whenever that is
            self._noting[id(request)] = (turn[0], turn[1], -1.0)

    def _left(self, request: Request, spider: Any = None) -> None:
        if id(request) in self._out:
            self._untrack(id(request))
        turn = self._noting.pop(id(request), None)
        if turn is not None:
            # its response is in: the server saw it before now, however late a busy loop sent it
            compat.spawn(self.service.note_start(turn[0], turn[1]))
            if not self._out and not self._noting:
                self._listen(False)

    def _sweep(self) -> None:
        limit = time.monotonic() - UNSEEN_SECONDS
        for request_id, (_, since, seen) in list(self._out.items()):
            if not seen and since < limit and request_id in self._out:
                self._untrack(request_id)
        for request_id, (_, _, since) in list(self._noting.items()):
            if 0 < since < limit:  # never reached the downloader: the store's hold on the turn ends it
                del self._noting[request_id]
        if not self._out and not self._noting:
            self._listen(False)

    def _listen(self, wanted: bool) -> None:
        """Receive the downloader's per-request signals only while requests are tracked."""
        if wanted is self._listening:
            return
        self._listening = wanted
        manager = self.crawler.signals
        if wanted:
            manager.connect(self._reached, signal=signals.request_reached_downloader)
            manager.connect(self._left, signal=signals.request_left_downloader)
            self._sweeper = compat.every(UNSEEN_SECONDS, self._sweep)
        else:
            manager.disconnect(self._reached, signal=signals.request_reached_downloader)
            manager.disconnect(self._left, signal=signals.request_left_downloader)
            if self._sweeper is not None and self._sweeper.running:
                self._sweeper.stop()

    def _prefetch(self, request: Request) -> None:
        """RFC9309_EARLY_FETCH: a new origin's fetch starts when its first request is scheduled."""
        if FETCH_META_KEY in request.meta or request.meta.get("dont_obey_robotstxt"):
            return
        origin = origin_of_request(request)
        if origin is None or self.service.pending(origin) or not self.settings.for_origin(origin).obey:
            return
        if self._offsite is not None and self._offsite(request):
            return
        self.service.prefetch(origin, request)

    def _drop(self, requests: list[Request]) -> None:
        """The spider closed: each held request ends with an IgnoreRequest to its errback."""
        counts = self._counts
        for request in requests:
            counts.inc("requests/checked")
            counts.inc("cache/misses")
            counts.inc("requests/dropped/spider_closing")
            if request.errback is not None:
                failure = Failure(IgnoreRequest(DROPPED_MESSAGE))
                failure.request = request  # type: ignore[attr-defined]  # as Scrapy gives it to errbacks
                _call_errback(request, failure)
        logger.info(
            "scrapy-rfc9309: the spider closed; %d held requests dropped (rfc9309/requests/dropped/spider_closing)",
            len(requests),
        )


def _call_errback(request: Request, failure: Failure) -> None:
    """Call an errback as the scraper would; what it yields is dropped (the spider is closing)."""
    import inspect

    try:
        result = request.errback(failure)  # type: ignore[misc]
        if inspect.isasyncgen(result):
            compat.spawn(_drain(result))
        elif inspect.iscoroutine(result):
            compat.spawn(result)
        elif inspect.isgenerator(result):
            for _ in result:
                pass
    except Exception:
        logger.exception("scrapy-rfc9309: the errback of %s failed", request)


async def _drain(results: Any) -> None:
    async for _ in results:
        pass
