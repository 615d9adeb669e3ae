"""A persistent or shared store, with process memory standing in while it is down.

A robots.txt cache is an optimisation: losing it must not lose requests.  So
when the backend fails mid-crawl (Redis killed, the SQLite file damaged), the
crawl goes on with an in-process store, one warning is logged, and the
backend is tried again after ``retry_after`` seconds (by default the
backend's own, ``settings.STORAGE_RETRY_SECONDS``); when it answers again, it
is used again.  While it is down the cluster guarantees lapse: each worker
fetches robots.txt for itself and keeps Crawl-delay on its own download slot
only; a turn a worker gave itself then is made the backend's, or given up, once
the backend answers (:meth:`FallbackStorage.keep_turn`).

Only :meth:`open` lets :class:`~.base.StorageUnavailable` through: a store
that cannot be reached at start-up is a configuration error.  A store that is
there but held by another process (:class:`~.base.StorageBusy`, a locked
SQLite file) is not: the crawl starts on the fallback, as if the store had
failed a moment after it opened.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .base import RETRY_AFTER, Lease, RobotsEntry, RobotsStorage, StorageBusy, StorageUnavailable
from .memory import MemoryStorage

logger = logging.getLogger(__name__)

T = TypeVar("T")


class _Down:
    """What :meth:`FallbackStorage._ask` returns when the backend did not answer."""


_DOWN = _Down()

__all__ = ["RETRY_AFTER", "FallbackStorage"]

#: origins whose last local turn is remembered (a bound, not a tuning: one small entry each)
LOCAL_TURNS_MAX = 10_000


class FallbackStorage(RobotsStorage):
    """``primary``, or ``fallback`` (memory) for a while after it fails."""

    def __init__(
        self,
        primary: RobotsStorage,
        fallback: RobotsStorage | None = None,
        retry_after: float | None = None,
        count: Callable[[str], None] | None = None,
    ) -> None:
        self.primary = primary
        self.fallback = fallback if fallback is not None else MemoryStorage()
        self.url = primary.url
        #: seconds between attempts to get back to a backend that failed
        self.retry_after = getattr(primary, "retry_after", RETRY_AFTER) if retry_after is None else retry_after
        #: called with a stats key: "storage/errors", "storage/outages" on a failure,
        #: "storage/recoveries" when the backend answers again
        self._count = count or (lambda key: None)
        self._down_until: float | None = None
        #: origin -> monotonic time of the last turn this worker granted itself while the
        #: backend was down (see take_turn)
        self._local_turns: dict[str, float] = {}
        #: the backend is process memory, which cannot fail
        self._in_memory = type(primary) is MemoryStorage
        if count is not None:
            primary.count = count  # what the backend counts (unusable entries...) goes to the same stats

    @property
    def shared(self) -> bool:  # type: ignore[override]
        return self.primary.shared

    @property
    def down(self) -> bool:
        """Whether the fallback is in use now."""
        if self._down_until is None:
            return False
        if time.monotonic() < self._down_until:
            return True
        return False  # time to try the backend again

    async def open(self) -> None:
        try:
            await self.primary.open()
        except StorageBusy as exc:
            self._failed(exc)

    async def close(self) -> None:
        try:
            await self.primary.close()
        except StorageUnavailable as exc:
            logger.warning("closing the robots.txt store: %s", exc)

    async def get(self, origin: str) -> RobotsEntry | None:
        entry = await self._ask(lambda: self.primary.get(origin))
        if not isinstance(entry, _Down):
            return entry
        return await self.fallback.get(origin)

    async def put(self, origin: str, entry: RobotsEntry) -> None:
        if not isinstance(await self._ask(lambda: self.primary.put(origin, entry)), _Down):
            return
        await self.fallback.put(origin, entry)

    async def claim(self, origin: str) -> Lease | None:
        lease = await self._ask(lambda: self.primary.claim(origin))
        if not isinstance(lease, _Down):
            return lease
        return Lease()

    async def lookup(self, origin: str, now: float) -> tuple[RobotsEntry | None, Lease | None]:
        if self._in_memory:  # (it never fails: no fallback to keep ready)
            return await self.primary.lookup(origin, now)
        found = await self._ask(lambda: self.primary.lookup(origin, now))
        if not isinstance(found, _Down):
            return found
        entry = await self.fallback.get(origin)
        return entry, (None if entry is not None and entry.is_fresh(now) else Lease())

    async def store(self, origin: str, entry: RobotsEntry, lease: Lease | None, floor: float = 0.0) -> None:
        """Store in the backend (one step there), else in memory; the lease is
        released whatever state the backend is in."""
        if self._in_memory:
            await self.primary.store(origin, entry, lease, floor)
            return
        if not isinstance(await self._ask(lambda: self.primary.store(origin, entry, lease, floor)), _Down):
            return
        await self.fallback.put(origin, entry)
        if lease is not None:
            await self.release(lease)

    async def take_turn(self, origin: str, floor: float) -> float:
        """The backend's turn; while it is down, this worker's own (the last
        start it granted, ``floor`` apart).  A turn granted here is honoured
        for one ``floor`` after the backend answers again: the backend does
        not know of it, and would otherwise let the next request follow it at
        once."""
        now = time.monotonic()
        last = self._local_turns.get(origin)
        if last is not None:
            if now - last < floor:
                return last + floor - now
            del self._local_turns[origin]
        wait = await self._ask(lambda: self.primary.take_turn(origin, floor))
        if not isinstance(wait, _Down):
            return wait
        if len(self._local_turns) >= LOCAL_TURNS_MAX:  # bounded: forget the oldest
            self._local_turns.pop(next(iter(self._local_turns)))
        self._local_turns[origin] = now
        return 0.0

    async def note_start(self, origin: str, floor: float) -> None:
        if origin in self._local_turns:  # this worker's own turn: its next counts from now
            self._local_turns[origin] = time.monotonic()
        await self._ask(lambda: self.primary.note_start(origin, floor))  # (while down: no turn of the backend's)

    async def keep_turn(self, origin: str, floor: float) -> bool | None:
        """Hold on to the turn of a request still waiting for the downloader.

        A turn this worker granted itself while the backend was down is
        unknown to the backend: held on past its return, another worker would
        be given the origin at once, beside it.  So, once the backend answers,
        it is taken there (the next renewal holds it on there); if another
        worker's turn is under way, it cannot be held: False, and the gate
        sends its request back for a new turn."""
        if origin not in self._local_turns:
            kept = await self._ask(lambda: self.primary.keep_turn(origin, floor))
            return None if isinstance(kept, _Down) else kept
        wait = await self._ask(lambda: self.primary.take_turn(origin, floor))
        if isinstance(wait, _Down):  # still this worker's own (its next counts from its request's end: note_start)
            return None
        if wait:
            return False
        self._local_turns.pop(origin, None)  # the backend's now, on its way
        return None

    async def release(self, lease: Lease) -> None:
        """Release a lease from :meth:`claim`, whatever state the store is in."""
        try:
            await lease.release()
        except StorageUnavailable as exc:
            self._failed(exc)

    # -- state -----------------------------------------------------------------------------
    async def _ask(self, call: Callable[[], Awaitable[T]]) -> T | _Down:
        """``await call()`` on the backend, or :data:`_DOWN` when it is down or
        fails now (then the caller uses the in-process store)."""
        if self.down:
            return _DOWN
        try:
            answer = await call()
        except StorageUnavailable as exc:
            self._failed(exc)
            return _DOWN
        self._answered()
        return answer

    def _failed(self, exc: StorageUnavailable) -> None:
        self._count("storage/errors")
        first = self._down_until is None
        self._down_until = time.monotonic() + self.retry_after
        if first:
            self._count("storage/outages")
            logger.warning(
                "robots.txt store unreachable (%s): going on with the in-process cache, trying it again "
                "every %g s; meanwhile robots.txt may be fetched by each worker and Crawl-delay is kept "
                "per worker only",
                exc, self.retry_after,
            )  # fmt: skip

    def _answered(self) -> None:
        if self._down_until is not None:
            self._down_until = None
            self._count("storage/recoveries")
            logger.info("robots.txt store %s answers again", self.url)
