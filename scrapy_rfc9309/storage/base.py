"""Where robots.txt results are kept between fetches.

One small async interface, so the memory, SQLite and Redis backends sit in
the same place behind the middleware.  What is stored is what was fetched -
the access result, the status and the body (at most the parse limit) - not
the parsed object: a backend shared between processes or kept across runs
stores bytes, and the reader parses them again.

Two optional parts only matter to a store that other processes share
(``shared = True``, Redis): a lease, so that one worker of a cluster fetches
an origin's robots.txt while the others wait for its result, and turns, so
that the workers together keep an origin's Crawl-delay.
The defaults suit a store of one process: the lease is always granted and no
turn ever waits.

The robots service resolves an origin with two calls, each one round trip
to a shared store: :meth:`RobotsStorage.lookup` (the entry if it is fresh,
else the entry, stale or missing, together with the lease when no other
process holds it) and, after the fetch, :meth:`RobotsStorage.store` (write
the entry, note the robots.txt request's start for Crawl-delay, give the
lease back).  Their defaults are built on the small operations below, so a
store of one process, or a store class of one's own, needs only ``get`` and
``put``.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import FrozenInstanceError, dataclass
from typing import Any

from ..masking import mask_url

#: RFC 9309 section 2.3.1.4: a stored copy may stand in for an unreachable
#: robots.txt for about 30 days; persistent backends keep entries that long.
STALE_MAX_SECONDS = 30 * 86_400
#: seconds a store that failed mid-crawl is left alone before it is tried again
#: (``scrapy_rfc9309.settings.STORAGE_RETRY_SECONDS``; see :class:`~.fallback.FallbackStorage`)
RETRY_AFTER = 30.0


def display_url(url: str) -> str:
    """``url`` with its secrets masked, for logs and messages
    (:func:`scrapy_rfc9309.masking.mask_url`)."""
    return mask_url(url)


class StorageUnavailable(Exception):
    """The backend cannot be reached or read (connection refused, timeout,
    unreadable file).  The message names the store; the middleware turns it
    into a start-up error, or, mid-crawl, into a fallback to memory."""


class StorageBusy(StorageUnavailable):
    """The store is there, but another process holds it (a SQLite file under
    another process's lock).  At start-up the crawl does not stop for it: it
    starts on the in-process fallback and tries the store again later."""


class StorageNeedsAsyncio(StorageUnavailable):
    """The store runs on asyncio (the Redis store's ``redis.asyncio``) and the
    crawl has another Twisted reactor: the crawl is refused at start-up with
    one line saying what to set."""


@dataclass(init=False, repr=False, eq=False)
class RobotsEntry:
    """One origin's robots.txt result, as a backend keeps it.  Immutable, compared
    and hashed by value.  A dataclass (``fields``, ``replace``, ``asdict``) whose
    methods are written below, not generated: a dataclass's generated methods are
    compiled when the module is imported, about 4 M instructions of every crawl's
    start-up for this one."""

    #: "success", "unavailable" or "unreachable" (scrapy_rfc9309.robots.access.Access values)
    access: str
    #: the final HTTP status, or None when no response came (network error)
    status: int | None
    #: the body to parse (only for "success"; at most RFC9309_MAX_BYTES bytes)
    body: bytes = b""
    content_type: str | None = None
    #: wall-clock seconds (time.time()) of the fetch, and until when the entry is fresh
    fetched_at: float = 0.0
    expires_at: float = 0.0
    #: the URL the body finally came from (after redirects)
    url: str = ""
    #: a stored copy standing in for an unreachable robots.txt (RFC 9309 section
    #: 2.3.1.4): when the unreachable fetch was made (None: not a stand-in)
    checked_at: float | None = None

    def __init__(
        self,
        access: str,
        status: int | None,
        body: bytes = b"",
        content_type: str | None = None,
        fetched_at: float = 0.0,
        expires_at: float = 0.0,
        url: str = "",
        checked_at: float | None = None,
    ) -> None:
        put = object.__setattr__
        put(self, "access", access)
        put(self, "status", status)
        put(self, "body", body)
        put(self, "content_type", content_type)
        put(self, "fetched_at", fetched_at)
        put(self, "expires_at", expires_at)
        put(self, "url", url)
        put(self, "checked_at", checked_at)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RobotsEntry) or other.__class__ is not self.__class__:
            return NotImplemented
        return _entry_values(self) == _entry_values(other)

    def __hash__(self) -> int:
        return hash(_entry_values(self))

    def __repr__(self) -> str:
        return (
            f"RobotsEntry(access={self.access!r}, status={self.status!r}, body={self.body!r}, "
            f"content_type={self.content_type!r}, fetched_at={self.fetched_at!r}, expires_at={self.expires_at!r}, "
            f"url={self.url!r}, checked_at={self.checked_at!r})"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def is_fresh(self, now: float | None = None) -> bool:
        return (time.time() if now is None else now) < self.expires_at

    def age(self, now: float | None = None) -> float:
        """Seconds since the file was fetched."""
        return (time.time() if now is None else now) - self.fetched_at

    def retention(self, now: float | None = None) -> float:
        """Seconds a persistent backend should still keep the entry: while it
        is fresh, and while it may stand in for an unreachable file."""
        now = time.time() if now is None else now
        return max(self.expires_at, self.fetched_at + STALE_MAX_SECONDS) - now


def _entry_values(entry: RobotsEntry) -> tuple[Any, ...]:
    return (
        entry.access,
        entry.status,
        entry.body,
        entry.content_type,
        entry.fetched_at,
        entry.expires_at,
        entry.url,
        entry.checked_at,
    )


class Lease:
    """The right to fetch one origin's robots.txt on behalf of every process
    sharing the store.  This one, of a single-process store, holds nothing."""

    async def release(self) -> None:
        """Give the right back (after the result is stored)."""


class RobotsStorage(ABC):
    """Async key-value store of :class:`RobotsEntry` by canonical origin.

    Backends may drop entries (bounded memory, TTL); a missing entry only costs
    a fetch.  ``open``/``close`` are called once per crawl.  A backend raises
    :class:`StorageUnavailable` when it cannot do its job.
    """

    #: what the store is, for messages ("memory", "sqlite:///...", "redis://...")
    url: str = "memory"
    #: True when other processes read and write the same entries
    shared: bool = False
    #: seconds to go on without the store after it failed, before trying it again
    retry_after: float = RETRY_AFTER
    #: called with a stats key (under ``rfc9309/``) for each thing the store counts,
    #: e.g. ``storage/invalid_entries``; the crawl's :class:`~.fallback.FallbackStorage` sets it
    count: Callable[[str], None] = staticmethod(lambda key: None)

    async def open(self) -> None:  # noqa: B027 - optional hook
        """Connect, create tables... (nothing for the memory backend)."""

    async def close(self) -> None:  # noqa: B027 - optional hook
        """Flush and disconnect."""

    @abstractmethod
    async def get(self, origin: str) -> RobotsEntry | None:
        """The entry of ``origin``, fresh or stale, or None."""

    @abstractmethod
    async def put(self, origin: str, entry: RobotsEntry) -> None:
        """Store (or replace) the entry of ``origin``."""

    # -- for stores shared by several processes ---------------------------------
    async def claim(self, origin: str) -> Lease | None:
        """Become the one process that fetches ``origin``'s robots.txt: a
        :class:`Lease`, or None while another process holds it."""
        return Lease()

    async def take_turn(self, origin: str, floor: float) -> float:
        """Start a request on ``origin`` *now* if the previous start of any
        process (taken or noted) is at least ``floor`` seconds ago: record it
        and return 0.  Else record nothing and return the seconds until the
        origin is free.  A turn is never held for a start that may come late:
        the caller takes it only once the request can start at once, and asks
        again after the wait otherwise."""
        return 0.0

    async def note_start(self, origin: str, floor: float) -> None:  # noqa: B027 - optional
        """Record that a request to ``origin`` (its robots.txt) started now,
        so the next turn is ``floor`` seconds later."""

    async def keep_turn(self, origin: str, floor: float) -> bool | None:  # noqa: B027 - optional
        """The request of a turn this process took still waits to start (a
        full downloader): a store that holds a taken turn only for a while
        holds it on from now, so that no other process starts a request of
        ``origin`` before this one has.  False: the store cannot hold it
        (another process's turn is under way); the request takes a new turn."""

    # -- the two steps of a resolution -------------------------------------------------
    async def lookup(self, origin: str, now: float) -> tuple[RobotsEntry | None, Lease | None]:
        """``(entry, None)`` when the stored entry is fresh at ``now``; else
        ``(entry or None, lease)``: the stale entry (or None) and the fetch
        lease, which is None while another process holds it.  A shared store
        does both in one atomic step, so a lease is never granted over a
        fresh entry another process stored a moment before."""
        entry = await self.get(origin)
        if entry is not None and entry.is_fresh(now):
            return entry, None
        return entry, await self.claim(origin)

    async def store(self, origin: str, entry: RobotsEntry, lease: Lease | None, floor: float = 0.0) -> None:
        """After a fetch: note the robots.txt request's start when ``floor``
        (the origin's Crawl-delay, before the entry is visible, so no worker's
        first page follows the fetch too closely), store ``entry``, then
        release ``lease`` (when not None)."""
        if floor:
            await self.note_start(origin, floor)
        await self.put(origin, entry)
        if lease is not None:
            await lease.release()
