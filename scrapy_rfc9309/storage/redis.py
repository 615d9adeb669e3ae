"""A store shared by every worker of a cluster: Redis, through ``redis.asyncio``.

For crawls spread over processes or machines (scrapy-redis and the like): one
Redis server (``redis://``, ``rediss://``, ``unix://``), or a Redis Cluster
(``redis+cluster://host:port``, ``rediss+cluster://`` with TLS: any node; the
cluster client finds the others).  Four kinds of keys, all under a prefix
(the URL's ``?prefix=``, default ``rfc9309:``), the origin in braces: a
Redis Cluster hash tag, so that every key of one origin lives in one hash slot
and each script below runs on the one node that owns it (on one server the
braces change nothing):

* ``<prefix>robots:{<origin>}`` - the entry, in the layout of :mod:`.entries`
  (access result, status, fetch time, expiry, the body's SHA-256...).  It
  expires when it is no longer fresh *and* too old to stand in for an
  unreachable file (30 days).
* ``<prefix>body:{<SHA-256 in hex>}`` - a body, zlib-compressed, once for every
  origin serving it; its TTL is raised to the longest-kept entry's that names it.
* ``<prefix>lock:{<origin>}`` - the fetch lease: ``SET NX PX`` with a random
  token, so one worker fetches an origin's robots.txt while the others poll
  for its entry.  The holder renews it every few seconds; if the holder dies
  the key expires within :data:`LOCK_SECONDS` and another worker takes over.
  Release and renewal compare the token first (a Lua script), so a worker
  never frees a lease that expired and was taken by another.
* ``<prefix>pace:{<origin>}`` - the start time (Redis server clock, in
  microseconds) of the last request started on the origin.  A Lua script, in
  one atomic step, either takes the turn (``now >= last + floor``: records
  ``now``, marked "on its way", and returns 0) or returns the wait and records
  nothing (:meth:`take_turn`); the worker notes when its request really left
  (:meth:`note_start`, from the gate), and the next turn counts from then, so
  however many workers ask, and however late a loaded worker sends, the
  requests the server sees are at least ``floor`` apart.  Redis's own clock is
  used, so the workers' clocks need not agree.

A resolution costs at most two round trips, one Lua script each
(``EVALSHA``; the scripts are loaded when the store opens, on every master of
a cluster, and again on a node that does not know them, e.g. a replica
promoted since): :meth:`lookup` reads the entry (and its body) and, when it is
not fresh, takes the lease in the same atomic step; :meth:`store` writes the
entry and its body, notes the robots.txt request's start for Crawl-delay when
the file has one, and releases the lease.  A fresh entry costs one round
trip.  On a cluster a body's key is on the node its digest hashes to, so the
body is written by a script call of its own sent with the store's, and read
after the entry (a fresh entry: two round trips).  The leases a store holds
are renewed together, by one timer of the store (not a task per lease), in
one pipeline (on a cluster, one call per lease, sent at once).

Every key read is hostile until checked: a key of another type, a lock
without a TTL, a pace value that is garbage or ahead of the clock, an entry
out of range (:func:`.entries.read`) cost the origin a miss, never the store.

Every failure (refused, reset, timeout, an error reply) is raised as
:class:`~.base.StorageUnavailable`; the middleware decides what it means.
The client gives up quickly (no backoff, one reconnection attempt, 5 s socket
timeouts unless the URL says otherwise, e.g. ``?socket_timeout=2``; on one
server the timeout is for a whole call, not for each read: :class:`_Deadlines`), and opens
at most :data:`MAX_CONNECTIONS` connections (``?max_connections=N``; on a
cluster, commands in flight, so at most that many connections to each node):
a command waits for a free one rather than failing.

A plain ``redis://`` URL that names a node of a cluster is refused when the
store opens (``INFO cluster``, in the round trip that loads the scripts), with
the ``redis+cluster://`` URL to use instead: the cluster would answer the first
lookup of most origins with ``MOVED``, and the crawl would go on without its
shared store.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import logging
import secrets
import time
from collections.abc import Awaitable
from typing import Any, Literal, TypeVar
from urllib.parse import parse_qs, urlsplit

from . import entries
from .base import (
    STALE_MAX_SECONDS,
    Lease,
    RobotsEntry,
    RobotsStorage,
    StorageNeedsAsyncio,
    StorageUnavailable,
    display_url,
)
from .factory import DEFAULT_REDIS_PREFIX, split_prefix
from .pipelining import Pipeliner

logger = logging.getLogger(__name__)

T = TypeVar("T")

#: seconds a fetch lease lives without renewal (the wait after its holder died)
LOCK_SECONDS = 10.0
#: seconds the client waits to connect, for an answer, and for a free connection
SOCKET_TIMEOUT = 5.0
#: connections to the server at most (``?max_connections=N`` in the URL sets another);
#: commands beyond wait for one: a few are enough for thousands of origins a second
MAX_CONNECTIONS = 32
#: URL schemes of a Redis Cluster (any node of it); the scheme without ``+cluster`` is the node's
CLUSTER_SCHEMES = ("redis+cluster://", "rediss+cluster://")
#: Redis keeps a body this much longer than the entry that last named it
BODY_MARGIN_MS = 60_000
#: a body larger than this is compressed in a thread (zlib on 500 KB takes ~25 ms)
COMPRESS_INLINE_MAX = 64 * 1024
#: seconds a store of a fetched result (off every request's way) may wait to share a
#: pipeline with others: it trades that delay in releasing the fetch lease for CPU
#: (docs/benchmarks_crawl.md, "Why two broad-crawl measurements disagreed")
STORE_DELAY = 0.1

#: a turn taken is "on its way" until the worker notes that its request is done (note_start,
#: when it leaves the downloader, its response in): the others ask again every TURN_POLL_US
#: meanwhile, for at most TURN_HOLD_US or the floor if longer (a worker that died, or a request
#: dropped after its turn, holds the origin that long).  The next turn counts a floor from that
#: note, which comes after the server saw the request however late a loaded worker sent it;
#: counted from when the turn was taken, the two were whole turns of a busy loop apart
#: (docs/storage.md, "Crawl-delay for the cluster").
TURN_HOLD_US = 5_000_000
TURN_POLL_US = 50_000
#: a turn held on (keep_turn: its request waits for room in a full downloader, renewed every second;
#: marked 'k') waits this long for its note from each renewal: a worker's loop held up to this long
#: (a callback's CPU) after the last renewal, before the request is sent, loses no turn to another
#: worker; a worker that died while its request waited holds the origin as long
KEEP_HOLD_US = 15_000_000

#: Lua shared by the scripts: every key is read as hostile (another type, garbage, no TTL)
_LIB = """
local function str(k)  -- the string at k; nil when absent, and nil, true when of another type
  local v = redis.pcall('GET', k)
  if type(v) == 'table' then return nil, true end
  return v or nil, false
end
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local function last_start(k, now)  -- a pace key's start and its mark: 'w' on its way, 'k' held on, '' neither
  local v = str(k) or ''
  local mark = string.sub(v, -1)
  if mark == 'w' or mark == 'k' then v = string.sub(v, 1, -2) else mark = '' end
  local last = tonumber(v)
  if not last or last ~= last or last < 0 then return 0, '' end  -- garbage
  if last > now then return nil, '' end  -- ahead of the clock
  return last, mark
end
local function note(k, now, gap, mark)
  redis.call('SET', k, string.format('%.0f', now) .. mark, 'PX', math.floor(gap / 1000) + 1000)
end
local function take_lock(k, token, ms)  -- a lock without a TTL (or a longer one than any lease) is taken over
  if redis.call('SET', k, token, 'NX', 'PX', ms) then return true end
  local t = redis.call('PTTL', k)
  if t < 0 or t > tonumber(ms) then redis.call('SET', k, token, 'PX', ms) return true end
  return false
end
local function give_back(k, token)
  if token ~= '' and str(k) == token then redis.call('DEL', k) end
end
local function keep_body(k, body, keep, most)  -- kept as long as the longest-kept entry naming it
  local t = redis.call('PTTL', k)
  if t < keep or t > most then t = keep end
  redis.call('SET', k, body, 'PX', t)
end
"""
#: KEYS: pace; ARGV: floor us, 'take' (a turn if the origin is free, else the wait), 'note'
#: (the request whose turn it was is done: the next turn counts from now) or 'keep' (it still
#: waits to start: a turn on its way is held on from now), the longest a taken turn waits for
#: its note us, a poll us, the longest a turn held on waits for its note us.  A turn taken and
#: not noted yet is "on its way": the others poll until it is noted (or the wait for it ends),
#: then wait a floor from the note.
#: A start ahead of the server's clock is no start of a worker (garbage, or a clock stepped
#: back): it is replaced by now, so no request waits more than the floor for it.
_PACE = (
    _LIB
    + """
if redis.replicate_commands then redis.replicate_commands() end
local now = now_us()
local gap = tonumber(ARGV[1])
local last, mark = last_start(KEYS[1], now)
local hold = tonumber(ARGV[3])
if ARGV[2] == 'note' then note(KEYS[1], now, gap, '') return 0 end
if ARGV[2] == 'keep' then if mark ~= '' then note(KEYS[1], now, gap + tonumber(ARGV[5]), 'k') end return 0 end
if last == nil then note(KEYS[1], now, gap, '') return gap end
if mark == 'k' then hold = tonumber(ARGV[5]) end
if mark ~= '' and last + hold > now then return math.min(tonumber(ARGV[4]), last + hold - now) end
if last + gap > now then return last + gap - now end
note(KEYS[1], now, gap + hold, 'w')
return 0
"""
)
#: KEYS: entry, lock; ARGV: now (time.time() of the client), token.  What is the same for every
#: call of one store (@LEASE_MS@, the body key's @BODY_HEAD@ and @BODY_TAIL@ around its hex digest,
#: @READ_BODY@: whether the body is read here, on one server) is written into the source when the
#: store opens (:func:`_render`): an argument costs the client its encoding on every call.
#: Returns {state, entry, body, wrong type}: state 1 = fresh entry, 2 = lease granted, 0 = another holds it.
_LOOKUP = (
    _LIB
    + """
local function fresh(v, now)
  if #v < 21 or string.byte(v, 1) ~= @VERSION@ then return false end
  local ok, _, _, _, fetched, expires, flags = pcall(struct.unpack, '>BBHddB', v)
  if not ok then return false end
  local last = fetched
  if bit.band(flags, 2) ~= 0 then
    local at = 22
    if bit.band(flags, 1) ~= 0 then at = 54 end
    local fine, checked = pcall(struct.unpack, '>d', v, at)
    if not fine then return false end
    last = checked
  end
  if expires > last + @FRESH@ then expires = last + @FRESH@ end
  return expires > now
end
local v, wrong = str(KEYS[1])
local state = 0
if v and fresh(v, tonumber(ARGV[1])) then state = 1
elseif take_lock(KEYS[2], ARGV[2], @LEASE_MS@) then state = 2 end
local body = false
if v and @READ_BODY@ and #v >= 53 and bit.band(string.byte(v, 21), 1) ~= 0 then
  local hex = string.gsub(string.sub(v, 22, 53), '.', function(c) return string.format('%02x', string.byte(c)) end)
  body = str(@BODY_HEAD@ .. hex .. @BODY_TAIL@) or false
end
return {state, v or false, body, wrong and 1 or 0}
""".replace("@VERSION@", str(entries.ENTRY_VERSION)).replace("@FRESH@", str(int(entries.MAX_FRESH_SECONDS)))
)
#: KEYS: lock; ARGV: token
_CLAIM = (
    _LIB
    + """
if take_lock(KEYS[1], ARGV[1], @LEASE_MS@) then return 1 end
return 0
"""
)
#: KEYS: entry, lock, pace[, body]; ARGV: token ('' for none), keep ms (0: do not store),
#: Crawl-delay floor us (0: none), entry[, body].  A body is kept @BODY_MARGIN_MS@ longer than the
#: entry, at most @BODY_MOST_MS@ (the store's longest keep, written in when it opens).
_STORE = (
    _LIB
    + """
if redis.replicate_commands then redis.replicate_commands() end
local gap = tonumber(ARGV[3])
if gap > 0 then note(KEYS[3], now_us(), gap, '') end
local keep = tonumber(ARGV[2])
if keep > 0 then
  redis.call('SET', KEYS[1], ARGV[4], 'PX', keep)
  if KEYS[4] then keep_body(KEYS[4], ARGV[5], keep + @BODY_MARGIN_MS@, @BODY_MOST_MS@) end
end
give_back(KEYS[2], ARGV[1])
return 0
"""
)
#: KEYS: body; ARGV: body, the entry's keep ms (on a cluster: the body's key is on another node)
_BODY = (
    _LIB
    + """
keep_body(KEYS[1], ARGV[1], tonumber(ARGV[2]) + @BODY_MARGIN_MS@, @BODY_MOST_MS@)
return 0
"""
)
_RENEW = (
    _LIB
    + """
if str(KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
"""
)
_RELEASE = (
    _LIB
    + """
give_back(KEYS[1], ARGV[1])
return 0
"""
)


def _import_errors() -> Any:
    """``redis.exceptions`` (imported once, not on every call)."""
    import redis.exceptions

    return redis.exceptions


def _import_redis() -> Any:
    try:
        import redis.asyncio as aioredis
    except ImportError:
        raise ImportError(
            "RFC9309_STORAGE names a Redis server, but the redis package is not installed: "
            "pip install 'scrapy-rfc9309[redis]'"
        ) from None
    return aioredis


def check_url(url: str, prefix: str) -> None:
    """``ValueError`` naming ``RFC9309_STORAGE`` when a Redis store cannot be
    built from ``url`` (the redis package missing, a Redis Cluster URL with a
    database or a prefix with braces); nothing connects."""
    url, given = split_prefix(url)
    prefix = prefix if given is None else given
    try:
        _import_redis()
    except ImportError as exc:
        raise ValueError(f"RFC9309_STORAGE={display_url(url)!r}: {exc}") from None
    if url.lower().startswith(CLUSTER_SCHEMES):
        _check_cluster_url(display_url(url), _node_url(url), prefix)


class RedisStorage(RobotsStorage):
    """Entries, fetch leases and Crawl-delay turns in one Redis database."""

    shared = True

    def __init__(
        self,
        url: str,
        prefix: str = DEFAULT_REDIS_PREFIX,
        keep_seconds: float = STALE_MAX_SECONDS,
        lock_seconds: float = LOCK_SECONDS,
    ) -> None:
        self._aioredis = _import_redis()  # fail at start-up, not at the first request
        # a URL's ?prefix= is the store's, not redis-py's (its connections refuse it)
        url, given = split_prefix(url)
        if given is not None:
            prefix = given
        #: a Redis Cluster (``redis+cluster://``), reached through the cluster client
        self.cluster = url.lower().startswith(CLUSTER_SCHEMES)
        self._connect_url = _node_url(url) if self.cluster else url
        self.url = display_url(url)  # for messages
        if self.cluster:
            _check_cluster_url(self.url, self._connect_url, prefix)
        self.prefix = prefix
        self.keep_seconds = keep_seconds
        self.lock_seconds = lock_seconds
        self._client: Any = None
        self._pool: Any = None
        self._scripts: dict[str, Any] = {}
        #: leases held now (lock key -> lease), renewed together by :meth:`_renew_leases`
        self._held: dict[str, _RedisLease] = {}
        self._renewal: asyncio.Future[None] | None = None
        #: the commands in flight (see open): one waits for a free connection, up to SOCKET_TIMEOUT
        self._in_flight: asyncio.Semaphore | None = None
        #: the socket timeout of every call, on one server (see open)
        self._deadlines: _Deadlines | None = None
        #: what the pool's get_connection is given (see _connection_args)
        self._connection_args: tuple[str, ...] = ()
        #: connections of the pool kept between calls (see _exchange)
        self._idle: list[Any] = []
        self._errors = _import_errors()
        #: bodies are read and written with commands of their own, not inside the origin's
        #: scripts: on a Redis Cluster a body's key is on another node than its origin's
        self.bodies_apart = self.cluster
        #: look-ups and stores, sent together (one server: pipelines; a cluster: each on its own)
        self._pipeliner = Pipeliner(self._send_calls)
        #: lease tokens: random per store, counted per lease (unique across workers without
        #: a urandom call per look-up; a token only has to tell one holder from another)
        self._token_prefix = secrets.token_hex(8)
        self._tokens = itertools.count()

    # -- life ------------------------------------------------------------------
    async def open(self) -> None:
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            raise StorageNeedsAsyncio(f"{self.url}: the Redis store needs asyncio (redis.asyncio)") from None
        options = {
            "socket_timeout": SOCKET_TIMEOUT,
            "socket_connect_timeout": SOCKET_TIMEOUT,
            "retry": Retry(NoBackoff(), 1),
            "decode_responses": False,
        }
        try:
            if self.cluster:  # (max_connections is per node)
                self._client = self._aioredis.RedisCluster.from_url(
                    self._connect_url, max_connections=MAX_CONNECTIONS, **options
                )
            else:
                self._pool = self._aioredis.ConnectionPool.from_url(
                    self._connect_url, max_connections=MAX_CONNECTIONS, **options
                )
                # the socket timeout (the URL's, else SOCKET_TIMEOUT) is kept by the store for every
                # call, with one timer (_Deadlines), not by redis-py with a timer per read and a task
                # per write; connecting keeps its own (socket_connect_timeout)
                timeout = self._pool.connection_kwargs.get("socket_timeout")
                if timeout:
                    self._pool.connection_kwargs["socket_timeout"] = None
                    self._deadlines = _Deadlines(timeout)
                self._connection_args = _connection_args(self._pool)
                self._client = self._aioredis.Redis(connection_pool=self._pool)
        except ValueError as exc:
            raise StorageUnavailable(f"{self.url}: {exc}") from exc
        # the commands in flight, within the connections: redis-py's pools refuse one past them ("Too many
        # connections", which a burst of new origins' lookups reaches); its blocking pool waits, but arms a
        # timer per command (a tenth of a pipeline's CPU in a broad crawl)
        self._in_flight = asyncio.Semaphore(_max_connections(self._connect_url))
        head, tail = self._body_key_parts()
        constants = {
            "LEASE_MS": str(self._lease_ms()),
            "BODY_HEAD": _lua_string(head),
            "BODY_TAIL": _lua_string(tail),
            "READ_BODY": "false" if self.bodies_apart else "true",
            "BODY_MARGIN_MS": str(BODY_MARGIN_MS),
            "BODY_MOST_MS": str(self._body_most_ms()),
        }
        for name, source in (
            ("pace", _PACE),
            ("renew", _RENEW),
            ("release", _RELEASE),
            ("lookup", _LOOKUP),
            ("claim", _CLAIM),
            ("store", _STORE),
            ("body", _BODY),
        ):
            self._scripts[name] = self._client.register_script(_render(source, constants))
        if self.cluster:
            await self._guard(self._client.initialize())
            # SCRIPT LOAD goes to every master: no first call per script meets NOSCRIPT
            await self._guard(asyncio.gather(*(self._client.script_load(s.script) for s in self._scripts.values())))
        else:
            await self._open_server()
        self._renewal = asyncio.ensure_future(self._renew_leases())

    async def _open_server(self) -> None:
        """Load the scripts in one round trip (no first call per script meets
        NOSCRIPT and sends it again), and refuse a node of a cluster."""
        pipe = self._client.pipeline(transaction=False)
        pipe.info("cluster")
        for script in self._scripts.values():
            pipe.script_load(script.script)
        info, *loaded = await self._guard(pipe.execute(raise_on_error=False))
        for answer in loaded:
            if isinstance(answer, Exception):
                await self._guard(_raise(answer))
        # a server without INFO (renamed away) or a cluster section is not a cluster node
        if isinstance(info, dict) and str(info.get("cluster_enabled", "0")) == "1":
            raise StorageUnavailable(self._is_a_cluster_node())

    def _is_a_cluster_node(self) -> str:
        """The refusal of a ``redis://`` URL that names a node of a Redis Cluster."""
        return (
            f"{self.url} is a node of a Redis Cluster: set RFC9309_STORAGE = {_cluster_url(self.url)!r} "
            "(the cluster client keeps each origin's keys on the node that owns them)"
        )

    async def close(self) -> None:
        await self._pipeliner.drain()  # stores still waiting for their pipeline are written first
        if self._renewal is not None:
            self._renewal.cancel()
            self._renewal = None
        self._held.clear()
        self._idle.clear()  # (the pool's disconnect closes them)
        client, self._client = self._client, None
        pool, self._pool = self._pool, None
        if client is not None:
            closing = getattr(client, "aclose", None) or client.close  # aclose: redis 5.0.1+
            await self._guard(closing())
        if pool is not None:
            await self._guard(pool.disconnect())

    # -- entries ---------------------------------------------------------------------
    async def get(self, origin: str) -> RobotsEntry | None:
        data = await self._string(self._key("robots", origin))
        if data is False:
            entries.invalid(self, origin, "a key of another type")
            return None
        return await self._read(origin, data, None, time.time(), read_body=True)

    async def _read(
        self, origin: str, data: bytes | None, body: bytes | None, now: float, read_body: bool
    ) -> RobotsEntry | None:
        """The checked entry of ``data`` (None: none, or unusable), its body
        read here when ``read_body``."""
        if data is None:
            return None
        if read_body:
            digest = entries.entry_digest(data)
            if digest is not None:
                found = await self._string(self._body_key(digest))
                body = found or None
        return entries.read(self, origin, data, body, now)

    async def _string(self, key: str) -> bytes | None | Literal[False]:
        """The string at ``key``: None when absent, False when the key is of another type."""
        client = self._redis()
        if not self.cluster:  # (one server: through the store's connections, see _exchange)
            (answer,) = await self._guard(self._exchange([("GET", key)]))
            if not isinstance(answer, Exception):
                return answer
            if "WRONGTYPE" in str(answer):
                return False
            raise self._unavailable(answer) from answer
        try:
            return await self._guard(client.get(key))
        except StorageUnavailable as exc:
            if "WRONGTYPE" in str(exc):
                return False
            raise

    async def put(self, origin: str, entry: RobotsEntry) -> None:
        await self.store(origin, entry, None)

    # -- the two steps of a resolution ----------------------------------------------------
    async def lookup(self, origin: str, now: float) -> tuple[RobotsEntry | None, Lease | None]:
        key, lock = self._key("robots", origin), self._key("lock", origin)
        token = self._token()
        state, data, body, wrong = await self._batched("lookup", [key, lock], [repr(now), token])
        if wrong:
            entries.invalid(self, origin, "a key of another type")
        entry = await self._read(origin, data, body, now, read_body=self.bodies_apart)
        if state == 1:
            if entry is not None and entry.is_fresh(now):
                return entry, None
            return entry, await self.claim(origin)  # fresh by its expiry, yet unusable: fetch it again
        if state == 2:
            return entry, self._hold(lock, token, self._lease_ms())
        return entry, None

    async def store(self, origin: str, entry: RobotsEntry, lease: Lease | None, floor: float = 0.0) -> None:
        """Note the start (``floor``), write the entry and its body, release
        ``lease``: one script (on a cluster, a pipeline of two)."""
        token = b""
        if isinstance(lease, _RedisLease) and lease.store is self:
            token = lease.token
            self._held.pop(lease.key, None)
        retention = entry.retention()
        keep = int(min(retention, self.keep_seconds + 86_400) * 1000) + 1 if retention > 0 else 0
        keys = [self._key("robots", origin), self._key("lock", origin), self._key("pace", origin)]
        args: list[Any] = [token, keep, int(floor * 1_000_000)]
        body: list[Any] = []
        if keep:
            data, digest = entries.encode(origin, entry)
            args.append(data)
            if digest is not None:
                if len(entry.body) > COMPRESS_INLINE_MAX:
                    packed = await asyncio.to_thread(entries.compress, entry.body)
                else:
                    packed = entries.compress(entry.body)
                body = [self._body_key(digest), packed]
        else:
            args.append(b"")
        if body and self.bodies_apart:  # the body's node and the origin's, together
            await self._run_many([("body", body[:1], [packed, keep]), ("store", keys, args)])
        else:
            # a store with a floor is on the way of the origin's first page: it does not wait
            await self._batched("store", keys + body[:1], args + body[1:], 0.0 if floor else STORE_DELAY)
        if lease is not None and not token:
            await lease.release()

    # -- the fetch lease -----------------------------------------------------------------
    async def claim(self, origin: str) -> Lease | None:
        key = self._key("lock", origin)
        token = self._token()
        if not await self._run_keys("claim", [key], [token]):
            return None
        return self._hold(key, token, self._lease_ms())

    def _hold(self, key: str, token: bytes, ttl_ms: int) -> _RedisLease:
        lease = self._held[key] = _RedisLease(self, key, token, ttl_ms)
        return lease

    async def _renew_leases(self) -> None:
        """Every third of a lease's life, renew every lease held, in one pipeline (on a
        cluster, one call per lease, all sent at once)."""
        interval = self.lock_seconds / 3
        while True:
            await asyncio.sleep(interval)
            if not self._held or self._client is None:
                continue
            held = list(self._held.values())
            try:
                answers = await self._run_many([("renew", [lease.key], [lease.token, lease.ttl_ms]) for lease in held])
            except StorageUnavailable:
                continue  # the store is gone; the service notices on its next call
            for lease, renewed in zip(held, answers):
                if not renewed and self._held.get(lease.key) is lease:
                    del self._held[lease.key]
                    logger.warning(
                        "lost the robots.txt fetch lease %s (expired): another worker may fetch too", lease.key
                    )

    async def _run_many(self, calls: list[tuple[str, list[str], list[Any]]]) -> list[Any]:
        """Run script calls ``(name, keys, args)`` together and return their answers: one
        pipeline on one server; on a cluster, whose pipelines refuse scripts in redis-py,
        each call on its own, all at once (each to the node owning its keys)."""
        if self.cluster:
            return list(await asyncio.gather(*(self._run_keys(name, keys, args) for name, keys, args in calls)))
        answers = await self._send_calls(calls)
        for answer in answers:
            if isinstance(answer, StorageUnavailable):
                raise answer
        return answers

    async def _batched(self, name: str, keys: list[str], args: list[Any], delay: float = 0.0) -> Any:
        """Run a script with the next pipeline (:mod:`.pipelining`), at most ``delay`` s from now."""
        self._redis()
        if self.cluster:  # redis-py's cluster pipelines refuse scripts: each on its own, at once
            return await self._run_keys(name, keys, args)
        return await self._pipeliner.call((name, keys, args), delay)

    async def _send_calls(self, calls: list[tuple[str, list[str], list[Any]]]) -> list[Any]:
        """One pipeline of script calls; each call's answer, or the StorageUnavailable of that call."""
        self._redis()
        scripts = self._scripts
        commands = [("EVALSHA", scripts[name].sha, len(keys), *keys, *args) for name, keys, args in calls]
        answers = await self._guard(self._exchange(commands))
        unknown = [i for i, answer in enumerate(answers) if isinstance(answer, self._errors.NoScriptError)]
        if unknown:  # a server restarted (or flushed its scripts) since the store opened: load them again
            names = sorted({calls[i][0] for i in unknown})
            again = [("SCRIPT", "LOAD", scripts[name].script) for name in names] + [commands[i] for i in unknown]
            redone = await self._guard(self._exchange(again))
            for i, answer in zip(unknown, redone[len(names) :]):
                answers[i] = answer
        for i, answer in enumerate(answers):
            if isinstance(answer, Exception):  # the call's own error
                answers[i] = self._unavailable(answer)
                answers[i].__cause__ = answer
        return answers

    async def _exchange(self, commands: list[tuple[Any, ...]]) -> list[Any]:
        """Send ``commands`` in one write on a connection and read their answers (an error
        reply is the answer of its command): what redis-py's pipeline does, through its public
        connection API, without the pipeline's machinery (its command stack, response
        callbacks, observability hooks: a third of a look-up's CPU).  As there, a connection
        that fails (reset, closed: a server restarted) is dropped and the commands are sent
        once more on a new one.

        Every call to one server after the store opened comes here, and a connection stays
        with the store between calls (``_idle``) rather than going back to the pool: taking
        one from redis-py's pool and giving it back costs a sixth of a look-up.  The store
        takes one from the pool only when it has none idle, so it holds no more connections
        than it had calls under way at once, at most ``max_connections``: the pool's cap.
        A connection whose call failed or was cancelled goes back to the pool (which
        reconnects it)."""
        pool = self._pool
        idle = self._idle
        connection = idle.pop() if idle else await pool.get_connection(*self._connection_args)
        try:
            answers = await connection.retry.call_with_retry(
                lambda: _round_trip(connection, commands, self._errors.ResponseError),
                lambda error: connection.disconnect(),
            )
        except BaseException:
            await pool.release(connection)
            raise
        idle.append(connection)
        return answers

    # -- Crawl-delay across workers ----------------------------------------------------------
    async def take_turn(self, origin: str, floor: float) -> float:
        gap = int(floor * 1_000_000)
        micros = await self._run_script(
            "pace", self._key("pace", origin), gap, "take", max(TURN_HOLD_US, gap), TURN_POLL_US, max(KEEP_HOLD_US, gap)
        )
        return max(0, int(micros)) / 1_000_000

    async def note_start(self, origin: str, floor: float) -> None:
        await self._run_script("pace", self._key("pace", origin), int(floor * 1_000_000), "note", 0, 0, 0)

    async def keep_turn(self, origin: str, floor: float) -> None:
        gap = int(floor * 1_000_000)
        await self._run_script("pace", self._key("pace", origin), gap, "keep", 0, 0, max(KEEP_HOLD_US, gap))

    # -- helpers -------------------------------------------------------------------------
    def _key(self, kind: str, origin: str) -> str:
        return key_of(self.prefix, kind, origin)

    def _body_key(self, digest: bytes) -> str:
        return self._key("body", digest.hex())

    def _body_key_parts(self) -> tuple[str, str]:
        """The body key around its hex digest (the lookup script builds it)."""
        mark = bytes.fromhex("5eed" * 16)
        head, _, tail = self._body_key(mark).partition(mark.hex())
        return head, tail

    def _lease_ms(self) -> int:
        """A fetch lease's life without renewal, in ms."""
        return int(self.lock_seconds * 1000)

    def _body_most_ms(self) -> int:
        """The longest a body is kept, in ms: a margin past the longest-kept entry."""
        return int((self.keep_seconds + 86_400) * 1000) + BODY_MARGIN_MS

    def _token(self) -> bytes:
        return f"{self._token_prefix}-{next(self._tokens):x}".encode("ascii")

    def _redis(self) -> Any:
        if self._client is None:
            raise StorageUnavailable(f"{self.url} is not open")
        return self._client

    async def _run_script(self, name: str, key: str, *args: Any) -> Any:
        return await self._run_keys(name, [key], list(args))

    async def _run_keys(self, name: str, keys: list[str], args: list[Any]) -> Any:
        self._redis()
        if not self.cluster:  # (one server: through the store's connections, see _exchange)
            return (await self._run_many([(name, keys, args)]))[0]
        return await self._guard(self._scripts[name](keys=keys, args=args))

    async def _guard(self, call: Awaitable[T]) -> T:
        """Await a client call; any failure becomes StorageUnavailable."""
        errors = self._errors
        limit = self._in_flight
        try:
            if limit is None:
                return await call
            try:
                if limit.locked():  # all taken: wait for one, for as long as for a connection
                    await asyncio.wait_for(limit.acquire(), SOCKET_TIMEOUT)
                else:
                    await limit.acquire()  # at once
            except asyncio.TimeoutError:
                _close(call)
                raise StorageUnavailable(f"{self.url}: no free connection within {SOCKET_TIMEOUT:g} s") from None
            except BaseException:  # cancelled while waiting
                _close(call)
                raise
            deadlines = self._deadlines
            task = deadlines.watch() if deadlines is not None else None
            try:
                return await call
            except asyncio.CancelledError:
                if deadlines is None or task is None or not deadlines.expired(task):
                    raise  # cancelled by someone else
                raise StorageUnavailable(
                    f"{self.url}: TimeoutError: no answer within {deadlines.seconds:g} s"
                ) from None
            finally:
                if deadlines is not None and task is not None:
                    deadlines.forget(task)
                limit.release()
        except (errors.RedisError, errors.RedisClusterException, OSError, asyncio.TimeoutError) as exc:
            raise self._unavailable(exc) from exc

    def _unavailable(self, exc: Exception) -> StorageUnavailable:
        """The StorageUnavailable of a failed call."""
        errors = self._errors
        if isinstance(exc, (errors.MovedError, errors.ClusterCrossSlotError)) and not self.cluster:
            return StorageUnavailable(self._is_a_cluster_node())  # a node of a cluster, not a server of its own
        if isinstance(exc, errors.RedisClusterException) and "not enabled" in str(exc):
            return StorageUnavailable(
                f"{self.url} is not a node of a Redis Cluster: set RFC9309_STORAGE = {_server_url(self.url)!r}"
            )
        return StorageUnavailable(f"{self.url}: {type(exc).__name__}: {exc}")


def key_of(prefix: str, kind: str, origin: str) -> str:
    """The key of ``origin``'s ``kind`` (``robots``, ``lock``, ``pace``):
    ``<prefix><kind>:{<origin>}``.  The braces are a Redis Cluster hash tag: every
    key of an origin lands in one slot, so one node runs each script on all of them."""
    return f"{prefix}{kind}:{{{origin}}}"


def _render(source: str, constants: dict[str, str]) -> str:
    """``source`` with each ``@NAME@`` replaced by ``constants[NAME]`` (Lua text)."""
    for name, value in constants.items():
        source = source.replace(f"@{name}@", value)
    return source


def _lua_string(text: str) -> str:
    """``text`` as a Lua string literal: every byte escaped (``\\ddd``), so that no prefix
    can end the literal or change the script."""
    return '"' + "".join(f"\\{byte:03d}" for byte in text.encode("utf-8")) + '"'


def _node_url(url: str) -> str:
    """``redis+cluster://...`` -> ``redis://...`` (what redis-py reads), ``rediss`` alike."""
    scheme, rest = url.split("://", 1)
    return f"{scheme.lower().removesuffix('+cluster')}://{rest}"


def _cluster_url(url: str) -> str:
    """The ``+cluster`` URL of the node a server URL names (database 0 only)."""
    scheme, _, rest = url.partition("://")
    if scheme.lower() not in ("redis", "rediss"):
        return "redis+cluster://host:port"
    parts = urlsplit(f"{scheme}://{rest}")
    query = f"?{parts.query}" if parts.query else ""
    return f"{scheme.lower()}+cluster://{parts.netloc}{query}"


def _server_url(url: str) -> str:
    """The plain URL of the server a ``+cluster`` URL names."""
    parts = urlsplit(_node_url(url))
    query = f"?{parts.query}" if parts.query else ""
    return f"{parts.scheme}://{parts.netloc}/0{query}"


def _check_cluster_url(shown: str, url: str, prefix: str) -> None:
    """A cluster URL has no database but 0, and keys built on ``prefix`` keep one hash slot
    per origin: ``ValueError`` otherwise (at start-up)."""
    database = urlsplit(url).path.strip("/")
    if database not in ("", "0"):
        raise ValueError(
            f"RFC9309_STORAGE={shown!r}: a Redis Cluster has database 0 only; "
            "give a key prefix of its own instead (?prefix=myjob:)"
        )
    if "{" in prefix or "}" in prefix:
        raise ValueError(
            f"RFC9309_STORAGE={shown!r}: the key prefix {prefix!r} has braces, which a Redis Cluster cannot "
            "take: the store puts each origin in braces itself, so that all keys of an origin share one hash slot"
        )


def _max_connections(url: str) -> int:
    """``?max_connections=N`` of the URL, else :data:`MAX_CONNECTIONS`."""
    values = parse_qs(urlsplit(url).query).get("max_connections")
    try:
        return max(1, int(values[-1])) if values else MAX_CONNECTIONS
    except ValueError:
        return MAX_CONNECTIONS


async def _round_trip(connection: Any, commands: list[tuple[Any, ...]], error_reply: type[Exception]) -> list[Any]:
    """Write ``commands`` at once on ``connection``, then read their answers (``error_reply``:
    redis-py's ResponseError, an answer of its own)."""
    await connection.send_packed_command(connection.pack_commands(commands))
    answers: list[Any] = []
    for _ in commands:
        try:
            answers.append(await connection.read_response())
        except error_reply as exc:
            answers.append(exc)
    return answers


def _connection_args(pool: Any) -> tuple[str, ...]:
    """The arguments of ``pool.get_connection``: redis-py before 5.3 requires a command
    name, later versions warn when given one."""
    parameter = inspect.signature(pool.get_connection).parameters.get("command_name")
    return ("EVALSHA",) if parameter is not None and parameter.default is inspect.Parameter.empty else ()


async def _raise(exc: Exception) -> None:
    raise exc


def _close(call: Awaitable[Any]) -> None:
    """Close a coroutine that will not be awaited (no "never awaited" warning)."""
    close = getattr(call, "close", None)
    if close is not None:
        close()


class _Deadlines:
    """A timeout for every call to the server, kept by one timer for all of them.

    redis-py keeps ``socket_timeout`` with a timer per read and, per write, a task and a
    timer (``asyncio.wait_for``); each timer costs a push into the event loop's heap,
    which in a crawl holds hundreds of timers: together about a fifth of a round trip's
    CPU.  Instead, a call notes its task and its deadline here (:meth:`watch`); one
    timer, every quarter of the timeout while calls are under way, cancels a task whose
    call outlived its deadline, as ``asyncio.timeout`` would, and :meth:`expired` tells
    the call that the cancellation was a timeout (the caller raises it as
    StorageUnavailable; redis-py closes a connection whose read or write was cut short).
    A call gives up after 1 to 1.25 timeouts, however many reads it makes."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        #: the tasks of calls under way and their deadlines, in the order of their deadlines
        self._due: dict[asyncio.Task[Any], float] = {}
        #: tasks cancelled for a deadline, not yet told (:meth:`expired`)
        self._cancelled: set[asyncio.Task[Any]] = set()
        self._timer: asyncio.TimerHandle | None = None

    def watch(self) -> asyncio.Task[Any] | None:
        """Watch the current task's call; the task (None: not watched, e.g. a call within a watched one)."""
        task = asyncio.current_task()
        if task is None or task in self._due:
            return None
        loop = task.get_loop()
        self._due[task] = loop.time() + self.seconds
        if self._timer is None:
            self._timer = loop.call_later(self.seconds / 4, self._check)
        return task

    def forget(self, task: asyncio.Task[Any]) -> None:
        """The call of ``task`` is over."""
        self._due.pop(task, None)
        self._cancelled.discard(task)

    def expired(self, task: asyncio.Task[Any]) -> bool:
        """Whether ``task`` was cancelled for its deadline (and by nothing else as well)."""
        if task not in self._cancelled:
            return False
        self._cancelled.discard(task)
        uncancel = getattr(task, "uncancel", None)  # Python 3.11+: take back this cancellation
        return uncancel is None or uncancel() == 0

    def _check(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        for task, due in list(self._due.items()):
            if due > now:
                break  # (in the order of their deadlines)
            del self._due[task]
            self._cancelled.add(task)
            task.cancel()
        self._timer = loop.call_later(self.seconds / 4, self._check) if self._due else None


class _RedisLease(Lease):
    """A held ``<prefix>lock:{<origin>}`` key; its store renews it while held."""

    __slots__ = ("store", "key", "token", "ttl_ms")

    def __init__(self, store: RedisStorage, key: str, token: bytes, ttl_ms: int) -> None:
        self.store = store
        self.key = key
        self.token = token
        self.ttl_ms = ttl_ms

    async def release(self) -> None:
        if self.store._held.get(self.key) is self:
            del self.store._held[self.key]
        await self.store._run_script("release", self.key, self.token)
