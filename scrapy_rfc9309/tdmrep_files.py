"""Each origin's ``/.well-known/tdmrep.json`` (TDMRep), read once per origin.

The file is fetched, kept and shared like robots.txt, and never holds a
request:

* **when**: only for an origin whose responses are read for usage statements
  (a purpose declared for the crawl or the origin, ``RFC9309_USAGE_REPORT``;
  a request's own ``rfc9309_usage`` starts it on its response); started as the
  origin's robots.txt takes effect (:meth:`RobotsService.on_ready`), before its
  first pages go on, so it is usually in before they come back.  A file that
  robots.txt disallows to the crawl's tokens is not fetched: it states nothing;
* **how**: through the robots.txt lane (:class:`~.fetch.RobotsFetcher`, its
  redirects, guard, size limit and decoding): no ``CONCURRENT_REQUESTS`` place,
  no page's place;
* **what it means**: only a 2xx body is parsed (:meth:`TdmRep.parse`); a 4xx,
  5xx, timeout, network error, a body that is not a JSON array: the file states
  nothing (:data:`~.robots.tdmrep.EMPTY`), never a denial;
* **kept**: an LRU of ``RFC9309_CACHE_MAX_ORIGINS`` origins, each fresh for
  the lifetime robots.txt would get from the same answer
  (:func:`~.robots.access.cache_seconds`: ``Cache-Control`` / ``Expires``, at
  most 24 hours, an unreachable one retried after
  ``RFC9309_RETRY_UNREACHABLE_SECONDS``); a stale file is used while a new one
  is fetched; with a persistent or shared store, the entry is stored under
  ``<origin>/.well-known/tdmrep.json`` (no origin key has a path, so it cannot
  be taken for one) and one worker of a cluster fetches it under the store's
  lease, as for robots.txt.

A response whose origin's file is being fetched (nothing known yet) waits for
it where it is applied (the middleware's ``process_response``), at most
``RFC9309_FETCH_TIMEOUT``; then the file states nothing for that response
(``rfc9309/tdmrep/wait_timeouts``).
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from twisted.internet.defer import CancelledError, Deferred

from . import compat
from .masking import mask_url
from .origins import resource_url
from .robots.access import Access
from .robots.tdmrep import EMPTY, PATH, TdmRep
from .service import NotResolved
from .storage import LruDict, RobotsEntry

if TYPE_CHECKING:
    from .fetch import FetchResult
    from .service import Known, RobotsService

__all__ = ["PATH", "TdmRepFile", "TdmRepFiles", "store_key"]

logger = logging.getLogger(__name__)

#: the stats prefix (under rfc9309/)
STATS = "tdmrep/"


def store_key(origin: str) -> str:
    """The store key of an origin's file: ``http://example.com:80/.well-known/tdmrep.json``."""
    return origin + PATH


@dataclass(frozen=True, slots=True)
class TdmRepFile:
    """An origin's file as the crawl uses it: the parsed rules (:data:`EMPTY`
    when it states nothing), until when it is fresh, and what was fetched."""

    tdmrep: TdmRep
    expires_at: float
    #: "success", "unavailable", "unreachable", or "disallowed" (robots.txt: not fetched)
    access: str
    status: int | None = None
    #: SHA-256 (hex) of a 2xx body, else None
    sha256: str | None = None
    url: str = ""


class TdmRepFiles:
    """The crawl's tdmrep.json files, one resolution per origin (see the module docstring)."""

    def __init__(self, service: RobotsService, recorder: Any = None) -> None:
        self.service = service
        self.settings = settings = service.settings
        self.counts = service.counts
        self.recorder = recorder
        self._files: LruDict[str, TdmRepFile] = LruDict(settings.cache_max_origins)
        #: origin -> the waiters of its resolution in flight
        self._pending: dict[str, list[Deferred]] = {}
        self._tasks: set[Deferred] = set()
        #: only a persistent or shared store is asked (the LRU is this crawl's memory)
        self._stored = settings.storage != "memory"
        service.on_ready(self._robots_ready)

    # -- asking --------------------------------------------------------------------------
    def wanted(self, origin: str) -> bool:
        """Whether the crawl reads ``origin``'s responses for usage statements without a request's own purposes."""
        return self.settings.usage_report or bool(self.settings.for_origin(origin).usage)

    def current(self, origin: str, trigger: Any = None) -> TdmRep | None:
        """The file of ``origin``: fresh, or stale while a new one is fetched;
        None when nothing is known yet (its fetch is started, if not running)."""
        file = self._files.get(origin)
        if file is not None:
            if time.time() >= file.expires_at:
                self.want(origin, trigger)
            return file.tdmrep
        if self.service.closed:
            return EMPTY
        self.want(origin, trigger)
        file = self._files.peek(origin)  # (robots.txt disallows it: known at once)
        return file.tdmrep if file is not None else None

    async def wait(self, origin: str, timeout: float) -> TdmRep:
        """The file of ``origin`` once its fetch ends, or :data:`EMPTY` after
        ``timeout`` seconds (or when the spider closes meanwhile)."""
        file = self._files.get(origin)
        waiters = self._pending.get(origin)
        if file is not None or waiters is None:
            return file.tdmrep if file is not None else EMPTY
        waiter: Deferred = Deferred()
        waiters.append(waiter)
        self.counts.inc(STATS + "responses_waited")

        def late() -> None:
            if not waiter.called:
                self.counts.inc(STATS + "wait_timeouts")
                waiter.callback(None)

        compat.call_later(timeout, late)
        await compat.wait_for(waiter)
        file = self._files.get(origin)
        return file.tdmrep if file is not None else EMPTY

    def known(self, origin: str) -> TdmRepFile | None:
        """What is kept for ``origin`` (fresh or not), without touching its LRU place."""
        return self._files.peek(origin)

    def want(self, origin: str, trigger: Any = None, known: Known | None = None) -> None:
        """Start resolving ``origin``'s file unless it is fresh or being resolved."""
        if origin in self._pending or self.service.closed:
            return
        file = self._files.peek(origin)
        if file is not None and time.time() < file.expires_at:
            return
        if known is None:
            known = self.service.known(origin)
        if known is not None and not self._may_fetch(origin, known):
            self._disallowed(origin, known)
            return
        self._pending[origin] = []
        task = compat.spawn(self._resolve(origin, trigger))
        self._tasks.add(task)
        task.addBoth(lambda _: self._tasks.discard(task))

    def close(self) -> None:
        """The spider closed: stop the fetches in flight, wake every waiter."""
        for task in list(self._tasks):
            task.cancel()
        for origin in list(self._pending):
            self._wake(origin)

    # -- resolving -----------------------------------------------------------------------
    def _robots_ready(self, origin: str, known: Known, previous: Known | None, trigger: Any) -> None:
        if self.wanted(origin):
            self.want(origin, trigger, known)

    def _may_fetch(self, origin: str, known: Known) -> bool:
        """Whether robots.txt lets every token of the origin fetch the file."""
        url = resource_url(origin, PATH)
        return all(known.robots.check(url, token).allowed for token in known.tokens)

    def _disallowed(self, origin: str, known: Known) -> None:
        """robots.txt disallows the file: it is not fetched, and states nothing
        while that robots.txt is in force."""
        self.counts.inc(STATS + "disallowed")
        self._files.put(origin, TdmRepFile(EMPTY, known.entry.expires_at, "disallowed"))
        logger.debug("tdmrep.json of %s: robots.txt disallows it; not fetched", origin)

    async def _resolve(self, origin: str, trigger: Any) -> None:
        try:
            await self._obtain(origin, trigger)
        except (NotResolved, CancelledError):
            pass  # the spider is closing
        except Exception:  # a bug, not the network's (that is an access result): states nothing
            logger.error("scrapy-rfc9309: could not resolve tdmrep.json of %s", origin, exc_info=True)
        finally:
            self._wake(origin)

    def _wake(self, origin: str) -> None:
        for waiter in self._pending.pop(origin, []):
            if not waiter.called:
                waiter.callback(None)

    async def _obtain(self, origin: str, trigger: Any) -> None:
        """The store's fresh entry, else a fetch under the store's lease (as robots.txt)."""
        service = self.service
        key = store_key(origin)
        lease = None
        if self._stored:
            stored, lease, fresh = await service.claim(key, self.settings.for_origin(origin), "tdmrep.json")
            if fresh:
                assert stored is not None
                self.counts.inc(STATS + "storage_hits")
                self._publish(origin, stored, None)
                return
        kept = False
        try:
            if service.closed:
                raise NotResolved(origin)
            result = await service.fetcher.fetch(origin, trigger, path=PATH)
            if service.closed:
                raise NotResolved(origin)
            entry = self._entry(result)
            self._count(origin, result)
            self._publish(origin, entry, result)
            if self._stored:
                await service.storage.store(key, entry, lease)
                kept = True
        finally:
            if lease is not None and not kept:
                await service.storage.release(lease)

    def _entry(self, result: FetchResult) -> RobotsEntry:
        entry = self.service.entry_of(result)
        return replace(entry, body=b"") if result.truncated_bytes else entry  # a cut file is not read

    def _publish(self, origin: str, entry: RobotsEntry, result: FetchResult | None) -> None:
        """Keep the file (parsed once) and tell the audit trail."""
        tdmrep = TdmRep.parse(entry.body) if entry.access == Access.SUCCESS.value and entry.body else EMPTY
        sha256 = hashlib.sha256(entry.body).hexdigest() if entry.body else None
        file = TdmRepFile(tdmrep, entry.expires_at, entry.access, entry.status, sha256, entry.url)
        self._files.put(origin, file)
        kind = "rules" if tdmrep.rules else "invalid" if tdmrep.diagnostics and entry.body else "none"
        self.counts.inc(STATS + f"files/{kind}")
        if tdmrep.diagnostics:
            logger.debug(
                "tdmrep.json of %s: %d rules; %s",
                origin,
                len(tdmrep.rules),
                "; ".join(map(str, tdmrep.diagnostics[:3])),
            )
        recorder = self.recorder
        if recorder is not None and recorder.active:
            recorder.tdmrep(origin, file, entry, result)

    def _count(self, origin: str, result: FetchResult) -> None:
        self.counts.inc(STATS + "fetch/count")
        self.counts.inc(STATS + f"fetch/{result.outcome}")
        if result.truncated_bytes:
            logger.info("tdmrep.json of %s is too large (over %d bytes): it states nothing", origin, len(result.body))
        logger.debug(
            "tdmrep.json of %s: %s, status %s, %d bytes (%s)",
            origin, result.access.value, result.status, len(result.body), mask_url(result.url),
        )  # fmt: skip
