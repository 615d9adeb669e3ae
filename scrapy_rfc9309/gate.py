"""The gate: requests wait before the downloader, not inside it.

A Scrapy scheduler that wraps the project's own (``RFC9309_SCHEDULER``; the
add-on puts the gate in place).  Requests are enqueued there as usual; each one
the engine asks for is held here while its origin's robots.txt is fetched, or
while its download slot's Crawl-delay turn (cluster-wide with a shared store)
has not come; otherwise it goes on.  A held request takes no
``CONCURRENT_REQUESTS`` or per-domain place; when it may go on it is scheduled
again with ``engine.crawl()`` and handed out first, released ones at most
their slot's concurrency at a time.  Past ``RFC9309_MAX_HELD`` held, nothing
more is taken from the project's scheduler.  At close, held requests go back
to a scheduler that keeps its queue (``JOBDIR``, scrapy-redis) or are dropped
with an ``IgnoreRequest`` to their errback.  docs/middleware.md, "The gate".
"""

from __future__ import annotations

import inspect
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

#: a released request not in the downloader this long after (a middleware dropped it, a
#: cache answered) no longer counts against its slot: it trades a burst of one more request
#: on a loaded loop (too short) against a slot held idle that long per such request (too long)
UNSEEN_SECONDS = 0.25
DROPPED_MESSAGE = "Dropped: the spider closed before robots.txt allowed it"
#: requests held in one call of next_request, at most (each new origin starts a fetch): past
#: this, the gate hands the engine back and looks at the rest on the loop's next turn
HOLD_BATCH = 32


@dataclass(slots=True)
class Held:
    """Why a request the gate released was held (the middleware reads it)."""

    #: it waited for its origin's robots.txt: its look-up was a cache miss
    for_robots: bool = False
    #: it took its Crawl-delay turn here (cluster-wide with a shared store)
    paced: bool = False


@dataclass(eq=False)
class _Slot:
    """The requests of one download slot that wait for their turn."""

    queue: deque[Request] = field(default_factory=deque)
    #: monotonic time before which no request of the slot leaves (its floor)
    due: float = 0.0
    #: released together and not yet out of the downloader
    out: int = 0
    waking: bool = False


@dataclass(slots=True)
class _Tracked:
    """A released request followed to the end of its download: counted against its
    slot (``key``), or its cluster-wide turn noted when it is done (``origin``).  The
    request is kept alive meanwhile, so that its ``id()`` is not another's."""

    request: Request
    key: str | None
    origin: str | None
    floor: float
    since: float
    seen: bool = False


class GateScheduler:
    """Scheduler wrapper that holds requests before the downloader (see the module docstring)."""

    def __init__(self, crawler: Crawler, inner: Any) -> None:
        self.crawler = crawler
        self.inner = inner
        self.settings = rfc9309_settings(crawler)
        self.service = robots_service(crawler)
        self._counts = self.service.counts
        self._held: defaultdict[str, list[Request]] = defaultdict(list)  # origin -> waiting for robots.txt
        self._slots: dict[str, _Slot] = {}
        self._count = 0  # held in _held and in the slots' queues
        self._ready: deque[Request] = deque()  # released: handed out next
        self._later: deque[Request] = deque()  # taken out, not looked at yet (HOLD_BATCH)
        self._releasing: set[int] = set()  # being scheduled again right now
        #: released requests -> why they were held (read and removed by the middleware)
        self.released: WeakKeyDictionary[Request, Held] = WeakKeyDictionary()
        self._tracked: dict[int, _Tracked] = {}
        self._sweeper: Any = None
        self._full = self._said_full = self._closed = self._waking = False
        #: the scheduler keeps what is handed back at close
        self._keeps = bool(crawler.settings.get("JOBDIR")) or uses_scrapy_redis(project_scheduler(crawler.settings))
        self._offsite: Any = None
        self._floors: Any = None
        crawl_state(crawler).gate = self

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        inner = build_from_crawler(load_object(project_scheduler(crawler.settings)), crawler)
        if not rfc9309_settings(crawler).enabled:
            return inner  # the plugin is off in this crawl: the project's scheduler alone
        return cls(crawler, inner)

    @property
    def held(self) -> int:
        """Requests held here now."""
        return self._count + len(self._ready)

    def __len__(self) -> int:
        return self.held + len(self.inner)

    # -- Scrapy's scheduler interface ------------------------------------------------------
    def open(self, spider: Any) -> Any:
        self._offsite = compat.offsite_filter(self.crawler)
        self._floors = crawl_state(self.crawler).floors
        self.service.on_ready(self._floor_changed)
        self.crawler.signals.connect(self._idle, signal=signals.spider_idle)
        return self.inner.open(spider) if hasattr(self.inner, "open") else None

    def has_pending_requests(self) -> bool:
        # held requests are not "pending": while only they wait the engine sends spider_idle,
        # so a spider that feeds itself then (scrapy-redis's RedisSpider) adds work; _idle
        # keeps the spider open
        return bool(self._ready or self._later) or self.inner.has_pending_requests()

    def enqueue_request(self, request: Request) -> bool:
        if id(request) in self._releasing:  # one of ours, scheduled again
            self._releasing.discard(id(request))
            (self._ready if request in self.released else self._later).append(request)
            return True
        if self.settings.early_fetch:
            self._prefetch(request)
        return bool(self.inner.enqueue_request(request))

    def next_request(self) -> Request | None:
        if self._ready:
            return self._ready.popleft()
        held = self._count
        while self._count < self.settings.max_held:
            request = self._later.popleft() if self._later else self.inner.next_request()
            if request is None or self._admit(request):
                self._full = False
                return request
            if self._count - held >= HOLD_BATCH:  # a turn of the loop for the rest first
                if not self._waking:
                    self._waking = True
                    compat.call_later(0, self._look_later)
                return None
        if not self._full:  # one count and (the first time) one line per time the bound is met
            self._full = True
            self._counts.inc("gate/full")
            logger.log(
                logging.INFO if self._said_full else logging.WARNING,
                "scrapy-rfc9309: %d requests are held for robots.txt or Crawl-delay (RFC9309_MAX_HELD); "
                "no more are taken from the scheduler until some go on",
                self._count,
            )
            self._said_full = True
        return None

    def close(self, reason: str) -> Any:
        self._closed = True
        self.service.shutdown()
        self._tracked.clear()
        self._listen()
        waiting = [*self._ready, *self._later, *(r for rs in self._held.values() for r in rs)]
        waiting += [r for slot in self._slots.values() for r in slot.queue]
        self._ready.clear()
        self._later.clear()
        self._held.clear()
        self._slots.clear()
        self._count = 0
        if waiting and self._keeps:
            for request in waiting:
                request.dont_filter = True  # already seen by the duplicate filter: kept anyway
                self.inner.enqueue_request(request)
            self._counts.inc("gate/handed_back", len(waiting))
            logger.info("scrapy-rfc9309: %d held requests handed back to the scheduler", len(waiting))
        elif waiting:
            self._drop(waiting)
        return self.inner.close(reason) if hasattr(self.inner, "close") else None

    # -- holding ---------------------------------------------------------------------------
    def _admit(self, request: Request) -> bool:
        """Whether ``request`` goes on now; else the gate keeps it."""
        origin = self._checked_origin(request)
        if origin is None:
            return True
        known = self.service.fresh(origin)
        if known is not None:
            return self._route(request, known, for_robots=False)
        if self._offsite is not None and self._offsite(request):
            return True  # OffsiteMiddleware drops it: no robots.txt for it
        held = self._held[origin]
        held.append(request)
        self._count += 1
        self._counts.inc("gate/held")
        if len(held) == 1:
            compat.spawn(self._resolve(origin, request))
        return False

    async def _resolve(self, origin: str, trigger: Request) -> None:
        try:
            await self.service.resolve(origin, trigger)
        except NotResolved:
            return  # closing: close() ends what is held
        except Exception:  # noqa: S110 - logged by the service; the middleware fails each request
            pass
        waiting = self._held.pop(origin, [])
        self._count -= len(waiting)
        known = self.service.fresh(origin)
        if known is not None and self._fit(waiting, known):
            for request in waiting:
                self._release(request, Held(for_robots=True))
            return
        for request in waiting:
            if known is None or self._route(request, known, for_robots=True):
                self._release(request, Held(for_robots=True))

    def _fit(self, waiting: list[Request], known: Known) -> bool:
        """Whether an origin's held requests all go at once within their slot's
        concurrency (the most common case, a few pages a site): nothing to
        follow through the downloader for them, so no receiver is connected."""
        if known.floor or self._floors or not waiting:
            return False
        key = self._key(waiting[0])
        if key in self._slots or any(self._key(request) != key for request in waiting[1:]):
            return False
        room = self._concurrency(key)
        if len(waiting) <= room:
            return True
        # (a denied request never reaches the downloader: only the allowed ones take places)
        return sum(1 for request in waiting if self._allowed(request, known)) <= room

    def _route(self, request: Request, known: Known, for_robots: bool) -> bool:
        """A request of a known origin: on now (True), or queued for its slot's turn.
        Requests an origin's fetch released together go at most the slot's
        concurrency at a time; a slot with a floor, one per floor."""
        floor = self._floor(request, known)
        if not (floor or for_robots) or not self._allowed(request, known):
            return True  # (a denied request never reaches the downloader: no turn, no place to wait for)
        key = self._key(request)
        slot = self._slots.get(key) or self._slots.setdefault(key, _Slot())
        now = time.monotonic()
        if not slot.queue:
            if floor and now >= slot.due and not slot.out and not self.service.paces:
                self._pace(request, key, slot, floor, now)
                return True
            if not floor and slot.out < self._concurrency(key):
                self._track(_Tracked(request, key, None, 0.0, now))
                slot.out += 1
                return True
        slot.queue.append(request)
        self._count += 1
        self._wake(key, slot)
        return False

    def _checked_origin(self, request: Request) -> str | None:
        """The origin whose robots.txt governs ``request``; None when it is not checked."""
        if FETCH_META_KEY in request.meta or request.meta.get("dont_obey_robotstxt"):
            return None
        origin = origin_of_request(request)
        return origin if origin is not None and self.settings.for_origin(origin).obey else None

    def _known(self, request: Request) -> Known | None:
        origin = origin_of_request(request)
        return self.service.known(origin) if origin is not None else None

    def _floor(self, request: Request, known: Known | None = None) -> float:
        """The floor of ``request``'s slot: its origin's, or a larger one of another origin there."""
        known = known or self._known(request)
        floor = known.floor if known is not None else 0.0
        if self._floors:  # (empty while no slot has a floor: no slot key to compute)
            floor = max(floor, self._floors.floor_of(self._key(request)) or 0.0)
        return floor

    def _allowed(self, request: Request, known: Known | None = None) -> bool:
        """Whether the origin's robots.txt allows ``request`` for the crawl's token
        (the middleware decides; a request it will deny is not held for a turn)."""
        known = known or self._known(request)
        return known is None or known.robots.check(request.url, known.token).allowed

    def _key(self, request: Request) -> str:
        """The download slot key Scrapy gives ``request``."""
        return str(self.crawler.engine.downloader.get_slot_key(request))

    def _concurrency(self, key: str) -> int:
        settings = self.crawler.settings
        default = settings.getint("CONCURRENT_REQUESTS_PER_IP") or settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
        return int(settings.getdict("DOWNLOAD_SLOTS").get(key, {}).get("concurrency", default)) or 1

    # -- turns -----------------------------------------------------------------------------
    def _wake(self, key: str, slot: _Slot) -> None:
        """Look at the slot's next request when it may go: at its floor's time, after
        its cluster-wide turn, or when a request of the slot leaves the downloader."""
        if slot.waking or not slot.queue or self._closed:
            return
        floor = self._floor(slot.queue[0])
        if floor and self.service.paces:
            slot.waking = True
            compat.spawn(self._take_turns(key, slot))
        elif floor and not slot.out:  # (with one out, its leaving wakes the slot: _done)
            slot.waking = True
            compat.call_later(max(0.0, slot.due - time.monotonic()), lambda: self._turn(key, slot))

    def _turn(self, key: str, slot: _Slot) -> None:
        slot.waking = False
        if self._closed or self._slots.get(key) is not slot:
            return
        now = time.monotonic()
        while slot.queue:
            floor = self._floor(slot.queue[0])
            if (now < slot.due or slot.out) if floor else (slot.out >= self._concurrency(key)):
                break
            request = slot.queue.popleft()
            self._count -= 1
            if floor:
                self._pace(request, key, slot, floor, now)
                self._release(request, Held(paced=True))
                break
            if self._allowed(request):
                self._track(_Tracked(request, key, None, 0.0, now))
                slot.out += 1
            self._release(request, Held(for_robots=True))
        if slot.queue:
            self._wake(key, slot)
        elif not slot.out and now >= slot.due:
            del self._slots[key]

    def _pace(self, request: Request, key: str, slot: _Slot, floor: float, now: float) -> None:
        """A paced request goes on: the slot's next one waits until this one has
        left the downloader and a floor more (so the server sees them at least a
        floor apart however late a busy loop sends this one), as the cluster's turns do."""
        slot.due = now + floor
        self._track(_Tracked(request, key, None, floor, now))
        slot.out += 1

    async def _take_turns(self, key: str, slot: _Slot) -> None:
        """With a shared store: each request of the slot in turn takes its
        cluster-wide turn (the store's clock), then goes on; the next turn counts
        from when it is done (noted when it leaves the downloader)."""
        try:
            while slot.queue and not self._closed:
                request = slot.queue[0]
                origin, floor = origin_of_request(request), self._floor(request)
                if origin is None or not floor:
                    break
                since = time.monotonic()
                if slot.due > since:
                    await compat.sleep(slot.due - since)
                await self.service.wait_turn(origin, floor, since)
                if self._closed or not slot.queue or slot.queue[0] is not request:
                    break
                slot.queue.popleft()
                self._count -= 1
                slot.due = time.monotonic() + floor
                self._track(_Tracked(request, None, origin, floor, time.monotonic()))
                self._release(request, Held(paced=True))
        except NotResolved:
            return
        finally:
            slot.waking = False
        if slot.queue and not self._closed:
            self._turn(key, slot)

    def _floor_changed(self, origin: str, known: Known, previous: Known | None, trigger: Any) -> None:
        """A re-fetched robots.txt lowered or dropped a floor: look at the waiting slots now."""
        if previous is not None and previous.floor > known.floor and not self.service.paces:
            for key, slot in list(self._slots.items()):
                if slot.queue:
                    slot.due = min(slot.due, time.monotonic() + known.floor)
                    self._turn(key, slot)

    def _idle(self, spider: Any = None) -> None:
        if self._count:
            raise DontCloseSpider

    def _look_later(self) -> None:
        """After a batch of holds: schedule the next request again (``engine.crawl``
        wakes the engine), to be looked at, with what follows, in the next call."""
        self._waking = False
        request = self._later.popleft() if self._later else self.inner.next_request()
        if request is not None:
            self._release(request, None)  # back in _later, through enqueue_request

    # -- releasing -------------------------------------------------------------------------
    def _release(self, request: Request, held: Held | None) -> None:
        """Schedule ``request`` again: the engine wakes and takes it from :attr:`_ready`
        (``held`` None: from :attr:`_later`, to be looked at)."""
        engine = self.crawler.engine
        if self._closed or engine is None or engine.spider is None:
            return
        if held is not None:
            self.released[request] = held
        self._releasing.add(id(request))
        try:
            engine.crawl(request)
        finally:  # not enqueued: a request_scheduled receiver dropped it, as Scrapy lets it
            self._releasing.discard(id(request))

    def _track(self, tracked: _Tracked) -> None:
        self._tracked[id(tracked.request)] = tracked
        self._listen()

    def _done(self, request_id: int, noted: bool) -> None:
        tracked = self._tracked.pop(request_id)
        if tracked.origin is not None and noted:
            # its response is in: the server saw it before now, however late a busy loop sent it
            compat.spawn(self.service.note_start(tracked.origin, tracked.floor))
        slot = self._slots.get(tracked.key) if tracked.key is not None else None
        if slot is not None:
            slot.out -= 1
            if tracked.floor and noted:  # a paced request is in: the next one a floor from now
                slot.due = max(slot.due, time.monotonic() + tracked.floor)
            self._turn(tracked.key, slot)  # type: ignore[arg-type]
        self._listen()

    def _reached(self, request: Request, spider: Any = None) -> None:
        tracked = self._tracked.get(id(request))
        if tracked is not None and tracked.request is request:
            tracked.seen = True

    def _left(self, request: Request, spider: Any = None) -> None:
        tracked = self._tracked.get(id(request))
        if tracked is not None and tracked.request is request:
            self._done(id(request), noted=True)

    def _sweep(self) -> None:
        """Requests never seen in the downloader: a cluster turn's hold in the store ends them."""
        limit = time.monotonic() - UNSEEN_SECONDS
        for request_id, tracked in list(self._tracked.items()):
            if not tracked.seen and tracked.since < limit and request_id in self._tracked:
                self._done(request_id, noted=False)

    def _listen(self) -> None:
        """Receive the downloader's per-request signals only while requests are tracked."""
        wanted = bool(self._tracked)
        if wanted is (self._sweeper is not None):
            return
        manager = self.crawler.signals
        if wanted:
            manager.connect(self._reached, signal=signals.request_reached_downloader)
            manager.connect(self._left, signal=signals.request_left_downloader)
            self._sweeper = compat.every(UNSEEN_SECONDS, self._sweep)
        else:
            manager.disconnect(self._reached, signal=signals.request_reached_downloader)
            manager.disconnect(self._left, signal=signals.request_left_downloader)
            if self._sweeper.running:
                self._sweeper.stop()
            self._sweeper = None

    def _prefetch(self, request: Request) -> None:
        """RFC9309_EARLY_FETCH: a new origin's fetch starts when its first request is scheduled."""
        origin = self._checked_origin(request)
        if origin is None or self.service.pending(origin):
            return
        if self._offsite is None or not self._offsite(request):
            self.service.prefetch(origin, request)

    def _drop(self, requests: list[Request]) -> None:
        """The spider closed: each held request ends with an IgnoreRequest to its errback."""
        for request in requests:
            for key in ("requests/checked", "cache/misses", "requests/dropped/spider_closing"):
                self._counts.inc(key)
            if request.errback is not None:
                failure = Failure(IgnoreRequest(DROPPED_MESSAGE))
                failure.request = request  # type: ignore[attr-defined]  # as Scrapy hands it to errbacks
                _call_errback(request, failure)
        logger.info(
            "scrapy-rfc9309: the spider closed; %d held requests dropped (rfc9309/requests/dropped/spider_closing)",
            len(requests),
        )


def _call_errback(request: Request, failure: Failure) -> None:
    """Call an errback as the scraper would; what it yields is dropped (the spider is closed)."""
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
