"""Scrapy's internals this plugin relies on: the contract, checked at start-up.

Scrapy has no public API for some of what the plugin does (docs/middleware.md,
"Scrapy internals", says which API would remove each), so it reaches into the
engine and the downloader.  This module is the only one that names a private
(``_``) Scrapy or Twisted attribute, and :func:`check` verifies, when the
spider opens and before any request, that every internal the plugin uses is
still there with the shape it expects, including the undocumented attributes
of ``Downloader`` and its ``Slot`` that :mod:`.slots` adjusts.  When one is
missing or changed the crawl is refused with one line naming it (finish
reason :data:`REFUSED`), instead of failing request by request later.

A Scrapy newer than :data:`NEWEST_TESTED` is not refused: if the contract
holds, one WARNING names the tested range and the crawl goes on.
"""

from __future__ import annotations

import logging
from collections import deque
from numbers import Real
from typing import TYPE_CHECKING, Any

import scrapy

from .compat import OLDEST_SCRAPY, SCRAPY_VERSION

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

__all__ = ["REFUSED", "InternalsChanged", "check", "engine_closing", "get_slot", "wake_engine", "widen_concurrency"]

logger = logging.getLogger(__name__)

#: the Scrapy releases the whole contract is tested on (CI: the newest and the oldest)
OLDEST_TESTED = OLDEST_SCRAPY
NEWEST_TESTED = (2, 19)
#: finish reason of a crawl refused because an internal moved
REFUSED = "rfc9309_scrapy_internals_changed"
#: the download slot key of the probe :func:`check` makes (and removes at once)
PROBE_SLOT = "scrapy-rfc9309 contract probe"

_warned_newer = False


class InternalsChanged(Exception):
    """An internal of Scrapy the plugin needs is missing or has another shape."""

    def __init__(self, internal: str, problem: str) -> None:
        self.internal = internal
        self.problem = problem
        super().__init__(
            f"scrapy-rfc9309 cannot run on Scrapy {scrapy.__version__}: {internal} {problem} "
            f"(tested with Scrapy {tested_range()}); the crawl stops before its first request. "
            "Use a tested Scrapy or a newer scrapy-rfc9309."
        )


def tested_range() -> str:
    return f"{OLDEST_TESTED[0]}.{OLDEST_TESTED[1]} to {NEWEST_TESTED[0]}.{NEWEST_TESTED[1]}"


# -- the accessors: every private name is read here ---------------------------------------
def _engine_slot(crawler: Crawler) -> Any:
    """The engine's per-spider state (``ExecutionEngine._slot``), or None once closed."""
    return getattr(crawler.engine, "_slot", None)


def engine_closing(crawler: Crawler) -> bool:
    """Whether the engine has begun to close the spider (or never opened it).

    Scrapy sends no signal when closing *begins* (``spider_closed`` comes only
    after every request in progress has ended), so the robots service asks
    here before each fetch and on a short timer while requests wait.
    """
    engine = crawler.engine
    if engine is None or not engine.running:
        return True
    slot = _engine_slot(crawler)
    return slot is None or slot.closing is not None


def wake_engine(crawler: Crawler) -> None:
    """Ask the engine to pull scheduled requests now (it otherwise looks on its
    5 s heartbeat or when a download ends): called when a waiting request
    gives its ``CONCURRENT_REQUESTS`` place back."""
    slot = _engine_slot(crawler)
    if slot is not None and slot.closing is None:
        slot.nextcall.schedule()


def get_slot(crawler: Crawler, request: Request) -> tuple[str, Any]:
    """The download slot (key, Slot) of ``request``, created if needed, as the
    downloader itself would when the request reaches it."""
    engine = crawler.engine
    assert engine is not None, "the crawl is not running"
    if SCRAPY_VERSION >= (2, 14):
        return engine.downloader._get_slot(request)
    # 2.13: the spider is an argument (its download_delay / max_concurrent_requests)
    return engine.downloader._get_slot(request, crawler.spider)  # pragma: no cover


def is_data_loss(reason: Any) -> bool:
    """Whether a Twisted ``Failure`` inside ``ResponseFailed.reasons`` is a cut
    body (``twisted.web.http._DataLoss``; Scrapy < 2.15 lets it through)."""
    from twisted.web import http

    return bool(reason.check(http._DataLoss))


# -- the contract -----------------------------------------------------------------------------
def check(crawler: Crawler) -> None:
    """Verify every internal the plugin uses on the running crawl (call it from
    ``spider_opened``: the engine holds the spider, no request has started).
    Raises :class:`InternalsChanged` naming the first one missing or changed;
    on a Scrapy newer than :data:`NEWEST_TESTED` warns once per process."""
    try:
        _check_engine(crawler)
        _check_downloader(crawler)
        if SCRAPY_VERSION < (2, 15):  # pragma: no cover - Twisted's errors unwrapped
            from twisted.web import http

            _need(isinstance(getattr(http, "_DataLoss", None), type), "twisted.web.http._DataLoss", "is missing")
    except InternalsChanged:
        raise
    except Exception as exc:  # an internal with a shape the checks did not foresee
        raise InternalsChanged("an internal", f"could not be checked ({type(exc).__name__}: {exc})") from exc
    _warn_if_newer()


def _need(ok: bool, internal: str, problem: str) -> None:
    if not ok:
        raise InternalsChanged(internal, problem)


def _check_engine(crawler: Crawler) -> None:
    engine = crawler.engine
    _need(engine is not None, "Crawler.engine", "is not set when the spider opens")
    slot: Any = getattr(engine, "_slot", None)
    _need(slot is not None, "ExecutionEngine._slot", "is missing")
    _need(hasattr(slot, "closing"), "ExecutionEngine._slot.closing", "is missing")
    _need(slot.closing is None, "ExecutionEngine._slot.closing", "is set before the spider runs")
    nextcall = getattr(slot, "nextcall", None)
    _need(callable(getattr(nextcall, "schedule", None)), "ExecutionEngine._slot.nextcall.schedule", "is missing")
    _need(isinstance(getattr(engine, "running", None), bool), "ExecutionEngine.running", "is not a bool")


def _check_downloader(crawler: Crawler) -> None:
    from scrapy import Request

    downloader: Any = getattr(crawler.engine, "downloader", None)
    _need(downloader is not None, "ExecutionEngine.downloader", "is missing")
    _need(isinstance(getattr(downloader, "slots", None), dict), "Downloader.slots", "is not a dict")
    _need(isinstance(getattr(downloader, "active", None), set), "Downloader.active", "is not a set")
    _need(callable(getattr(downloader, "needs_backout", None)), "Downloader.needs_backout", "is missing")
    _need(callable(getattr(downloader, "get_slot_key", None)), "Downloader.get_slot_key", "is missing")
    # the robots.txt lane widens this bound while its downloads are in Downloader.active
    bound = getattr(downloader, "total_concurrency", None)
    _need(isinstance(bound, int) and not isinstance(bound, bool), "Downloader.total_concurrency", "is not an int")
    # ... and the connection pools bounded by CONCURRENT_REQUESTS (aiohttp, no reactor)
    for handler in getattr(getattr(downloader, "handlers", None), "_handlers", {}).values():
        connector = getattr(getattr(handler, "_session", None), "connector", None)
        if connector is not None and getattr(connector, "limit", None):
            _need(connector.limit == getattr(connector, "_limit", None), "aiohttp.TCPConnector._limit", "is missing")
    _need(callable(getattr(downloader, "_get_slot", None)), "Downloader._get_slot", "is missing")
    # the floor and the per-slot concurrency rely on how this method starts requests
    _need(callable(getattr(downloader, "_process_queue", None)), "Downloader._process_queue", "is missing")
    # a real slot, made as the plugin makes them (and dropped at once)
    probe = Request("http://contract-probe.invalid/", meta={"download_slot": PROBE_SLOT})
    try:
        made = get_slot(crawler, probe)
    except Exception as exc:  # noqa: BLE001 - any failure means the shape changed
        raise InternalsChanged("Downloader._get_slot", f"failed: {type(exc).__name__}: {exc}") from exc
    _need(isinstance(made, tuple) and len(made) == 2, "Downloader._get_slot", "does not return (key, slot)")
    key, slot = made
    try:
        _need(key == PROBE_SLOT, "Downloader._get_slot", "ignores the download_slot meta key")
        _need(downloader.slots.get(key) is slot, "Downloader.slots", "does not hold the slot _get_slot made")
        _check_slot(slot)
    finally:
        if downloader.slots.get(key) is slot:
            del downloader.slots[key]
            close = getattr(slot, "close", None)
            if callable(close):
                close()


def _check_slot(slot: Any) -> None:
    for name in ("active", "transferring"):
        _need(isinstance(getattr(slot, name, None), set), f"Slot.{name}", "is not a set")
    # replaced by a deque subclass whose popleft() is how the downloader takes a request
    _need(type(getattr(slot, "queue", None)) is deque, "Slot.queue", "is not a collections.deque")
    for name in ("lastseen", "delay"):
        _need(isinstance(getattr(slot, name, None), Real), f"Slot.{name}", "is not a number")
    if hasattr(slot, "jitter"):  # 2.19+ (as slots.py tells them apart)
        _need(isinstance(slot.jitter, Real), "Slot.jitter", "is not a number")
    else:  # pragma: no cover - before 2.19
        _need(isinstance(getattr(slot, "randomize_delay", None), bool), "Slot.randomize_delay", "is not a bool")
    for name in ("download_delay", "free_transfer_slots", "close"):
        _need(callable(getattr(slot, name, None)), f"Slot.{name}", "is missing")


def _warn_if_newer() -> None:
    global _warned_newer
    if SCRAPY_VERSION > NEWEST_TESTED and not _warned_newer:
        _warned_newer = True
        logger.warning(
            "scrapy-rfc9309 is tested with Scrapy %s; this is Scrapy %s: every Scrapy internal it uses "
            "was found as expected, but report any problem",
            tested_range(), scrapy.__version__,
        )  # fmt: skip


# -- the robots.txt download lane (fetch.py) ------------------------------------------
def widen_concurrency(crawler: Crawler, by: int) -> bool:
    """Move the downloader's ``CONCURRENT_REQUESTS`` bound by ``by`` places.

    A robots.txt download goes through the engine (so every downloader
    middleware, the signals and the "Crawled" log line apply, as to any
    download) and so joins ``Downloader.active``, the set that
    ``Downloader.needs_backout()`` compares with ``Downloader.total_concurrency``
    (2.13: ``len(active) >= total_concurrency``; 2.14+: ``0 < total_concurrency
    <= len(active)``, 0 meaning no bound).  Widening the bound by one for each
    robots.txt download in that set keeps the pages' bound where the user put
    it: the download takes no page place.

    Returns False, changing nothing, when the downloader has no such bound (0
    on 2.14+, or a custom ``DOWNLOADER`` without the attribute): the download
    then counts as any request does, as before this lane existed."""
    engine = crawler.engine
    downloader = getattr(engine, "downloader", None)
    bound = getattr(downloader, "total_concurrency", None)
    if not isinstance(bound, int) or isinstance(bound, bool):
        return False
    if bound <= 0 and SCRAPY_VERSION >= (2, 14):
        return False  # no bound to keep
    downloader.total_concurrency = bound + by  # type: ignore[union-attr]
    for connector in _bounded_pools(downloader):
        connector._limit += by
    return True


def _bounded_pools(downloader: Any) -> list[Any]:
    """The connection pools of the loaded download handlers that are bounded
    by ``CONCURRENT_REQUESTS`` too: Scrapy's aiohttp handler (the default
    without a reactor, 2.15+) sizes its ``aiohttp.TCPConnector(limit=...)``
    so, and a robots.txt download in the lane would otherwise wait for (or
    hold) a page's connection.  Widened and narrowed with the downloader's
    bound.  (Twisted's HTTP/1.1 handler has no total bound; the httpx handler
    of 2.15 keeps its own, which is not widened: docs/middleware.md.)"""
    loaded = getattr(getattr(downloader, "handlers", None), "_handlers", None)
    if not isinstance(loaded, dict):
        return []
    pools = []
    for handler in loaded.values():
        connector = getattr(getattr(handler, "_session", None), "connector", None)
        limit = getattr(connector, "_limit", None)
        if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
            pools.append(connector)
    return list({id(c): c for c in pools}.values())  # http and https share one handler
