"""The downloader middleware: every request waits for its origin's robots.txt.

It holds the decision and its log lines only.  What governs an origin (one
fetch per origin, cache, store, access results, floors) is the crawl's
:class:`~scrapy_rfc9309.service.RobotsService`; how a waiting request is
accounted (busy on its slot, not against ``CONCURRENT_REQUESTS``) is
:class:`~scrapy_rfc9309.slots.HeldRequests`.  Stats: docs/middleware.md.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NoReturn

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured

from . import compat, internals
from .audit import META_KEY, Recorder, decide_all, denial_reason, provenance
from .fetch import FETCH_META_KEY
from .origins import origin_of_request
from .robots import Verdict
from .robots.access import Access
from .robots.text import shorten
from .robots.verdicts import ALLOW_NOT_OBEYED
from .service import STATS, Known, NotResolved
from .slots import seconds_until_free
from .useragent import derive_tokens
from .wiring import held_requests, rfc9309_settings, robots_service

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler

    # typing.Self requires Python 3.11
    from typing_extensions import Self

    from .settings import Rfc9309Settings

logger = logging.getLogger(__name__)

META_USER_AGENT = "robotstxt_user_agent"
_ALLOWED = {v: f"requests/allowed/{v.value}" for v in Verdict}
_DENIED = {v: f"requests/denied/{v.value}" for v in Verdict}
DROPPED_CLOSING = "requests/dropped/spider_closing"


class RobotsTxtMiddleware:
    """RFC 9309 robots.txt for Scrapy; replaces Scrapy's RobotsTxtMiddleware."""

    def __init__(self, crawler: Crawler, settings: Rfc9309Settings) -> None:
        self.crawler = crawler
        self.settings = settings
        self.service = service = robots_service(crawler)
        self.held = held_requests(crawler)
        self._counts = service.counts
        #: provenance, changes and the audit trail (scrapy_rfc9309.audit)
        self.recorder = Recorder(crawler, service, settings)
        self._offsite: Any = None  # Scrapy's OffsiteMiddleware, asked once the spider opens
        if settings.early_fetch:  # a receiver for every request: only when asked for
            crawler.signals.connect(self._request_scheduled, signal=signals.request_scheduled)
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings = rfc9309_settings(crawler)
        if not settings.enabled:
            raise NotConfigured  # said once, at INFO, by rfc9309_settings
        logger.info(
            "RFC 9309 robots.txt: product token%s %s (from %s); unreachable robots.txt: %s; cache %gs, at most %d origins",
            "s" if len(settings.user_agents) > 1 else "", ", ".join(map(repr, settings.user_agents)),
            settings.user_agent_source, settings.unreachable, settings.cache_seconds,
            settings.cache_max_origins, extra={"spider": crawler.spider},
        )  # fmt: skip
        return cls(crawler, settings)

    # -- the decision ----------------------------------------------------------
    @compat.request_method  # the spider argument of Scrapy 2.13
    async def process_request(self, request: Request) -> None:
        meta = request.meta
        if FETCH_META_KEY in meta:
            return None  # our own robots.txt fetch
        origin = origin_of_request(request)
        if origin is None:
            return None  # data:, file: and other non-HTTP URLs are never checked
        counts = self._counts
        counts.inc("requests/checked")
        counts.tick()
        policy = self.settings.for_origin(origin)
        if meta.get("dont_obey_robotstxt") or not policy.obey:
            counts.inc(_ALLOWED[Verdict.ALLOWED_NOT_OBEYED])
            meta[META_KEY] = provenance(None, ALLOW_NOT_OBEYED, policy.user_agents)
            return None
        tokens = policy.user_agents
        if meta.get(META_USER_AGENT):
            tokens = self._request_tokens(request, origin)

        known = self.service.fresh(origin)
        if known is not None:
            counts.inc("cache/hits")
            floor = self._pace_floor(known, tokens, self._decide(request, origin, known, tokens))
            if not floor:
                return None
        else:
            counts.inc("cache/misses")
            # waits are held as a busy site's requests are (see slots.HeldRequests)
            async with self.held.holding(request, self._closing):
                try:
                    known = await self.service.resolve(origin, request)
                except NotResolved:
                    self._drop_closing(request)
                except Exception:
                    counts.inc("requests/errors")
                    raise
                floor = self._pace_floor(known, tokens, self._decide(request, origin, known, tokens))
        if floor:
            await self._pace(request, origin, floor)
        return None

    def _decide(self, request: Request, origin: str, known: Known, tokens: tuple[str, ...]) -> Verdict:
        """Count an allowed request and give it its provenance
        (``meta["rfc9309"]``); raise ``IgnoreRequest`` for a denied one.  With
        several tokens every one must allow; a denial names the token."""
        if len(tokens) == 1:
            token = tokens[0]
            decision = known.robots.check(request.url, token)
        else:
            decision, token = decide_all(known.robots, request.url, tokens)
        if self.recorder.active:
            self.recorder.decided(request.url, origin, known, decision, token)
        if decision.allowed:
            self._counts.inc(_ALLOWED[decision.verdict])
            request.meta[META_KEY] = provenance(known, decision, tokens)
            return decision.verdict
        self._counts.inc(_DENIED[decision.verdict])
        self._drop(request, f"Forbidden by robots.txt: {denial_reason(decision, token, tokens)}")

    def _request_tokens(self, request: Request, origin: str) -> tuple[str, ...]:
        """The tokens of the ``robotstxt_user_agent`` meta key (a string or a list);
        a value naming no valid token is a logged denial."""
        value = request.meta[META_USER_AGENT]
        try:
            return _tokens_of(tuple(value) if isinstance(value, list) else value)
        except (ValueError, TypeError) as exc:
            message = f"Forbidden by robots.txt: invalid {META_USER_AGENT} ({shorten(exc)})"
            self._counts.inc("requests/denied/invalid_user_agent")
            if self.recorder.active:
                self.recorder.invalid_token(request.url, origin, message)
            self._drop(request, message)

    # -- cluster-wide Crawl-delay (shared store only) ----------------------------------
    def _pace_floor(self, known: Known, tokens: tuple[str, ...], verdict: Verdict) -> float:
        """The cluster-wide floor this allowed request keeps (robots.txt itself is free)."""
        if not self.service.paces or verdict is Verdict.ALLOWED_ROBOTS_TXT:
            return 0.0
        return known.floor if tokens == known.tokens else self.service.floor_for(known.robots, tokens)[0]

    async def _pace(self, request: Request, origin: str, floor: float) -> None:
        """Wait for the cluster-wide turn, held (see RobotsService.wait_turn)."""

        async def hold(wait: Callable[[], Awaitable[Any]]) -> None:
            async with self.held.holding(request, self._closing):
                await wait()

        try:
            await self.service.wait_turn(origin, floor, lambda: seconds_until_free(self.crawler, request), hold)
        except NotResolved:
            self._drop_closing(request)

    def _closing(self) -> bool:  # the engine asked directly: the service's watcher polls
        return self.service.closed or internals.engine_closing(self.crawler)

    def _drop_closing(self, request: Request) -> NoReturn:
        self._counts.inc(DROPPED_CLOSING)
        self._drop(request, "Dropped: the spider closed before robots.txt allowed it")

    def _drop(self, request: Request, message: str) -> NoReturn:
        logger.debug("%s: %s", message, _show(request), extra={"spider": self.crawler.spider})
        raise IgnoreRequest(message) from None

    def _request_scheduled(self, request: Request, spider: Spider | None = None) -> None:
        """Resolve a new origin once a request is scheduled: done before it gets here."""
        meta = request.meta
        if FETCH_META_KEY in meta or meta.get("dont_obey_robotstxt"):
            return
        origin = origin_of_request(request)
        if origin is None or self.service.pending(origin) or not self.settings.for_origin(origin).obey:
            return
        if self._offsite is not None and self._offsite(request):
            return  # OffsiteMiddleware will drop it: do not fetch for nothing
        self.service.prefetch(origin, request)

    def _spider_opened(self, spider: Spider) -> None:
        self._offsite = compat.offsite_filter(self.crawler)

    def _spider_closed(self, spider: Spider, reason: str) -> None:
        self.service.counts.flush()
        get = self.crawler.stats.get_value
        origins = {a.value: get(STATS + f"origins/{a.value}", 0) for a in Access if a is not Access.REDIRECT}
        allowed = sum(get(STATS + key, 0) for key in _ALLOWED.values())
        denied = sum(get(STATS + key, 0) for key in [*_DENIED.values(), "requests/denied/invalid_user_agent"])
        dropped = get(STATS + DROPPED_CLOSING, 0)
        logger.info(
            "RFC 9309 robots.txt: origins with a file: %d, unavailable (allow all): %d, unreachable: %d; "
            "requests checked: %d, allowed: %d, denied: %d%s", origins["success"], origins["unavailable"],
            origins["unreachable"], get(STATS + "requests/checked", 0), allowed, denied,
            f", dropped as the spider closed: {dropped}" if dropped else "", extra={"spider": spider},
        )  # fmt: skip


def _show(request: Request) -> str:
    return f"<{request.method} {shorten(request.url)}>"  # as Scrapy prints it, URL bounded


@lru_cache(maxsize=256)
def _tokens_of(value: str | bytes | tuple[str, ...]) -> tuple[str, ...]:
    return derive_tokens(value)
