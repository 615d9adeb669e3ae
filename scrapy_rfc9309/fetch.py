"""The one fetch path of an origin's files (robots.txt, tdmrep.json, ...), through the crawl's downloader middlewares in
a lane of its own (:mod:`.internals`; docs/middleware.md).  Hops switch off what is meant for pages; redirects are
followed here, each robots-checked, never from a public origin to an internal address.  The body stops just past the
limit (``bytes_received``: a positive ``download_maxsize`` would fail a large file) and is decoded here, bounded."""

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
HEADERS = {"Accept-Encoding": b"gzip, deflate"}
#: bytes read past the parse limit before the transfer stops, so a compressed body decodes past it
SLACK_BYTES = 65_536
#: each hop's meta: what is meant for pages is off (docs/middleware.md); a lost tail could hold a Disallow
HOP_META: dict[str, Any] = dict.fromkeys(
    ("dont_obey_robotstxt", "dont_redirect", "handle_httpstatus_all", "dont_retry", "dont_cache", "allow_offsite"), True
) | {"download_maxsize": 0, "download_warnsize": 0, "download_fail_on_dataloss": True}
#: meta keys of the page request that choose the network path; copied to the fetch
PATH_META_KEYS = ("proxy", "bindaddress")
#: a downloader middleware may replace the robots.txt request this many times
REPLACEMENTS = 5
#: why a fetch ended as unavailable (all allowed) on a redirect not followed
INWARD_NOTE = "a redirect to an internal address, not followed for a public origin"
NO_LOCATION = "a redirect without a usable Location"
#: whether a redirect target may be asked (the service's robots.txt check of it)
Allow = Callable[[str], Awaitable[bool]]


class _Transfer:
    """What ``bytes_received`` learns about one hop, of which ``max_bytes`` at most are kept (a plain class: see gate)."""

    __slots__ = ("max_bytes", "received", "stopped", "encodings")

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes, self.received, self.stopped = max_bytes, 0, False
        self.encodings: list[bytes] = []


@dataclass
class FetchResult:
    """The outcome of one fetch, redirects included."""

    access: Access
    status: int | None  # of the last response, None after a network error
    url: str
    #: stats class of each hop, e.g. ["3xx", "2xx"] or ["error/DownloadTimeoutError"]; all but the last are redirects
    classes: list[str] = field(default_factory=list)
    body: bytes = b""  # decoded, at most the parse limit (2xx only)
    content_type: str | None = None
    error: BaseException | None = None
    truncated_bytes: int = 0  # cut from the body (a lower bound when the transfer was stopped)
    fresh_for: float | None = None  # seconds the response says it stays fresh (Cache-Control / Expires)
    note: str = ""  # why a 3xx ended the fetch ("more than 5 redirects", ...)
    #: not the network's error (a middleware's bug, a URL filter's IgnoreRequest ...): unreachable, logged as ERROR
    internal: bool = False
    chain: list[str] = field(default_factory=list)  # the URL asked at each hop, the origin's first (audit trail)
    started_at: float = 0.0  # time.time() when the fetch began
    headers: Any = None  # the last response's ``Headers``, None after a network error

    @property
    def outcome(self) -> str:  # the stats class of the final hop
        return self.classes[-1]

    @property
    def redirects(self) -> int:
        return len(self.classes) - 1

    def scrapy_stats(self) -> list[str]:
        """The ``robotstxt/*`` stats Scrapy's own middleware would write (redirects followed, no IgnoreRequest)."""
        keys = ["robotstxt/request_count"]
        if self.status is not None:
            keys += ["robotstxt/response_count", f"robotstxt/response_status_count/{self.status}"]
        if self.error is not None and not isinstance(self.error, IgnoreRequest):
            keys.append(f"robotstxt/exception_count/{type(self.error)}")
        return keys


class RobotsFetcher:
    """Fetches an origin's files; one instance per crawler."""

    def __init__(self, crawler: Crawler, settings: Rfc9309Settings) -> None:
        self.crawler, self.settings = crawler, settings
        self._in_flight = 0  # downloads running: pages pay no ``bytes_received`` receiver when none
        self.addresses = AddressPolicy(settings.internal_networks)
        self._lane = DeferredSemaphore(settings.fetch_concurrency)  # downloads at once (a place per hop of a chain)
        self._handlers: Any = None  # the lane's download handlers, made at the first fetch

    async def fetch(
        self, origin: str, trigger: Request | None = None, path: str = "/robots.txt", allow: Allow | None = None,
        max_bytes: int | None = None,
    ) -> FetchResult:  # fmt: skip
        """Fetch ``origin``'s ``path`` (``max_bytes`` kept), redirects ``allow(url)`` lets; network trouble: a result."""
        started, chain = time.time(), list[str]()
        result = await self._follow(origin, path, trigger, chain, allow, max_bytes or self.settings.max_bytes)
        result.chain, result.started_at = chain, started
        return result

    async def _follow(
        self, origin: str, path: str, trigger: Request | None, chain: list[str], allow: Allow | None, max_bytes: int
    ) -> FetchResult:
        url, status, limit = resource_url(origin, path), None, self.settings.max_redirects
        classes: list[str] = []
        guard: AddressPolicy | None = None  # (_guard, asked at the first redirect: most fetches have none, no test)
        meta = HOP_META | {"download_timeout": self.settings.fetch_timeout}
        meta |= {key: trigger.meta[key] for key in PATH_META_KEYS if key in trigger.meta} if trigger else {}

        def unfollowable(note: str, outcome: str = "3xx_unfollowable") -> FetchResult:  # unavailable: all allowed
            classes[-1] = outcome
            return FetchResult(Access.UNAVAILABLE, status, url, classes, note=note)

        for hop in range(limit + 1):
            if hop and guard is not None and await self._leads_inward(guard, url):  # (before allow: it may fetch there)
                chain.append(url)
                return unfollowable(INWARD_NOTE)
            if hop and allow is not None and not await allow(url):
                return unfollowable("a redirect to a URL robots.txt disallows, not followed", DISALLOWED_HOP)
            chain.append(url)
            # a place per hop, none held while a hop is checked (its host's robots.txt may need one), before building it
            if not (acquired := self._lane.acquire()).called:  # (a free place is taken at once: nothing to wait for)
                self.crawler.stats.inc_value("rfc9309/fetch_lane/waited")
                await compat.wait_for(acquired)
            try:
                hop_meta = {**meta, FETCH_META_KEY: _Transfer(max_bytes)}
                request = Request(url, callback=NO_CALLBACK, dont_filter=True, meta=hop_meta, headers=HEADERS)
            except ValueError:
                self._lane.release()
                if not classes:
                    raise  # robots_url() of a canonical origin: a bug, not the server's doing
                return unfollowable(NO_LOCATION)  # it passed redirect_target(), yet Scrapy cannot request it
            try:
                response = await self._download(request)
            except CancelledError:
                raise  # the crawl is closing: not an access result
            except compat.NETWORK_ERRORS as exc:  # timeout, DNS, refused, reset, TLS
                classes.append(f"error/{internals.network_error_name(exc)}")
                return FetchResult(classify_error(exc)[0], None, url, classes, error=exc)
            except Exception as exc:  # not the network: a middleware's bug, a URL filter ...
                classes.append(f"error/internal/{type(exc).__name__}")
                return FetchResult(Access.UNREACHABLE, None, url, classes, error=exc, internal=True)
            finally:
                self._lane.release()
            if not hop and 300 <= response.status < 400:  # whether the answer came from inside:
                guard = self._guard(origin)
            if guard is not None and not request.meta.get("proxy"):  # the address connected to (a proxy's: not checked)
                if response.ip_address is not None:
                    inside = guard.internal(response.ip_address)
                else:  # Scrapy 2.13 gives an empty body (a redirect's) none: the origin's name, as the resolver answers
                    inside = not hop and 300 <= response.status < 400 and await self._leads_inward(guard, url)
                if inside and hop:
                    return unfollowable(INWARD_NOTE)  # a redirect target that answered from inside: nothing kept
                if inside:  # the origin's own server (an intranet, split-horizon DNS): its redirects are its own
                    guard = None
            access, name = classify_status(status := response.status)
            if access is Access.REDIRECT:
                classes.append("3xx")
                if (target := redirect_target(response.url, response.headers.get("Location"))) is None:
                    return unfollowable(NO_LOCATION)
                if hop == limit:
                    return unfollowable(f"more than {limit} redirects", "too_many_redirects")
                url = target
                continue
            classes.append(name)
            cache_control, expires = _header(response, "Cache-Control"), _header(response, "Expires")
            fresh_for = None  # (Date and Age only adjust a lifetime those two give)
            if cache_control or expires is not None:
                date, age = _header(response, "Date"), _header(response, "Age")
                fresh_for = freshness(cache_control, expires, date, age, now=time.time())
            result = FetchResult(access, status, response.url, classes, fresh_for=fresh_for, headers=response.headers)
            if access is Access.SUCCESS:
                transfer: _Transfer = request.meta[FETCH_META_KEY]
                declared = response.headers.get("Content-Length")
                size = int(declared) if transfer.stopped and declared and declared.isdigit() else None
                encodings = transfer.encodings + response.headers.getlist("Content-Encoding")
                try:
                    result.body, result.truncated_bytes = read_body(response.body, encodings, transfer.max_bytes, size)
                except ContentDecodingError as exc:
                    classes[-1] = classify_error(exc)[1]
                    return FetchResult(Access.UNREACHABLE, status, response.url, classes, error=exc)
                result.content_type = _header(response, "Content-Type")
            return result
        raise AssertionError("unreachable: the loop returns on its last hop")  # pragma: no cover

    async def inward(self, origin: str, url: str) -> bool:
        """Whether ``url`` (a file ``origin`` names on another host) is internal while ``origin`` is public: unasked."""
        return (guard := self._guard(origin)) is not None and await self._leads_inward(guard, url)

    def _guard(self, origin: str) -> AddressPolicy | None:
        """A public origin's redirects and other hosts' files go only to public addresses (scrapy_rfc9309.addresses)."""
        addresses = self.addresses
        return None if self.settings.allow_private_redirects or addresses.private_origin(origin) else addresses

    async def _leads_inward(self, guard: AddressPolicy, url: str) -> bool:
        """Whether a redirect target is internal, before connecting: a literal at once, a name as resolved (or not)."""
        if guard.internal_literal(url):
            return True
        if not (host := urlsplit(url).hostname) or ip_literal(host) is not None:
            return False
        address = await compat.resolve(host)
        return address is not None and guard.internal(address)

    async def _download(self, request: Request) -> Response:
        """One hop in the lane; a middleware may replace the request (as ``download_async`` follows), a few times."""
        crawler = self.crawler
        if self._handlers is None:
            self._handlers = internals.lane_handlers(crawler, self.settings.fetch_concurrency)
        if not self._in_flight:  # receive ``bytes_received`` only while a download runs
            crawler.signals.connect(self._bytes_received, signal=signals.bytes_received)
        self._in_flight += 1
        try:
            for _ in range(REPLACEMENTS):
                result = await internals.lane_download(crawler, self._handlers, request, _encoding_aside)
                if not isinstance(result, Request):
                    break
                result.meta.setdefault(FETCH_META_KEY, request.meta[FETCH_META_KEY])
                request = result
            else:
                raise IgnoreRequest(f"downloader middlewares replaced the robots.txt request {REPLACEMENTS} times")
        finally:
            self._in_flight -= 1
            if not self._in_flight:
                crawler.signals.disconnect(self._bytes_received, signal=signals.bytes_received)
        # what the engine does for every download it makes (a line of our own: secrets masked, bounded)
        spider, shown = crawler.spider, f"<{request.method} {shorten(mask_url(request.url))}>"
        logger.debug("Crawled (%d) %s (robots.txt lane, %d bytes)", result.status, shown, len(result.body),
                     extra={"spider": spider})  # fmt: skip
        crawler.signals.send_catch_log(signals.response_received, response=result, request=request, spider=spider)
        return result

    def _bytes_received(self, data: bytes, request: Request, **_: Any) -> None:  # (**_: pydispatch filters nothing)
        transfer = request.meta.get(FETCH_META_KEY)
        if isinstance(transfer, _Transfer):  # (one fetcher per crawler: its signals are the crawl's)
            transfer.received += len(data)
            if transfer.received > transfer.max_bytes + SLACK_BYTES:
                transfer.stopped = True
                raise StopDownload(fail=False)


def _encoding_aside(response: Response, request: Request) -> Response:
    """Move the hop's ``Content-Encoding`` aside before HttpCompressionMiddleware sees it."""
    transfer, encodings = request.meta.get(FETCH_META_KEY), response.headers.getlist("Content-Encoding")
    if isinstance(transfer, _Transfer) and encodings:
        transfer.encodings = list(encodings)
        del response.headers["Content-Encoding"]
    return response


def _header(response: Response, name: str) -> str | None:
    return ", ".join(v.decode("latin-1") for v in values) if (values := response.headers.getlist(name)) else None
