"""One robots service per crawl: what governs each origin, from an LRU of :class:`Known` results over the store (a
shared one: fetch lease, cluster-wide Crawl-delay turns).  Each origin is resolved once at a time: robots.txt, then
each of :data:`FILES` the crawl reads, every hop robots-checked, paced like a page.  No Scrapy import."""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import inspect
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Generator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, NamedTuple
from urllib.parse import urlsplit

from twisted.internet.defer import Deferred, DeferredLock

from . import compat
from .counts import STATS, Counts
from .masking import mask_text, mask_url
from .origins import origin_of, resource_url
from .robots import RobotsTxt, parse
from .robots.access import Access, cache_seconds, policy_for
from .robots.steps import finish
from .robots.text import shorten
from .storage import STALE_MAX_SECONDS, FallbackStorage, Lease, LruDict, RobotsEntry

if TYPE_CHECKING:
    from .fetch import FetchResult, RobotsFetcher
    from .settings import OriginPolicy, Rfc9309Settings

logger = logging.getLogger(__name__)
#: a request's own declared purposes (usage categories), overriding RFC9309_USAGE
META_USAGE = "rfc9309_usage"

#: "wait" mode: first retry after this many seconds, doubling up to the cap
WAIT_FIRST_DELAY, WAIT_MAX_DELAY = 1.0, 60.0
#: a shared store's fetch lease: poll the holder's result this often (doubling), wait this long past its longest fetch
CLAIM_POLL_FIRST, CLAIM_POLL_MAX, CLAIM_MARGIN = 0.05, 0.5, 10.0
#: a larger robots.txt is parsed and compiled in steps of at most PARSE_STEP_SECONDS (docs/reliability.md)
STEPPED_PARSE_BYTES, PARSE_STEP_SECONDS = 8_192, 0.002
#: a line whose value is an RFC 9651 dictionary: the parser imports http_sf for it, 10-30 ms of the loop at once
#: (found in a lower-cased copy: two C-speed finds cost a fifth of a case-insensitive regex, per origin)
_SF_NAMES = (b"content-signal", b"content-usage")


def preload_structured_fields() -> None:
    """Import http_sf (in a worker thread: its import would hold the loop 10-30 ms at once)."""
    import http_sf  # noqa: F401


#: the stats class of a fetch that ended on a redirect robots.txt disallows (not followed)
DISALLOWED_HOP = "3xx_disallowed"


class NotResolved(Exception):
    """The spider began to close before the origin's robots.txt was known."""

    def __init__(self, origin: str) -> None:
        super().__init__(f"robots.txt of {origin} was not known when the spider began to close")
        self.origin = origin


class OriginFile(NamedTuple):
    """A file of a :class:`FileKind` as used: what it states (``parsed``, empty when not read), until when, how it
    was had (an :class:`Access` value, or "disallowed" by robots.txt), its body's SHA-256, the URL asked."""

    parsed: Any
    expires_at: float
    access: str
    status: int | None = None
    sha256: str | None = None
    url: str = ""


class FileKind(NamedTuple):
    """A file needed where usage is read: ``url(origin, robots)`` (None: none), ``parsing(body or None, url, sha256,
    licenses held)``: steps to what it states (``stating``); kept in :class:`Known`'s ``key``, also its stats prefix."""

    name: str
    key: str
    module: str
    url: Callable[[str, RobotsTxt], str | None]
    parsing: Callable[[bytes | None, str, str | None, tuple[str, ...]], Generator[Any, None, Any]]
    stating: str

    @property
    def max_bytes(self) -> int:
        return int(_core(self.module).MAX_FILE_BYTES)


def _core(module: str) -> Any:
    """``robots.tdmrep`` or ``robots.rsl``, imported when first read (a crawl reading none saves ~7 M instructions)."""
    return importlib.import_module(f"{__package__}.robots.{module}")


TDMREP = FileKind(
    "tdmrep.json", "tdmrep", "tdmrep", lambda origin, _: resource_url(origin, _core("tdmrep").PATH),
    lambda body, *_: _core("tdmrep").TdmRep.parsing(body), "rules",
)  # fmt: skip
#: RSL: robots.txt's first License line, else the first a page named (RobotsService.adopt_license), maybe on another host
LICENSE = FileKind(
    "license", "license", "rsl", lambda _, robots: robots.licenses[0] if robots.licenses else None,
    lambda body, url, sha, held: _core("rsl").License.parsing(body, mask_url(url), sha, _core("rsl").holds(url, held)), "terms",
)  # fmt: skip
FILES: tuple[FileKind, ...] = (TDMREP, LICENSE)  # fetched in this order


class Known(NamedTuple):
    """What governs an origin: ``entry``, its policy, the ``token`` (``tokens``: all must allow), the ``floor``
    (``capped_from``: what the cap cut), the body's SHA-256, each of :data:`FILES` (None: not asked, or none named),
    until when (see adopt_license).  NamedTuples: a frozen dataclass costs ~5 M instructions of start-up each."""

    entry: RobotsEntry
    robots: RobotsTxt
    token: str
    floor: float = 0.0
    capped_from: float | None = None
    tokens: tuple[str, ...] = ()
    sha256: str | None = None
    tdmrep: OriginFile | None = None
    license: OriginFile | None = None
    expires_at: float = 0.0


#: listeners: (origin, known, previous known or None, the request that triggered the fetch or None);
#: (origin, the fetch just made); (origin, kind, file, its entry, the fetch or None when read from the store)
ReadyListener = Callable[[str, Known, "Known | None", Any], "Awaitable[None] | None"]
FetchListener = Callable[[str, "FetchResult"], None]
FileListener = Callable[[str, FileKind, OriginFile, RobotsEntry, "FetchResult | None"], None]


def store_key(origin: str, path: str | None = None, kind: str = "tdmrep") -> str:
    """The store key of a ``kind`` of file at ``path`` (tdmrep.json's) on ``origin``: no origin's, nor another kind's."""
    return origin + (_core("tdmrep").PATH if path is None else path) + ("" if kind == "tdmrep" else f"#{kind}")


class _Pending:
    """The one resolution in flight for an origin (``files``: its files too), its waiters; once done, it may store."""

    __slots__ = ("files", "waiters", "known", "error", "done", "task", "robots")

    def __init__(self, files: bool) -> None:
        self.files, self.done = files, False
        self.robots: RobotsTxt | None = None  # its policy, once known (its files are resolved next)
        self.waiters: list[Deferred] = []
        self.known: Known | None = None
        self.error: BaseException | None = None
        self.task: Deferred | None = None

    async def wait(self) -> Known:
        if self.done:
            if self.error is not None:
                raise self.error
            return self.known  # type: ignore[return-value]  # set whenever no error is
        return await compat.wait_for(self.waiter())

    def waiter(self) -> Deferred:  # fired by finish() (the resolution not done yet)
        self.waiters.append(waiter := Deferred[Known]())
        return waiter

    def finish(self, known: Known | None, error: BaseException | None = None) -> None:
        if not self.done:
            self.done, self.known, self.error = True, known, error
            for waiter in self.waiters:  # (none added once done)
                waiter.errback(error) if error is not None else waiter.callback(known)


class RobotsService:
    """Per-origin resolution for one crawl (see the module docstring)."""

    def __init__(self, settings: Rfc9309Settings, fetcher: RobotsFetcher, storage: FallbackStorage, stats: Any) -> None:
        self.settings, self.fetcher, self.storage = settings, fetcher, storage
        self.counts, self._stats, self._reads = Counts(stats), stats, settings if settings.reads_pages else None
        self.closed = False  # the spider began to close: no fetch starts, waiters get NotResolved
        self.paces = storage.shared and settings.crawl_delay  # a store shared with other processes paces
        self._known: LruDict[str, Known] = LruDict(settings.cache_max_origins, on_evict=self._evicted)
        self._page_licenses: dict[str, str] = {}  # an origin's license a page named (robots.txt naming none)
        self._pending: dict[str, _Pending] = {}
        self._tasks: set[Deferred] = set()
        self._turns: dict[str, DeferredLock] = {}
        self._ready: list[ReadyListener] = []
        self._forget: list[Callable[[str], None]] = []
        self._fetched: list[FetchListener] = []
        self._files: list[FileListener] = []
        # listeners, called: on_ready (maybe a coroutine function) as an origin's result takes effect, before its
        # waiters; on_fetch after each robots.txt fetch (retries too; not ``inspect``), before its result is used;
        # on_forget(origin) as the cache forgets an origin; on_file as a file of FILES takes effect (fetched or stored)
        self.on_ready, self.on_fetch = self._ready.append, self._fetched.append
        self.on_forget, self.on_file = self._forget.append, self._files.append
        self.known = self._known.peek  # an origin's cached result, fresh or not, without touching its LRU place
        self.pending = self._pending.__contains__  # whether an origin's resolution is in flight
        self.open = storage.open  # opens the store (``StorageUnavailable`` when it cannot be reached)
        #: the gate (``file_turn(origin, trigger, floor)`` -> done callback; ``fetched(...)``): per-slot turns, if any
        self.pacer: Any = None

    def fresh(self, origin: str, files: bool = False) -> Known | None:
        """The fresh result of ``origin`` (with its other files too: ``files``), or None; no I/O."""
        known = self._known.get(origin)  # (every file of FILES is resolved with the first one)
        fresh = known is not None and time.time() < known.expires_at and (known.tdmrep is not None or not files)
        return known if fresh else None

    def reads(self, origin: str, meta: Any = ()) -> bool:
        """Whether ``origin``'s usage statements are read (a purpose, the report), or ``meta`` declares one: files too."""
        return META_USAGE in meta or bool((s := self._reads) and (s.usage_report or s.for_origin(origin).usage))

    def adopt_license(self, origin: str, url: str) -> None:
        """A page names RSL license ``url``: adopted where usage is read and robots.txt names none (next ones wait)."""
        known = self._known.peek(origin)
        if known is None or known.robots.licenses or origin in self._page_licenses or not self.reads(origin):
            return
        self._page_licenses[origin] = url
        self.counts.inc("license/page_named")
        logger.debug("%s names the license %s: its next requests wait for it", origin, mask_url(url))
        self._known.put(origin, Known(*known[:-1], 0.0))  # expires_at, its last field (robots.txt's entry: still fresh)

    def prefetch(self, origin: str, trigger: Any = None, files: bool = False) -> None:
        """Start resolving ``origin`` if neither known nor in flight, and the robots.txt lane has a place."""
        busy = self.closed or origin in self._pending or len(self._pending) >= self.settings.fetch_concurrency
        if not busy and self.fresh(origin, files) is None:
            self._start(origin, trigger, files)

    async def resolve(self, origin: str, trigger: Any = None, files: bool = False) -> Known:
        """What governs ``origin`` (``files``: its other files too), cached or resolved; NotResolved once closing."""
        if (known := self.fresh(origin, files)) is not None:
            return known
        self._live(origin)
        if (pending := self._pending.get(origin)) is not None and files and not pending.files:
            if pending.done:  # robots.txt alone, only storing its result now: one more resolution, for the files
                return await self._start(origin, trigger, files).wait()
            await pending.wait()  # robots.txt alone: then one more resolution, for the files
            return await self.resolve(origin, trigger, files)
        return await (pending or self._start(origin, trigger, files)).wait()

    def resolving(self, origin: str, trigger: Any = None, files: bool = False) -> Deferred:
        """:meth:`resolve` as a Deferred: a waiter of the resolution in flight, no task of its own (the gate's hold)."""
        if (pending := self._pending.get(origin)) is None and not self.closed and self.fresh(origin, files) is None:
            pending = self._start(origin, trigger, files)
        if pending is None or pending.done or files and not pending.files:
            return compat.spawn(self.resolve(origin, trigger, files))
        return pending.waiter()

    async def inspect(self, origin: str, unreachable: str | None = None) -> tuple[FetchResult, RobotsTxt]:
        """Fetch ``origin``'s robots.txt once, now (no cache, store, retries), and its policy: ``scrapy robots``."""
        result = await self.fetcher.fetch(origin)
        self._count_fetch(origin, result)
        unreachable = self.settings.for_origin(origin).unreachable if unreachable is None else unreachable
        return result, self.policy_of(self.entry_of(result), unreachable)

    def floor_for(self, robots: RobotsTxt, token: str | tuple[str, ...]) -> tuple[float, float | None]:
        """``(floor, capped_from)``: seconds between two requests of ``token`` (the largest), capped by the settings."""
        tokens = (token,) if isinstance(token, str) else token
        delay = max((robots.min_delay(t) or 0.0 for t in tokens), default=0.0) if self.settings.crawl_delay else 0.0
        cap = self.settings.max_crawl_delay
        return (0.0, None) if delay <= 0 else (delay, None) if delay <= cap else (cap, delay)

    async def wait_turn(self, origin: str, floor: float, since: float | None = None) -> None:
        """Shared store: return once a request of ``origin`` may start, ``floor`` after any worker's last start."""
        lock = self._turns.setdefault(origin, DeferredLock())
        await compat.wait_for(lock.acquire())
        began = time.monotonic() if since is None else since
        try:
            self._live(origin)  # a turn is never taken once the spider is closing
            while (wait := await self.storage.take_turn(origin, floor)) > 0:
                await self._sleep(wait, origin)
        finally:
            lock.release()
            if not lock.locked and not lock.waiting:
                self._turns.pop(origin, None)
        if (waited := round(time.monotonic() - began, 3)) >= 0.001:
            self.counts.inc("crawl_delay/cluster/requests_held")
            self._stats.max_value(STATS + "crawl_delay/cluster/max_wait", waited)

    async def note_start(self, origin: str, floor: float, held: Any = None) -> None:
        """A cluster turn's request is done (or starting, no gate): the next counts from now.  With ``held`` (the gate's
        tracked request, still waiting), its turn is held on instead, and lapsed (``held.turn`` zeroed) if the store cannot."""
        try:
            if await (self.storage.keep_turn if held else self.storage.note_start)(origin, floor) is False:
                held.turn = 0.0  # (keep_turn's answer)
        except Exception:  # noqa: BLE001 - a store problem is counted by the store; the hold ends the turn
            logger.debug("could not note the start of a request of %s", origin, exc_info=True)

    def shutdown(self) -> None:
        """The spider began to close: start nothing more, wake every waiter (the gate says what becomes of them)."""
        self.closed = True  # (a second call finds nothing left to stop)
        if pending := [(origin, entry) for origin, entry in self._pending.items() if not entry.done]:
            logger.debug("scrapy-rfc9309: the spider is closing; %d resolution(s) stopped", len(pending))
        for origin, entry in pending:  # (the resolutions done are only storing their result: close waits for them)
            entry.finish(None, NotResolved(origin))
            entry.task.cancel()  # type: ignore[union-attr]  # set as the entry is made (_start), before any await
        self._turns.clear()

    async def close(self) -> None:
        self.shutdown()
        # results still being stored: written before the store closes, within 5 s (a store that never answers: given up)
        timer = compat.call_later(5.0, lambda: [*map(Deferred.cancel, list(self._tasks))])
        for task in list(self._tasks):
            with contextlib.suppress(Exception):  # a failed store was counted and logged by the store
                await compat.wait_for(task)
        with contextlib.suppress(Exception):  # (called already)
            timer.cancel()
        self.counts.flush()
        await self.storage.close()

    def _start(self, origin: str, trigger: Any, files: bool = False, alone: bool = False) -> _Pending:
        pending = self._pending[origin] = _Pending(files or not alone and self.reads(origin))
        task = pending.task = compat.spawn(self._resolve(origin, trigger, pending))
        self._tasks.add(task)
        task.addBoth(lambda _: self._tasks.discard(task))
        return pending

    async def _resolve(self, origin: str, trigger: Any, pending: _Pending) -> None:
        try:
            await self._obtain(origin, trigger, pending)  # (it finishes ``pending`` before storing)
        except compat.FAILURES as exc:
            if not isinstance(exc, NotResolved) and not self.closed:  # a bug, not the network's: fail them loudly
                logger.error("scrapy-rfc9309: could not resolve robots.txt of %s", origin, exc_info=True)
            pending.finish(None, exc if isinstance(exc, Exception) else RuntimeError(f"{type(exc).__name__}: {exc}"))
        finally:
            if not pending.done:  # cancelled: nobody may hang
                pending.finish(None, NotResolved(origin))
            if self._pending.get(origin) is pending:
                del self._pending[origin]

    async def _obtain(self, origin: str, trigger: Any, pending: _Pending) -> None:
        """robots.txt, then the other files: published once all are in, stored after the waiters went on."""
        policy, previous = self.settings.for_origin(origin), self._known.peek(origin)
        lease: Lease | None = None
        try:
            if previous is not None and time.time() < previous.entry.expires_at:
                entry, robots, fetched = previous.entry, previous.robots, False  # only another file expired
            else:
                stored, lease, fresh = await self.claim(origin, policy)
                entry = stored if fresh and stored else await self._fetch(origin, trigger, policy, previous, stored)
                robots, fetched = await self._policy(origin, entry, policy), not fresh
            floor, capped_from, pending.robots = *self.floor_for(robots, policy.user_agents), robots
            if floor and fetched and self.pacer is not None:  # the slot's next request goes a floor after this fetch
                self.pacer.fetched(origin, trigger, floor)
            if floor and fetched and self.paces:  # the fetch's start noted before the entry is visible: no turn
                await self.storage.store(origin, entry, lease, floor)  # (ours included) follows it too closely
                lease = None
            args = (origin, trigger, robots, entry.expires_at, floor, previous)
            files: dict[str, Any] = {kind.key: await self.origin_file(kind, *args) for kind in FILES if pending.files}
            sha256 = hashlib.sha256(entry.body).hexdigest() if entry.access == Access.SUCCESS.value else None
            # kept two floors at least: a page's turn finds it fresh (else each re-fetch's turn pushes the pages out)
            expires = min([entry.expires_at, *(file.expires_at for file in files.values() if file)])
            files["expires_at"] = max(expires, time.time() + 2 * floor)
            known = Known(entry, robots, policy.user_agent, floor, capped_from, policy.user_agents, sha256, **files)
            await self._publish(origin, known, trigger)
            pending.finish(known)  # the waiting requests go on first; the store's round trip is not on their way
            if lease is not None:
                await self.storage.store(origin, entry, lease)
                lease = None
        finally:
            if lease is not None:
                await self.storage.release(lease)

    async def _fetch(
        self, origin: str, trigger: Any, policy: OriginPolicy, previous: Known | None, stored: RobotsEntry | None
    ) -> RobotsEntry:
        """robots.txt fetched (retried in "wait" mode); unreachable, a copy under 30 days old (RFC 9309 2.4)."""
        # ours, or the store's if newer (another worker's, an earlier run's)
        stale = max((e for e in (previous and previous.entry, stored) if e), key=lambda e: e.fetched_at, default=None)
        if stale is not None:
            self.counts.inc("cache/expiries")
        copy = stale is not None and stale.access == Access.SUCCESS.value and stale.age() < STALE_MAX_SECONDS
        usable = copy and self.settings.stale_if_unreachable
        deadline, delay, internal = 0.0, WAIT_FIRST_DELAY, False
        floor = previous.floor if previous is not None else 0.0  # a re-fetch takes its turn; a hop waits there
        hop: Callable[[str], Awaitable[bool]] = lambda url: self.allows(url, origin, None, floor)  # noqa: E731
        while True:
            result = await self._get(origin, trigger, "/robots.txt", hop, floor=floor)
            self._count_fetch(origin, result, log_internal=result.internal and not internal)
            internal = result.internal  # an internal error is logged once per resolution
            for listener in self._fetched:
                listener(origin, result)
            deadline = deadline or time.monotonic() + policy.unreachable_wait
            left = deadline - time.monotonic()
            if result.access is not Access.UNREACHABLE or policy.unreachable != "wait" or usable or left <= 0:
                break
            await self._sleep(min(delay, left), origin)
            delay = min(delay * 2, WAIT_MAX_DELAY)
        entry = self.entry_of(result)
        if result.access is Access.UNREACHABLE and usable and stale is not None:
            self.counts.inc("cache/stale_used")
            return replace(stale, expires_at=entry.expires_at, checked_at=entry.fetched_at)
        return entry

    async def _get(self, origin: str, trigger: Any, *args: Any, floor: float = 0.0, at: str = "") -> FetchResult:
        """Fetch a file of ``origin`` (paced when it has a ``floor``); nothing starts, or is kept, once closing."""
        self._live(origin)
        done: Callable[[], object] = lambda: None  # noqa: E731
        if floor and self.pacer is not None:
            done = await self.pacer.file_turn(origin, trigger, floor)
        elif floor and self.paces:
            await self.wait_turn(origin, floor)
            done = lambda: compat.spawn(self.note_start(origin, floor))  # noqa: E731
        try:
            result = await self.fetcher.fetch(at or origin, trigger, *args)
        finally:
            done()
        self._live(origin)  # cut short by the shutdown: not a result to keep or share
        return result

    def _live(self, origin: str) -> None:
        if self.closed:
            raise NotResolved(origin)

    async def _sleep(self, seconds: float, origin: str) -> None:
        self._live(origin)
        await compat.sleep(seconds)
        self._live(origin)

    async def claim(
        self, origin: str, policy: OriginPolicy, what: str = "robots.txt", stats: str = "cache"
    ) -> tuple[RobotsEntry | None, Lease | None, bool]:
        """``(entry, lease, fresh)``: the fresh entry (a ``stats``/storage_hits), a lease to fetch it, or none (overdue)."""
        bound = self.settings.fetch_timeout * (self.settings.max_redirects + 1) + CLAIM_MARGIN
        bound += policy.unreachable_wait if policy.unreachable == "wait" else 0.0
        deadline, delay = 0.0, CLAIM_POLL_FIRST
        while True:
            now = time.time()
            entry, lease = await self.storage.lookup(origin, now)
            if entry is not None and entry.is_fresh(now):
                self.counts.inc(f"{stats}/storage_hits")
                if lease is not None:  # a custom store may grant both: not needed
                    await self.storage.release(lease)
                return entry, None, True
            if lease is not None:
                return entry, lease, False
            if not deadline:
                deadline = time.monotonic() + bound
                self.counts.inc("storage/lock_waits")
            elif time.monotonic() > deadline:
                self.counts.inc("storage/lock_timeouts")
                logger.warning(
                    "%s of %s: another worker has been fetching it for %g s; fetching it here too",
                    what, origin, bound,
                )  # fmt: skip
                return entry, None, False
            await self._sleep(delay, origin)
            delay = min(delay * 2, CLAIM_POLL_MAX)

    def policy_of(self, entry: RobotsEntry, unreachable: str) -> RobotsTxt:
        """The :class:`RobotsTxt` an entry means (parsed file, allow-all or deny-all)."""
        access = Access(entry.access)
        parsed = parse(entry.body, entry.content_type, self.settings.max_bytes) if access is Access.SUCCESS else None
        return policy_for(access, unreachable, parsed)

    async def _policy(self, origin: str, entry: RobotsEntry, policy: OriginPolicy) -> RobotsTxt:
        """:meth:`policy_of`, a large body parsed and compiled in short steps between which the loop runs."""
        if entry.access == Access.SUCCESS.value and "http_sf" not in sys.modules:
            low = entry.body.lower()
            if _SF_NAMES[0] in low or _SF_NAMES[1] in low:  # (not imported on the loop at the first such line)
                await compat.run_in_thread(preload_structured_fields)
        if entry.access != Access.SUCCESS.value or len(entry.body) <= STEPPED_PARSE_BYTES:
            return self.policy_of(entry, policy.unreachable)
        self.counts.inc("parse/stepped")
        logger.debug("robots.txt of %s: parsing %d bytes in steps", origin, len(entry.body))
        began = time.monotonic()
        steps = RobotsTxt.parsing(entry.body, entry.content_type, self.settings.max_bytes, policy.user_agents[0])
        parsed = await compat.in_steps(steps, PARSE_STEP_SECONDS)
        for token in policy.user_agents[1:]:  # several product tokens: each one's buckets too
            await compat.in_steps(parsed.preparing(token), PARSE_STEP_SECONDS)
        logger.debug("robots.txt of %s: parsed in steps in %.1f ms", origin, (time.monotonic() - began) * 1e3)
        return policy_for(Access.SUCCESS, policy.unreachable, parsed)

    async def _publish(self, origin: str, known: Known, trigger: Any) -> None:
        """Remember the result and tell every listener, before the waiters go on."""
        previous = self._known.peek(origin)
        self._known.put(origin, known)
        if previous is not None and previous.entry is known.entry:
            return  # only another file changed: robots.txt's result took effect before
        self.counts.inc(f"origins/{known.entry.access}")
        was_capped, had_floor = (previous.capped_from, previous.floor) if previous is not None else (None, 0.0)
        if known.capped_from is not None:
            if was_capped is None:
                self.counts.inc("crawl_delay/capped")
            if was_capped != known.capped_from:
                logger.warning(
                    "robots.txt of %s asks for %g s between requests (Crawl-delay/Request-rate); "
                    "using RFC9309_CRAWL_DELAY's cap of %g s instead",
                    origin, known.capped_from, known.floor,
                )  # fmt: skip
        if known.floor:
            if not had_floor:
                self.counts.inc("crawl_delay/origins")
            self._stats.max_value(STATS + "crawl_delay/max_floor", known.floor)
        for listener in self._ready:
            if inspect.isawaitable(outcome := listener(origin, known, previous, trigger)):
                await outcome

    def entry_of(self, result: FetchResult) -> RobotsEntry:
        """The entry a fetch keeps (body only for a success), fresh as long as the settings allow."""
        now, s, access = time.time(), self.settings, result.access
        lifetime = cache_seconds(
            access, result.fresh_for, cap=s.cache_seconds, floor=s.cache_min_seconds,
            unreachable_retry=s.retry_unreachable_seconds,
        )  # fmt: skip
        body = result.body if access is Access.SUCCESS else b""
        return RobotsEntry(access.value, result.status, body, result.content_type, now, now + lifetime, result.url)

    def _evicted(self, origin: str) -> None:
        self.counts.inc("cache/evictions")
        self._page_licenses.pop(origin, None)
        for listener in self._forget:
            listener(origin)

    async def origin_file(
        self, kind: FileKind, origin: str, trigger: Any, robots: RobotsTxt, expires: float, floor: float,
        previous: Known | None = None, lasting: bool = True,
    ) -> OriginFile | None:  # fmt: skip
        """``kind``'s file of ``origin`` (None: it has none): kept while fresh, the store's (``lasting``), or fetched
        through the robots.txt lane, each hop one robots.txt allows (:meth:`allows`), bounded, paced; else nothing."""
        url = kind.url(origin, robots) or (self._page_licenses.get(origin) if kind is LICENSE else None)
        kept = getattr(previous, kind.key, None)
        if url is None or (kept is not None and kept.url == url and time.time() < kept.expires_at):
            return kept if url is not None else None
        if (host := origin_of(url)) is None or not await self.allows(url, origin, robots):
            self.counts.inc(f"{kind.key}/disallowed")
            logger.debug("%s of %s: robots.txt disallows it; not fetched", kind.name, origin)
            return OriginFile(finish(kind.parsing(None, url, None, ())), expires, "disallowed", url=url)
        split = urlsplit(url)
        path = (split.path or "/") + (f"?{split.query}" if split.query else "")
        key, lease, fresh, result = store_key(host, path, kind.key), None, False, None
        if lasting and self.settings.storage != "memory":  # a lasting store keeps them too
            entry, lease, fresh = await self.claim(key, self.settings.for_origin(origin), kind.name, kind.key)
        try:
            if not fresh:
                floor = floor if host == origin else 0.0
                allow = lambda hop: self.allows(hop, origin, robots, floor)  # noqa: E731
                result = await self._get(origin, trigger, path, allow, kind.max_bytes, floor=floor, at=host)
                entry = self.entry_of(result)
                if result.truncated_bytes:
                    entry = replace(entry, body=b"")  # a cut file is not read
                    logger.info(
                        "%s of %s is too large (over %d bytes): it states nothing", kind.name, origin, len(result.body)
                    )
                disallowed = ("disallowed",) if result.outcome == DISALLOWED_HOP else ()  # (a redirect)
                for count in ("fetch/count", f"fetch/{result.outcome}", *disallowed):
                    self.counts.inc(f"{kind.key}/{count}")
                logger.debug(
                    "%s of %s: %s, status %s, %d bytes (%s)",
                    kind.name, origin, result.access.value, result.status, len(result.body), mask_url(result.url),
                )  # fmt: skip
            assert entry is not None  # (claim gives an entry whenever fresh)
            body = entry.body or None  # (an entry keeps a body only for a success): parsed once, in steps
            sha256 = hashlib.sha256(body).hexdigest() if body else None
            said = await compat.in_steps(
                kind.parsing(body, url, sha256, self.settings.usage_licenses), PARSE_STEP_SECONDS
            )
            file = OriginFile(said, entry.expires_at, entry.access, entry.status, sha256, url)
            stated = kind.stating if said else "invalid" if said.diagnostics else "none"
            self.counts.inc(f"{kind.key}/files/{stated}")
            if said.diagnostics:
                logger.debug(
                    "%s of %s: %d %s; %s",
                    kind.name, origin, len(said), kind.stating, "; ".join(map(str, said.diagnostics[:3])),
                )  # fmt: skip
            for listener in self._files:
                listener(origin, kind, file, entry, result)
            if lease is not None:
                await self.storage.store(key, entry, lease)
                lease = None
            return file
        finally:
            if lease is not None:
                await self.storage.release(lease)

    async def allows(self, url: str, origin: str, robots: RobotsTxt | None, floor: float = 0.0) -> bool:
        """Whether robots.txt allows a hop of ``origin``'s file (on ``origin``: then a wait of ``floor``).  Another
        origin's is resolved alone (no files: no cycle of waits), or, while its files are, read there (else fetched).
        ``robots`` None: robots.txt's hop, unchecked (RFC 9309 2.3.1.2), waits for the floor known there."""
        if (hop := origin_of(url)) is None:
            return robots is None
        if hop != origin and robots is None:
            floor = known.floor if (known := self.known(hop)) is not None else 0.0
        elif hop != origin:
            if await self.fetcher.inward(origin, url):
                return False  # a file a public origin names inside: not asked, as a redirect there is not
            if (known := self.fresh(hop)) is None and not ((pending := self._pending.get(hop)) and pending.files):
                known = await (pending or self._start(hop, None, alone=True)).wait()
            robots = known.robots if known is not None else (pending and pending.robots) or (await self.inspect(hop))[1]
            floor = self.floor_for(robots, self.settings.for_origin(hop).user_agents)[0]  # (its host's own)
        allowed = robots is None or all(robots.check(url, t).allowed for t in self.settings.for_origin(hop).user_agents)
        if allowed and floor and hop == origin:
            await compat.sleep(floor)
        elif allowed and floor and self.pacer is not None:
            await self.pacer.hop_turn(hop, floor)
        return allowed

    def _count_fetch(self, origin: str, result: FetchResult, log_internal: bool = True) -> None:
        """Count and log a robots.txt fetch (an internal failure only when ``log_internal``)."""
        for key in ("fetch/count", f"fetch/{result.outcome}", f"access/{result.access.value}"):
            self.counts.inc(key)
        for key in result.scrapy_stats():
            self.counts.inc_scrapy(key)
        if result.redirects:
            self.counts.inc("fetch/3xx", result.redirects)
        if result.truncated_bytes:
            self.counts.inc("fetch/truncated")
            self.counts.inc("fetch/bytes_truncated", result.truncated_bytes)
            logger.info(
                "robots.txt of %s is larger than %d bytes: the rest (at least %d bytes) was ignored",
                origin, self.settings.max_bytes, result.truncated_bytes,
            )  # fmt: skip
        if result.note:
            logger.warning(
                "robots.txt of %s: %s (last %s); treating it as unavailable: all allowed",
                origin, result.note, shorten(mask_url(result.url)),
            )  # fmt: skip
        elif result.internal and log_internal:
            logger.error(
                "robots.txt of %s could not be fetched because of an error that is not the network's "
                "(%s: %s); its requests are denied until the next retry. Check your downloader "
                "middlewares and URL filters: the robots.txt request carries meta 'rfc9309_robots_fetch'",
                origin, type(result.error).__name__, shorten(mask_text(str(result.error))),
                exc_info=(type(result.error), result.error, result.error.__traceback__) if result.error else None,
            )  # fmt: skip
        elif result.access is Access.UNREACHABLE and not result.internal:
            cause = f"{type(result.error).__name__}: {result.error}" if result.error else f"status {result.status}"
            logger.info("robots.txt of %s is unreachable (%s)", origin, shorten(mask_text(cause)))
        elif result.redirects or result.access is not Access.SUCCESS:  # (else the lane's Crawled line says it)
            logger.debug(
                "robots.txt of %s: %s, status %s, %d bytes, %d redirect(s)",
                origin, result.access.value, result.status, len(result.body), result.redirects,
            )  # fmt: skip
