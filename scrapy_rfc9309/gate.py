"""The gate: a scheduler wrapping the project's own that holds each request, before the downloader and
taking no ``CONCURRENT_REQUESTS`` place, while its origin is resolved or its slot's Crawl-delay turn has
not come; then it goes to the engine (``engine.crawl()`` wakes it).  docs/middleware.md, "The gate"."""

from __future__ import annotations

import heapq
import inspect
import itertools
import logging
import sys
import time
from collections import defaultdict, deque
from collections.abc import Callable
from contextlib import suppress
from typing import TYPE_CHECKING, Any, NamedTuple
from weakref import WeakKeyDictionary

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.asyncgen import collect_asyncgen
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from . import compat
from .fetch import FETCH_META_KEY
from .lifecycle import crawl_state, rfc9309_settings, robots_service
from .masking import mask_text
from .middleware import RELEASED, declared_purposes
from .origins import origin_of, robots_url
from .robots.text import shorten
from .robots.usage import usage_for
from .service import NotResolved
from .settings import project_scheduler
from .storage.factory import uses_scrapy_redis

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from .service import Known

__all__ = ["RELEASED", "REQUEUED", "GateScheduler", "Held"]

logger = logging.getLogger(__name__)

UNSEEN_SECONDS = 0.25  #: released, not in the downloader this long after (dropped, cached): off its slot's count
#: a cluster turn waiting for a full downloader is held on this often (Redis: for 5 s); not for TURN_FRESH, taken anew
KEEP_SECONDS, TURN_FRESH = 1.0, 3.0  #: (the loop was held: it may have lapsed and another worker gone)
#: held per next_request call, released per turn of the loop (in 4 ms: a scheduler's push may be a Redis call), at most
HOLD_BATCH, RELEASE_BATCH, RELEASE_SECONDS = 32, 256, 0.004
HELD_IN_ALL = 100_000  #: held at most, those waiting for their slot's turn too (RFC9309_MAX_HELD if larger)
REQUEUED = "rfc9309_requeued"  #: meta key of a request given back to the scheduler: its own dont_filter, restored
CLOSING = {
    "origin": "Dropped: the spider closed before robots.txt of its origin was known",
    "turn": "Dropped: the spider closed before its turn on its download slot (a Crawl-delay, or room)",
    "queued": "Dropped: the spider closed before the downloader took it",
}


class Held(NamedTuple):
    """Why a request the gate released was held (the middleware reads it)."""

    for_robots: bool = False  # it waited for its origin's resolution (a cache miss)
    paced: bool = False  # it took its Crawl-delay turn here
    error: str = ""  # the gate's or the service's own work failed: the middleware drops it
    checked: Any = None  # (Known, Decision): the gate's robots.txt check of it for the origin's tokens, all allowing


# (plain classes with __slots__: a dataclass's generated methods are compiled at import, in every crawl's start-up)
class _Ticket:
    """A Crawl-delay turn asked for a fetch of the plugin's own (an origin's file)."""

    __slots__ = ("origin", "floor", "waiter")

    def __init__(self, origin: str, floor: float) -> None:
        self.origin, self.floor = origin, floor
        self.waiter: Deferred[None] = Deferred()


class _Slot:
    """A slot's waiting requests and tickets (priority 1000) by priority; none goes before ``due``; ``out``: let go."""

    __slots__ = ("queue", "due", "out", "waking")

    def __init__(self) -> None:
        self.queue: list[tuple[int, int, Any]] = []  # a heap of (-priority, arrival, request or _Ticket)
        self.due, self.out, self.waking = 0.0, 0, False


class _Tracked:
    """A released request followed until done (its id() is its own), on slot ``key`` and cluster turn ``origin``."""

    __slots__ = ("request", "key", "origin", "floor", "since", "seen", "ready", "turn")

    def __init__(self, request: Any, key: str, origin: str | None, floor: float, since: float) -> None:
        self.request, self.key, self.origin, self.floor, self.since = request, key, origin, floor, since
        self.seen, self.ready, self.turn = False, False, since


class GateScheduler:
    """Scheduler wrapper that holds requests before the downloader (see the module docstring)."""

    def __init__(self, crawler: Crawler, inner: Any) -> None:
        self.crawler, self.inner = crawler, inner
        self.settings, self.service = rfc9309_settings(crawler), robots_service(crawler)
        self._counts = self.service.counts
        self._held: defaultdict[str, list[Request]] = defaultdict(list)  # origin -> waiting for its resolution
        self._slots: dict[str, _Slot] = {}
        self._count = self._turns = self._handed = 0  # held: in _held, _releases, slot queues (_turns: for a turn)
        self._releases: deque[tuple[Request, int]] = deque()  # resolved: (request, _resolved's mode)
        self._ready: list[tuple[int, int, Request]] = []  # released: a heap in the scheduler's order
        self._order = itertools.count()
        self._peek: Request | None = None  # the scheduler's next request, taken out to compare priorities
        self._releasing: set[int] = set()  # being scheduled again right now
        self.released: WeakKeyDictionary[Request, Held] = WeakKeyDictionary()  # why (the middleware reads it)
        self._tracked: dict[int, _Tracked] = {}
        self._floored: dict[str, set[str]] = {}  # slot key -> the floored origins seen on it (the largest holds)
        self._keys_of: dict[str, set[str]] = {}  # and back
        self._sweeper: Any = None
        self._offsite: Any = None
        self._feed: Any = None  # scrapy-redis's RedisSpider takes more work: schedule_next_requests
        self._full = self._closed = self._waking = self._releasing_batch = self._ties = self._woken = False
        self._last_check: Any = None  # (request, Known, Decision) of the last request _allowed let go
        get = crawler.settings.getint
        self._per_slot = get("CONCURRENT_REQUESTS_PER_IP") or get("CONCURRENT_REQUESTS_PER_DOMAIN")
        self._bound, self._bound_all = self.settings.max_held, max(self.settings.max_held, HELD_IN_ALL)
        self._slot_settings = crawler.settings.getdict("DOWNLOAD_SLOTS")
        redis = uses_scrapy_redis(project_scheduler(crawler.settings))  # (keeps its queue across the close)
        self._keeps = bool(crawler.settings.get("JOBDIR")) or (redis and crawler.settings.getbool("SCHEDULER_PERSIST"))
        crawl_state(crawler).gate = self

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Any:
        inner = build_from_crawler(load_object(project_scheduler(crawler.settings)), crawler)
        return cls(crawler, inner) if rfc9309_settings(crawler).enabled else inner  # off: the project's alone

    @property
    def held(self) -> int:
        return self._count + len(self._ready) + (self._peek is not None)

    def __len__(self) -> int:
        return self.held + (len(self.inner) if hasattr(type(self.inner), "__len__") else 0)

    def open(self, spider: Any) -> Any:
        self._offsite = compat.offsite_filter(self.crawler)
        if (redis := sys.modules.get("scrapy_redis.spiders")) is not None and isinstance(spider, redis.RedisMixin):
            self._feed = spider.schedule_next_requests
        self.service.pacer = self
        self.service.on_ready(self._floor_changed)
        self.service.on_forget(self._forget)
        return self.inner.open(spider) if hasattr(self.inner, "open") else None

    def has_pending_requests(self) -> bool:
        return bool(self.held) or self.inner.has_pending_requests()

    def enqueue_request(self, request: Request) -> bool:
        if id(request) in self._releasing:  # one of ours, scheduled again
            self._releasing.discard(id(request))
            if request in self.released:
                heapq.heappush(self._ready, (-request.priority, next(self._order), request))
                if (tracked := self._tracked.get(id(request))) is not None:
                    tracked.ready = True  # not unseen while it waits for the engine (a full downloader)
            else:
                self._peek = request  # (_next_turn took it out of _peek)
            return True
        if self.settings.early_fetch:  # a new origin's fetch starts when its first request is scheduled
            origin, files = self._checked(request)
            if origin and not self.service.pending(origin) and not (self._offsite and self._offsite(request)):
                self.service.prefetch(origin, request, files)
        return bool(self.inner.enqueue_request(request))

    def next_request(self) -> Request | None:
        held, self._woken = self._count, False  # (the engine came: a release wakes it again)
        while True:
            if self._ready:
                if self._peek is None:
                    self._peek = self.inner.next_request()
                gap = self._ready[0][0] + self._peek.priority if self._peek is not None else -1
                if gap == 0:
                    self._ties = not self._ties  # equal priorities: released and queued in turn
                if gap < 0 or (gap == 0 and self._ties) or self._is_full():
                    self._handed += 1  # (handed out since the engine last waited a turn: no timer per turn)
                    if self._handed > RELEASE_BATCH:
                        self._wake_next_turn()
                        return None  # the loop's turn first: _next_turn wakes the engine
                    if (tracked := self._tracked.get(id(released := heapq.heappop(self._ready)[2]))) is not None:
                        tracked.since, tracked.ready = time.monotonic(), False  # unseen from when the engine takes it
                    return released
            if self._is_full():
                if not self._full:  # one count and one line each time the bound is met
                    self._full = True
                    self._counts.inc("gate/full")
                    logger.info(
                        "scrapy-rfc9309: %d requests are held, %d of them for their slot's turn (RFC9309_MAX_HELD); no "
                        "more are taken from the scheduler until some go on", self._count, self._turns,
                    )  # fmt: skip
                return None
            if (request := self._take()) is None:
                if self._feed is not None and self._count and not self._held and not self._releases:
                    self._feed()  # only turns to wait for (pending, so no spider_idle): its next work
                return None
            try:
                if (back := request.meta.pop(REQUEUED, None)) is not None:  # released: handed back to the scheduler
                    request.dont_filter = back
                if self._admit(request, back is not None):
                    self._full = False
                    if back is not None:
                        self.released[request] = self._held_for_robots(request)
                    return request
            except Exception as exc:  # a bug of the gate's: the request ends, the crawl goes on
                self._fail([request], f"the gate could not look at it ({type(exc).__name__}: {exc})", exc)
                continue
            if self._count - held >= HOLD_BATCH:  # a turn of the loop for the rest first
                self._wake_next_turn()
                return None

    def close(self, reason: str) -> Any:
        self._closed = True
        self.service.shutdown()
        self._tracked.clear()
        self._listen()
        queued = [entry[2] for slot in self._slots.values() for entry in slot.queue]
        kinds: dict[str, list[Request]] = {
            "origin": [r for rs in self._held.values() for r in rs] + [r for r, _ in self._releases],
            "turn": [item for item in queued if not isinstance(item, _Ticket)],
            "queued": [entry[2] for entry in self._ready] + ([self._peek] if self._peek is not None else []),
        }
        for ticket in (item for item in queued if isinstance(item, _Ticket)):
            ticket.waiter.errback(NotResolved(ticket.origin))
        self._ready, self._peek, self._count, self._turns, self._slots, self._releases = [], None, 0, 0, {}, deque()
        self._held = defaultdict(list)
        if self._keeps:  # what the scheduler refuses or cannot serialize stays, to be dropped
            total = sum(map(len, kinds.values()))
            kinds = {kind: [r for r in requests if not self._hand_back(r)] for kind, requests in kinds.items()}
            if handed := total - sum(map(len, kinds.values())):
                self._counts.inc("gate/handed_back", handed)
                logger.info("scrapy-rfc9309: the spider closed; %d held requests handed back to the scheduler", handed)
        for kind, requests in kinds.items():
            if requests:
                self._drop(requests, kind)
        return self.inner.close(reason) if hasattr(self.inner, "close") else None

    def _is_full(self) -> bool:  # a floored origin's waiting requests do not stop the others: only memory's bound
        return self._count - self._turns >= self._bound or self._count >= self._bound_all

    def _take(self) -> Request | None:
        request, self._peek = self._peek, None
        return request if request is not None else self.inner.next_request()

    def _admit(self, request: Request, for_robots: bool = False) -> bool:
        """Whether ``request`` goes on now; else the gate keeps it (``for_robots``: it was held, see :meth:`_route`)."""
        origin, files = self._checked(request)
        if origin is None:  # robots.txt does not govern it: on now, or its floored slot's turn
            floor = self._slot_floor(key := self._key(request)) if self._floored else 0.0
            return not floor or self._queue(request, key, floor)
        if (known := self.service.fresh(origin, files)) is not None:
            return self._route(request, origin, known, for_robots)
        if self._offsite is not None and self._offsite(request):
            return True  # OffsiteMiddleware drops it: no robots.txt for it
        held = self._held[origin]
        held.append(request)
        self._count += 1
        self._counts.inc("gate/held")
        if len(held) == 1:
            self.service.resolving(origin, request, files).addBoth(self._resolved, origin)  # (no task of its own)
        return False

    def _checked(self, request: Request) -> tuple[str | None, bool]:
        """The origin to resolve first (None: robots.txt does not govern it), and whether its usage files too."""
        meta = request.meta
        if FETCH_META_KEY in meta or meta.get("dont_obey_robotstxt") or (origin := origin_of(request.url)) is None:
            return None, False
        if not self.settings.for_origin(origin).obey:  # (an origin of {"obey": False})
            return None, False
        return origin, self.service.reads(origin, meta)

    def _resolved(self, known: Known | Failure | None, origin: str) -> None:
        if known is None or isinstance(known, Failure) and known.check(NotResolved):
            return  # closing (or cancelled with the loop): close() ends what is held
        held = self._held.pop(origin, [])
        if isinstance(known, Failure):  # logged by the service: each request ends with it
            self._count -= len(held)
            error = f"its origin could not be resolved ({known.type.__name__}: {shorten(mask_text(str(known.value)))})"
            return self._fail(held, error)
        # 0: the allowed ones fit their slot's concurrency (nothing floored or queued there): on at once, unfollowed; -1:
        # the same, no floor: not looked at again (the middleware returns one not fresh); 1: each in its slot's turn; 2:
        # more than a turn of the loop releases: back to the project's scheduler, which orders them (no jump in its queue)
        key = self._key(held[0]) if held and not self._floored else None
        room = self._concurrency(key) if key is not None and key not in self._slots else 0  # (a denied one takes none)
        room -= sum(self._allowed(r, known) for r in held) if room < len(held) <= 2 * room <= HOLD_BATCH else len(held)
        one = room >= 0 and (not any("download_slot" in r.meta for r in held) or all(self._key(r) == key for r in held))
        mode = (0 if known.floor else -1) if one else 1 + (len(held) > RELEASE_BATCH)  # (one slot: none its own)
        if mode == 1:  # the first may find its slot free: the highest priority first (stable: arrival kept)
            held.sort(key=lambda request: -request.priority)
        self._releases.extend(zip(held, itertools.repeat(mode)))
        self._release_batch()

    def _release_batch(self) -> None:
        """Route the resolved requests, :data:`RELEASE_BATCH` (or :data:`RELEASE_SECONDS`) a turn of the loop."""
        self._releasing_batch, until = False, time.monotonic() + RELEASE_SECONDS  # (close() empties _releases)
        for _ in range(min(RELEASE_BATCH, len(self._releases))):
            request, mode = self._releases.popleft()
            self._count -= 1
            try:  # (expired meanwhile, or no longer checked: looked at again)
                if mode == 2 and self._requeue(request):
                    self._wake_next_turn()  # the engine takes it from the scheduler
                elif mode < 0 or self._admit(request, mode > 0):
                    self._release(request, self._held_for_robots(request))
            except Exception as exc:
                self._fail([request], f"the gate could not release it ({type(exc).__name__}: {exc})", exc)
            if time.monotonic() > until:
                break
        if self._releases and not self._releasing_batch:
            self._releasing_batch = True
            compat.call_later(0, self._release_batch)

    def _requeue(self, request: Request) -> bool:
        """A released request back to the project's scheduler (dont_filter: seen); False: refused, on from the gate."""
        request.meta[REQUEUED], request.dont_filter = request.dont_filter, True
        try:
            if self.inner.enqueue_request(request):
                self._counts.inc("gate/requeued")
                return True
        except Exception:  # (scrapy-redis's Redis down, say): not lost, said once per request at DEBUG
            logger.debug(
                "scrapy-rfc9309: the scheduler did not take %s back; it goes on from the gate", request, exc_info=True
            )
        request.dont_filter = request.meta.pop(REQUEUED)
        return False

    def _held_for_robots(self, request: Request) -> Held:
        """What the middleware is told of a request released after its resolution (paced: its turn, a floored slot's)."""
        checked = last[1:] if (last := self._last_check) is not None and last[0] is request else None
        return Held(for_robots=True, paced=bool(self._floored) and request in self.released, checked=checked)

    def _route(self, request: Request, origin: str, known: Known, for_robots: bool) -> bool:
        """A request of a known origin: on now (True), or queued for its slot's turn (or room: ``for_robots``)."""
        floor, key = known.floor, None
        if floor or self._floored:
            key = self._key(request)
            if floor:
                self._link(key, origin)
            floor = max(floor, self._slot_floor(key))
        # the hot path: a known origin, no floor on its slot; a denied request takes no turn and no place
        if not (floor or for_robots) or not self._allowed(request, known):
            return True
        return self._queue(request, self._key(request) if key is None else key, floor)

    def _queue(self, request: Request, key: str, floor: float) -> bool:
        """On now if its slot has room (a floored slot: its turn has come), else queued for its turn."""
        slot = self._slots.get(key) or self._slots.setdefault(key, _Slot())
        now = time.monotonic()
        if self._free(slot, now) if floor else (not slot.queue and slot.out < self._concurrency(key)):
            if floor:  # the next waits until this one left the downloader and a floor more
                slot.due = now + floor
                self.released[request] = Held(paced=True)
            self._occupy(request, key, slot, floor, now)
            return True
        heapq.heappush(slot.queue, (-request.priority, next(self._order), request))
        self._count, self._turns = self._count + 1, self._turns + 1
        if floor:
            self._counts.inc("crawl_delay/requests_delayed")
        self._wake(key, slot)
        return False

    def _free(self, slot: _Slot, now: float) -> bool:  # (with a shared store, the cluster's turns decide)
        return not slot.queue and now >= slot.due and not slot.out and not self.service.paces

    def _link(self, key: str, origin: str) -> None:  # floored origin is served by slot key: its requests keep the floor
        self._floored.setdefault(key, set()).add(origin)
        self._keys_of.setdefault(origin, set()).add(key)

    def _forget(self, origin: str) -> None:
        for key in self._keys_of.pop(origin, ()):
            if (origins := self._floored.get(key)) is not None:
                origins.discard(origin)
                if not origins:
                    del self._floored[key]

    def _slot_floor(self, key: str) -> float:
        if (origins := self._floored.get(key)) is None:
            return 0.0  # (most slots: no generator to make)
        known = self.service.known
        return max(((k.floor if (k := known(o)) is not None else 0.0) for o in origins), default=0.0)

    def _allowed(self, request: Request, known: Known) -> bool:
        """Whether the middleware will let ``request`` go on (robots.txt, declared purposes)."""
        url, robots, tokens = request.url, known.robots, known.tokens
        if not all((decision := robots.check(url, token)).allowed for token in reversed(tokens)):
            return False
        self._last_check = (request, known, decision) if tokens else None  # (the first token's: Held.checked)
        usage = usage_for(robots, url, tokens, allowed=True)
        return not usage or not (wanted := declared_purposes(request, self.settings)) or usage.denies(wanted) is None

    def _key(self, request: Request) -> str:
        """Its download slot; a slot Scrapy copied onto a redirect to another host (with the meta) is that host's."""
        of, meta = self.crawler.engine.downloader.get_slot_key, request.meta
        if (slot := meta.get("download_slot")) and (was := meta.get("redirect_urls")):
            with suppress(ValueError, TypeError, IndexError):  # (a redirect_urls of the user's, holding no URL: kept)
                if slot == of(Request(was[-1])) != of(Request(request.url)):
                    del meta["download_slot"]  # (Scrapy's downloader sets it again, to this one)
        return str(of(request))

    def _concurrency(self, key: str) -> int:
        return int(self._slot_settings.get(key, {}).get("concurrency", self._per_slot)) or 1

    async def file_turn(self, origin: str, trigger: Any, floor: float) -> Callable[[], None]:
        """The slot's turn for a fetch of ``origin``'s files (the service's pacer); call the result once in."""
        if self._closed:
            raise NotResolved(origin)
        key, slot = self._file_slot(origin, trigger)
        now = time.monotonic()
        if self._free(slot, now):
            slot.due, slot.out = now + floor, slot.out + 1
        else:
            ticket = _Ticket(origin, floor)
            heapq.heappush(slot.queue, (-1000, next(self._order), ticket))
            self._wake(key, slot)
            await compat.wait_for(ticket.waiter)

        def done() -> None:
            if self._slots.get(key) is not slot:
                return  # (closed meanwhile)
            slot.out -= 1
            slot.due = max(slot.due, time.monotonic() + floor)
            if self.service.paces:  # the next turn counts from now
                compat.spawn(self.service.note_start(origin, floor))
            self._turn(key, slot)

        return done

    def fetched(self, origin: str, trigger: Any, floor: float) -> None:
        """A fetch of ``origin``'s robots.txt just came in: its slot's next request goes a floor later."""
        key, slot = self._file_slot(origin, trigger)
        slot.due = max(slot.due, time.monotonic() + floor)
        if not self.service.paces:
            compat.call_later(floor, lambda: self._turn(key, slot))  # (forgets the slot if nothing came)

    async def hop_turn(self, origin: str, floor: float) -> None:
        """A hop of another origin's file to ``origin``: a floor after its slot's last start, the next a floor after."""
        _, slot = self._file_slot(origin, None)  # (no place taken: the chain may hold this slot's turn)
        start = max(slot.due, now := time.monotonic())
        slot.due = start + floor
        await compat.sleep(start - now)
        if self.service.paces:
            await self.service.wait_turn(origin, floor)
            compat.spawn(self.service.note_start(origin, floor))
        self.fetched(origin, None, floor)

    def _file_slot(self, origin: str, trigger: Any) -> tuple[str, _Slot]:
        key = self._key(trigger if isinstance(trigger, Request) else Request(robots_url(origin)))
        self._link(key, origin)
        return key, self._slots.get(key) or self._slots.setdefault(key, _Slot())

    def _wake(self, key: str, slot: _Slot) -> None:
        """Look at the slot's next request at its floor's time or cluster-wide turn (or in :meth:`_done`)."""
        if slot.waking or slot.out or not slot.queue or self._closed or not self._floor_of(key, slot.queue[0][2]):
            return
        slot.waking = True
        if self.service.paces:
            compat.spawn(self._take_turns(key, slot))
        else:
            compat.call_later(max(0.0, slot.due - time.monotonic()), lambda: self._turn(key, slot))

    def _floor_of(self, key: str, item: Any) -> float:
        if isinstance(item, _Ticket):
            return max(item.floor, self._slot_floor(key))
        known = self.service.known(origin_of(item.url) or "")
        return max(known.floor if known is not None else 0.0, self._slot_floor(key))

    def _turn(self, key: str, slot: _Slot) -> None:
        slot.waking = False
        if self._closed or self._slots.get(key) is not slot:
            return
        try:
            now = time.monotonic()
            while slot.queue:
                floor = self._floor_of(key, slot.queue[0][2])  # (a ticket's is never 0)
                if (now < slot.due or slot.out or self.service.paces) if floor else slot.out >= self._concurrency(key):
                    break
                self._go(key, slot, floor, now)
                if floor:
                    break
            if slot.queue:
                self._wake(key, slot)
            elif not slot.out and now >= slot.due:
                del self._slots[key]
        except Exception as exc:  # a bug of the gate's: the slot's requests end, the crawl goes on
            self._fail_slot(key, slot, f"its Crawl-delay turn failed ({type(exc).__name__}: {exc})", exc)

    def _go(self, key: str, slot: _Slot, floor: float, now: float, origin: str | None = None) -> None:
        """The slot's first request goes on; with a floor, the next waits until it is done and a floor more."""
        item = heapq.heappop(slot.queue)[2]
        if floor:
            slot.due = now + floor
        if isinstance(item, _Ticket):
            slot.out += 1
            item.waiter.callback(None)
            return
        self._count, self._turns = self._count - 1, self._turns - 1
        known = None if floor else self.service.known(origin_of(item.url) or "")
        if known is None or self._allowed(item, known):  # (a denied one takes no place)
            self._occupy(item, key, slot, floor, now, origin)
        self._release(item, Held(paced=True) if floor else Held(for_robots=True))

    async def _take_turns(self, key: str, slot: _Slot) -> None:
        """Shared store: the slot's next request takes its cluster turn; the next waits until it is done (_done)."""
        try:
            floor = self._floor_of(key, item := slot.queue[0][2])
            if (origin := item.origin if isinstance(item, _Ticket) else origin_of(item.url)) is not None and floor:
                since = time.monotonic()
                if slot.due > since:
                    await compat.sleep(slot.due - since)
                await self.service.wait_turn(origin, floor, since)
                head = slot.queue[0][2] if slot.queue and not self._closed else None
                if head is not None and (head.origin if isinstance(head, _Ticket) else origin_of(head.url)) == origin:
                    self._go(key, slot, floor, time.monotonic(), origin)  # (or one of a higher priority that came)
                else:  # the turn goes unused (closing, or another origin's came first): the next counts from now
                    compat.spawn(self.service.note_start(origin, floor))
        except compat.FAILURES as exc:  # the store failed (NotResolved: closing): its requests end, the crawl goes on
            if not isinstance(exc, NotResolved) and not self._closed:
                self._fail_slot(key, slot, f"its cluster-wide turn failed ({type(exc).__name__}: {exc})", exc)
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

    def _wake_next_turn(self) -> None:
        if not self._waking:
            self._waking = True
            compat.call_later(0, self._next_turn)

    def _next_turn(self) -> None:
        """After a turn that held a batch, gave back, or handed out over RELEASE_BATCH: wake the engine (a crawl())."""
        handed, self._handed, waking, self._waking = self._handed, 0, self._waking, False
        if handed > RELEASE_BATCH and self._ready and not self._closed:
            released = heapq.heappop(self._ready)[2]
            self._release(released, self.released.get(released))
        elif waking and not self._closed and (request := self._take()) is not None and not self._release(request, None):
            self._peek = request

    def _release(self, request: Request, held: Held | None) -> bool:
        """Schedule ``request`` again, to :attr:`_ready` (``held`` None: to :attr:`_peek`).  False once closing."""
        engine = self.crawler.engine
        if self._closed or engine is None or self.crawler.spider is None:
            return False
        if held is not None:
            self.released[request] = held
        request.meta[RELEASED] = True
        self._releasing.add(id(request))
        if held is not None and self._woken:  # the engine is woken already: to _ready, no request_scheduled again
            return self.enqueue_request(request)
        self._woken = True
        try:
            engine.crawl(request)
        finally:  # not enqueued: a request_scheduled receiver dropped it, as Scrapy lets it
            self._releasing.discard(id(request))
        return True

    def _fail(self, requests: list[Request], error: str, exc: BaseException | None = None) -> None:
        """The gate's or the service's own work failed for ``requests``: the middleware drops each with ``error``."""
        if not requests:
            return
        message = "scrapy-rfc9309: %d request(s) end because %s (rfc9309/requests/dropped/error)"
        logger.error(message, len(requests), error, exc_info=exc)
        if closing := [request for request in requests if not self._release(request, Held(error=error))]:
            self._drop(closing, "queued")

    def _fail_slot(self, key: str, slot: _Slot, error: str, exc: BaseException) -> None:
        items, slot.queue = [entry[2] for entry in slot.queue], []
        requests = [item for item in items if not isinstance(item, _Ticket)]
        for ticket in (item for item in items if isinstance(item, _Ticket)):
            ticket.waiter.errback(exc)
        self._count, self._turns = self._count - len(requests), self._turns - len(requests)
        if self._slots.get(key) is slot and not slot.out:
            del self._slots[key]
        self._fail(requests, error, exc)

    def _occupy(self, request: Request, key: str, slot: _Slot, floor: float, now: float, origin: Any = None) -> None:
        """``request`` goes on, counted against its slot (and its cluster turn: ``origin``) until it is done."""
        self._tracked[id(request)] = _Tracked(request, key, origin, floor, now)
        self._listen()
        slot.out += 1

    def lapsed(self, request: Request) -> bool:
        """Whether ``request``'s cluster turn was not held on for TURN_FRESH: the middleware sends it back for a new."""
        tracked = self._tracked.get(id(request))
        return tracked is not None and tracked.origin is not None and tracked.turn < time.monotonic() - TURN_FRESH

    def _done(self, request_id: int, noted: bool) -> None:
        tracked = self._tracked.pop(request_id)
        if tracked.origin is not None:  # its response is in (the server saw it before now), or it is gone: the
            compat.spawn(self.service.note_start(tracked.origin, tracked.floor))  # next turn a floor from now
        if (slot := self._slots.get(tracked.key)) is not None:
            slot.out -= 1
            if tracked.floor and noted:  # a paced request is in: the next one a floor from now
                slot.due = max(slot.due, time.monotonic() + tracked.floor)
            self._turn(tracked.key, slot)
        self._listen()

    # (``**_``: pydispatch passes the arguments on as they are, not filtered for the signature: a third less a call)
    def _reached(self, request: Request, **_: Any) -> None:
        if (tracked := self._tracked.get(id(request))) is not None and tracked.request is request:
            tracked.seen = True

    def left(self, request: Request, **_: Any) -> None:  # (and a response no downloader saw, a cache's: middleware)
        if (tracked := self._tracked.get(id(request))) is not None and tracked.request is request:
            self._done(id(request), noted=True)

    def _sweep(self) -> None:
        """End requests never seen in the downloader; hold on the cluster turn of one waiting for a full downloader."""
        now = time.monotonic()
        unseen, keep = now - UNSEEN_SECONDS, now - KEEP_SECONDS
        for request_id, tracked in list(self._tracked.items()):
            if tracked.ready and tracked.origin is not None and now - TURN_FRESH <= tracked.turn < keep:
                tracked.turn = now  # (held on late, it may have lapsed: see lapsed; not held by the store: lapses now)
                compat.spawn(self.service.note_start(tracked.origin, tracked.floor, tracked))
            elif not (tracked.seen or tracked.ready) and tracked.since < unseen and request_id in self._tracked:
                self._done(request_id, noted=False)

    def _listen(self) -> None:
        """Receive the downloader's per-request signals only while requests are tracked."""
        if (wanted := bool(self._tracked)) is (self._sweeper is not None):
            return
        wire = self.crawler.signals.connect if wanted else self.crawler.signals.disconnect
        wire(self._reached, signal=signals.request_reached_downloader)
        wire(self.left, signal=signals.request_left_downloader)
        if not wanted and self._sweeper.running:
            self._sweeper.stop()
        self._sweeper = compat.every(UNSEEN_SECONDS, self._sweep) if wanted else None

    def _hand_back(self, request: Request) -> bool:
        """Whether the scheduler (it keeps its queue across the close) took and could serialize ``request``."""
        stats, bad = self.crawler.stats, "scheduler/unserializable"
        before = stats.get_value(bad, 0)
        request.dont_filter = True  # already seen by the duplicate filter: kept anyway
        request.meta.pop(RELEASED, None)
        return bool(self.inner.enqueue_request(request)) and stats.get_value(bad, 0) == before

    def _drop(self, requests: list[Request], kind: str) -> None:
        """The spider closed: each held request ends with an IgnoreRequest to its errback."""
        message = CLOSING[kind]
        for request in requests:
            for key in ("requests/checked", "cache/misses", "requests/dropped/spider_closing"):
                self._counts.inc(key)
            if request.errback is None:
                continue
            failure = Failure(IgnoreRequest(message))
            failure.request = request  # type: ignore[attr-defined]  # as Scrapy hands it to errbacks
            try:  # as the scraper would call it; what it yields is dropped (the spider is closed)
                result = request.errback(failure)
                if inspect.isasyncgen(result) or inspect.iscoroutine(result):
                    compat.spawn(collect_asyncgen(result) if inspect.isasyncgen(result) else result)
                elif inspect.isgenerator(result):
                    deque(result, maxlen=0)  # (runs it to the end)
            except Exception:
                logger.exception("scrapy-rfc9309: the errback of %s failed", request)
        logger.info(
            "scrapy-rfc9309: the spider closed; %d held requests dropped: %s (rfc9309/requests/dropped/spider_closing)",
            len(requests), message[len("Dropped: the spider closed ") :],
        )  # fmt: skip
