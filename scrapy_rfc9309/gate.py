"""The gate: requests wait before the downloader, not inside it.

A Scrapy scheduler that wraps the project's own (``RFC9309_SCHEDULER``; the
add-on puts the gate in place).  Requests are enqueued there as usual; each one
the engine asks for is held here while its origin is resolved (robots.txt, and
the other files the crawl needs of it: :class:`~.service.RobotsService`), or
while its download slot's Crawl-delay turn (cluster-wide with a shared store)
has not come; otherwise it goes on.  The turns are the crawl's one Crawl-delay
mechanism: every request of a floored slot takes one, pages and the plugin's
own fetches of the origin's files alike, the next a floor after the previous
one left the downloader.  A held request is pending to the engine and takes no
``CONCURRENT_REQUESTS`` place; when it may go on it is scheduled again with
``engine.crawl()`` (marked ``meta["rfc9309_released"]``) and handed out in the
project scheduler's priority order.  At close, held requests go back to a
scheduler that keeps its queue (``JOBDIR``, scrapy-redis with
``SCHEDULER_PERSIST``) or are dropped with an ``IgnoreRequest`` to their
errback.  docs/middleware.md, "The gate".
"""

from __future__ import annotations

import heapq
import inspect
import itertools
import logging
import time
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from weakref import WeakKeyDictionary

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from . import compat
from .fetch import FETCH_META_KEY
from .lifecycle import crawl_state, rfc9309_settings, robots_service
from .masking import mask_text
from .origins import origin_of_request, robots_url
from .robots.text import shorten
from .robots.usage import usage_for
from .service import NotResolved
from .settings import project_scheduler
from .storage.factory import uses_scrapy_redis

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from .service import Known

__all__ = ["RELEASED", "GateScheduler", "Held"]

logger = logging.getLogger(__name__)

#: the meta key of a request the gate held and scheduled again (``request_scheduled`` is sent twice)
RELEASED = "rfc9309_released"
#: a request's own declared purposes (the middleware's META_USAGE)
META_USAGE = "rfc9309_usage"
#: a released request not in the downloader this long after (a middleware dropped it, a
#: cache answered) no longer counts against its slot: it trades a burst of one more request
#: on a loaded loop (too short) against a slot held idle that long per such request (too long)
UNSEEN_SECONDS = 0.25
#: requests held in one call of next_request, and requests released in one turn of the loop,
#: at most: past this the gate gives the loop a turn before going on
HOLD_BATCH = 32
RELEASE_BATCH = 256
CLOSING = {
    "origin": "Dropped: the spider closed before robots.txt of its origin was known",
    "turn": "Dropped: the spider closed before its Crawl-delay turn",
    "queued": "Dropped: the spider closed before the downloader took it",
}


@dataclass(slots=True)
class Held:
    """Why a request the gate released was held (the middleware reads it)."""

    #: it waited for its origin's resolution: its look-up was a cache miss
    for_robots: bool = False
    #: it took its Crawl-delay turn here (cluster-wide with a shared store)
    paced: bool = False
    #: the gate's or the service's own work failed for it: the middleware drops it with this
    error: str = ""


class _Ticket:
    """A Crawl-delay turn asked for a fetch of the plugin's own (an origin's file)."""

    __slots__ = ("waiter", "origin", "floor")

    def __init__(self, origin: str, floor: float) -> None:
        self.waiter: Deferred = Deferred()
        self.origin = origin
        self.floor = floor


@dataclass(eq=False)
class _Slot:
    """The requests (and tickets) of one download slot that wait for their turn."""

    queue: deque[Any] = field(default_factory=deque)
    #: monotonic time before which no request of the slot leaves (its floor)
    due: float = 0.0
    #: released and not yet out of the downloader
    out: int = 0
    waking: bool = False


@dataclass(slots=True)
class _Tracked:
    """A released request followed to the end of its download: counted against its
    slot (``key``), or its cluster-wide turn noted when it is done (``origin``).  The
    request is kept alive meanwhile, so that its ``id()`` is not another's."""

    request: Any
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
        self._held: defaultdict[str, list[Request]] = defaultdict(list)  # origin -> waiting for its resolution
        self._slots: dict[str, _Slot] = {}
        self._count = 0  # held: in _held, _releases and the slots' queues
        #: resolved, to be routed a batch per turn of the loop (with: whether each counts against its slot)
        self._releases: deque[tuple[Request, bool]] = deque()
        self._ready: list[tuple[int, int, Request]] = []  # released: a heap in the scheduler's order
        self._order = itertools.count()
        #: the project scheduler's next request, taken out and not looked at yet (to compare its
        #: priority with the released ones', or scheduled again to wake the engine after HOLD_BATCH)
        self._peek: Request | None = None
        self._releasing: set[int] = set()  # being scheduled again right now
        #: released requests -> why they were held (read and removed by the middleware)
        self.released: WeakKeyDictionary[Request, Held] = WeakKeyDictionary()
        self._tracked: dict[int, _Tracked] = {}
        #: slot key -> the floored origins seen on it (a slot keeps the largest floor), and back;
        #: an origin the service's cache forgets is forgotten here too
        self._floored: dict[str, set[str]] = {}
        self._keys_of: dict[str, set[str]] = {}
        self._sweeper: Any = None
        self._full = self._closed = self._waking = self._releasing_batch = self._ties = False
        #: the spider feeds itself when idle and keeps itself open (scrapy-redis's RedisSpider)
        self._feeds_on_idle = False
        self._reads_pages = self.settings.reads_pages
        #: the scheduler keeps what is handed back across the close
        settings = crawler.settings
        redis = uses_scrapy_redis(project_scheduler(settings))
        self._keeps = bool(settings.get("JOBDIR")) or (redis and settings.getbool("SCHEDULER_PERSIST"))
        self._offsite: Any = None
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
        return self._count + len(self._ready) + (self._peek is not None)

    def __len__(self) -> int:
        inner = len(self.inner) if hasattr(type(self.inner), "__len__") else 0
        return self.held + inner

    # -- Scrapy's scheduler interface ------------------------------------------------------
    def open(self, spider: Any) -> Any:
        self._offsite = compat.offsite_filter(self.crawler)
        self._feeds_on_idle = _feeds_on_idle(spider)
        self.service.pacer = self
        self.service.on_ready(self._floor_changed)
        self.service.on_forget(self._forget)
        return self.inner.open(spider) if hasattr(self.inner, "open") else None

    def has_pending_requests(self) -> bool:
        held = self.held
        if held and self._feeds_on_idle:  # (only requests waiting for their turn: the spider may feed itself)
            held -= sum(1 for slot in self._slots.values() for item in slot.queue if not isinstance(item, _Ticket))
        return bool(held) or self.inner.has_pending_requests()

    def enqueue_request(self, request: Request) -> bool:
        if id(request) in self._releasing:  # one of ours, scheduled again
            self._releasing.discard(id(request))
            if request in self.released:
                heapq.heappush(self._ready, (-request.priority, next(self._order), request))
            else:
                self._peek = request  # (_look_later took it out of _peek)
            return True
        if self.settings.early_fetch:
            self._prefetch(request)
        return bool(self.inner.enqueue_request(request))

    def next_request(self) -> Request | None:
        held = self._count
        while True:
            if self._ready:
                upcoming = self._upcoming()
                first = self._ready[0][0]
                if upcoming is not None and first == -upcoming.priority:
                    self._ties = not self._ties  # equal priorities: released and queued in turn
                if (
                    upcoming is None
                    or first < -upcoming.priority
                    or self._count >= self.settings.max_held
                    or (first == -upcoming.priority and self._ties)
                ):
                    return heapq.heappop(self._ready)[2]
            if self._count >= self.settings.max_held:
                self._say_full()
                return None
            request = self._take()
            if request is None:
                return None
            try:
                admitted = self._admit(request)
            except Exception as exc:  # a bug of the gate's: the request ends, the crawl goes on
                self._fail([request], f"the gate could not look at it ({type(exc).__name__}: {exc})", exc)
                continue
            if admitted:
                self._full = False
                return request
            if self._count - held >= HOLD_BATCH:  # a turn of the loop for the rest first
                if not self._waking:
                    self._waking = True
                    compat.call_later(0, self._look_later)
                return None

    def close(self, reason: str) -> Any:
        self._closed = True
        self.service.shutdown()
        self._tracked.clear()
        self._listen()
        kinds: dict[str, list[Request]] = {"origin": [], "turn": [], "queued": []}
        kinds["queued"] += [entry[2] for entry in self._ready]
        if self._peek is not None:
            kinds["queued"].append(self._peek)
        kinds["origin"] += [r for rs in self._held.values() for r in rs] + [r for r, _ in self._releases]
        for slot in self._slots.values():
            for item in slot.queue:
                if isinstance(item, _Ticket):
                    item.waiter.errback(NotResolved(item.origin))
                else:
                    kinds["turn"].append(item)
        self._ready.clear()
        self._peek = None
        self._held.clear()
        self._releases.clear()
        self._slots.clear()
        self._count = 0
        if self._keeps:
            self._hand_back(kinds)
        for kind, requests in kinds.items():
            if requests:
                self._drop(requests, kind)
        return self.inner.close(reason) if hasattr(self.inner, "close") else None

    # -- holding ---------------------------------------------------------------------------
    def _upcoming(self) -> Request | None:
        """The project scheduler's next request, taken out (and kept) to compare its priority."""
        if self._peek is None:
            self._peek = self.inner.next_request()
        return self._peek

    def _take(self) -> Request | None:
        request, self._peek = self._peek, None
        if request is None:
            request = self.inner.next_request()
        return request

    def _admit(self, request: Request) -> bool:
        """Whether ``request`` goes on now; else the gate keeps it."""
        origin, files = self._checked(request)
        if origin is None:
            return self._unchecked(request)
        known = self.service.fresh(origin, files)
        if known is not None:
            return self._route(request, origin, known, for_robots=False)
        if self._offsite is not None and self._offsite(request):
            return True  # OffsiteMiddleware drops it: no robots.txt for it
        held = self._held[origin]
        held.append(request)
        self._count += 1
        self._counts.inc("gate/held")
        if len(held) == 1:
            compat.spawn(self._resolve(origin, request, files))
        return False

    def _checked(self, request: Request) -> tuple[str | None, bool]:
        """``(origin, files)``: the origin to resolve before ``request`` goes on (None:
        robots.txt does not govern it: ``dont_obey_robotstxt``, ``{"obey": False}``;
        nothing of the origin is fetched for it then), and whether the origin's other
        files are needed too (its usage statements are read)."""
        meta = request.meta
        if FETCH_META_KEY in meta or meta.get("dont_obey_robotstxt"):
            return None, False
        origin = origin_of_request(request)
        if origin is None or not self.settings.for_origin(origin).obey:
            return None, False
        return origin, (self._reads_pages and self.service.reads(origin)) or META_USAGE in meta

    def _unchecked(self, request: Request) -> bool:
        """A request robots.txt does not govern: on now, or its floored slot's turn."""
        if not self._floored:
            return True
        key = self._key(request)
        floor = self._slot_floor(key)
        return not floor or self._queue(request, key, floor)

    async def _resolve(self, origin: str, trigger: Request, files: bool) -> None:
        error = ""
        try:
            await self.service.resolve(origin, trigger, files)
        except NotResolved:
            return  # closing: close() ends what is held
        except Exception as exc:  # logged by the service: each request ends with it
            error = f"its origin could not be resolved ({type(exc).__name__}: {shorten(mask_text(str(exc)))})"
        waiting = self._held.pop(origin, [])
        self._count -= len(waiting)
        if error:
            self._fail(waiting, error)
            return
        self._count += len(waiting)
        tracked = not self._fits(waiting)
        self._releases.extend((request, tracked) for request in waiting)
        self._release_batch()

    def _fits(self, waiting: list[Request]) -> bool:
        """Whether an origin's released requests all fit in their slot's concurrency at
        once (the common case of a broad crawl, a few pages a site): then they need
        not be followed through the downloader, and no receiver is connected for them."""
        if not waiting or self._floored:
            return False
        key = self._key(waiting[0])
        if key in self._slots or len(waiting) > self._concurrency(key):
            return False
        return all(self._key(request) == key for request in waiting[1:])

    def _release_batch(self) -> None:
        """Route the resolved requests, :data:`RELEASE_BATCH` a turn of the loop."""
        self._releasing_batch = False
        if self._closed:
            return
        for _ in range(min(RELEASE_BATCH, len(self._releases))):
            request, tracked = self._releases.popleft()
            self._count -= 1
            try:
                origin, files = self._checked(request)
                known = self.service.fresh(origin, files) if origin is not None else None
                if known is None:  # expired meanwhile, or no longer checked: looked at again
                    if self._admit(request):
                        self._release(request, Held(for_robots=True))
                elif self._route(request, origin, known, for_robots=tracked):  # type: ignore[arg-type]
                    self._release(request, Held(for_robots=True))
            except Exception as exc:
                self._fail([request], f"the gate could not release it ({type(exc).__name__}: {exc})", exc)
        if self._releases and not self._releasing_batch:
            self._releasing_batch = True
            compat.call_later(0, self._release_batch)

    def _route(self, request: Request, origin: str, known: Known, for_robots: bool) -> bool:
        """A request of a known origin: on now (True), or queued for its slot's turn.
        Requests an origin's resolution released go at most the slot's
        concurrency at a time; a slot with a floor, one per floor."""
        floor = known.floor
        key = None
        if floor or self._floored:
            key = self._key(request)
            if floor:
                self._link(key, origin)
            floor = max(floor, self._slot_floor(key))
        if not (floor or for_robots):
            return True  # the hot path: a known origin, no floor on its slot
        if not self._allowed(request, known):
            return True  # denied: it never reaches the downloader, so it takes no turn and no place
        if key is None:
            key = self._key(request)
        if floor:
            return self._queue(request, key, floor)
        slot = self._slots.get(key) or self._slots.setdefault(key, _Slot())
        if not slot.queue and slot.out < self._concurrency(key):
            self._track(_Tracked(request, key, None, 0.0, time.monotonic()))
            slot.out += 1
            return True
        slot.queue.append(request)
        self._count += 1
        self._wake(key, slot)
        return False

    def _queue(self, request: Request, key: str, floor: float) -> bool:
        """A request of a floored slot: on now if its turn has come, else queued."""
        slot = self._slots.get(key) or self._slots.setdefault(key, _Slot())
        now = time.monotonic()
        if not slot.queue and now >= slot.due and not slot.out and not self.service.paces:
            self._pace(request, key, slot, floor, now)
            self.released[request] = Held(paced=True)
            return True
        slot.queue.append(request)
        self._count += 1
        self._counts.inc("crawl_delay/requests_delayed")
        self._wake(key, slot)
        return False

    def _link(self, key: str, origin: str) -> None:
        """Note that floored ``origin`` is served by slot ``key`` (its every request keeps the floor)."""
        self._floored.setdefault(key, set()).add(origin)
        self._keys_of.setdefault(origin, set()).add(key)

    def _forget(self, origin: str) -> None:
        for key in self._keys_of.pop(origin, ()):
            origins = self._floored.get(key)
            if origins is not None:
                origins.discard(origin)
                if not origins:
                    del self._floored[key]

    def _slot_floor(self, key: str) -> float:
        """The largest floor of the origins seen on slot ``key`` (0 for none)."""
        origins = self._floored.get(key)
        if not origins:
            return 0.0
        known = self.service.known
        return max(((k.floor if (k := known(o)) is not None else 0.0) for o in origins), default=0.0)

    def _allowed(self, request: Request, known: Known) -> bool:
        """Whether the middleware will let ``request`` go on: robots.txt allows it
        for the origin's tokens, and its usage preferences deny no declared purpose."""
        url = request.url
        robots, tokens = known.robots, known.tokens
        if not all(robots.check(url, token).allowed for token in tokens):
            return False
        usage = usage_for(robots, url, tokens, allowed=True)
        if not usage:
            return True
        from .middleware import declared_purposes

        purposes = declared_purposes(request, self.settings)
        return not purposes or usage.denies(purposes) is None

    def _key(self, request: Request) -> str:
        """The download slot key Scrapy gives ``request``."""
        return str(self.crawler.engine.downloader.get_slot_key(request))

    def _concurrency(self, key: str) -> int:
        settings = self.crawler.settings
        default = settings.getint("CONCURRENT_REQUESTS_PER_IP") or settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
        return int(settings.getdict("DOWNLOAD_SLOTS").get(key, {}).get("concurrency", default)) or 1

    def _say_full(self) -> None:
        """One count and one line each time the bound is met."""
        if not self._full:
            self._full = True
            self._counts.inc("gate/full")
            logger.info(
                "scrapy-rfc9309: %d requests are held for their origin or their Crawl-delay turn "
                "(RFC9309_MAX_HELD); no more are taken from the scheduler until some go on",
                self._count,
            )

    # -- turns -----------------------------------------------------------------------------
    async def file_turn(self, origin: str, trigger: Any, floor: float) -> Callable[[], None]:
        """The slot's turn for a fetch of one of ``origin``'s files (the
        service's :class:`~.service.Pacer`); call what it returns once the
        fetch is in, and the slot's next request goes a floor later."""
        if self._closed:
            raise NotResolved(origin)
        key = self._file_key(origin, trigger)
        self._link(key, origin)
        slot = self._slots.get(key) or self._slots.setdefault(key, _Slot())
        ticket = _Ticket(origin, floor)
        now = time.monotonic()
        if not slot.queue and now >= slot.due and not slot.out and not self.service.paces:
            slot.due, slot.out = now + floor, slot.out + 1
        else:
            slot.queue.append(ticket)
            self._wake(key, slot)
            await compat.wait_for(ticket.waiter)

        def done() -> None:
            if self._slots.get(key) is not slot:
                return  # (closed meanwhile)
            slot.out -= 1
            slot.due = max(slot.due, time.monotonic() + floor)
            if self.service.paces:  # the next turn counts from now; the slot's own loop takes it
                compat.spawn(self.service.note_start(origin, floor))
            else:
                self._turn(key, slot)

        return done

    def fetched(self, origin: str, trigger: Any, floor: float) -> None:
        """A fetch of ``origin``'s robots.txt just came in: its slot's next request goes a floor later."""
        key = self._file_key(origin, trigger)
        self._link(key, origin)
        slot = self._slots.get(key) or self._slots.setdefault(key, _Slot())
        slot.due = max(slot.due, time.monotonic() + floor)
        if not self.service.paces:
            compat.call_later(floor, lambda: self._turn(key, slot))  # (forgets the slot if nothing came)

    def _file_key(self, origin: str, trigger: Any) -> str:
        return self._key(trigger if isinstance(trigger, Request) else Request(robots_url(origin)))

    def _wake(self, key: str, slot: _Slot) -> None:
        """Look at the slot's next request when it may go: at its floor's time, after
        its cluster-wide turn, or when a request of the slot leaves the downloader."""
        if slot.waking or not slot.queue or self._closed:
            return
        floor = self._floor_of(key, slot.queue[0])
        if floor and self.service.paces:
            slot.waking = True
            compat.spawn(self._take_turns(key, slot))
        elif floor and not slot.out:  # (with one out, its leaving wakes the slot: _done)
            slot.waking = True
            compat.call_later(max(0.0, slot.due - time.monotonic()), lambda: self._turn(key, slot))

    def _floor_of(self, key: str, item: Any) -> float:
        """The floor a queued request (or ticket) of slot ``key`` keeps."""
        if isinstance(item, _Ticket):
            return max(item.floor, self._slot_floor(key))
        origin = origin_of_request(item)
        known = self.service.known(origin) if origin is not None else None
        return max(known.floor if known is not None else 0.0, self._slot_floor(key))

    def _turn(self, key: str, slot: _Slot) -> None:
        slot.waking = False
        if self._closed or self._slots.get(key) is not slot:
            return
        try:
            self._turn_now(key, slot)
        except Exception as exc:  # a bug of the gate's: the slot's requests end, the crawl goes on
            self._fail_slot(key, slot, f"its Crawl-delay turn failed ({type(exc).__name__}: {exc})", exc)

    def _turn_now(self, key: str, slot: _Slot) -> None:
        now = time.monotonic()
        while slot.queue:
            item = slot.queue[0]
            floor = self._floor_of(key, item)
            if (now < slot.due or slot.out) if floor else (slot.out >= self._concurrency(key)):
                break
            slot.queue.popleft()
            if isinstance(item, _Ticket):
                slot.due, slot.out = now + floor, slot.out + 1
                item.waiter.callback(None)
                break
            self._count -= 1
            if floor:
                self._pace(item, key, slot, floor, now)
                self._release(item, Held(paced=True))
                break
            known = self.service.known(origin_of_request(item) or "")
            if known is None or self._allowed(item, known):  # (a denied one takes no place)
                self._track(_Tracked(item, key, None, 0.0, now))
                slot.out += 1
            self._release(item, Held(for_robots=True))
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
                item = slot.queue[0]
                floor = self._floor_of(key, item)
                origin = item.origin if isinstance(item, _Ticket) else origin_of_request(item)
                if origin is None or not floor:
                    break
                since = time.monotonic()
                if slot.due > since:
                    await compat.sleep(slot.due - since)
                await self.service.wait_turn(origin, floor, since)
                if self._closed or not slot.queue or slot.queue[0] is not item:
                    break
                slot.queue.popleft()
                slot.due = time.monotonic() + floor
                if isinstance(item, _Ticket):
                    slot.out += 1
                    item.waiter.callback(None)
                    continue
                self._count -= 1
                self._track(_Tracked(item, None, origin, floor, time.monotonic()))
                self._release(item, Held(paced=True))
        except NotResolved:
            return
        except Exception as exc:  # the store failed otherwise: the slot's requests end, the crawl goes on
            self._fail_slot(key, slot, f"its cluster-wide Crawl-delay turn failed ({type(exc).__name__}: {exc})", exc)
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

    def _look_later(self) -> None:
        """After a batch of holds: schedule the next request again (``engine.crawl``
        wakes the engine), to be looked at, with what follows, in the next call."""
        self._waking = False
        if self._closed:
            return
        request = self._take()
        if request is not None and not self._release(request, None):  # back in _peek, through enqueue_request
            self._peek = request

    # -- releasing -------------------------------------------------------------------------
    def _release(self, request: Request, held: Held | None) -> bool:
        """Schedule ``request`` again: the engine wakes and takes it from :attr:`_ready`
        (``held`` None: it is the next to be looked at, :attr:`_peek`).  False once closing."""
        engine = self.crawler.engine
        if self._closed or engine is None or self.crawler.spider is None:
            return False
        if held is not None:
            self.released[request] = held
        request.meta[RELEASED] = True
        self._releasing.add(id(request))
        try:
            engine.crawl(request)
        finally:  # not enqueued: a request_scheduled receiver dropped it, as Scrapy lets it
            self._releasing.discard(id(request))
        return True

    def _fail(self, requests: list[Request], error: str, exc: BaseException | None = None) -> None:
        """The gate's or the service's own work failed for ``requests``: each goes
        to the middleware, which drops it with ``error`` (errback, count, log line)."""
        if not requests:
            return
        logger.error(
            "scrapy-rfc9309: %d request(s) end because %s (rfc9309/requests/dropped/error)",
            len(requests), error, exc_info=exc is not None and (type(exc), exc, exc.__traceback__),
        )  # fmt: skip
        closing = [request for request in requests if not self._release(request, Held(error=error))]
        if closing:
            self._drop(closing, "queued")

    def _fail_slot(self, key: str, slot: _Slot, error: str, exc: BaseException) -> None:
        items = list(slot.queue)
        slot.queue.clear()
        for item in items:
            if isinstance(item, _Ticket):
                item.waiter.errback(exc)
        requests = [item for item in items if not isinstance(item, _Ticket)]
        self._count -= len(requests)
        if self._slots.get(key) is slot and not slot.out:
            del self._slots[key]
        self._fail(requests, error, exc)

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
        origin, files = self._checked(request)
        if origin is None or self.service.pending(origin):
            return
        if self._offsite is None or not self._offsite(request):
            self.service.prefetch(origin, request, files)

    # -- the close -------------------------------------------------------------------------
    def _hand_back(self, kinds: dict[str, list[Request]]) -> None:
        """Give the held requests back to a scheduler that keeps its queue across the
        close; what it refuses or cannot serialize (Scrapy counts it in
        ``scheduler/unserializable``) stays in ``kinds``, to be dropped."""
        stats = self.crawler.stats
        handed = 0
        for requests in kinds.values():
            kept: list[Request] = []
            for request in requests:
                unserializable = stats.get_value("scheduler/unserializable", 0)
                request.dont_filter = True  # already seen by the duplicate filter: kept anyway
                request.meta.pop(RELEASED, None)
                if (
                    self.inner.enqueue_request(request)
                    and stats.get_value("scheduler/unserializable", 0) == unserializable
                ):
                    handed += 1
                else:
                    kept.append(request)
            requests[:] = kept
        if handed:
            self._counts.inc("gate/handed_back", handed)
            logger.info("scrapy-rfc9309: the spider closed; %d held requests handed back to the scheduler", handed)

    def _drop(self, requests: list[Request], kind: str) -> None:
        """The spider closed: each held request ends with an IgnoreRequest to its errback."""
        message = CLOSING[kind]
        for request in requests:
            for key in ("requests/checked", "cache/misses", "requests/dropped/spider_closing"):
                self._counts.inc(key)
            if request.errback is not None:
                failure = Failure(IgnoreRequest(message))
                failure.request = request  # type: ignore[attr-defined]  # as Scrapy hands it to errbacks
                _call_errback(request, failure)
        logger.info(
            "scrapy-rfc9309: the spider closed; %d held requests dropped: %s (rfc9309/requests/dropped/spider_closing)",
            len(requests), message[len("Dropped: the spider closed ") :],
        )  # fmt: skip


def _feeds_on_idle(spider: Any) -> bool:
    """Whether ``spider`` takes more work from its source when the engine is idle and
    keeps itself open meanwhile (scrapy-redis's ``RedisSpider``): requests waiting
    only for their Crawl-delay turn are then not reported pending, so that the
    worker takes other origins' work while they wait, as scrapy-redis intends."""
    try:
        from scrapy_redis.spiders import RedisMixin
    except ImportError:
        return False
    return isinstance(spider, RedisMixin)


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
