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

A resolution costs at most two round trips, one Lua script each
(``EVALSHA``; the scripts are loaded once per connection when the server does
not know them): :meth:`lookup` reads the entry and, when it is not fresh,
takes the lease in the same atomic step; :meth:`store` writes the entry (one
``HSET`` and its ``PEXPIRE``), notes the robots.txt request's start for
Crawl-delay when the file has one, and releases the lease.  A fresh entry
costs one round trip.  The leases a store holds are renewed together, by one
timer of the store (not a task per lease), in one pipeline.

Every failure (refused, reset, timeout, an error reply) is raised as
:class:`~.base.StorageUnavailable`; the middleware decides what it means.
The client gives up quickly (no backoff, one reconnection attempt, 5 s socket
timeouts unless the URL says otherwise, e.g. ``?socket_timeout=2``), and opens
at most :data:`MAX_CONNECTIONS` connections (``?max_connections=N``): a
command waits for a free one rather than failing.
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
#: seconds the client waits to connect, for an answer, and for a free connection
SOCKET_TIMEOUT = 5.0
#: connections to the server at most (``?max_connections=N`` in the URL sets another);
#: commands beyond wait for one: a few are enough for thousands of origins a second
MAX_CONNECTIONS = 32
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
#: fields of the entry hash, in the order :data:`_LOOKUP` returns them
FIELDS = ("v", "access", "status", "body", "content_type", "fetched_at", "expires_at", "url")
#: KEYS: entry, lock; ARGV: now (time.time() of the client), token, lease ms, version.
#: Returns {state, fields}: state 1 = fresh entry, 2 = lease granted, 0 = another holds it.
_LOOKUP = """
local e = redis.call('HMGET', KEYS[1], 'v', 'access', 'status', 'body', 'content_type', 'fetched_at',
                      'expires_at', 'url')
if e[1] == ARGV[4] and (tonumber(e[7]) or 0) > tonumber(ARGV[1]) then return {1, e} end
if redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[3]) then return {2, e} end
return {0, e}
"""
#: KEYS: entry, lock, pace; ARGV: token ('' for none), replace ('1': delete the old hash
#: first), keep ms (0: do not store), Crawl-delay floor us (0: none), then field, value...
_STORE = """
if redis.replicate_commands then redis.replicate_commands() end
local gap = tonumber(ARGV[4])
if gap > 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
  local start = math.max(now, tonumber(redis.call('GET', KEYS[3]) or '0'))
  redis.call('SET', KEYS[3], string.format('%.0f', start), 'PX', math.floor((start - now + gap) / 1000) + 1000)
end
if tonumber(ARGV[3]) > 0 then
  if ARGV[2] == '1' then redis.call('DEL', KEYS[1]) end
  redis.call('HSET', KEYS[1], unpack(ARGV, 5))
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
if ARGV[1] ~= '' and redis.call('GET', KEYS[2]) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 0
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
        self._pool: Any = None
        self._scripts: dict[str, Any] = {}
        #: leases held now (lock key -> lease), renewed together by :meth:`_renew_leases`
        self._held: dict[str, _RedisLease] = {}
        self._renewal: asyncio.Future[None] | None = None

    # -- life ------------------------------------------------------------------
    async def open(self) -> None:
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise StorageUnavailable(
                f"{self.url}: the Redis store needs asyncio: the asyncio reactor (TWISTED_REACTOR = "
                "'twisted.internet.asyncioreactor.AsyncioSelectorReactor') or TWISTED_REACTOR_ENABLED = False"
            ) from None
        try:
            # a bounded pool that waits for a free connection: redis-py's default pool
            # raises "Too many connections" past 100 commands in flight, which a burst
            # of new origins reaches (each one's lookup is a command)
            self._pool = self._aioredis.BlockingConnectionPool.from_url(
                self._connect_url,
                max_connections=MAX_CONNECTIONS,
                timeout=SOCKET_TIMEOUT,
                socket_timeout=SOCKET_TIMEOUT,
                socket_connect_timeout=SOCKET_TIMEOUT,
                retry=Retry(NoBackoff(), 1),
                decode_responses=False,
            )
        except ValueError as exc:
            raise StorageUnavailable(f"{self.url}: {exc}") from exc
        self._client = self._aioredis.Redis(connection_pool=self._pool)
        for name, source in (
            ("reserve", _RESERVE),
            ("renew", _RENEW),
            ("release", _RELEASE),
            ("lookup", _LOOKUP),
            ("store", _STORE),
        ):
            self._scripts[name] = self._client.register_script(source)
        # load them now, in one round trip: no first call per script meets NOSCRIPT and sends it again
        pipe = self._client.pipeline(transaction=False)
        for script in self._scripts.values():
            pipe.script_load(script.script)
        await self._guard(pipe.execute())
        self._renewal = asyncio.ensure_future(self._renew_leases())

    async def close(self) -> None:
        if self._renewal is not None:
            self._renewal.cancel()
            self._renewal = None
        self._held.clear()
        client, self._client = self._client, None
        pool, self._pool = self._pool, None
        if client is not None:
            closing = getattr(client, "aclose", None) or client.close  # aclose: redis 5.0.1+
            await self._guard(closing())
        if pool is not None:
            await self._guard(pool.disconnect())

    # -- entries ---------------------------------------------------------------------
    async def get(self, origin: str) -> RobotsEntry | None:
        key = self._key("robots", origin)
        values = await self._guard(self._redis().hmget(key, FIELDS))
        return self._decode(origin, values)

    def _decode(self, origin: str, values: list[bytes | None]) -> RobotsEntry | None:
        """The entry of ``values`` (the hash's :data:`FIELDS`, None where absent)."""
        version, access, status, body, content_type, fetched_at, expires_at, url = values
        if version != ENTRY_VERSION:
            return None
        try:
            return RobotsEntry(
                access=access.decode("ascii"),  # type: ignore[union-attr]
                status=int(status) if status else None,
                body=body or b"",
                content_type=content_type.decode("utf-8") if content_type is not None else None,
                fetched_at=float(fetched_at),  # type: ignore[arg-type]
                expires_at=float(expires_at),  # type: ignore[arg-type]
                url=(url or b"").decode("utf-8"),
            )
        except (AttributeError, TypeError, ValueError, UnicodeDecodeError):
            logger.warning("ignoring an unreadable robots.txt entry of %s in %s", origin, self.url)
            return None

    async def put(self, origin: str, entry: RobotsEntry) -> None:
        await self.store(origin, entry, None)

    def _fields(self, entry: RobotsEntry) -> list[bytes | str]:
        fields: list[bytes | str] = [
            "v", ENTRY_VERSION,
            "access", entry.access,
            "status", "" if entry.status is None else str(entry.status),
            "body", entry.body,
            "fetched_at", repr(entry.fetched_at),
            "expires_at", repr(entry.expires_at),
            "url", entry.url,
        ]  # fmt: skip
        if entry.content_type is not None:
            fields += ["content_type", entry.content_type]
        return fields

    # -- the two steps of a resolution ----------------------------------------------------
    async def lookup(self, origin: str, now: float) -> tuple[RobotsEntry | None, Lease | None]:
        key, lock = self._key("robots", origin), self._key("lock", origin)
        token = secrets.token_hex(16).encode("ascii")
        ttl = int(self.lock_seconds * 1000)
        self._redis()
        state, values = await self._guard(
            self._scripts["lookup"](keys=[key, lock], args=[repr(now), token, ttl, ENTRY_VERSION])
        )
        entry = self._decode(origin, values)
        if state == 1:
            if entry is not None:
                return entry, None
            return None, await self.claim(origin)  # fresh by its expiry, yet unreadable: fetch it again
        if state == 2:
            return entry, self._hold(lock, token, ttl, replace=any(value is not None for value in values))
        return entry, None

    async def store(self, origin: str, entry: RobotsEntry, lease: Lease | None, floor: float = 0.0) -> None:
        """Note the start (``floor``), write the entry and release ``lease``: one script."""
        token, replace = b"", True
        if isinstance(lease, _RedisLease) and lease.store is self:
            token, replace = lease.token, lease.replace
            self._held.pop(lease.key, None)
        retention = entry.retention()
        keep = int(min(retention, self.keep_seconds + 86_400) * 1000) + 1 if retention > 0 else 0
        keys = [self._key("robots", origin), self._key("lock", origin), self._key("pace", origin)]
        args: list[Any] = [token, "1" if replace else "0", keep, int(floor * 1_000_000)]
        if keep:
            args += self._fields(entry)
        await self._run_keys("store", keys, args)
        if lease is not None and not token:
            await lease.release()

    async def delete(self, origin: str) -> None:
        await self._guard(self._redis().delete(self._key("robots", origin)))

    # -- the fetch lease -----------------------------------------------------------------
    async def claim(self, origin: str) -> Lease | None:
        key = self._key("lock", origin)
        token = secrets.token_hex(16).encode("ascii")
        ttl = int(self.lock_seconds * 1000)
        if not await self._guard(self._redis().set(key, token, nx=True, px=ttl)):
            return None
        return self._hold(key, token, ttl)

    def _hold(self, key: str, token: bytes, ttl_ms: int, replace: bool = True) -> _RedisLease:
        lease = self._held[key] = _RedisLease(self, key, token, ttl_ms, replace)
        return lease

    async def _renew_leases(self) -> None:
        """Every third of a lease's life, renew every lease held, in one pipeline."""
        interval = self.lock_seconds / 3
        while True:
            await asyncio.sleep(interval)
            if not self._held or self._client is None:
                continue
            held = list(self._held.values())
            pipe = self._client.pipeline(transaction=False)
            for lease in held:
                await self._scripts["renew"](keys=[lease.key], args=[lease.token, lease.ttl_ms], client=pipe)
            try:
                answers = await self._guard(pipe.execute())
            except StorageUnavailable:
                continue  # the store is gone; the service notices on its next call
            for lease, renewed in zip(held, answers):
                if not renewed and self._held.get(lease.key) is lease:
                    del self._held[lease.key]
                    logger.warning(
                        "lost the robots.txt fetch lease %s (expired): another worker may fetch too", lease.key
                    )

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
        return await self._run_keys(name, [key], list(args))

    async def _run_keys(self, name: str, keys: list[str], args: list[Any]) -> Any:
        self._redis()
        return await self._guard(self._scripts[name](keys=keys, args=args))

    async def _guard(self, call: Awaitable[T]) -> T:
        """Await a client call; any failure becomes StorageUnavailable."""
        from redis.exceptions import RedisError

        try:
            return await call
        except (RedisError, OSError, asyncio.TimeoutError) as exc:
            raise StorageUnavailable(f"{self.url}: {type(exc).__name__}: {exc}") from exc


class _RedisLease(Lease):
    """A held ``<prefix>lock:<origin>`` key; its store renews it while held."""

    __slots__ = ("store", "key", "token", "ttl_ms", "replace")

    def __init__(self, store: RedisStorage, key: str, token: bytes, ttl_ms: int, replace: bool = True) -> None:
        self.store = store
        self.key = key
        self.token = token
        self.ttl_ms = ttl_ms
        #: an entry hash existed when the lease was granted: :meth:`RedisStorage.store` deletes it first
        self.replace = replace

    async def release(self) -> None:
        if self.store._held.get(self.key) is self:
            del self.store._held[self.key]
        await self.store._run_script("release", self.key, self.token)
