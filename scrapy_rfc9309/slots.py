"""The Crawl-delay floor on Scrapy's download slots.

Scrapy has no public way to say "never start requests on this slot closer
than X seconds".  The floor is written into the slot's delay, the one
AutoThrottle adjusts, so that AutoThrottle (and ``DOWNLOAD_DELAY``,
``DOWNLOAD_SLOTS``) may raise it but never take it below the floor; the
slot's jitter is narrowed so that its low end stays at or above it
(``Downloader.slots``, ``Slot.delay``, ``Slot.jitter`` or ``randomize_delay``
before 2.19: :mod:`.internals`).

The floor is put back on ``request_reached_downloader`` (before the slot's
queue is processed) and on ``request_left_downloader`` (after every
``response_downloaded`` receiver, AutoThrottle's included): so it does not
depend on the order in which receivers run.  A slot's floor is dropped once
Scrapy has discarded the slot (:meth:`SlotFloors.sweep`, every minute), so
memory follows the live slots.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import signals

from . import compat, internals

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["SlotFloors"]

#: seconds between two sweeps of the floors of slots Scrapy has discarded
SWEEP_SECONDS = 60.0

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
        crawler.signals.connect(self._opened_spider, signal=signals.spider_opened)
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
        """The slot key Scrapy uses (or will use) for *request*: its
        ``download_slot`` meta once it reached the downloader, else Scrapy's own
        rule (``DOWNLOAD_SLOTS``, the host, per-IP slots)."""
        key = request.meta.get("download_slot")
        if key is None:
            key = self._crawler.engine.downloader.get_slot_key(request)
        return str(key)

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
        return internals.slots(self._crawler) if self._crawler.engine is not None else {}

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

    def _opened_spider(self) -> None:
        self._opened = True
        self._listen()
        self._sweeper = compat.every(SWEEP_SECONDS, self.sweep)

    def _listen(self) -> None:
        """Receive ``request_left_downloader`` while a slot has a floor, only (a
        crawl without Crawl-delay pays no receiver per request)."""
        wanted = self._opened and bool(self._floors)
        if wanted is self._listening:
            return
        self._listening = wanted
        if wanted:
            self._crawler.signals.connect(self._after_request, signal=signals.request_left_downloader)
        else:
            self._crawler.signals.disconnect(self._after_request, signal=signals.request_left_downloader)

    def _stop_sweeping(self) -> None:
        if self._sweeper is not None and self._sweeper.running:
            self._sweeper.stop()

    def _after_request(self, request: Request) -> None:
        key = request.meta.get("download_slot")
        if key is not None and key in self._floors:
            self.enforce(key)


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
