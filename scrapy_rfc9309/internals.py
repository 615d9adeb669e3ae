"""The Scrapy internals with no public API yet (the lane of :mod:`.fetch`; before Scrapy 2.15, Twisted's
``_DataLoss``), named here only and proven by :func:`check` when the spider opens (docs/middleware.md)."""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING, Any, cast

import scrapy

from .compat import OLDEST_SCRAPY, SCRAPY_VERSION, wait_for

if TYPE_CHECKING:
    from collections.abc import Callable

    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

__all__ = ["REFUSED", "InternalsChanged", "check", "lane_download", "lane_handlers", "network_error_name"]

logger = logging.getLogger(__name__)

#: the newest Scrapy release the whole contract is tested on (CI: this and OLDEST_SCRAPY)
NEWEST_TESTED = (2, 19)
REFUSED = "rfc9309_scrapy_internals_changed"  # the finish reason of a crawl refused because an internal moved

_warned_newer = False


class InternalsChanged(Exception):
    """An internal of Scrapy the plugin needs is missing or has another shape."""

    def __init__(self, internal: str, problem: str) -> None:
        super().__init__(
            f"scrapy-rfc9309 cannot run on Scrapy {scrapy.__version__}: {internal} {problem} "
            f"(tested with Scrapy {tested_range()}); the crawl stops before its first request. "
            "Use a tested Scrapy or a newer scrapy-rfc9309."
        )


def tested_range() -> str:
    return f"{OLDEST_SCRAPY[0]}.{OLDEST_SCRAPY[1]} to {NEWEST_TESTED[0]}.{NEWEST_TESTED[1]}"


def lane_handlers(crawler: Crawler, concurrency: int) -> Any:
    """The crawl's handlers if both schemes use HTTP/1.1's (unbounded pool); else the lane's, pools sized to it."""
    from scrapy.core.downloader.handlers import DownloadHandlers
    from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler
    from scrapy.utils.misc import load_object

    configured = crawler.settings.getwithbase("DOWNLOAD_HANDLERS")
    if all(configured.get(s) and load_object(configured[s]) is HTTP11DownloadHandler for s in ("http", "https")):
        return cast(Any, crawler.engine).downloader.handlers
    lane = copy.copy(crawler)  # the crawl's crawler but for CONCURRENT_REQUESTS
    lane.settings = type(crawler.settings)()  # the crawl's are frozen: an open copy, priorities kept
    lane.settings.update(crawler.settings)
    lane.settings.set("CONCURRENT_REQUESTS", concurrency, priority="cmdline")
    return DownloadHandlers(lane)


async def lane_download(
    crawler: Crawler, handlers: Any, request: Request, downloaded: Callable[[Response, Request], Response]
) -> Response | Request:
    """``request`` via the crawl's middlewares, by ``handlers`` outside the slots; they see ``downloaded``'s result."""
    manager = cast(Any, crawler.engine).downloader.middleware
    if SCRAPY_VERSION < (2, 14):  # pragma: no cover - 2.13: Deferreds
        fetch = lambda hop, spider: handlers.download_request(hop, spider).addCallback(downloaded, hop)  # noqa: E731
        return await wait_for(manager.download(fetch, request, crawler.spider))

    async def download(hop: Request) -> Response:
        return downloaded(await handlers.download_request_async(hop), hop)

    return await manager.download_async(download, request)


def network_error_name(error: BaseException) -> str:
    """The class name of a network error as Scrapy 2.15+ raises it: the same ``fetch/error/<name>`` stats on every Scrapy."""
    if SCRAPY_VERSION >= (2, 15):
        return type(error).__name__
    from twisted.internet import error as net  # pragma: no cover - 2.13, 2.14
    from twisted.web import http
    from twisted.web.client import ResponseFailed

    if isinstance(error, ResponseFailed):  # a cut body is twisted.web.http._DataLoss inside
        return "ResponseDataLossError" if any(r.check(http._DataLoss) for r in error.reasons) else "DownloadFailedError"
    names = {net.TimeoutError: "DownloadTimeoutError", net.DNSLookupError: "CannotResolveHostError",
             net.ConnectionRefusedError: "DownloadConnectionRefusedError"}  # fmt: skip
    return next((name for kind, name in names.items() if isinstance(error, kind)), type(error).__name__)


def check(crawler: Crawler) -> None:
    """Prove each internal and the gate's slot key before the first request (or InternalsChanged); warn on newer."""
    global _warned_newer
    try:
        import scrapy.core.downloader.handlers as module  # (the class is checked, not built: it opens pools)

        downloader = cast(Any, crawler.engine).downloader
        manager = _need(getattr(downloader, "middleware", None), "Downloader.middleware")
        handlers = _need(getattr(module, "DownloadHandlers", None), "scrapy.core.downloader.handlers.DownloadHandlers")
        suffix = "" if SCRAPY_VERSION < (2, 14) else "_async"  # (2.13: the Deferred forms)
        for owner, method in ((type(manager), "download"), (handlers, "download_request")):
            _need(callable(getattr(owner, method + suffix, None)), f"{owner.__name__}.{method}{suffix}")
        ok = isinstance(_need(getattr(downloader, "handlers", None), "Downloader.handlers"), handlers)
        _need(ok, "Downloader.handlers", "is not a DownloadHandlers")
        probe = scrapy.Request("http://contract-probe.invalid/", meta={"download_slot": "probe"})
        ok = _need(getattr(downloader, "get_slot_key", None), "Downloader.get_slot_key")(probe) == "probe"
        _need(ok, "Downloader.get_slot_key", "ignores the download_slot meta key")
        if SCRAPY_VERSION < (2, 15):  # pragma: no cover - Twisted's errors unwrapped
            from twisted.web import http

            _need(isinstance(getattr(http, "_DataLoss", None), type), "twisted.web.http._DataLoss")
    except InternalsChanged:
        raise
    except Exception as exc:  # an internal with a shape the checks did not foresee
        raise InternalsChanged("an internal", f"could not be checked ({type(exc).__name__}: {exc})") from exc
    if SCRAPY_VERSION > NEWEST_TESTED and not _warned_newer:
        _warned_newer = True
        logger.warning("scrapy-rfc9309 is tested with Scrapy %s; this is Scrapy %s: every Scrapy internal it "
                       "uses was found as expected, but report any problem", tested_range(), scrapy.__version__)  # fmt: skip


def _need(found: Any, internal: str, problem: str = "is missing") -> Any:
    if not found:
        raise InternalsChanged(internal, problem)
    return found
