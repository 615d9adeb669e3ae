"""The one place that knows which Scrapy runs, and on which loop.

Everything that differs between the supported Scrapy releases (2.13 and later,
tested up to 2.19), or between a Twisted reactor and asyncio alone, is a small
function here, so the rest of the package is written once, for the newest
Scrapy: the ``spider`` argument of 2.13 (:func:`request_method`), the
``robots_parsed`` signal and ``CloseSpider`` at open of 2.18+
(:func:`close_at_open`), and, without a reactor (2.15+, ``TWISTED_REACTOR_ENABLED
= False``) or without asyncio (another reactor), where timers, sleeps and
threads come from (:func:`sleep`, :func:`every`, :func:`call_later`,
:func:`run_in_thread`).  Private Scrapy names are in :mod:`.internals`.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import re
import sys
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

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
    """``(major, minor)`` of a version string, pre-releases and dev builds
    included (``2.20.0a1``, ``2.20.0.dev0``, ``2.20rc1`` -> ``(2, 20)``)."""
    found = re.match(r"\s*v?(\d+)(?:\.(\d+))?", version)
    if found is None:
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

#: Scrapy 2.13 passes ``spider=`` to every downloader middleware method; 2.14+
#: passes it only to methods that require it, with a deprecation warning
_PASSES_SPIDER = SCRAPY_VERSION < (2, 14)

#: Scrapy's ``robots_parsed`` signal (2.18+), or None where it does not exist
ROBOTS_PARSED: object | None = getattr(signals, "robots_parsed", None)


# -- the loop the crawl runs on (without a reactor, importing twisted.internet.reactor raises)
def reactor_installed() -> bool:
    """Whether the crawl runs on a Twisted reactor (else: on asyncio alone)."""
    return "twisted.internet.reactor" in sys.modules


def _reactor() -> Any:
    from twisted.internet import reactor  # only ever imported when already installed

    return reactor


#: what to set for a part that needs asyncio (the Redis store's ``redis.asyncio``)
ASYNCIO_NEEDED = (
    "set TWISTED_REACTOR = 'twisted.internet.asyncioreactor.AsyncioSelectorReactor' (Scrapy's default), "
    "or TWISTED_REACTOR_ENABLED = False (Scrapy 2.15+)"
)


def loop_name() -> str:
    """What runs the crawl, for a message: the reactor's import path, or "asyncio alone"."""
    if not reactor_installed():
        return "asyncio alone (no Twisted reactor)"
    cls = type(_reactor())
    return f"{cls.__module__}.{cls.__name__}"


def wait_for(deferred: Deferred) -> Awaitable[Any]:
    """Await a Deferred from a coroutine, whichever loop runs."""
    return maybe_deferred_to_future(deferred)


def spawn(coro: Coroutine[Any, Any, T]) -> Deferred:
    """Run ``coro`` in the background; the Deferred can be cancelled."""
    return deferred_from_coro(coro)


async def sleep(seconds: float) -> None:
    """A timer of the crawl's loop: cancelled with the task that awaits it."""
    if not reactor_installed():
        await asyncio.sleep(seconds)
        return
    from twisted.internet.task import deferLater

    await maybe_deferred_to_future(deferLater(_reactor(), seconds, lambda: None))


async def in_steps(steps: Generator[object, None, T], budget: float) -> T:
    """Run ``steps`` (a generator of short steps, see
    :mod:`scrapy_rfc9309.robots.steps`) on the loop's thread, giving the loop
    a turn (network I/O, timers, other callbacks) whenever ``budget`` seconds
    of steps have run; what the generator returns."""
    from .robots.steps import Paused, run

    while True:
        value = run(steps, budget)
        if not isinstance(value, Paused):
            return value
        await sleep(0)


async def resolve(host: str) -> str | None:
    """The IPv4 address the crawl's resolver gives ``host`` (Scrapy's
    ``DNS_RESOLVER``, cached, on the reactor; the loop's ``getaddrinfo``
    without one); None when it gives none (the download then says why)."""
    try:
        if reactor_installed():
            address: str = await maybe_deferred_to_future(_reactor().resolve(host))
            return address
        import socket

        found = await asyncio.get_running_loop().getaddrinfo(host, None, family=socket.AF_INET)
    except (CancelledError, asyncio.CancelledError):
        raise  # the crawl is closing
    except Exception:  # DNSLookupError, a timeout: the download will meet it too
        return None
    return str(found[0][4][0]) if found else None


class Repeating(Protocol):
    """What :func:`every` returns (a Twisted ``LoopingCall`` or its asyncio twin)."""

    @property
    def running(self) -> bool: ...

    def stop(self) -> None: ...


class _AsyncioRepeating:
    """``func`` every ``seconds`` on the running asyncio loop (first call after one period)."""

    def __init__(self, seconds: float, func: Callable[[], object]) -> None:
        self._seconds = seconds
        self._func = func
        self._handle: asyncio.TimerHandle | None = asyncio.get_running_loop().call_later(seconds, self._call)

    @property
    def running(self) -> bool:
        return self._handle is not None

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _call(self) -> None:
        if self._handle is None:
            return
        self._handle = asyncio.get_running_loop().call_later(self._seconds, self._call)
        try:
            self._func()
        except Exception:
            # as a LoopingCall does: a failing call ends the repetition (and is logged)
            logger.exception("scrapy-rfc9309: a periodic task failed and was stopped")
            self.stop()


def every(seconds: float, func: Callable[[], object]) -> Repeating:
    """Call ``func`` every ``seconds`` (first call after one period); ``.stop()``."""
    if not reactor_installed():
        return _AsyncioRepeating(seconds, func)
    from twisted.internet.task import LoopingCall

    loop = LoopingCall(func)
    loop.start(seconds, now=False)
    return loop


def call_later(seconds: float, func: Callable[[], object]) -> None:
    """Call ``func`` once, ``seconds`` from now, on the crawl's loop."""
    if not reactor_installed():
        asyncio.get_running_loop().call_later(seconds, func)
    else:
        _reactor().callLater(seconds, func)


async def run_in_thread(func: Callable[[], T]) -> T:
    """``func()`` in a worker thread, awaited without holding the loop."""
    if not reactor_installed():
        return await asyncio.to_thread(func)
    from twisted.internet.threads import deferToThread

    result: T = await maybe_deferred_to_future(deferToThread(func))
    return result


# -- the engine ----------------------------------------------------------------------
def close_at_open(crawler: Crawler, reason: str) -> None:
    """Stop the crawl from a ``spider_opened`` handler, before its first request.

    Scrapy 2.18+ honours ``CloseSpider`` raised there (raised here).  Before,
    the engine logs it and goes on; so the spider is closed with ``reason`` as
    soon as the engine runs, in the same event-loop turn as its first look at
    the scheduler, before any request is downloaded (the caller makes sure
    nothing of its own starts meanwhile)."""
    if SCRAPY_VERSION >= (2, 18):
        raise CloseSpider(reason)
    closed: list[bool] = []  # pragma: no cover - 2.13 to 2.17 (below too)
    crawler.signals.connect(lambda: closed.append(True), signal=signals.spider_closed, weak=False)

    def close_when_running() -> None:  # pragma: no cover - 2.13 to 2.17
        # asks no internal: this also refuses a crawl whose engine internals moved
        engine = crawler.engine
        if engine is None or crawler.spider is None or closed:
            return  # already closed
        if engine.running:
            close_spider(crawler, reason)
        else:
            call_later(0, close_when_running)

    call_later(0, close_when_running)  # pragma: no cover - 2.13 to 2.17


def close_spider(crawler: Crawler, reason: str) -> None:
    """Close a running crawl now with ``reason`` as its finish reason (requests
    in the downloader end; nothing new is taken from the scheduler)."""
    engine = crawler.engine
    if engine is None or crawler.spider is None or not engine.running:
        return  # (a second close while one runs is a no-op for the engine)
    if hasattr(engine, "close_spider_async"):  # 2.14+
        spawn(engine.close_spider_async(reason=reason))
    else:  # pragma: no cover - 2.13
        engine.close_spider(crawler.spider, reason=reason)


def fail_exit_status(crawler: Crawler) -> None:
    """Make ``scrapy crawl`` (and ``runspider``) exit with status 1 when this crawl ends.

    A finish reason never changes the exit status: Scrapy's commands exit
    with 1 only when the crawler has no ``spider`` once it ended
    (``bootstrap_failed |= not crawler.spider``, 2.13 to 2.19).  So it is
    cleared at ``engine_stopped`` (after the stats were dumped), and at
    ``spider_closed`` when the engine does not run (a crawl refused while
    opening never sends ``engine_stopped``)."""
    engine = crawler.engine

    def clear(*args: Any, **kwargs: Any) -> None:
        crawler.spider = None

    crawler.signals.connect(clear, signal=signals.engine_stopped, weak=False)
    if engine is None or not engine.running:
        crawler.signals.connect(clear, signal=signals.spider_closed, weak=False)


# -- components ------------------------------------------------------------------------
def request_method(method: Callable[..., Any]) -> Any:
    """Decorate a downloader middleware's ``process_request(self, request)`` or
    ``process_response(self, request, response)`` (plain or ``async``) so every
    supported Scrapy can call it: 2.13 always adds ``spider=``; later releases
    must not see a ``spider`` parameter (they warn that it is deprecated), so
    there the method is returned unchanged."""
    if not _PASSES_SPIDER:
        return method

    @functools.wraps(method)
    def without_spider(self: Any, *args: Any, spider: Any = None, **kwargs: Any) -> Any:  # pragma: no cover - 2.13
        return method(self, *args, **kwargs)

    return without_spider


response_method = request_method


def has_receivers(crawler: Crawler, signal: object) -> bool:
    """Whether a live receiver is connected to ``signal`` in this crawl: the
    look-up Scrapy's own sending makes (pydispatch's, for the crawl's sender)."""
    from pydispatch import dispatcher

    found = dispatcher.liveReceivers(dispatcher.getAllReceivers(crawler.signals.sender, signal))
    return next(iter(found), None) is not None


async def send_async(crawler: Crawler, signal: object, **kwargs: Any) -> None:
    """Send a signal whose handlers may be coroutines."""
    manager = crawler.signals
    if hasattr(manager, "send_catch_log_async"):  # 2.14+
        await manager.send_catch_log_async(signal=signal, **kwargs)
    else:  # pragma: no cover - 2.13
        await maybe_deferred_to_future(manager.send_catch_log_deferred(signal=signal, **kwargs))


# -- errors ----------------------------------------------------------------------------
def _network_errors() -> tuple[type[BaseException], ...]:
    """What counts as "the network failed": Scrapy's own RETRY_EXCEPTIONS of this
    version (timeouts, DNS, refused and lost connections, tunnels), plus TLS and
    Twisted's client failures, which some versions raise unwrapped."""
    from scrapy.settings import default_settings
    from twisted.internet import error as net
    from twisted.web.client import ResponseFailed, ResponseNeverReceived

    found: list[type[BaseException]] = [
        net.ConnectError,
        net.ConnectionLost,
        net.ConnectionDone,
        net.TimeoutError,
        ResponseFailed,
        ResponseNeverReceived,
    ]
    for path in getattr(default_settings, "RETRY_EXCEPTIONS", []):
        try:
            found.append(path if isinstance(path, type) else load_object(path))
        except (ImportError, AttributeError, ValueError):  # pragma: no cover - names move between versions
            continue
    try:
        from OpenSSL import SSL

        found.append(SSL.Error)
    except ImportError:  # pragma: no cover - Scrapy requires pyOpenSSL
        pass
    for name in ("DownloadTimeoutError", "DownloadConnectionRefusedError", "CannotResolveHostError",
                 "DownloadFailedError", "ResponseDataLossError", "DownloadCancelledError"):  # fmt: skip
        cls = getattr(scrapy.exceptions, name, None)
        if isinstance(cls, type):
            found.append(cls)
    return tuple(dict.fromkeys(found))


def __getattr__(name: str) -> Any:
    """``NETWORK_ERRORS``, the tuple of :func:`_network_errors`, built on first use (the
    first exception of a robots.txt fetch) and kept: a crawl whose fetches all succeed
    never builds it."""
    if name == "NETWORK_ERRORS":
        value = globals()["NETWORK_ERRORS"] = _network_errors()
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


if TYPE_CHECKING:
    NETWORK_ERRORS: tuple[type[BaseException], ...]


# -- settings ----------------------------------------------------------------------------
def enabled_components(settings: Any, name: str) -> list[Any]:
    """The classes a component priority dict (``DOWNLOADER_MIDDLEWARES`` ...)
    enables, as Scrapy's own manager of this version reads it."""
    from scrapy.utils.conf import build_component_list

    if hasattr(settings, "get_component_priority_dict_with_base"):  # 2.14+: class keys replace paths
        compdict = settings.get_component_priority_dict_with_base(name)
    else:  # pragma: no cover - 2.13
        compdict = settings.getwithbase(name)
    return [load_object(c) if isinstance(c, str) else c for c in build_component_list(compdict)]


def disable_component(settings: Any, name: str, cls: type) -> None:
    """Disable ``cls`` in a component priority dict, whether Scrapy's defaults
    name it by class or by import path."""
    settings.set_in_component_priority_dict(name, cls, None)
    if not hasattr(settings, "get_component_priority_dict_with_base"):  # pragma: no cover - 2.13
        # before 2.14 the class key and the defaults' import path were two components
        components = settings.getdict(name)
        components[f"{cls.__module__}.{cls.__name__}"] = None
        settings.set(name, components, settings.getpriority(name) or 0)


# -- offsite ----------------------------------------------------------------------------
def offsite_filter(crawler: Crawler) -> Callable[[Request], bool] | None:
    """A function telling whether Scrapy's enabled OffsiteMiddleware (or a
    subclass, with its own ``should_follow``) will drop a request; None when
    none is enabled.  Asks the middleware itself, so a project's override of
    ``should_follow`` is honoured."""
    from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware

    if crawler.engine is None:
        return None
    offsite: Any = crawler.get_downloader_middleware(OffsiteMiddleware)  # public since Scrapy 2.12
    if offsite is None:
        return None

    def will_drop(request: Request) -> bool:
        if request.dont_filter or request.meta.get("allow_offsite"):
            return False
        spider = crawler.spider
        return spider is not None and not offsite.should_follow(request, spider)

    return will_drop
