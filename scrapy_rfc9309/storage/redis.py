"""A store shared by every worker of a cluster: Redis, through ``redis.asyncio``.

For crawls spread over processes or machines (scrapy-redis and the like).
Three kinds of keys, all under a prefix (``RFC9309_REDIS_PREFIX``, default
``rfc9309:``):

* ``<prefix>robots:<origin>`` - a hash with the entry (access result, status,
  body, content type, fetch time, expiry, final URL).  It expires when it is
  no longer fresh *and* too old to stand in for an unreachable file (30 days).
* ``<prefix>lock:<origin>`` - the fetch lease: ``SET NX PX`` with a random
  token, so one worker fetches an origin's robots.txt while the others poll
  for its entry.  The holder renews it every few seconds; if the holder dies
  the key expires within :data:`LOCK_SECONDS` and another worker takes over.
  Release and renewal compare the token first (a Lua script), so a worker
  never frees a lease that expired and was taken by another.
* ``<prefix>pace:<origin>`` - the start time (Redis server clock, in
  microseconds) of the last request started on the origin.  A Lua script, in
  one atomic step, either takes the turn (``now >= last + floor``: records
  ``now`` and returns 0) or returns the wait and records nothing
  (:meth:`take_turn`), so however many workers ask, their starts are at least
  ``floor`` apart; :meth:`reserve` books the next start ``max(now, last +
  floor)`` ahead instead.  Redis's own clock is used, so the workers' clocks
  need not agree.

Every failure (refused, reset, timeout, an error reply) is raised as
:class:`~.base.StorageUnavailable`; the middleware decides what it means.
The client gives up quickly (no backoff, one reconnection attempt, 5 s socket
timeouts unless the URL says otherwise, e.g. ``?socket_timeout=2``).
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable
from typing import Any, TypeVar

from .base import STALE_MAX_SECONDS, Lease, RobotsEntry, RobotsStorage, StorageUnavailable, display_url

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: seconds a fetch lease lives without renewal (the wait after its holder died)
LOCK_SECONDS = 10.0
#: seconds the client waits to connect, and for an answer
SOCKET_TIMEOUT = 5.0
#: version of the hash layout; an entry of another version is ignored
ENTRY_VERSION = b"1"

_RESERVE = """
if redis.replicate_commands then redis.replicate_commands() end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local gap = tonumber(ARGV[1])
local last = tonumber(redis.call('GET', KEYS[1]) or '0')
local start = now
if last + gap > now then start = last + gap end
if ARGV[2] == 'take' and start > now then return start - now end
if ARGV[2] == 'note' then start = math.max(now, last) end
redis.call('SET', KEYS[1], string.format('%.0f', start), 'PX', math.floor((start - now + gap) / 1000) + 1000)
return start - now
"""
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def _import_redis() -> Any:
    try:
        import redis.asyncio as aioredis
    except ImportError:
        raise ImportError(
            "RFC9309_STORAGE names a Redis server, but the redis package is not installed: "
            "pip install 'scrapy-rfc9309[redis]'"
        ) from None
    return aioredis


class RedisStorage(RobotsStorage):
    """Entries, fetch leases and Crawl-delay reservations in one Redis database."""

    shared = True

    def __init__(
        self,
        url: str,
        prefix: str = "rfc9309:",
        keep_seconds: float = STALE_MAX_SECONDS,
        lock_seconds: float = LOCK_SECONDS,
    ) -> None:
        self._aioredis = _import_redis()  # fail at start-up, not at the first request
        self._connect_url = url
        self.url = display_url(url)  # for messages
        self.prefix = prefix
        self.keep_seconds = keep_seconds
        self.lock_seconds = lock_seconds
        self._client: Any = None
        self._scripts: dict[str, Any] = {}

    # -- life ------------------------------------------------------------------
    async def open(self) -> None:
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise StorageUnavailable(
                f"{self.url}: the Redis store needs the asyncio reactor: TWISTED_REACTOR = "
                "'twisted.internet.asyncioreactor.AsyncioSelectorReactor'"
            ) from None
        try:
            self._client = self._aioredis.Redis.from_url(
                self._connect_url,
                socket_timeout=SOCKET_TIMEOUT,
                socket_connect_timeout=SOCKET_TIMEOUT,
                retry=Retry(NoBackoff(), 1),
                decode_responses=False,
            )
        except ValueError as exc:
            raise StorageUnavailable(f"{self.url}: {exc}") from exc
        for name, source in (("reserve", _RESERVE), ("renew", _RENEW), ("release", _RELEASE)):
            self._scripts[name] = self._client.register_script(source)
        await self._guard(self._client.ping())

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            closing = getattr(client, "aclose", None) or client.close  # aclose: redis 5.0.1+
            await self._guard(closing())

    # -- entries ---------------------------------------------------------------------
    async def get(self, origin: str) -> RobotsEntry | None:
        fields = await self._guard(self._redis().hgetall(self._key("robots", origin)))
        if not fields or fields.get(b"v") != ENTRY_VERSION:
            return None
        try:
            status = fields.get(b"status", b"")
            content_type = fields.get(b"content_type")
            return RobotsEntry(
                access=fields[b"access"].decode("ascii"),
                status=int(status) if status else None,
                body=fields.get(b"body", b""),
                content_type=content_type.decode("utf-8") if content_type is not None else None,
                fetched_at=float(fields[b"fetched_at"]),
                expires_at=float(fields[b"expires_at"]),
                url=fields.get(b"url", b"").decode("utf-8"),
            )
        except (KeyError, ValueError, UnicodeDecodeError):
            logger.warning("ignoring an unreadable robots.txt entry of %s in %s", origin, self.url)
            return None

    async def put(self, origin: str, entry: RobotsEntry) -> None:
        retention = entry.retention()
        if retention <= 0:
            return
        mapping: dict[str, bytes | str] = {
            "v": ENTRY_VERSION,
            "access": entry.access,
            "status": "" if entry.status is None else str(entry.status),
            "body": entry.body,
            "fetched_at": repr(entry.fetched_at),
            "expires_at": repr(entry.expires_at),
            "url": entry.url,
        }
        if entry.content_type is not None:
            mapping["content_type"] = entry.content_type
        key = self._key("robots", origin)
        pipe = self._redis().pipeline(transaction=True)
        pipe.delete(key)
        pipe.hset(key, mapping=mapping)
        pipe.pexpire(key, int(min(retention, self.keep_seconds + 86_400) * 1000) + 1)
        await self._guard(pipe.execute())

    async def delete(self, origin: str) -> None:
        await self._guard(self._redis().delete(self._key("robots", origin)))

    # -- the fetch lease -----------------------------------------------------------------
    async def claim(self, origin: str) -> Lease | None:
        key = self._key("lock", origin)
        token = secrets.token_hex(16).encode("ascii")
        ttl = int(self.lock_seconds * 1000)
        if not await self._guard(self._redis().set(key, token, nx=True, px=ttl)):
            return None
        return _RedisLease(self, key, token, ttl)

    # -- Crawl-delay across workers ----------------------------------------------------------
    async def reserve(self, origin: str, floor: float) -> float:
        micros = await self._run_script("reserve", self._key("pace", origin), int(floor * 1_000_000), "reserve")
        return max(0, int(micros)) / 1_000_000

    async def take_turn(self, origin: str, floor: float) -> float:
        micros = await self._run_script("reserve", self._key("pace", origin), int(floor * 1_000_000), "take")
        return max(0, int(micros)) / 1_000_000

    async def note_start(self, origin: str, floor: float) -> None:
        await self._run_script("reserve", self._key("pace", origin), int(floor * 1_000_000), "note")

    # -- helpers -------------------------------------------------------------------------
    def _key(self, kind: str, origin: str) -> str:
        return f"{self.prefix}{kind}:{origin}"

    def _redis(self) -> Any:
        if self._client is None:
            raise StorageUnavailable(f"{self.url} is not open")
        return self._client

    async def _run_script(self, name: str, key: str, *args: Any) -> Any:
        self._redis()
        return await self._guard(self._scripts[name](keys=[key], args=list(args)))

    async def _guard(self, call: Awaitable[T]) -> T:
        """Await a client call; any failure becomes StorageUnavailable."""
        from redis.exceptions import RedisError

        try:
            return await call
        except (RedisError, OSError, asyncio.TimeoutError) as exc:
            raise StorageUnavailable(f"{self.url}: {type(exc).__name__}: {exc}") from exc


class _RedisLease(Lease):
    """A held ``<prefix>lock:<origin>`` key, renewed in the background."""

    def __init__(self, store: RedisStorage, key: str, token: bytes, ttl_ms: int) -> None:
        self._store = store
        self._key = key
        self._token = token
        self._ttl_ms = ttl_ms
        self._renewal = asyncio.ensure_future(self._renew())

    async def _renew(self) -> None:
        interval = self._ttl_ms / 3000
        while True:
            await asyncio.sleep(interval)
            try:
                held = await self._store._run_script("renew", self._key, self._token, self._ttl_ms)
            except StorageUnavailable:
                return  # the store is gone; the middleware notices on its next call
            if not held:
                logger.warning("lost the robots.txt fetch lease %s (expired): another worker may fetch too", self._key)
                return

    async def release(self) -> None:
        self._renewal.cancel()
        await self._store._run_script("release", self._key, self._token)
