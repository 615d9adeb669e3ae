"""The per-crawl registry: one robots service per crawl, and its lifecycle.

``robots_service(crawler)`` is the one way to reach the service; every part of
the plugin gets the same object, built on first use with the crawl's only
:class:`~scrapy_rfc9309.fetch.RobotsFetcher`.  When the spider opens, a bad
setting, a changed Scrapy internal (:func:`.internals.check`) or an
unreachable store refuses the crawl before its first request: one ERROR line,
a finish reason and a non-zero exit status.  When it closes, the store is
closed.  Each result that takes effect is announced: the plugin's
``robots_txt_ready`` signal and Scrapy's ``robots_parsed``.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Any
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

#: finish reason of a crawl whose store cannot be reached at start-up
STORAGE_UNAVAILABLE = "rfc9309_storage_unavailable"
#: finish reason of a crawl refused for a bad setting (said in one ERROR line when it is read)
INVALID_SETTING = "rfc9309_invalid_setting"


class _Crawl:
    """One crawl's entry in the registry.  (A plain class: a dataclass's methods are
    generated and compiled when its module is imported, about 3 M instructions of a
    crawl's start-up each; docs/benchmarks_crawl.md, "Instructions per added origin".)"""

    __slots__ = ("gate", "refused", "service", "settings")

    def __init__(self, settings: Rfc9309Settings, refused: str | None = None) -> None:
        self.settings = settings
        self.service: RobotsService | None = None
        #: the crawl's gate (scrapy_rfc9309.gate), when the scheduler is one
        self.gate: Any = None
        #: the finish reason the crawl is refused with when the spider opens (a bad setting)
        self.refused = refused


_CRAWLS: WeakKeyDictionary[Any, _Crawl] = WeakKeyDictionary()


def rfc9309_settings(crawler: Crawler) -> Rfc9309Settings:
    """The crawl's ``RFC9309_*`` settings, read and checked once per crawler.

    ``enabled`` is False when ``RFC9309_ENABLED`` is False or when the user set
    ``ROBOTSTXT_OBEY = False`` (anywhere above Scrapy's own default: project,
    spider, command line), as for Scrapy's middleware, unless the crawl reads
    usage statements (:func:`scrapy_switches`); one INFO line says so.

    A bad setting is one ERROR line here, where the first component reads
    the settings (early in the crawl's start-up, before Scrapy lists its
    components); the crawl runs on the defaults until the spider opens and
    is refused then, before its first request (finish reason
    ``rfc9309_invalid_setting``, a non-zero exit status): no traceback."""
    state = _CRAWLS.get(crawler)
    if state is None:
        try:
            settings = Rfc9309Settings.from_settings(crawler.settings)
        except InvalidSetting as exc:
            logger.error("%s. The crawl stops before its first request.", exc, extra={"spider": crawler.spider})
            state = _CRAWLS[crawler] = _Crawl(Rfc9309Settings(), refused=INVALID_SETTING)
            return state.settings
        settings, switch = scrapy_switches(crawler.settings, settings)
        if not settings.obey:
            logger.info(
                "scrapy-rfc9309: robots.txt's access rules are off (ROBOTSTXT_OBEY = False); the purposes the crawl "
                "declares are still enforced on what each response states (headers, meta tags): nothing is "
                "fetched for them, no robots.txt, no tdmrep.json"
            )
        elif switch:
            settings = replace(settings, enabled=False)
            builtin = switch != "ROBOTSTXT_OBEY = False" and _builtin_enabled(crawler.settings)
            logger.info(
                "scrapy-rfc9309 is off (%s): %s", switch, "Scrapy's own RobotsTxtMiddleware obeys robots.txt "
                "(ROBOTSTXT_OBEY = True)" if builtin else "robots.txt is not consulted in this crawl",
            )  # fmt: skip
        elif _builtin_enabled(crawler.settings):
            logger.warning(
                "Scrapy's own RobotsTxtMiddleware is enabled next to scrapy-rfc9309's: robots.txt is fetched "
                "twice per origin and its drops are not counted here. Use ADDONS = {'scrapy_rfc9309.Addon': 0}, "
                "or set DOWNLOADER_MIDDLEWARES['scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware'] = None"
            )
        state = _CRAWLS[crawler] = _Crawl(settings)
    return state.settings


def check_early(crawler: Crawler, settings: Any) -> None:
    """Called by the add-on, once it applied, before Scrapy builds what reads its
    settings: a bad setting is one ERROR line now, before Scrapy lists its
    components, and the crawl is refused when the spider opens, before its
    first request (finish reason ``rfc9309_invalid_setting``); good ones are
    read again when first used.

    A Scrapy setting the plugin reads that Scrapy itself cannot read
    (``-s CONCURRENT_REQUESTS=abc``) would end the crawl in a traceback inside
    Scrapy, before any part of the plugin runs: Scrapy's default stands in for
    it until then."""
    if crawler in _CRAWLS:
        return
    problem: Any = unreadable_scrapy_setting(settings, fix=True)
    if problem is None:
        try:
            Rfc9309Settings.from_settings(settings)
        except InvalidSetting as exc:
            problem = exc
    if problem is not None:
        logger.error("%s. The crawl stops before its first request.", problem, extra={"spider": crawler.spider})
        _CRAWLS[crawler] = _Crawl(Rfc9309Settings(), refused=INVALID_SETTING)


def refused(crawler: Crawler) -> bool:
    """Whether this crawl is refused for a bad setting (see :func:`rfc9309_settings`)."""
    state = _CRAWLS.get(crawler)
    return state is not None and state.refused is not None


def scrapy_switches(scrapy_settings: Any, settings: Rfc9309Settings) -> tuple[Rfc9309Settings, str]:
    """``settings`` as Scrapy's switches leave them, and the switch that turns the plugin off ("": none).
    A ``ROBOTSTXT_OBEY = False`` the user set turns robots.txt's access rules off; the plugin too, unless
    the crawl reads usage statements (a declared purpose, the report): a promise only a usage switch
    breaks, so the plugin stays on with ``obey`` False (docs/usage_preferences.md, "Not obeying robots.txt")."""
    if not settings.enabled:
        return settings, "RFC9309_ENABLED = False"
    obey = scrapy_settings.getbool("ROBOTSTXT_OBEY")
    if obey or (scrapy_settings.getpriority("ROBOTSTXT_OBEY") or 0) <= SETTINGS_PRIORITIES["default"]:
        return settings, ""
    return (replace(settings, obey=False), "") if settings.reads_pages else (settings, "ROBOTSTXT_OBEY = False")


def _builtin_enabled(scrapy_settings: Any) -> bool:
    """Whether Scrapy's RobotsTxtMiddleware will run too."""
    if not scrapy_settings.getbool("ROBOTSTXT_OBEY"):
        return False
    from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as Builtin

    return Builtin in compat.enabled_components(scrapy_settings, "DOWNLOADER_MIDDLEWARES")


def robots_service(crawler: Crawler) -> RobotsService:
    """The crawl's :class:`~scrapy_rfc9309.service.RobotsService` (built on first use)."""
    rfc9309_settings(crawler)
    state = _CRAWLS[crawler]
    if state.service is None:
        _build(crawler, state)
    assert state.service is not None
    return state.service


def crawl_state(crawler: Crawler) -> _Crawl:
    """The crawl's registry entry (its gate is set by the gate)."""
    rfc9309_settings(crawler)
    return _CRAWLS[crawler]


async def governing_robots(crawler: Crawler, url: str) -> RobotsTxt | None:
    """The :class:`~scrapy_rfc9309.RobotsTxt` that governs ``url``'s origin: the
    parsed file, or the allow-all / deny-all policy of an unavailable or
    unreachable one, fetched once through the crawl's service when not known.

    None when robots.txt is not consulted for that origin (``RFC9309_ORIGINS =
    {origin: {"obey": False}}``).  ``ValueError`` for a non-http(s) URL.  Call it
    once the crawl runs (``start()``, a callback); ``RuntimeError`` before, or
    when ``RFC9309_ENABLED`` is False."""
    origin = origin_of(url)
    if origin is None:
        raise ValueError(f"{shorten(mask_url(url))!r} is not an http(s) URL")
    if not rfc9309_settings(crawler).enabled:
        raise RuntimeError("scrapy-rfc9309 is not enabled in this crawl (RFC9309_ENABLED is False)")
    if crawler.engine is None or not crawler.engine.running:
        raise RuntimeError("the crawl is not running yet: ask from start() or a callback, not from __init__")
    service = robots_service(crawler)
    if not service.settings.for_origin(origin).obey:
        return None
    return (await service.resolve(origin)).robots


# -- building -------------------------------------------------------------------------------
def _build(crawler: Crawler, state: _Crawl) -> None:
    settings = state.settings
    service = RobotsService(
        settings,
        RobotsFetcher(crawler, settings),
        FallbackStorage(build_storage(settings), count=lambda key: service.counts.inc(key)),
        crawler.stats,
    )
    if settings.storage != "memory":
        logger.info(
            "RFC 9309 robots.txt store: %s; stored copies used when robots.txt is unreachable: %s",
            display_url(settings.storage), "up to 30 days" if settings.stale_if_unreachable else "no",
        )  # fmt: skip
    state.service = service
    service.on_ready(lambda origin, known, previous, trigger: _announce(crawler, origin, known, trigger))

    def refuse(reason: str) -> None:
        """Stop the crawl before its first request, with a non-zero exit status (a cron job sees it)."""
        service.shutdown()  # no robots.txt fetch starts meanwhile
        compat.fail_exit_status(crawler)
        compat.close_at_open(crawler, reason)  # raises CloseSpider where Scrapy honours it

    async def opened(spider: Any) -> None:
        if state.refused is not None:  # a bad setting, said when it was read
            refuse(state.refused)
            return
        try:  # first: no store, timer or request of the plugin starts on a Scrapy it cannot drive
            internals.check(crawler)
        except internals.InternalsChanged as exc:
            logger.error("%s", exc, extra={"spider": spider})
            refuse(internals.REFUSED)
            return
        try:
            await service.open()
        except StorageUnavailable as exc:
            if isinstance(exc, StorageNeedsAsyncio):  # the Redis store on another Twisted reactor
                logger.error(
                    "RFC9309_STORAGE: %s, and this crawl runs on %s: %s; or use another RFC9309_STORAGE "
                    "('memory', 'sqlite:///path/robots.sqlite'). The crawl stops before its first request.",
                    exc, compat.loop_name(), compat.ASYNCIO_NEEDED, extra={"spider": spider},
                )  # fmt: skip
            else:
                logger.error(
                    "RFC9309_STORAGE: cannot use the robots.txt store (%s). Start it, correct RFC9309_STORAGE, "
                    "or set RFC9309_STORAGE = 'memory' to keep robots.txt in this process only. "
                    "The crawl stops before its first request.",
                    exc, extra={"spider": spider},
                )  # fmt: skip
            refuse(STORAGE_UNAVAILABLE)

    async def closed(spider: Any, reason: str) -> None:
        await service.close()

    crawler.signals.connect(opened, signal=signals.spider_opened, weak=False)
    crawler.signals.connect(closed, signal=signals.spider_closed, weak=False)


def _announce(crawler: Crawler, origin: str, known: Known, trigger: Any) -> Awaitable[None] | None:
    """Send ``robots_txt_ready`` and Scrapy's ``robots_parsed`` (2.18+) for a
    result that takes effect, before the requests waiting for it go on.  A signal
    nobody receives is not sent (nothing could tell), so an origin of a crawl
    without receivers costs no request, adapter or signal dispatch here."""
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

    adapter = RobotParserAdapter(known.robots, known.token)
    return compat.send_async(crawler, compat.ROBOTS_PARSED, robotparser=adapter, request=request)
