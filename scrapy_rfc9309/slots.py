"""The one adapter around Scrapy's downloader slot internals.

Scrapy has no public way to say "never start requests on this slot closer
than X seconds". The Crawl-delay floor needs one, so everything it touches
inside the downloader lives in this module (the private names in
:mod:`.internals`, which checks all of the below when the spider opens), and
a future Scrapy throttling API can replace this file alone. What it relies on
(tested with Scrapy 2.13 to 2.19):

* ``crawler.engine.downloader.slots`` maps a slot key to a ``Slot``;
  ``Downloader.get_slot_key(request)`` and the ``download_slot`` meta key
  name the slot of a request (the meta is set before
  ``request_reached_downloader`` is sent, and it honours ``DOWNLOAD_SLOTS``
  and a user's own ``download_slot``).
* ``Slot.delay`` and the random variation around it: ``Slot.jitter`` (a
  magnitude, 2.19+) or ``Slot.randomize_delay`` (a bool meaning +-50%).
* ``Downloader._process_queue`` starts a request only when
  ``monotonic() - slot.lastseen >= slot.download_delay()`` and, when that
  delay is above zero, starts at most one request per call. So keeping
  ``delay >= floor`` *and* the low end of the jitter range ``>= floor`` keeps
  every start-to-start gap on the slot at or above the floor, whatever the
  slot's concurrency.
* ``Downloader._download`` sends ``response_downloaded`` (AutoThrottle lowers
  ``slot.delay`` in its handler) and only then processes the slot's queue.
  The floor is restored in a ``response_downloaded`` handler connected when
  the spider opens, i.e. after every component's ``__init__`` connected its
  own; pydispatcher calls receivers in connection order, so ours runs after
  AutoThrottle's and before the queue is processed.
* ``Slot.lastseen`` (the slot's last start, on :data:`.compat.SLOT_CLOCK`:
  ``time.monotonic()`` since Scrapy 2.16, ``time.time()`` before) with
  ``Slot.delay`` and the jitter: :func:`seconds_until_free` reads them so the
  cluster-wide Crawl-delay can take its turn only once this worker's
  own slot would start the request at once (see ``RobotsService.wait_turn``).
* ``Downloader._slot_gc`` drops idle slots and ``_get_slot`` builds a fresh
  one with the default delay; the floor is re-applied to the new object on
  the next ``request_reached_downloader`` (sent before the queue is
  processed).  What is kept here for a slot key is dropped once Scrapy has
  discarded the slot (:meth:`SlotFloors.sweep`, every minute), so memory
  follows the live slots, not every host ever seen.
* ``Downloader._process_queue(slot)`` starts queued requests while
  ``slot.free_transfer_slots() > 0``; since Scrapy 2.14 a started request
  joins ``slot.transferring`` only when its download task first runs, so all
  the requests that reach a slot within one turn of the event loop start
  together, past ``CONCURRENT_REQUESTS_PER_DOMAIN`` (measured on 2.19 without
  this plugin: 14 requests in flight to one site with a limit of 2).
  :func:`keep_slot_concurrency` (applied to the slot of every held request)
  counts a request as transferring from the moment it is taken from the queue.
* ``Downloader.active`` (what ``CONCURRENT_REQUESTS`` counts, through
  ``Downloader.needs_backout()``) and ``Slot.active`` (what
  ``DownloaderAwarePriorityQueue`` counts per slot): :class:`HeldRequests`
  moves a request that waits inside the middleware from the first to the
  second, so a site that makes requests wait is seen as a busy site, not as
  a full downloader.
"""

from __future__ import annotations

from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import signals
from twisted.internet.defer import Deferred

from . import compat, internals
from .storage.factory import uses_scrapy_redis

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["HeldRequests", "SlotFloors", "SpiderClosing", "keep_slot_concurrency", "seconds_until_free", "slot_of"]

#: seconds between two sweeps of the floors of slots Scrapy has discarded
SWEEP_SECONDS = 60.0
#: waiting requests taken out of CONCURRENT_REQUESTS: max(this, 8 x CONCURRENT_REQUESTS)
RELIEF_MIN = 64
RELIEF_PER_CONCURRENT = 8

# Jitter is narrowed a hair more than the exact bound so that float rounding
# can never put the low end of the range a few ulps under the floor.
_ROUNDING = 1e-12


@dataclass
class _Floor:
    """A floor for one slot key, and what the live slot looked like before it."""

    seconds: float
    slot: Any = None  # the Slot object last adjusted; slot GC replaces it
    base_delay: float = 0.0  # the slot's own delay before the floor raised it
    base_jitter: float = 0.0  # the slot's own jitter magnitude
    written: float | None = None  # the delay the floor wrote, to undo it
    narrowed: bool = False  # the floor cut the jitter range


class SlotFloors:
    """Keeps each download slot's delay at or above a floor, by slot key."""

    def __init__(self, crawler: Crawler, on_gone: Callable[[str], None] | None = None) -> None:
        self._crawler = crawler
        self._floors: dict[str, _Floor] = {}
        #: told the key of each slot whose floor :meth:`sweep` dropped
        self._on_gone = on_gone
        self._sweeper: Any = None
        self._opened = False
        self._listening = False
        crawler.signals.connect(self._connect_after_autothrottle, signal=signals.spider_opened)
        crawler.signals.connect(self._stop_sweeping, signal=signals.spider_closed)

    def __len__(self) -> int:
        return len(self._floors)

    def sweep(self) -> None:
        """Forget the floors of slots Scrapy has discarded (idle-slot GC): a new
        slot for the key gets its floor again from the next request."""
        slots = self._live_slots()
        for key, state in list(self._floors.items()):
            if state.slot is not None and slots.get(key) is not state.slot:
                del self._floors[key]
                if self._on_gone is not None:
                    self._on_gone(key)
        self._listen()

    # -- public to the extension -------------------------------------------------

    def key_of(self, request: Request) -> str:
        """The slot key Scrapy uses (or will use) for *request*."""
        return slot_of(self._crawler, request)[0]

    def floor_of(self, key: str) -> float | None:
        state = self._floors.get(key)
        return state.seconds if state else None

    def set_floor(self, key: str, seconds: float | None) -> None:
        """Give slot *key* a floor (``None`` or 0 removes it) and apply it now."""
        state = self._floors.get(key)
        if not seconds or seconds <= 0:
            if state is not None:
                del self._floors[key]
                self._undo(key, state)
                self._listen()
            return
        if state is None:
            self._floors[key] = _Floor(seconds)
            self._listen()
        elif seconds != state.seconds:
            lowered = seconds < state.seconds
            state.seconds = seconds
            if lowered:
                self._undo(key, state)
        self.enforce(key)

    def enforce(self, key: str) -> bool:
        """Make the live slot *key* respect its floor.

        Returns True when the floor is what holds the slot back, i.e. the
        slot's own delay (``DOWNLOAD_DELAY``, ``DOWNLOAD_SLOTS``,
        AutoThrottle) or its jitter range would allow a shorter gap.
        """
        state = self._floors.get(key)
        if state is None:
            return False
        slot = self._live_slot(key)
        if slot is None:
            return False
        if state.slot is not slot:  # new, or rebuilt after slot GC
            state.slot = slot
            state.base_delay = slot.delay
            state.base_jitter = _get_jitter(slot)
            state.written = None
        floor = state.seconds
        if slot.delay < floor:
            slot.delay = floor
            state.written = floor
        jitter = _allowed_jitter(slot.delay, floor, state.base_jitter)
        state.narrowed = jitter < state.base_jitter
        if jitter != _get_jitter(slot):
            _set_jitter(slot, jitter)
        return state.narrowed or (state.written is not None and slot.delay == state.written)

    # -- internals ---------------------------------------------------------------

    def _live_slots(self) -> dict[str, Any]:
        engine = self._crawler.engine
        if engine is None or engine.downloader is None:
            return {}
        return engine.downloader.slots

    def _live_slot(self, key: str) -> Any:
        return self._live_slots().get(key)

    def _undo(self, key: str, state: _Floor) -> None:
        """Hand back what a removed or lowered floor had taken from the slot."""
        slot = self._live_slot(key)
        if slot is None or slot is not state.slot:
            return
        if state.written is not None and slot.delay == state.written:
            slot.delay = state.base_delay
        state.written = None
        _set_jitter(slot, state.base_jitter)
        state.narrowed = False

    def _connect_after_autothrottle(self) -> None:
        self._opened = True
        self._listen()
        self._sweeper = compat.every(SWEEP_SECONDS, self.sweep)

    def _listen(self) -> None:
        """Receive ``response_downloaded`` while a slot has a floor, only (so a
        crawl without Crawl-delay pays no receiver per response), and never
        before the spider opened: connected later than AutoThrottle's, ours
        runs after it."""
        wanted = self._opened and bool(self._floors)
        if wanted is self._listening:
            return
        self._listening = wanted
        if wanted:
            self._crawler.signals.connect(self._after_response, signal=signals.response_downloaded)
        else:
            self._crawler.signals.disconnect(self._after_response, signal=signals.response_downloaded)

    def _stop_sweeping(self) -> None:
        if self._sweeper is not None and self._sweeper.running:
            self._sweeper.stop()

    def _after_response(self, request: Request) -> None:
        key = request.meta.get("download_slot")
        if key is not None and key in self._floors:
            self.enforce(key)


def slot_of(crawler: Crawler, request: Request, create: bool = False) -> tuple[str, Any]:
    """The download slot of *request*, the one lookup of the plugin: ``(key,
    Slot)``, or ``(key, None)`` while the slot does not exist.  The key is
    Scrapy's (``DOWNLOAD_SLOTS``, a user's ``download_slot`` meta key, per-IP
    slots); ``create`` makes the slot as the downloader will."""
    engine = crawler.engine
    assert engine is not None and engine.downloader is not None, "the downloader exists only once the crawl runs"
    if create:
        return internals.get_slot(crawler, request)
    downloader = engine.downloader
    key = request.meta.get("download_slot")  # set once the request reached the downloader
    key = str(key) if key is not None else downloader.get_slot_key(request)
    return key, downloader.slots.get(key)


def seconds_until_free(crawler: Crawler, request: Request) -> float:
    """How long until the download slot of *request* would surely start it
    without waiting: its last start plus the longest delay its jitter allows,
    minus now (0 when the slot does not exist yet or is idle long enough)."""
    engine = crawler.engine
    if engine is None or engine.downloader is None:
        return 0.0
    slot = slot_of(crawler, request)[1]
    if slot is None or not slot.lastseen:
        return 0.0
    longest = slot.delay * (1 + _get_jitter(slot))
    return max(0.0, slot.lastseen + longest - compat.SLOT_CLOCK())


class _StartingQueue(deque):
    """A slot's queue whose ``popleft`` (the downloader taking a request to
    start it) counts the request in the slot's ``transferring`` at once."""

    def __init__(self, entries: Any, transferring: set) -> None:
        super().__init__(entries)
        self.transferring = transferring

    def popleft(self) -> Any:
        entry = super().popleft()
        self.transferring.add(entry[0])
        return entry


def keep_slot_concurrency(slot: Any) -> None:
    """Make ``slot`` start no more requests than its concurrency.

    Its queue is replaced (once) by a :class:`_StartingQueue`, so a request
    taken from it counts in ``slot.transferring`` at once, not one event-loop
    turn later when its download task starts (the download adds it again, a
    no-op, and removes it when done).  Done for the slot of every request held
    here: released together, they reach their slot together.  Scrapy 2.13
    starts downloads synchronously: nothing to do there.
    """
    if compat.DEFERRED_DOWNLOAD_START and type(slot.queue) is not _StartingQueue:
        slot.queue = _StartingQueue(slot.queue, slot.transferring)


def _drop_if_unused(downloader: Any, key: str, slot: Any) -> None:
    """Forget a slot that never started a download and has nothing to do (made
    for held requests that were then dropped); Scrapy makes it again if needed."""
    if not slot.active and not slot.queue and not slot.transferring and not slot.lastseen:
        if downloader.slots.get(key) is slot:
            del downloader.slots[key]
            slot.close()


def _allowed_jitter(delay: float, floor: float, base: float) -> float:
    """The largest jitter, up to *base*, whose range starts at or above *floor*."""
    if base <= 0 or delay * (1 - base) >= floor:
        return base
    return max(0.0, 1 - floor / delay - _ROUNDING)


def _get_jitter(slot: Any) -> float:
    if hasattr(slot, "jitter"):  # Scrapy 2.19+
        return float(slot.jitter)
    return 0.5 if slot.randomize_delay else 0.0


def _set_jitter(slot: Any, jitter: float) -> None:
    if hasattr(slot, "jitter"):
        slot.jitter = jitter
    else:  # before 2.19 the range is +-50% or nothing
        slot.randomize_delay = jitter >= 0.5


class HeldRequests:
    """Requests that wait inside the middleware, accounted as a slow site's are.

    A request waiting for its origin's robots.txt (or for a cluster-wide
    Crawl-delay turn) is taken out of ``Downloader.active``, so it does not
    use the crawl's ``CONCURRENT_REQUESTS``, and put in its download slot's
    ``active`` set, so ``DownloaderAwarePriorityQueue`` sees that site as busy
    and hands out other sites' requests.  At most :attr:`limit` requests of
    the whole crawl are taken out so (``max(64, 8 x CONCURRENT_REQUESTS)``);
    more wait counted, as requests queued in a slow site's slot do, which
    bounds what waiting sites can pull from the scheduler into memory.  Under
    scrapy-redis's scheduler, whose queue every worker pops, the limit is
    ``CONCURRENT_REQUESTS``: a worker whose requests wait would otherwise take
    up to 64 more off the shared queue (all new sites wait for robots.txt when
    a crawl starts) and work through them alone while the others idle.  A
    released request counts again only once the downloader has room, so
    ``CONCURRENT_REQUESTS`` holds; then the slot's own concurrency and delay
    apply as to any request.
    """

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler
        self._room: deque[Deferred] = deque()
        #: requests waiting now (the spider is not idle while there are any)
        self.count = 0
        #: of which taken out of Downloader.active
        self.relieved = 0
        concurrent = crawler.settings.getint("CONCURRENT_REQUESTS", 16)
        if uses_scrapy_redis(crawler.settings.get("SCHEDULER")):
            self.limit = concurrent  # other workers pop the same queue: take no more than can start soon
        else:
            self.limit = max(RELIEF_MIN, RELIEF_PER_CONCURRENT * concurrent)

    @asynccontextmanager
    async def holding(self, request: Request, closing: Callable[[], bool]) -> AsyncIterator[_Hold]:
        """Hold ``request`` while the body waits; on a normal exit wait for a
        downloader place (when the request gave its own back).  The body may
        take that place itself, ``await hold.room()``, e.g. before counting the
        request as allowed.  Once the spider is closing, the room never comes:
        :class:`SpiderClosing` is raised instead, and the request must be
        dropped, not handed to the downloader (Scrapy would not have taken it
        from the scheduler; it would download only what is in its downloader)."""
        engine = self._crawler.engine
        assert engine is not None, "requests are held only while the crawl runs"
        downloader = engine.downloader
        key, slot = slot_of(self._crawler, request, create=True)
        keep_slot_concurrency(slot)
        relieve = self.relieved < self.limit and request in downloader.active
        if relieve:
            downloader.active.discard(request)
            self.relieved += 1
            internals.wake_engine(self._crawler)  # the place it gave back may be used now
        slot.active.add(request)
        self.count += 1
        hold = _Hold(self, downloader, relieve, closing)
        try:
            yield hold
            await hold.room()
        except BaseException:
            self._release(downloader, slot, request, relieve)
            _drop_if_unused(downloader, key, slot)  # a denied site leaves no slot behind
            raise
        else:
            self._release(downloader, slot, request, relieve)

    def _release(self, downloader: Any, slot: Any, request: Request, relieved: bool) -> None:
        self.count -= 1
        slot.active.discard(request)
        if relieved:
            downloader.active.add(request)
            self.relieved -= 1

    async def _wait_for_room(self) -> None:
        if not self._room:  # listen only while someone waits: no receiver per request otherwise
            self._crawler.signals.connect(self.wake, signal=signals.request_left_downloader)
        waiter: Deferred = Deferred()
        self._room.append(waiter)
        await compat.wait_for(waiter)

    def wake(self, *args: Any, **kwargs: Any) -> None:
        """Let the released requests look for room again (a request left the
        downloader, or a periodic check)."""
        waiters, self._room = self._room, deque()
        if waiters:
            self._crawler.signals.disconnect(self.wake, signal=signals.request_left_downloader)
        for waiter in waiters:
            if not waiter.called:
                waiter.callback(None)


class SpiderClosing(Exception):
    """The spider began to close while a request was held: drop it."""


class _Hold:
    """One held request's way back to the downloader (see :meth:`HeldRequests.holding`)."""

    __slots__ = ("_held", "_downloader", "_relieved", "_closing", "_placed")

    def __init__(self, held: HeldRequests, downloader: Any, relieved: bool, closing: Callable[[], bool]) -> None:
        self._held = held
        self._downloader = downloader
        self._relieved = relieved
        self._closing = closing
        self._placed = False

    async def room(self) -> None:
        """Wait until the downloader has a place for the request, if it gave its
        own back; :class:`SpiderClosing` once the spider is closing."""
        if self._placed:
            return
        if self._relieved:
            while self._downloader.needs_backout() and not self._closing():
                await self._held._wait_for_room()
        if self._closing():
            raise SpiderClosing
        self._placed = True
