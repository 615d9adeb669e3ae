"""The per-crawl registry: one robots service per crawl and its lifecycle (a bad setting, a changed Scrapy
internal or an unreachable store refuses the crawl before its first request; results are signalled)."""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast
from weakref import WeakKeyDictionary

from scrapy import Request, signals
from scrapy.http.request import NO_CALLBACK
from scrapy.settings import SETTINGS_PRIORITIES

from . import compat, internals
from .fetch import RobotsFetcher
from .masking import mask_url
from .origins import origin_of, robots_url
from .robots.text import shorten
from .service import Known, RobotsService
from .settings import InvalidSetting, Rfc9309Settings, unreadable_scrapy_setting
from .signals import robots_txt_ready
from .storage import FallbackStorage, StorageNeedsAsyncio, StorageUnavailable, build_storage, display_url

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from scrapy.crawler import Crawler

    from .robots import RobotsTxt

__all__ = ["governing_robots", "robots_service", "rfc9309_settings"]

logger = logging.getLogger(__name__)

STORAGE_UNAVAILABLE = "rfc9309_storage_unavailable"  # finish reason: the store cannot be reached at start-up
INVALID_SETTING = "rfc9309_invalid_setting"  # finish reason: a bad setting (one ERROR line when it is read)


class _Crawl:
    """One crawl's entry (a plain class: a dataclass's generated methods cost start-up instructions)."""

    __slots__ = ("gate", "refused", "service", "settings")

    def __init__(self, settings: Rfc9309Settings, refused: str | None = None) -> None:
        self.settings = settings
        self.service: RobotsService | None = None
        self.gate: Any = None  # the crawl's gate (scrapy_rfc9309.gate), when the scheduler is one
        self.refused = refused  # the finish reason the crawl is refused with when the spider opens


_CRAWLS: WeakKeyDictionary[Any, _Crawl] = WeakKeyDictionary()


def _stops(crawler: Crawler, problem: object) -> None:  # one ERROR line
    logger.error("%s. The crawl stops before its first request.", problem, extra={"spider": crawler.spider})


def _invalid(crawler: Crawler, problem: object) -> _Crawl:
    """Say a bad setting in one ERROR line; the crawl runs on the defaults until it is refused."""
    _stops(crawler, problem)
    return _CRAWLS.setdefault(crawler, _Crawl(Rfc9309Settings(), refused=INVALID_SETTING))


def crawl_state(crawler: Crawler) -> _Crawl:
    """The crawl's registry entry, its settings checked on first use: off (an INFO line) by a switch (see
    :func:`scrapy_switches`); a bad setting is one ERROR line, and the crawl refused when it opens."""
    if (state := _CRAWLS.get(crawler)) is not None:
        return state
    given = crawler.settings
    try:
        settings = Rfc9309Settings.from_settings(given)
    except InvalidSetting as exc:
        return _invalid(crawler, exc)
    settings, switch = scrapy_switches(given, settings)
    if not settings.obey:
        logger.info("scrapy-rfc9309: robots.txt's access rules are off (ROBOTSTXT_OBEY = False); the purposes the "
                    "crawl declares are still enforced on what each response states (headers, meta tags): nothing "
                    "is fetched for them, no robots.txt, no tdmrep.json")  # fmt: skip
    elif switch:
        settings = replace(settings, enabled=False)
        builtin = switch != "ROBOTSTXT_OBEY = False" and _builtin_enabled(given)
        logger.info("scrapy-rfc9309 is off (%s): %s", switch, "Scrapy's own RobotsTxtMiddleware obeys robots.txt "
                    "(ROBOTSTXT_OBEY = True)" if builtin else "robots.txt is not consulted in this crawl")  # fmt: skip
    elif _builtin_enabled(given):
        logger.warning("Scrapy's own RobotsTxtMiddleware is enabled next to scrapy-rfc9309's: robots.txt is fetched "
                       "twice per origin and its drops are not counted here. Use ADDONS = {'scrapy_rfc9309.Addon': 0}, "
                       "or set DOWNLOADER_MIDDLEWARES['scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware'] = None")  # fmt: skip
    state = _CRAWLS[crawler] = _Crawl(settings)
    return state


def rfc9309_settings(crawler: Crawler) -> Rfc9309Settings:
    """The crawl's ``RFC9309_*`` settings, read and checked once per crawler (:func:`crawl_state`)."""
    return crawl_state(crawler).settings


def check_early(crawler: Crawler, settings: Any) -> None:
    """By the add-on: a bad setting is one early ERROR line; one Scrapy cannot read gets its default until refused."""
    if crawler in _CRAWLS:
        return
    problem: Any = unreadable_scrapy_setting(settings, fix=True)
    if problem is None:
        try:
            Rfc9309Settings.from_settings(settings)
        except InvalidSetting as exc:
            problem = exc
    if problem is not None:
        _invalid(crawler, problem)


def refused(crawler: Crawler) -> bool:
    """Whether this crawl is refused for a bad setting (see :func:`crawl_state`)."""
    return getattr(_CRAWLS.get(crawler), "refused", None) is not None


def scrapy_switches(scrapy_settings: Any, settings: Rfc9309Settings) -> tuple[Rfc9309Settings, str]:
    """``settings`` as Scrapy's switches leave them, and the switch that turns the plugin off ("": none). A user's
    ``ROBOTSTXT_OBEY = False`` turns it off, unless the crawl reads usage statements: then on, ``obey`` False."""
    if not settings.enabled:
        return settings, "RFC9309_ENABLED = False"
    obey = scrapy_settings.getbool("ROBOTSTXT_OBEY")
    if obey or (scrapy_settings.getpriority("ROBOTSTXT_OBEY") or 0) <= SETTINGS_PRIORITIES["default"]:
        return settings, ""
    return (replace(settings, obey=False), "") if settings.reads_pages else (settings, "ROBOTSTXT_OBEY = False")


def _builtin_enabled(scrapy_settings: Any) -> bool:
    if not scrapy_settings.getbool("ROBOTSTXT_OBEY"):
        return False
    from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as Builtin

    return Builtin in compat.enabled_components(scrapy_settings, "DOWNLOADER_MIDDLEWARES")


def robots_service(crawler: Crawler) -> RobotsService:
    """The crawl's RobotsService, built on first use (it closes the store with the spider, refuses a bad start)."""
    state = crawl_state(crawler)
    if state.service is not None:
        return state.service
    settings = state.settings
    service = state.service = RobotsService(
        settings,
        RobotsFetcher(crawler, settings),
        FallbackStorage(build_storage(settings), count=lambda key: service.counts.inc(key)),
        crawler.stats,
    )
    if settings.storage != "memory":
        logger.info("RFC 9309 robots.txt store: %s; stored copies used when robots.txt is unreachable: %s",
                    display_url(settings.storage), "up to 30 days" if settings.stale_if_unreachable else "no")  # fmt: skip
    service.on_ready(lambda origin, known, previous, trigger: _announce(crawler, origin, known, trigger))

    def refuse(reason: str) -> None:  # before the first request, exit status 1 (a cron job sees it)
        service.shutdown()  # no robots.txt fetch starts meanwhile
        compat.fail_exit_status(crawler)
        compat.close_at_open(crawler, reason)  # raises CloseSpider where Scrapy honours it

    async def opened(spider: Any) -> None:
        if state.refused is not None:  # a bad setting, said when it was read
            return refuse(state.refused)
        try:  # first: no store, timer or request of the plugin starts on a Scrapy it cannot drive
            internals.check(crawler)
        except internals.InternalsChanged as exc:
            logger.error("%s", exc, extra={"spider": spider})
            return refuse(internals.REFUSED)
        try:
            await service.open()
        except StorageNeedsAsyncio as exc:  # the Redis store on another Twisted reactor
            _stops(crawler, f"RFC9309_STORAGE: {exc}, and this crawl runs on {compat.loop_name()}: "
                   f"{compat.ASYNCIO_NEEDED}; or use another RFC9309_STORAGE ('memory', 'sqlite:///path/robots.sqlite')")  # fmt: skip
            refuse(STORAGE_UNAVAILABLE)
        except StorageUnavailable as exc:
            _stops(crawler, f"RFC9309_STORAGE: cannot use the robots.txt store ({exc}). Start it, correct "
                   "RFC9309_STORAGE, or set RFC9309_STORAGE = 'memory' to keep robots.txt in this process only")  # fmt: skip
            refuse(STORAGE_UNAVAILABLE)

    crawler.signals.connect(opened, signal=signals.spider_opened, weak=False)
    crawler.signals.connect(service.close, signal=signals.spider_closed, weak=False)
    return service


async def governing_robots(crawler: Crawler, url: str) -> RobotsTxt | None:
    """The :class:`~scrapy_rfc9309.RobotsTxt` governing ``url``'s origin, fetched once by the crawl's service; None
    when ``"obey": False``.  ``ValueError``: not http(s); ``RuntimeError``: the crawl not running, or not enabled."""
    if (origin := origin_of(url)) is None:
        raise ValueError(f"{shorten(mask_url(url))!r} is not an http(s) URL")
    if not rfc9309_settings(crawler).enabled:
        raise RuntimeError("scrapy-rfc9309 is not enabled in this crawl (RFC9309_ENABLED is False)")
    if crawler.engine is None or not crawler.engine.running:
        raise RuntimeError("the crawl is not running yet: ask from start() or a callback, not from __init__")
    service = robots_service(crawler)
    return (await service.resolve(origin)).robots if service.settings.for_origin(origin).obey else None


def _announce(crawler: Crawler, origin: str, known: Known, trigger: Any) -> Awaitable[None] | None:
    """Send ``robots_txt_ready`` and ``robots_parsed`` (2.18+) before the waiting requests go on; unreceived: unsent."""
    ready = compat.has_receivers(crawler, robots_txt_ready)
    parsed = compat.ROBOTS_PARSED is not None and compat.has_receivers(crawler, compat.ROBOTS_PARSED)
    if not ready and not parsed:
        return None
    request = trigger if isinstance(trigger, Request) else Request(robots_url(origin), callback=NO_CALLBACK)
    if ready:
        crawler.signals.send_catch_log(
            signal=robots_txt_ready, origin=origin, robots=known.robots, user_agent=known.token, request=request
        )
    if not parsed:
        return None
    from .interop import RobotParserAdapter  # (it imports Scrapy's parsers, Protego with them)

    adapter, send = RobotParserAdapter(known.robots, known.token), crawler.signals.send_catch_log_async  # 2.18+
    return cast("Awaitable[None]", send(signal=compat.ROBOTS_PARSED, robotparser=adapter, request=request))
