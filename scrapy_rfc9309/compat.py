"""The one place that knows which Scrapy runs (2.13 to 2.19), and on which loop (a Twisted reactor or asyncio
alone): each difference is a small function here, so the rest is written once, for the newest Scrapy.  Private
Scrapy names are in :mod:`.internals`."""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import sys
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, TypeVar

import scrapy
from scrapy import signals
from scrapy.exceptions import CloseSpider
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future
from scrapy.utils.misc import load_object
from twisted.internet.defer import CancelledError, Deferred

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

T = TypeVar("T")


def version_tuple(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a version string, pre-releases and dev builds included."""
    if (found := re.match(r"\s*v?(\d+)(?:\.(\d+))?", version)) is None:
        raise ValueError(f"not a version: {version!r}")
    return int(found.group(1)), int(found.group(2) or 0)


SCRAPY_VERSION: tuple[int, int] = version_tuple(scrapy.__version__)

#: the oldest Scrapy this module knows; setup.cfg's install_requires says the same
OLDEST_SCRAPY = (2, 13)
if SCRAPY_VERSION < OLDEST_SCRAPY:  # pragma: no cover - pip refuses this unless forced
    raise ImportError(
        f"scrapy-rfc9309 needs Scrapy {OLDEST_SCRAPY[0]}.{OLDEST_SCRAPY[1]} or later; "
        f"this is Scrapy {scrapy.__version__} (pip install -U 'scrapy>=2.13')"
    )

FAILURES = (Exception, asyncio.CancelledError)  #: the plugin's own work's failures (a close's cancel: NotResolved)
#: Scrapy's ``robots_parsed`` signal (2.18+), or None where it does not exist
ROBOTS_PARSED: object | None = getattr(signals, "robots_parsed", None)

#: what to set for a part that needs asyncio (the Redis store's ``redis.asyncio``)
ASYNCIO_NEEDED = (
    "set TWISTED_REACTOR = 'twisted.internet.asyncioreactor.AsyncioSelectorReactor' (Scrapy's default), "
    "or TWISTED_REACTOR_ENABLED = False (Scrapy 2.15+)"
)


def reactor_installed() -> bool:
    """Whether the crawl runs on a Twisted reactor (else: on asyncio alone)."""
    return "twisted.internet.reactor" in sys.modules


def _reactor() -> Any:
    from twisted.internet import reactor  # only ever imported when already installed

    return reactor


def loop_name() -> str:
    """What runs the crawl, for a message: the reactor's import path, or "asyncio alone"."""
    if not reactor_installed():
        return "asyncio alone (no Twisted reactor)"
    cls = type(_reactor())
    return f"{cls.__module__}.{cls.__name__}"


#: await a Deferred from a coroutine, whichever loop runs
wait_for: Callable[[Deferred], Awaitable[Any]] = maybe_deferred_to_future


def spawn(coro: Coroutine[Any, Any, Any]) -> Deferred:
    """Run ``coro`` in the background; cancelled (the Deferred's cancel(), or the loop's end), it ends quietly."""
    return deferred_from_coro(coro).addErrback(lambda f: f.trap(CancelledError, asyncio.CancelledError) and None)


async def sleep(seconds: float) -> None:
    """A timer of the crawl's loop: cancelled with the task that awaits it."""
    if not reactor_installed():
        return await asyncio.sleep(seconds)
    from twisted.internet.task import deferLater

    await maybe_deferred_to_future(deferLater(_reactor(), seconds, lambda: None))


async def in_steps(steps: Generator[object, None, T], budget: float) -> T:
    """What ``steps`` (:mod:`.robots.steps`) returns, with a turn of the loop after each ``budget`` seconds of steps."""
    from .robots.steps import Paused, run

    while isinstance(value := run(steps, budget), Paused):
        await sleep(0)
    return value


async def resolve(host: str) -> str | None:
    """``host``'s IPv4 address by the crawl's resolver (``DNS_RESOLVER``, or getaddrinfo without a reactor), or None."""
    try:
        if reactor_installed():
            return str(await maybe_deferred_to_future(_reactor().resolve(host)))
        import socket

        found = await asyncio.get_running_loop().getaddrinfo(host, None, family=socket.AF_INET)
    except (CancelledError, asyncio.CancelledError):
        raise  # the crawl is closing
    except Exception:  # DNSLookupError, a timeout: the download will meet it too
        return None
    return str(found[0][4][0]) if found else None


def call_later(seconds: float, func: Callable[[], object]) -> Any:
    """Call ``func`` once, ``seconds`` from now, on the crawl's loop; the timer has ``.cancel()``."""
    if not reactor_installed():
        return asyncio.get_running_loop().call_later(seconds, func)
    return _reactor().callLater(seconds, func)


async def run_in_thread(func: Callable[[], T]) -> T:
    """``func()`` in a worker thread, awaited without holding the loop."""
    if not reactor_installed():
        return await asyncio.to_thread(func)
    from twisted.internet.threads import deferToThread

    return await maybe_deferred_to_future(deferToThread(func))


class Repeating:
    """``func`` every ``seconds`` on the crawl's loop until ``.stop()``; a failure ends it, logged (a LoopingCall's)."""

    def __init__(self, seconds: float, func: Callable[[], object]) -> None:
        self._seconds, self._func = seconds, func
        self._timer: Any = call_later(seconds, self._call)

    @property
    def running(self) -> bool:
        return self._timer is not None

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _call(self) -> None:
        self._timer = call_later(self._seconds, self._call)
        try:
            self._func()
        except Exception:
            logger.exception("scrapy-rfc9309: a periodic task failed and was stopped")
            self.stop()


every = Repeating  # every(seconds, func)


def close_at_open(crawler: Crawler, reason: str) -> None:
    """Stop the crawl from a ``spider_opened`` handler, before its first request: ``CloseSpider`` on 2.18+ (honoured
    there); before, the engine logs it and goes on: closed in its first turn, before any download."""
    if SCRAPY_VERSION >= (2, 18):
        raise CloseSpider(reason)
    closed: list[bool] = []  # pragma: no cover - 2.13 to 2.17 (below too)
    crawler.signals.connect(lambda: closed.append(True), signal=signals.spider_closed, weak=False)

    def close_when_running() -> None:  # pragma: no cover - 2.13 to 2.17
        engine = crawler.engine  # (asks no internal: this also refuses a crawl whose internals moved)
        if engine is None or crawler.spider is None or closed:
            return  # already closed
        if engine.running:
            close_spider(crawler, reason)
        else:
            call_later(0, close_when_running)

    call_later(0, close_when_running)  # pragma: no cover - 2.13 to 2.17


def close_spider(crawler: Crawler, reason: str) -> None:
    """Close a running crawl now with ``reason`` as its finish reason."""
    engine = crawler.engine
    if engine is None or crawler.spider is None or not engine.running:
        return  # (a second close while one runs is a no-op for the engine)
    if hasattr(engine, "close_spider_async"):  # 2.14+
        spawn(engine.close_spider_async(reason=reason))
    else:  # pragma: no cover - 2.13
        engine.close_spider(crawler.spider, reason=reason)


def fail_exit_status(crawler: Crawler) -> None:
    """Make ``scrapy crawl`` exit with status 1: Scrapy's commands do so for a crawler with no ``spider`` once it
    ended (2.13 to 2.19): cleared at ``engine_stopped``, or ``spider_closed`` when the engine did not run."""

    def clear(*args: Any, **kwargs: Any) -> None:
        crawler.spider = None

    crawler.signals.connect(clear, signal=signals.engine_stopped, weak=False)
    if crawler.engine is None or not crawler.engine.running:
        crawler.signals.connect(clear, signal=signals.spider_closed, weak=False)


def request_method(method: Callable[..., Any]) -> Any:
    """A downloader middleware's ``process_*`` method: Scrapy 2.13 passes ``spider=``; later ones warn if declared."""
    if SCRAPY_VERSION >= (2, 14):
        return method

    @functools.wraps(method)
    def without_spider(self: Any, *args: Any, spider: Any = None, **kwargs: Any) -> Any:  # pragma: no cover - 2.13
        return method(self, *args, **kwargs)

    return without_spider


response_method = request_method


def has_receivers(crawler: Crawler, signal: object) -> bool:
    """Whether a live receiver of ``signal`` is connected in this crawl (Scrapy's own look-up)."""
    from pydispatch import dispatcher

    found = dispatcher.liveReceivers(dispatcher.getAllReceivers(crawler.signals.sender, signal))
    return next(iter(found), None) is not None


def _network_errors() -> tuple[type[BaseException], ...]:
    """What "the network failed" is: RETRY_EXCEPTIONS, TLS, Twisted's client failures, 2.15+'s cancelled download."""
    from OpenSSL import SSL
    from scrapy.settings import default_settings
    from twisted.internet import error as net
    from twisted.web.client import ResponseFailed, ResponseNeverReceived

    found: list[Any] = [net.TimeoutError, ResponseFailed, ResponseNeverReceived, SSL.Error]
    found += [load_object(path) if isinstance(path, str) else path for path in default_settings.RETRY_EXCEPTIONS]
    cancelled = getattr(scrapy.exceptions, "DownloadCancelledError", None)
    return tuple(dict.fromkeys(found + ([cancelled] if cancelled else [])))


def __getattr__(name: str) -> Any:
    """``NETWORK_ERRORS``, built on first use (a robots.txt fetch's first exception) and kept."""
    if name == "NETWORK_ERRORS":
        value = globals()["NETWORK_ERRORS"] = _network_errors()
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    NETWORK_ERRORS: tuple[type[BaseException], ...]


def enabled_components(settings: Any, name: str) -> list[Any]:
    """The classes a component priority dict (``DOWNLOADER_MIDDLEWARES`` ...) enables, as this Scrapy reads it."""
    from scrapy.utils.conf import build_component_list

    if hasattr(settings, "get_component_priority_dict_with_base"):  # 2.14+: class keys replace paths
        compdict = settings.get_component_priority_dict_with_base(name)
    else:  # pragma: no cover - 2.13
        compdict = settings.getwithbase(name)
    return [load_object(c) if isinstance(c, str) else c for c in build_component_list(compdict)]


def disable_component(settings: Any, name: str, cls: type) -> None:
    """Disable ``cls`` in a component priority dict, named by class or by import path."""
    settings.set_in_component_priority_dict(name, cls, None)
    if not hasattr(settings, "get_component_priority_dict_with_base"):  # pragma: no cover - 2.13
        # before 2.14 the class key and the defaults' import path were two components
        components = settings.getdict(name)
        components[f"{cls.__module__}.{cls.__name__}"] = None
        settings.set(name, components, settings.getpriority(name) or 0)


def offsite_filter(crawler: Crawler) -> Callable[[Request], bool] | None:
    """Whether the enabled OffsiteMiddleware (a subclass's ``should_follow`` too) drops a request; None: none is."""
    from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware

    offsite: Any = crawler.get_downloader_middleware(OffsiteMiddleware) if crawler.engine is not None else None
    if offsite is None:
        return None

    def will_drop(request: Request) -> bool:
        kept = request.dont_filter or request.meta.get("allow_offsite")
        return not kept and crawler.spider is not None and not offsite.should_follow(request, crawler.spider)

    return will_drop
