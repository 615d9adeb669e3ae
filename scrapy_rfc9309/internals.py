"""The Scrapy internals with no public API yet (the robots.txt lane of :mod:`.fetch`; before Scrapy
2.15, Twisted's ``_DataLoss``), named here only: :func:`check` proves each when the spider opens, and
a missing or changed one refuses the crawl (:data:`REFUSED`; docs/middleware.md, "Scrapy internals")."""

from __future__ import annotations

import copy
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

#: the newest Scrapy release the whole contract is tested on (CI: this and OLDEST_SCRAPY)
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
    return f"{OLDEST_SCRAPY[0]}.{OLDEST_SCRAPY[1]} to {NEWEST_TESTED[0]}.{NEWEST_TESTED[1]}"


def lane_handlers(crawler: Crawler, concurrency: int) -> Any:
    """The lane's download handlers: the crawl's when http and https use Scrapy's HTTP/1.1 handler (its
    pool is unbounded: a page reuses its origin's robots.txt connection); else its own, pools sized by
    the lane's bound, not ``CONCURRENT_REQUESTS``, so hanging robots.txt servers hold no page connection."""
    from scrapy.core.downloader.handlers import DownloadHandlers
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
    from scrapy.utils.misc import load_object

    configured = crawler.settings.getwithbase("DOWNLOAD_HANDLERS")
    if all(configured.get(s) and load_object(configured[s]) is HTTP11DownloadHandler for s in ("http", "https")):
        assert crawler.engine is not None, "the crawl is not running"
        return crawler.engine.downloader.handlers
    lane = copy.copy(crawler)  # the crawl's crawler but for CONCURRENT_REQUESTS
    lane.settings = type(crawler.settings)()  # the crawl's are frozen: an open copy, priorities kept
    lane.settings.update(crawler.settings)
    lane.settings.set("CONCURRENT_REQUESTS", concurrency, priority="cmdline")
    return DownloadHandlers(lane)


async def lane_download(
    crawler: Crawler, handlers: Any, request: Request, downloaded: Callable[[Response, Request], Response]
) -> Response | Request:
    """``request`` through the crawl's middlewares, downloaded by ``handlers`` outside the slots and
    ``Downloader.active``; ``downloaded(response, request)`` sees (and returns) it before they do."""
    engine = crawler.engine
    assert engine is not None, "the crawl is not running"
    manager = engine.downloader.middleware
    if SCRAPY_VERSION < (2, 14):  # pragma: no cover - 2.13: Deferreds
        from scrapy.utils.defer import maybe_deferred_to_future

        def download_213(hop: Request, spider: Any) -> Any:
            return handlers.download_request(hop, spider).addCallback(downloaded, hop)

        spider: Any = crawler.spider
        return await maybe_deferred_to_future(manager.download(download_213, request, spider))

    async def download(hop: Request) -> Response:
        return downloaded(await handlers.download_request_async(hop), hop)

    return await manager.download_async(download, request)


def network_error_name(error: BaseException) -> str:
    """The class name of a network error as Scrapy 2.15+ raises it (before, Twisted's went through
    unwrapped), so the ``fetch/error/<name>`` stats are the same on every supported Scrapy."""
    if SCRAPY_VERSION >= (2, 15):
        return type(error).__name__
    from twisted.internet import error as net  # pragma: no cover - 2.13, 2.14
    from twisted.web import http
    from twisted.web.client import ResponseFailed

    if isinstance(error, ResponseFailed):  # a cut body is twisted.web.http._DataLoss inside
        return "ResponseDataLossError" if any(r.check(http._DataLoss) for r in error.reasons) else "DownloadFailedError"
    names = {
        net.TimeoutError: "DownloadTimeoutError",
        net.ConnectionRefusedError: "DownloadConnectionRefusedError",
        net.DNSLookupError: "CannotResolveHostError",
    }
    return next((name for kind, name in names.items() if isinstance(error, kind)), type(error).__name__)


def check(crawler: Crawler) -> None:
    """Prove every internal the plugin will use, and the slot key the gate paces by, before the first
    request: :class:`InternalsChanged` names the first one missing or changed.  Warns on a newer Scrapy."""
    global _warned_newer
    try:
        engine: Any = crawler.engine
        downloader = engine.downloader
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
        # the public Downloader.get_slot_key honours the download_slot meta key: the gate paces by it
        key_of = _attr(downloader, "get_slot_key", "Downloader.get_slot_key")
        probe = scrapy.Request("http://contract-probe.invalid/", meta={"download_slot": "probe"})
        _need(key_of(probe) == "probe", "Downloader.get_slot_key", "ignores the download_slot meta key")
        if SCRAPY_VERSION < (2, 15):  # pragma: no cover - Twisted's errors unwrapped
            from twisted.web import http

            _need(isinstance(getattr(http, "_DataLoss", None), type), "twisted.web.http._DataLoss", "is missing")
    except InternalsChanged:
        raise
    except Exception as exc:  # an internal with a shape the checks did not foresee
        raise InternalsChanged("an internal", f"could not be checked ({type(exc).__name__}: {exc})") from exc
    if SCRAPY_VERSION > NEWEST_TESTED and not _warned_newer:
        _warned_newer = True
        logger.warning(
            "scrapy-rfc9309 is tested with Scrapy %s; this is Scrapy %s: every Scrapy internal it uses "
            "was found as expected, but report any problem", tested_range(), scrapy.__version__
        )  # fmt: skip


def _need(ok: bool, internal: str, problem: str) -> None:
    if not ok:
        raise InternalsChanged(internal, problem)


def _attr(obj: Any, name: str, internal: str) -> Any:
    try:
        return getattr(obj, name)
    except AttributeError:
        raise InternalsChanged(internal, "is missing") from None
