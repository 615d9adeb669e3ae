"""Downloading one origin's robots.txt through the crawl's downloader middlewares.

Each hop carries meta that switches off what is meant for pages (redirects,
offsite, cache, retries, ``DOWNLOAD_MAXSIZE``; docs/middleware.md lists each):
redirects are followed here, up to ``settings.MAX_REDIRECTS``; the body is
bounded by a ``bytes_received`` handler that stops the transfer just past the
parse limit (``StopDownload(fail=False)`` keeps what came), because a positive
``download_maxsize`` would fail a large file instead of truncating it; and the
``Content-Encoding`` is moved aside before HttpCompressionMiddleware, which
fails a body decoding past ``download_maxsize``, and undone here, bounded
(:mod:`.robots.bodies`).

The redirect guard: a public origin's redirects are not followed to an
internal address, neither one asked (:meth:`RobotsFetcher._leads_inward`) nor
one that answered (``response.ip_address``); the origin's own ``/robots.txt``
is read wherever the origin is, and an origin answered from inside is private
(docs/middleware.md, "The redirect guard").

The lane: a download takes no ``CONCURRENT_REQUESTS`` place, download slot or
page connection; at most ``RFC9309_FETCH_CONCURRENCY`` run at once
(:func:`.internals.lane_download`; docs/middleware.md, "robots.txt downloads").
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, StopDownload
from scrapy.http.request import NO_CALLBACK
from twisted.internet.defer import CancelledError, DeferredSemaphore

from . import compat, internals
from .addresses import AddressPolicy, ip_literal
from .masking import mask_url
from .origins import resource_url
from .robots.access import Access, classify_error, classify_status, freshness, redirect_target
from .robots.bodies import ContentDecodingError, read_body
from .robots.text import shorten
from .service import DISALLOWED_HOP

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from .settings import Rfc9309Settings

logger = logging.getLogger(__name__)

#: request meta key that marks a robots.txt fetch (its value is the transfer state)
FETCH_META_KEY = "rfc9309_robots_fetch"
ACCEPT_ENCODING = b"gzip, deflate"
#: bytes read past the parse limit before the transfer is stopped: enough for a
#: compressed body to decode past the limit, so truncation is seen
SLACK_BYTES = 65_536
#: meta keys of the page request that choose the network path; copied to the fetch
PATH_META_KEYS = ("proxy", "bindaddress")
#: a downloader middleware may replace the robots.txt request this many times
REPLACEMENTS = 5
#: why a public origin's fetch ended as unavailable (scrapy_rfc9309.addresses)
INWARD_NOTE = "a redirect to an internal address, not followed for a public origin"
NO_LOCATION = "a redirect without a usable Location"
DISALLOWED_NOTE = "a redirect to a URL robots.txt disallows, not followed"


@dataclass(slots=True, eq=False)
class _Transfer:
    """What the signal handlers learn about one hop while it downloads.  Only
    the fetcher that made it counts its bytes (``owner``)."""

    owner: RobotsFetcher
    #: the bytes kept (the parse limit), and read before the transfer is stopped
    max_bytes: int
    limit: int
    received: int = 0
    stopped: bool = False
    encodings: list[bytes] = field(default_factory=list)


@dataclass
class FetchResult:
    """The outcome of one robots.txt fetch, redirects included."""

    access: Access
    #: status of the last response, None after a network error
    status: int | None
    url: str
    #: stats class of each hop, e.g. ["3xx", "3xx", "2xx"] or ["error/DownloadTimeoutError"];
    #: every class but the last is a followed redirect
    classes: list[str] = field(default_factory=list)
    #: the decoded body, at most the parse limit (2xx only)
    body: bytes = b""
    content_type: str | None = None
    error: BaseException | None = None
    #: bytes cut from the body (a lower bound when the transfer was stopped); 0 if none
    truncated_bytes: int = 0
    #: seconds the response says it stays fresh (Cache-Control / Expires), or None
    fresh_for: float | None = None
    #: why a 3xx ended the fetch ("more than 5 redirects", ...), else ""
    note: str = ""
    #: the error is not the network's (a bug in a downloader middleware, a URL
    #: filter's IgnoreRequest ...): still unreachable (fail-safe), but logged as an ERROR
    internal: bool = False
    #: the URL asked at each hop, in order: robots.txt of the origin first, then
    #: each redirect target followed (the audit trail keeps it)
    chain: list[str] = field(default_factory=list)
    #: time.time() when the fetch began
    started_at: float = 0.0
    #: the last response's headers (Scrapy ``Headers``), None after a network error
    headers: Any = None

    @property
    def outcome(self) -> str:
        """The stats class of the final hop."""
        return self.classes[-1]

    @property
    def redirects(self) -> int:
        return len(self.classes) - 1

    def scrapy_stats(self) -> list[str]:
        """The ``robotstxt/*`` stats Scrapy's own middleware writes for this
        fetch, with its meaning: one request; a response and its final status
        when one came (redirects are followed here, as Scrapy's RedirectMiddleware
        would); the exception's class as Scrapy writes it (``<class '...'>``)
        when one was raised, except ``IgnoreRequest``, which Scrapy does not count."""
        keys = ["robotstxt/request_count"]
        if self.status is not None:
            keys += ["robotstxt/response_count", f"robotstxt/response_status_count/{self.status}"]
        if self.error is not None and not isinstance(self.error, IgnoreRequest):
            keys.append(f"robotstxt/exception_count/{type(self.error)}")
        return keys


class RobotsFetcher:
    """Fetches robots.txt files; one instance per crawler."""

    def __init__(self, crawler: Crawler, settings: Rfc9309Settings) -> None:
        self.crawler = crawler
        self.settings = settings
        #: robots.txt downloads in flight; the signal handlers are connected only
        #: while there are any, so pages pay no receiver when no fetch runs
        self._in_flight = 0
        #: internal addresses and private origins (RFC9309_INTERNAL_NETWORKS)
        self.addresses = AddressPolicy(settings.internal_networks)
        #: the lane: fetches (a redirect chain is one) running at once
        self._lane = DeferredSemaphore(settings.fetch_concurrency)
        #: the lane's own download handlers (and connection pools), made at the first fetch
        self._handlers: Any = None

    async def fetch(
        self,
        origin: str,
        trigger: Request | None = None,
        path: str = "/robots.txt",
        allow: Callable[[str], Awaitable[bool]] | None = None,
        max_bytes: int | None = None,
    ) -> FetchResult:
        """Fetch ``origin``'s robots.txt (or another file of it, ``path``:
        ``/.well-known/tdmrep.json``, at most ``max_bytes`` of it kept), following
        redirects; ``allow(url)`` tells whether a redirect target may be asked
        (robots.txt of its origin: the service's
        :meth:`~.service.RobotsService.allows`), else the fetch ends there.
        Never raises for network trouble: that is an access result."""
        chain: list[str] = []
        lane = self._lane
        if not lane.tokens:
            self.crawler.stats.inc_value("rfc9309/fetch_lane/waited")
        await compat.wait_for(lane.acquire())
        try:
            started = time.time()
            result = await self._follow(origin, trigger, chain, path, allow, max_bytes or self.settings.max_bytes)
        finally:
            lane.release()
        result.chain = chain
        result.started_at = started
        return result

    async def _follow(
        self,
        origin: str,
        trigger: Request | None,
        chain: list[str],
        path: str,
        allow: Callable[[str], Awaitable[bool]] | None,
        max_bytes: int,
    ) -> FetchResult:
        url = resource_url(origin, path)
        classes: list[str] = []
        limit = self.settings.max_redirects
        status: int | None = None
        # a public origin's robots.txt redirects are followed only to public addresses (scrapy_rfc9309.addresses)
        guard = (
            None if self.settings.allow_private_redirects or self.addresses.private_origin(origin) else self.addresses
        )

        def unfollowable(note: str, outcome: str = "3xx_unfollowable") -> FetchResult:
            """The last redirect is not followed: the fetch ends unavailable (all allowed)."""
            classes[-1] = outcome
            return FetchResult(Access.UNAVAILABLE, status, url, classes, note=note)

        for hop in range(limit + 1):
            if hop and allow is not None and not await allow(url):
                return unfollowable(DISALLOWED_NOTE, DISALLOWED_HOP)
            chain.append(url)
            if hop and guard is not None and await self._leads_inward(guard, url):
                return unfollowable(INWARD_NOTE)
            try:
                request = self._request(url, trigger, max_bytes)
            except ValueError:
                if not classes:
                    raise  # robots_url() of a canonical origin: a bug, not the server's doing
                return unfollowable(NO_LOCATION)  # it passed redirect_target(), yet Scrapy cannot request it
            try:
                self._listen(1)
                try:
                    response = await self._download(request)
                finally:
                    self._listen(-1)
            except CancelledError:
                raise  # the crawl is closing: not an access result
            except compat.NETWORK_ERRORS as exc:  # timeout, DNS, refused, reset, TLS
                access = classify_error(exc)[0]
                classes.append(f"error/{internals.network_error_name(exc)}")
                return FetchResult(access, None, url, classes, error=exc)
            except Exception as exc:  # not the network: a middleware's bug, a URL filter ...
                classes.append(f"error/internal/{type(exc).__name__}")
                return FetchResult(Access.UNREACHABLE, None, url, classes, error=exc, internal=True)
            if guard is not None and (
                _answered_inward(guard, request, response)
                # (Scrapy 2.13 gives an empty body, such as a redirect's, no ip_address: then the
                # origin's own name, as the crawl's resolver answers it)
                or (
                    not hop
                    and response.ip_address is None
                    and 300 <= response.status < 400
                    and not request.meta.get("proxy")
                    and await self._leads_inward(guard, url)
                )
            ):
                if not hop:
                    # The origin's own server is inside (an intranet name, split-horizon DNS):
                    # its rules are read from where its pages will be fetched, and a redirect
                    # it sends is an inside server's choice, not an outsider's.
                    guard = None
                else:
                    return unfollowable(INWARD_NOTE)  # a redirect target that answered from inside: nothing kept
            access, name = classify_status(response.status)
            status = response.status
            if access is Access.REDIRECT:
                classes.append("3xx")
                target = redirect_target(response.url, response.headers.get("Location"))
                if target is None:
                    return unfollowable(NO_LOCATION)
                if hop == limit:
                    return unfollowable(f"more than {limit} redirects", "too_many_redirects")
                url = target
                continue
            classes.append(name)
            result = FetchResult(access, response.status, response.url, classes, fresh_for=_fresh_for(response))
            result.headers = response.headers
            if access is Access.SUCCESS:
                try:
                    self._read_body(response, request.meta[FETCH_META_KEY], result)
                except ContentDecodingError as exc:
                    classes[-1] = classify_error(exc)[1]
                    return FetchResult(Access.UNREACHABLE, response.status, response.url, classes, error=exc)
            return result
        raise AssertionError("unreachable: the loop returns on its last hop")  # pragma: no cover

    # -- one hop --------------------------------------------------------------
    async def _leads_inward(self, guard: AddressPolicy, url: str) -> bool:
        """Whether a redirect target is internal before any connection: an IP
        literal at once, a host name by what the crawl's resolver answers (a
        lookup that fails is left to the download, checked again after it)."""
        if guard.internal_literal(url):
            return True
        host = urlsplit(url).hostname
        if not host or ip_literal(host) is not None:
            return False
        address = await compat.resolve(host)
        return address is not None and guard.internal(address)

    def _request(self, url: str, trigger: Request | None, max_bytes: int) -> Request:
        meta: dict[str, Any] = {
            FETCH_META_KEY: _Transfer(self, max_bytes, max_bytes + SLACK_BYTES),
            "dont_obey_robotstxt": True,
            "dont_redirect": True,
            "handle_httpstatus_all": True,
            "dont_retry": True,
            "dont_cache": True,
            "allow_offsite": True,
            "download_timeout": self.settings.fetch_timeout,
            "download_maxsize": 0,
            "download_warnsize": 0,
            "download_fail_on_dataloss": True,  # a lost tail could hold a Disallow: unreachable
        }
        if trigger is not None:
            for key in PATH_META_KEYS:
                if key in trigger.meta:
                    meta[key] = trigger.meta[key]
        return Request(
            url,
            callback=NO_CALLBACK,
            dont_filter=True,
            meta=meta,
            headers={"Accept-Encoding": ACCEPT_ENCODING},
        )

    def _read_body(self, response: Response, transfer: _Transfer, result: FetchResult) -> None:
        declared = response.headers.get("Content-Length")
        size = int(declared) if transfer.stopped and declared and declared.isdigit() else None
        encodings = transfer.encodings + response.headers.getlist("Content-Encoding")
        result.body, result.truncated_bytes = read_body(response.body, encodings, transfer.max_bytes, size)
        result.content_type = _header(response, "Content-Type")

    async def _download(self, request: Request) -> Response:
        """One hop in the lane; a downloader middleware may replace the request
        (as ``engine.download_async`` follows it), a few times at most."""
        crawler = self.crawler
        if self._handlers is None:
            self._handlers = internals.lane_handlers(crawler, self.settings.fetch_concurrency)
        for _ in range(REPLACEMENTS):
            result = await internals.lane_download(crawler, self._handlers, request, _encoding_aside)
            if not isinstance(result, Request):
                break
            result.meta.setdefault(FETCH_META_KEY, request.meta[FETCH_META_KEY])
            request = result
        else:
            raise IgnoreRequest(f"downloader middlewares replaced the robots.txt request {REPLACEMENTS} times")
        # what the engine does for every download it makes
        spider = crawler.spider
        # (the plugin's own line, secrets masked and bounded, not Scrapy's engine's)
        logger.debug("Crawled (%d) %s (robots.txt lane)", result.status, _show(request), extra={"spider": spider})
        crawler.signals.send_catch_log(signals.response_received, response=result, request=request, spider=spider)
        return result

    # -- the body limit (see the module docstring) --------------------------
    def _listen(self, change: int) -> None:
        """Receive ``bytes_received`` while a download runs, only."""
        before = self._in_flight
        self._in_flight += change
        manager = self.crawler.signals
        if before == 0 and self._in_flight:
            manager.connect(self._bytes_received, signal=signals.bytes_received)
        elif before and self._in_flight == 0:
            manager.disconnect(self._bytes_received, signal=signals.bytes_received)

    def _bytes_received(self, data: bytes, request: Request, spider: Any = None) -> None:
        transfer = request.meta.get(FETCH_META_KEY)
        if not isinstance(transfer, _Transfer) or transfer.owner is not self:
            return
        transfer.received += len(data)
        if transfer.received > transfer.limit:
            transfer.stopped = True
            raise StopDownload(fail=False)


def _encoding_aside(response: Response, request: Request) -> None:
    """Move the hop's ``Content-Encoding`` aside before HttpCompressionMiddleware
    sees it: the body is decoded here, bounded (see the module docstring)."""
    transfer = request.meta.get(FETCH_META_KEY)
    encodings = response.headers.getlist("Content-Encoding")
    if isinstance(transfer, _Transfer) and encodings:
        transfer.encodings = list(encodings)
        del response.headers["Content-Encoding"]


# -- helpers -------------------------------------------------------------------
def _show(request: Request) -> str:
    return f"<{request.method} {shorten(mask_url(request.url))}>"


def _header(response: Response, name: str) -> str | None:
    values = response.headers.getlist(name)
    if not values:
        return None
    return ", ".join(v.decode("latin-1") for v in values)


def _fresh_for(response: Response) -> float | None:
    return freshness(
        _header(response, "Cache-Control"),
        _header(response, "Expires"),
        _header(response, "Date"),
        _header(response, "Age"),
        now=time.time(),
    )


def _answered_inward(guard: AddressPolicy, request: Request, response: Response) -> bool:
    """Whether the answer came from an internal address: the address the
    download connected to (``response.ip_address``).  Through a proxy that
    address is the proxy's, and where the proxy connected is not known: not
    checked then (a redirect to an IP literal still is, before it is asked)."""
    address = getattr(response, "ip_address", None)
    if address is None or request.meta.get("proxy"):
        return False
    return guard.internal(address)
