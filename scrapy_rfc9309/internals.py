"""The Scrapy internals the plugin still needs: named here only, checked at start-up.

One thing has no public Scrapy API yet (docs/middleware.md, "Scrapy
internals", names the API that would remove it): the robots.txt lane, the
crawl's downloader middleware chain with download handlers of its own or the
crawl's (:mod:`.fetch`); and before Scrapy 2.15, Twisted's ``_DataLoss``.
:func:`check` proves each on the running crawl when the spider opens (a real
call, no ``getattr`` default); a missing or changed one refuses the crawl
(finish reason :data:`REFUSED`, non-zero exit status).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import scrapy

from .compat import OLDEST_SCRAPY, SCRAPY_VERSION

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["REFUSED", "InternalsChanged", "check", "lane_download", "lane_handlers", "network_error_name"]

logger = logging.getLogger(__name__)

#: the Scrapy releases the whole contract is tested on (CI: the newest and the oldest)
OLDEST_TESTED = OLDEST_SCRAPY
NEWEST_TESTED = (2, 19)
#: finish reason of a crawl refused because an internal moved
REFUSED = "rfc9309_scrapy_internals_changed"

_warned_newer = False


class InternalsChanged(Exception):
    """An internal of Scrapy the plugin needs is missing or has another shape."""

    def __init__(self, internal: str, problem: str) -> None:
        self.internal = internal
        super().__init__(
            f"scrapy-rfc9309 cannot run on Scrapy {scrapy.__version__}: {internal} {problem} "
            f"(tested with Scrapy {tested_range()}); the crawl stops before its first request. "
            "Use a tested Scrapy or a newer scrapy-rfc9309."
        )


def tested_range() -> str:
    return f"{OLDEST_TESTED[0]}.{OLDEST_TESTED[1]} to {NEWEST_TESTED[0]}.{NEWEST_TESTED[1]}"


# -- the robots.txt lane ---------------------------------------------------------------------
def lane_handlers(crawler: Crawler, concurrency: int) -> Any:
    """The lane's download handlers.  The crawl's own when http and https are
    Scrapy's HTTP/1.1 handler, whose pool bounds no connection count: a page
    then reuses its origin's robots.txt connection, as with Scrapy's built-in
    middleware.  Else handlers of the lane's own, closed by Scrapy with the
    engine as the crawl's are: the handlers that bound their pools by
    ``CONCURRENT_REQUESTS`` (aiohttp's, httpx's) see the lane's bound there
    instead, so hanging robots.txt servers hold none of the pages' connections
    and the lane is not cut to the pages' size."""
    from scrapy.core.downloader.handlers import DownloadHandlers
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
    from scrapy.utils.misc import load_object

    configured = crawler.settings.getwithbase("DOWNLOAD_HANDLERS")
    if all(configured.get(scheme) and load_object(configured[scheme]) is HTTP11DownloadHandler for scheme in _SCHEMES):
        assert crawler.engine is not None, "the crawl is not running"
        return crawler.engine.downloader.handlers
    lane: Any = _LaneCrawler(crawler, concurrency)  # a Crawler to the handlers, all but one setting the crawl's
    return DownloadHandlers(lane)


_SCHEMES = ("http", "https")


class _LaneCrawler:
    """The crawler as the lane's download handlers see it: the same in all but
    ``CONCURRENT_REQUESTS``, the lane's bound."""

    def __init__(self, crawler: Crawler, concurrency: int) -> None:
        self._crawler = crawler
        settings = type(crawler.settings)()  # the crawl's are frozen: an open copy, priorities kept
        settings.update(crawler.settings)
        settings.set("CONCURRENT_REQUESTS", concurrency, priority="cmdline")
        self.settings = settings

    def __getattr__(self, name: str) -> Any:
        return getattr(self._crawler, name)


async def lane_download(
    crawler: Crawler, handlers: Any, request: Request, downloaded: Callable[[Response, Request], None]
) -> Response | Request:
    """``request`` through the crawl's downloader middlewares, downloaded by
    ``handlers``: outside ``Downloader.active`` and the download slots.
    ``downloaded(response, request)`` runs on the handler's response before any
    middleware sees it (what a ``response_downloaded`` receiver would do)."""
    from scrapy.utils.defer import maybe_deferred_to_future

    engine = crawler.engine
    assert engine is not None, "the crawl is not running"
    manager = engine.downloader.middleware
    if SCRAPY_VERSION >= (2, 14):

        async def download(hop: Request) -> Response:
            response: Response = await handlers.download_request_async(hop)
            downloaded(response, hop)
            return response

        result: Response | Request = await manager.download_async(download, request)
        return result

    def download_213(hop: Request, spider: Any) -> Any:  # pragma: no cover - 2.13: Deferreds
        def seen(response: Response) -> Response:
            downloaded(response, hop)
            return response

        return handlers.download_request(hop, spider).addCallback(seen)

    spider: Any = crawler.spider
    result_213: Response | Request = await maybe_deferred_to_future(manager.download(download_213, request, spider))
    return result_213


# -- Twisted's network errors as Scrapy 2.15+ names them --------------------------------------
def network_error_name(error: BaseException) -> str:
    """The class name of a network error as Scrapy 2.15+ raises it, so the
    ``fetch/error/<name>`` stats are the same on every supported Scrapy: before
    2.15 the download handler let Twisted's errors through, since then it wraps
    them in its own (``DownloadTimeoutError``, ...)."""
    if SCRAPY_VERSION >= (2, 15):
        return type(error).__name__
    from twisted.internet import error as net  # pragma: no cover - 2.13, 2.14
    from twisted.web import http
    from twisted.web.client import ResponseFailed

    if isinstance(error, ResponseFailed):  # a cut body is twisted.web.http._DataLoss inside
        lost = any(reason.check(http._DataLoss) for reason in error.reasons)
        return "ResponseDataLossError" if lost else "DownloadFailedError"
    for twisted_error, name in (
        (net.TimeoutError, "DownloadTimeoutError"),
        (net.ConnectionRefusedError, "DownloadConnectionRefusedError"),
        (net.DNSLookupError, "CannotResolveHostError"),
    ):
        if isinstance(error, twisted_error):
            return name
    return type(error).__name__


# -- the contract -----------------------------------------------------------------------------
def check(crawler: Crawler) -> None:
    """Prove every internal the plugin will use on the running crawl (from
    ``spider_opened``: the engine holds the spider, no request has started),
    and the slot key the gate paces by.  Raises :class:`InternalsChanged`
    naming the first one missing or changed; warns once per process on a
    Scrapy newer than :data:`NEWEST_TESTED`."""
    try:
        engine: Any = crawler.engine
        downloader = engine.downloader
        _check_lane(crawler, downloader)
        _check_slot_key(downloader)
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


def _attr(obj: Any, name: str, internal: str) -> Any:
    try:
        return getattr(obj, name)
    except AttributeError:
        raise InternalsChanged(internal, "is missing") from None


def _check_lane(crawler: Crawler, downloader: Any) -> None:
    manager = _attr(downloader, "middleware", "Downloader.middleware")
    method = "download_async" if SCRAPY_VERSION >= (2, 14) else "download"
    _need(callable(getattr(type(manager), method, None)), f"DownloaderMiddlewareManager.{method}", "is missing")
    try:  # (the class is checked, not built: an instance opens connection pools)
        from scrapy.core.downloader.handlers import DownloadHandlers
    except ImportError as exc:
        raise InternalsChanged("scrapy.core.downloader.handlers.DownloadHandlers", f"failed: {exc}") from exc
    method = "download_request_async" if SCRAPY_VERSION >= (2, 14) else "download_request"
    _need(callable(getattr(DownloadHandlers, method, None)), f"DownloadHandlers.{method}", "is missing")
    handlers = _attr(downloader, "handlers", "Downloader.handlers")
    _need(isinstance(handlers, DownloadHandlers), "Downloader.handlers", "is not a DownloadHandlers")


def _check_slot_key(downloader: Any) -> None:
    """``Downloader.get_slot_key`` (public) honours the ``download_slot`` meta key: the gate paces by it."""
    from scrapy import Request

    key_of = _attr(downloader, "get_slot_key", "Downloader.get_slot_key")
    probe = Request("http://contract-probe.invalid/", meta={"download_slot": "probe"})
    _need(key_of(probe) == "probe", "Downloader.get_slot_key", "ignores the download_slot meta key")


def _warn_if_newer() -> None:
    global _warned_newer
    if SCRAPY_VERSION > NEWEST_TESTED and not _warned_newer:
        _warned_newer = True
        logger.warning(
            "scrapy-rfc9309 is tested with Scrapy %s; this is Scrapy %s: every Scrapy internal it uses "
            "was found as expected, but report any problem",
            tested_range(), scrapy.__version__,
        )  # fmt: skip
