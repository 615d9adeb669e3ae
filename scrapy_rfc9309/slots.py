"""The one adapter around Scrapy's downloader slot internals.

Scrapy has no public way to say "never start requests on this slot closer
than X seconds". The Crawl-delay floor needs one, so everything it touches
inside the downloader lives in this module, and a future Scrapy throttling
API can replace this file alone. What it relies on (Scrapy 2.13 to 2.19):

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
* ``Slot.lastseen`` (``time.monotonic()`` of the slot's last start) with
  ``Slot.delay`` and the jitter: :func:`seconds_until_free` reads them so the
  cluster-wide Crawl-delay can reserve a start time only once this worker's
  own slot would start the request at once (see ``throttle.SharedPacing``).
* ``Downloader._slot_gc`` drops idle slots and ``_get_slot`` builds a fresh
  one with the default delay; the floor is re-applied to the new object on
  the next ``request_reached_downloader`` (sent before the queue is
  processed), because the floors are kept here by key, not on the slot.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import signals

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["SlotFloors", "seconds_until_free"]

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

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler
        self._floors: dict[str, _Floor] = {}
        crawler.signals.connect(self._connect_after_autothrottle, signal=signals.spider_opened)

    # -- public to the extension -------------------------------------------------

    def key_of(self, request: Request) -> str:
        """The slot key Scrapy uses (or will use) for *request*."""
        key = request.meta.get("download_slot")
        if key is not None:
            return str(key)
        return self._downloader().get_slot_key(request)

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
            return
        if state is None:
            self._floors[key] = _Floor(seconds)
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

    def _downloader(self) -> Any:
        engine = self._crawler.engine
        assert engine is not None, "the downloader exists only once the crawl runs"
        return engine.downloader

    def _live_slot(self, key: str) -> Any:
        engine = self._crawler.engine
        if engine is None or engine.downloader is None:
            return None
        return engine.downloader.slots.get(key)

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
        self._crawler.signals.connect(self._after_response, signal=signals.response_downloaded)

    def _after_response(self, request: Request) -> None:
        key = request.meta.get("download_slot")
        if key is not None and key in self._floors:
            self.enforce(key)


def seconds_until_free(crawler: Crawler, request: Request) -> float:
    """How long until the download slot of *request* would surely start it
    without waiting: its last start plus the longest delay its jitter allows,
    minus now (0 when the slot does not exist yet or is idle long enough)."""
    engine = crawler.engine
    if engine is None or engine.downloader is None:
        return 0.0
    downloader = engine.downloader
    key = request.meta.get("download_slot")
    slot = downloader.slots.get(str(key) if key is not None else downloader.get_slot_key(request))
    if slot is None or not slot.lastseen:
        return 0.0
    longest = slot.delay * (1 + _get_jitter(slot))
    return max(0.0, slot.lastseen + longest - time.monotonic())


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
