"""Where robots.txt results are kept between fetches.

One small async interface, so a persistent backend (SQLite, Redis: a later
issue) can sit where the memory one sits now.  What is stored is what was
fetched - the access result, the status and the body (at most the parse
limit) - not the parsed object: a backend shared between processes or kept
across runs stores bytes, and the reader parses them again.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True)
class RobotsEntry:
    """One origin's robots.txt result, as a backend keeps it."""

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

    def is_fresh(self, now: float | None = None) -> bool:
        return (time.time() if now is None else now) < self.expires_at


class RobotsStorage(ABC):
    """Async key-value store of :class:`RobotsEntry` by canonical origin.

    Backends may drop entries (bounded memory, TTL); a missing entry only costs
    a fetch.  ``open``/``close`` are called once per crawl.
    """

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

    async def delete(self, origin: str) -> None:  # noqa: B027 - optional
        """Forget ``origin``."""
