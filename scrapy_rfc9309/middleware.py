"""The downloader middleware: the decision, its log lines and counts, the usage model on responses.
A request the gate (:mod:`.gate`) released is a synchronous look-up; one that came without it waits
here for its origin's resolution and its Crawl-delay turn.  Stats: docs/middleware.md."""

from __future__ import annotations

import logging
import sys
from functools import lru_cache, partial
from typing import TYPE_CHECKING, Any, NoReturn

from scrapy import signals
from scrapy.exceptions import IgnoreRequest, NotConfigured

from . import compat
from .audit import META_KEY, Recorder, decide_all, denial_reason, provenance
from .counts import STATS
from .fetch import FETCH_META_KEY
from .lifecycle import crawl_state, refused, rfc9309_settings, robots_service
from .masking import mask_url
from .origins import origin_of
from .robots.text import shorten
from .robots.usage import UNKNOWN, Usage, from_header, usage_for
from .robots.verdicts import ALLOW_NOT_OBEYED, Decision, Verdict
from .service import META_USAGE, Known, NotResolved, preload_structured_fields
from .settings import usage_purposes
from .useragent import derive_tokens

if TYPE_CHECKING:
    from collections.abc import Coroutine

    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from typing_extensions import Self  # (typing.Self requires Python 3.11)

    from .settings import Rfc9309Settings

logger = logging.getLogger(__name__)

META_USER_AGENT = "robotstxt_user_agent"
#: a request the gate released and this middleware sent back to it (its origin was no longer fresh)
RETURNED = "rfc9309_returned"
RELEASED = "rfc9309_released"  #: meta key of a released request (request_scheduled again: the one waking the engine)
_VERDICT = {v: f"requests/{'allowed' if v.value.startswith('allowed') else 'denied'}/{v.value}" for v in Verdict}
DENIED_USAGE = "requests/denied/usage_preferences"  # allowed by robots.txt, not by its usage preferences
FORBIDDEN = "robotstxt/forbidden"  # Scrapy's own stat for every request robots.txt drops, counted beside ours
Checked = tuple[Decision, str, Usage]  # what RobotsTxtMiddleware._check found
Names = tuple[str, ...]  # product tokens, or declared purposes (usage categories)


class RobotsTxtMiddleware:
    """RFC 9309 robots.txt for Scrapy; replaces Scrapy's RobotsTxtMiddleware."""

    def __init__(self, crawler: Crawler) -> None:
        self.crawler, self.settings = crawler, (settings := rfc9309_settings(crawler))
        if not settings.enabled:
            raise NotConfigured  # said once, at INFO, by rfc9309_settings
        if settings.obey and not refused(crawler):  # refused: the ERROR line said why; these are only the defaults
            logger.info(
                "RFC 9309 robots.txt: product token%s %s (from %s); unreachable robots.txt: %s; cache %gs, at most %d origins",
                "s" if len(settings.user_agents) > 1 else "", ", ".join(map(repr, settings.user_agents)),
                settings.user_agent_source, settings.unreachable, settings.cache_seconds, settings.cache_max_origins,
                extra={"spider": crawler.spider},
            )  # fmt: skip
        self.service = service = robots_service(crawler)
        self._gate: Any = None  # the crawl's gate, once the engine built its scheduler
        self._counts = service.counts
        self.recorder = recorder = Recorder(crawler, service, settings)  # provenance, changes, the audit trail
        service.on_file(lambda *args: recorder.file(*args) if recorder.active else None)
        self._reads_pages = settings.reads_pages  # whether any response may be read for usage sources
        crawler.signals.connect(self._spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(self._spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler)

    @compat.request_method  # the spider argument of Scrapy 2.13
    def process_request(self, request: Request) -> Coroutine[Any, Any, None] | Request | None:
        if FETCH_META_KEY in (meta := request.meta) or (origin := origin_of(request.url)) is None:
            return None  # our own robots.txt fetch; data:, file: and other non-HTTP URLs are never checked
        (counts := self._counts).inc("requests/checked")
        counts.tick()
        held = self._gate.released.pop(request, None) if self._gate is not None else None
        if held is not None and held.error:
            counts.inc("cache/misses")
            counts.inc("requests/dropped/error")  # the gate's or the service's own work failed for it
            self._drop(request, f"Dropped: {held.error}")
        tokens = (policy := self.settings.for_origin(origin)).user_agents
        files = self.service.reads(origin, meta)  # (as the gate asked: an origin whose usage is not read, none)
        if meta.get("dont_obey_robotstxt") or not policy.obey:  # access rules off; usage preferences kept
            known, usage = self.service.known(origin) if files else None, UNKNOWN
            if known is not None and (usage := usage_for(known.robots, request.url, tokens, allowed=True)):
                if denied := usage.denies(self._purposes(request, origin)):  # (known already: nothing fetched)
                    counts.inc("cache/hits")  # the known file decided it
                    self._usage_denied(request, denied, "denied", known, tokens[0])
            counts.inc(_VERDICT[Verdict.ALLOWED_NOT_OBEYED])
            meta[META_KEY] = provenance(None, ALLOW_NOT_OBEYED, tokens, usage)
            return None
        if meta.get(META_USER_AGENT):
            tokens = self._request_tokens(request, origin, meta[META_USER_AGENT], META_USER_AGENT)
        elif policy.from_user_agent and request.headers and (header := request.headers.get(b"User-Agent")):
            tokens = self._request_tokens(request, origin, header, "User-Agent header")
        known = self.service.fresh(origin, files)
        lapsed = held is not None and held.paced and self.service.paces and self._gate.lapsed(request)  # (a held loop)
        if known is not None and not lapsed and (held is not None and held.paced or not self._floor(known, tokens)):
            counts.inc("cache/misses" if held is not None and held.for_robots else "cache/hits")
            self._allow(request, origin, known, tokens, self._check(request, origin, known, tokens, held))
            return None
        if (known is None or lapsed) and held is not None and RETURNED not in meta:
            # released, and its origin no longer fresh (a page named a license, the cache expired) or its cluster turn
            # lapsed: back to the gate, not waiting in its downloader place (Scrapy schedules what is returned); once
            counts.inc("requests/checked", -1)  # (checked when it comes back)
            counts.inc("gate/returned")
            again = request.replace(dont_filter=True, meta={**meta, RETURNED: True})
            again.meta.pop(RELEASED, None)
            return again
        counts.inc("cache/hits" if known is not None else "cache/misses")
        return self._wait(request, origin, tokens, known, files)

    async def _wait(self, request: Request, origin: str, tokens: Names, known: Known | None, files: bool) -> None:
        """A request that came without the gate waits, in its downloader place, for its origin and its turn."""
        try:
            if known is None:
                try:
                    known = await self.service.resolve(origin, request, files)
                except Exception as exc:
                    if not isinstance(exc, NotResolved):
                        self._counts.inc("requests/errors")
                    raise
            checked = self._check(request, origin, known, tokens)
            floor = self._floor(known, tokens) if checked[0].verdict is not Verdict.ALLOWED_ROBOTS_TXT else 0
            if floor and self._gate is not None:  # (robots.txt itself takes no turn)
                (await self._gate.file_turn(origin, request, floor))()  # (its download is on its way now)
            elif floor:  # (a shared store paces the cluster)
                await self.service.wait_turn(origin, floor)
                compat.spawn(self.service.note_start(origin, floor))
        except NotResolved:
            self._counts.inc("requests/dropped/spider_closing")
            self._drop(request, "Dropped: the spider closed before robots.txt allowed it")
        self._allow(request, origin, known, tokens, checked)

    def _floor(self, known: Known, tokens: Names) -> float:
        """The floor ``tokens`` keep where a turn is taken: with the gate, or a shared store."""
        if not known.floor or (self._gate is None and not self.service.paces):
            return 0.0
        return known.floor if tokens == known.tokens else self.service.floor_for(known.robots, tokens)[0]

    def _check(self, request: Request, origin: str, known: Known, tokens: Names, held: Any = None) -> Checked:
        """The decision, its token and robots.txt's usage for the URL; a denial is counted, recorded, raised."""
        if held is not None and held.checked is not None and held.checked[0] is known and tokens == known.tokens:
            decision, token, url = held.checked[1], tokens[0], request.url  # the gate checked it just now
        else:
            decision, token = decide_all(known.robots, url := request.url, tokens)
        if not decision.allowed:
            if self.recorder.active:
                self.recorder.decided(request.url, origin, known, decision, token)
            self._counts.inc(_VERDICT[decision.verdict])
            self._counts.inc_scrapy(FORBIDDEN)
            self._drop(request, f"Forbidden by robots.txt: {denial_reason(decision, token, tokens)}")
        usage = known.robots.usage(url, token, True) if len(tokens) == 1 else usage_for(known.robots, url, tokens, True)
        if known.license is not None and known.license.parsed:  # an RSL license: known before the download
            usage = usage.combine(known.license.parsed.usage(request.url))
        if (usage or META_USAGE in request.meta) and (denied := usage.denies(self._purposes(request, origin))):
            self._usage_denied(request, denied, "denied", known, token)
        return decision, token, usage

    def _usage_denied(self, request: Request, denied: Any, action: str, known: Any = None, token: Any = None) -> None:
        """A purpose ``denied`` before the download ("denied") or after ("dropped", "marked"): counted, recorded."""
        label, sources = denied
        self._counts.inc(f"usage/{action}/{label}")
        if action == "denied":
            self._counts.inc(DENIED_USAGE)  # not downloaded: the accounting counts it as denied
        if self.recorder.active:
            stage = sources[0].origin if sources else "robots.txt" if known is not None else "unknown"
            origin = origin_of(request.url) or ""
            self.recorder.usage_decided(request.url, origin, known, token, action, stage, label, sources)
        if action != "marked":
            verb = "Forbidden" if action == "denied" else "Dropped"
            where = "; ".join(map(str, sources)) or "no statement (RFC9309_USAGE's unknown = 'deny')"
            self._drop(request, f"{verb} by usage preferences: {label} disallowed by {where}")

    def _allow(self, request: Request, origin: str, known: Known, tokens: Names, checked: Checked) -> None:
        decision, token, usage = checked
        if self.recorder.active:
            self.recorder.decided(request.url, origin, known, decision, token, usage)
        self._counts.inc(_VERDICT[decision.verdict])
        request.meta[META_KEY] = provenance(known, decision, tokens, usage)

    def _purposes(self, request: Request, origin: str, downloaded: bool = False) -> Names:
        """A bad ``rfc9309_usage`` is a denial before the download, a drop after it (counted as allowed)."""
        try:
            return declared_purposes(request, self.settings, origin, strict=True)
        except (ValueError, TypeError) as exc:
            kind, verb = ("dropped", "Dropped") if downloaded else ("denied", "Forbidden")
            self._counts.inc(f"usage/{kind}/invalid_purpose")
            if not downloaded:
                self._counts.inc(DENIED_USAGE)
            self._drop(request, f"{verb} by usage preferences: invalid {META_USAGE} ({shorten(exc)})")

    @compat.request_method
    def process_exception(self, request: Request, exception: BaseException) -> None:
        """A request a later middleware dropped (never downloaded): its Crawl-delay turn ends now, not in 5 s."""
        if self._gate is not None:
            self._gate.left(request)

    @compat.response_method  # the spider argument of Scrapy 2.13
    def process_response(self, request: Request, response: Response) -> Response:
        """The ``Content-Usage`` header joins the provenance's preferences; every source where they are read."""
        meta = request.meta
        if self._gate is not None:  # a response no downloader saw (a cache's): its turn ends now, not in 0.25 s or 5 s
            self._gate.left(request)
        if (prov := meta.get(META_KEY)) is None or FETCH_META_KEY in meta:
            return response
        if (self._reads_pages or META_USAGE in meta) and (origin := origin_of(request.url)) is not None:
            purposes = self._purposes(request, origin, downloaded=True)
            if purposes or self.settings.usage_report:
                return self._read_page(request, response, origin, purposes)
        if not (header := response.headers.getlist(b"Content-Usage")):
            return response  # the common case: nothing more to say (no purpose: nothing to enforce)
        usage, stated = from_header(header), prov.get("usage")  # robots.txt's, given at request time
        prov["usage"] = (Usage.from_dict(stated).combine(usage) if stated is not None else usage).to_dict()
        if self.recorder.allowed_records:
            self.recorder.response_usage(request.url, origin_of(request.url) or "", prov["usage"])
        return response

    def _read_page(self, request: Request, response: Response, origin: str, purposes: Names) -> Response:
        """Every source of the response into its provenance and the trail; a denial is dropped or marked."""
        from .page_usage import read_response  # (imported by a crawl that reads pages only: ~1.5 M instructions)

        prov, known = request.meta[META_KEY], self.service.known(origin)
        tdmrep = known.tdmrep.parsed if known is not None and known.tdmrep is not None else None
        reading = read_response(response, request.url, prov.get("tokens") or self.settings.user_agents, tdmrep)
        if reading.head_read:
            self._counts.inc("page/heads_read")
        if reading.licenses:  # recorded; the first governs the origin's next requests if robots.txt names none
            prov["license_links"] = [{"url": mask_url(url), "source": source} for url, source in reading.licenses]
            self.service.adopt_license(origin, reading.licenses[0][0])
        if reading.nofollow:
            enforced = bool(purposes) and self.settings.follows_nofollow
            prov["nofollow"] = {"sources": [s.to_dict() for s in reading.nofollow], "enforced": enforced}
        usage, stated = reading.usage, Usage.from_dict(prov.get("usage"))  # robots.txt's, given at request time
        if usage:
            usage = stated.combine(usage) if stated else usage
            prov["usage"] = usage.to_dict()
            if self.recorder.allowed_records or (self.recorder.active and self.settings.usage_report):
                self.recorder.response_usage(request.url, origin, prov["usage"])
        elif self.settings.usage_unknown_denies and stated:
            usage = stated
        if (denied := usage.denies(purposes, self.settings.usage_unknown_denies) if purposes else None) is not None:
            self._usage_denied(request, denied, "marked" if self.settings.usage_header == "mark" else "dropped")
            prov["usage_denied"] = {"category": denied[0], "sources": [s.to_dict() for s in denied[1]]}
        return response

    def _request_tokens(self, request: Request, origin: str, value: Any, source: str) -> Names:
        """The tokens of ``robotstxt_user_agent`` (a string or a list) or a ``User-Agent`` header; none: a denial."""
        try:
            return _tokens_of(tuple(value) if isinstance(value, list) else value)
        except (ValueError, TypeError) as exc:
            message = f"Forbidden by robots.txt: invalid {source} ({shorten(exc)})"
            self._counts.inc("requests/denied/invalid_user_agent")
            self._counts.inc_scrapy(FORBIDDEN)
            if self.recorder.active:
                self.recorder.invalid_token(request.url, origin, message)
            self._drop(request, message)

    def _drop(self, request: Request, message: str) -> NoReturn:
        shown = f"<{request.method} {shorten(mask_url(request.url))}>"  # as Scrapy prints it, masked, bounded
        logger.debug("%s: %s", message, shown, extra={"spider": self.crawler.spider})
        raise IgnoreRequest(message) from None

    def _spider_opened(self, spider: Spider) -> None:
        self._gate = crawl_state(self.crawler).gate
        if self._reads_pages and "http_sf" not in sys.modules:  # (headers are RFC 9651 dictionaries: not on the loop)
            compat.spawn(compat.run_in_thread(preload_structured_fields))
        if self._gate is None:
            logger.info(
                "scrapy-rfc9309: the scheduler is not the gate (SCHEDULER = 'scrapy_rfc9309.gate.GateScheduler', "
                "set by the add-on): requests of origins whose robots.txt is not known yet wait inside the "
                "downloader, each in a CONCURRENT_REQUESTS place", extra={"spider": spider},
            )  # fmt: skip

    def _spider_closed(self, spider: Spider, reason: str) -> None:
        self._counts.flush()
        get, stats = self.crawler.stats.get_value, self.crawler.stats.get_stats().items()
        allowed, denied, dropped = (  # every key under each prefix (the stats add up): no new key is left out
            sum(v for k, v in stats if k.startswith(f"{STATS}requests/{kind}/") and isinstance(v, int))
            for kind in ("allowed", "denied", "dropped"))  # fmt: skip
        logger.info(
            "RFC 9309 robots.txt: origins with a file: %d, unavailable (allow all): %d, unreachable: %d; "
            "requests checked: %d, allowed: %d, denied: %d%s",
            *(get(f"{STATS}origins/{a}", 0) for a in ("success", "unavailable", "unreachable")),
            get(STATS + "requests/checked", 0), allowed, denied,
            f", dropped as the spider closed: {dropped}" if dropped else "", extra={"spider": spider},
        )  # fmt: skip


def declared_purposes(request: Request, settings: Rfc9309Settings, origin: str = "", strict: bool = False) -> Names:
    """What ``request`` declares: its ``rfc9309_usage``, else its origin's, else the crawl's (a bad one: ``strict``)."""
    if (value := request.meta.get(META_USAGE)) is None:
        origin = origin or origin_of(request.url) or ""
        return settings.for_origin(origin).usage if origin else settings.usage
    try:
        return _purposes_of(tuple(value) if isinstance(value, (list, set, frozenset)) else value)
    except (ValueError, TypeError):
        if strict:
            raise
        return ()


_purposes_of = lru_cache(maxsize=256)(partial(usage_purposes, name=META_USAGE))
_tokens_of = lru_cache(maxsize=256)(derive_tokens)
