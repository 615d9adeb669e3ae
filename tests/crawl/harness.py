"""Run a real Scrapy crawl and collect what became of every request.

``await crawl([...])`` (inside a ``pytest_twisted.ensureDeferred`` test) runs
a spider that sends the given requests (plus follow-ups issued from callbacks,
optionally after a pause), records one :class:`Outcome` per request - a
response or a failure - and returns them with the crawl's stats and the
signals the plugin sent.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from dataclasses import dataclass, field
from typing import Any

import scrapy
from scrapy.crawler import CrawlerRunner
from twisted.internet.defer import Deferred

from scrapy_rfc9309 import compat
from scrapy_rfc9309.lifecycle import robots_service
from scrapy_rfc9309.signals import robots_txt_ready

from .accounting import builtin_too, stats_problems

try:  # Scrapy 2.14+: the asyncio-first runner
    from scrapy.crawler import AsyncCrawlerRunner as Runner
except ImportError:  # Scrapy 2.13
    Runner = CrawlerRunner  # type: ignore[misc,assignment]

#: the plugin enabled by hand, as the README shows (with SCHEDULER = GATE)
MIDDLEWARES = {
    "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
    "scrapy_rfc9309.RobotsTxtMiddleware": 100,
}
GATE = "scrapy_rfc9309.gate.GateScheduler"

#: the run has no Twisted reactor (``-p no:twisted --reactor=none``, tests/conftest.py)
REACTORLESS = os.environ.get("RFC9309_TEST_REACTORLESS") == "1"
#: the run has the platform's default Twisted reactor, not asyncio's (``--reactor=default``)
DEFAULT_REACTOR = os.environ.get("RFC9309_TEST_DEFAULT_REACTOR") == "1"


def _default_reactor_path() -> str:
    """The import path of the installed reactor (epoll's when none is yet)."""
    installed = sys.modules.get("twisted.internet.reactor")
    if installed is None:
        return "twisted.internet.epollreactor.EPollReactor"
    return f"{type(installed).__module__}.{type(installed).__name__}"


#: what a crawl of this run needs to say about the reactor
MODE_SETTINGS: dict[str, Any] = {}
#: the same, for a ``scrapy crawl`` / ``scrapy robots`` command line
MODE_ARGS: tuple[str, ...] = ()
if REACTORLESS:  # Scrapy 2.15+
    MODE_SETTINGS = {"TWISTED_REACTOR_ENABLED": False}
    MODE_ARGS = ("-s", "TWISTED_REACTOR_ENABLED=False")
elif DEFAULT_REACTOR:  # AsyncCrawlerRunner needs the asyncio reactor: CrawlerRunner
    MODE_SETTINGS = {"TWISTED_REACTOR": _default_reactor_path()}
    MODE_ARGS = ("-s", f"TWISTED_REACTOR={_default_reactor_path()}")
    Runner = CrawlerRunner  # type: ignore[misc,assignment]

BASE_SETTINGS: dict[str, Any] = {
    **MODE_SETTINGS,
    "DOWNLOADER_MIDDLEWARES": MIDDLEWARES,
    "SCHEDULER": GATE,
    "USER_AGENT": "ExampleBot/1.0 (+https://example.com/bot)",
    "TELNETCONSOLE_ENABLED": False,
    "LOG_LEVEL": "DEBUG",
    "RETRY_ENABLED": False,
    "CONCURRENT_REQUESTS": 16,
    "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
    "DOWNLOAD_TIMEOUT": 10,
    "RFC9309_FETCH_TIMEOUT": 5,
}


@dataclass
class Req:
    """A request the spider sends; ``then`` are sent from its callback (or
    errback), each after waiting its own ``pause`` seconds."""

    url: str
    meta: dict[str, Any] = field(default_factory=dict)
    then: list[Req] = field(default_factory=list)
    pause: float = 0.0
    dont_filter: bool = True
    #: the request's own headers (e.g. a User-Agent of its own)
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class Outcome:
    url: str
    #: the response status, or None when the request failed
    status: int | None = None
    #: the failure's exception class name and message, or None
    error: str | None = None
    message: str = ""
    #: time.monotonic() when the callback / errback ran
    at: float = 0.0
    #: the response's meta["rfc9309"] (the plugin's provenance), if any
    provenance: Any = None


@dataclass
class Result:
    outcomes: list[Outcome]
    stats: dict[str, Any]
    #: (time.monotonic(), kwargs) of each robots_txt_ready / robots_parsed signal
    ready: list[tuple[float, dict[str, Any]]]
    parsed: list[tuple[float, dict[str, Any]]]
    sent: int
    crawler: Any = None
    #: the spider class the crawl ran (its ``closed_at`` when ``close_when`` closed it)
    spider_cls: Any = None

    def outcome(self, url: str) -> Outcome:
        found = [o for o in self.outcomes if o.url == url]
        assert len(found) == 1, f"{url}: {len(found)} outcomes in {self.outcomes}"
        return found[0]

    def stat(self, key: str, default: Any = 0) -> Any:
        return self.stats.get("rfc9309/" + key, default)

    def rfc(self) -> dict[str, Any]:
        """Every rfc9309/ stat, without the prefix."""
        return {k[len("rfc9309/") :]: v for k, v in self.stats.items() if k.startswith("rfc9309/")}

    def ignored(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.error == "IgnoreRequest"]


class ProbeSpider(scrapy.Spider):
    name = "probe"
    #: ``close_when(outcomes)``: once it returns True (checked after each outcome)
    #: the spider is closed, reason ``probe_done`` (set through ``spider_attrs``)
    close_when: Any = None
    #: time.monotonic() when close_when asked for the close
    closed_at: float | None = None
    #: once the gate holds this many requests, the spider
    #: is closed, reason ``probe_done``: a close while they wait, however loaded
    #: the machine (a CLOSESPIDER_TIMEOUT may come before they are read)
    close_once_held: int | None = None

    def __init__(self, *args: Any, plan: list[Req], outcomes: list[Outcome], counter: list[int], **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.plan = plan
        self.outcomes = outcomes
        self.counter = counter

    def _request(self, spec: Req) -> scrapy.Request:
        self.counter[0] += 1
        meta = dict(spec.meta)
        meta["probe"] = spec
        return scrapy.Request(
            spec.url,
            callback=self.ok,
            errback=self.failed,
            meta=meta,
            dont_filter=spec.dont_filter,
            headers=spec.headers or None,
        )

    async def start(self):
        if self.close_once_held is not None:
            compat.spawn(self._close_once_held(self.close_once_held))
        for spec in self.plan:
            yield self._request(spec)

    async def _close_once_held(self, count: int) -> None:
        service = robots_service(self.crawler)
        while service.pacer is None or service.pacer.held < count:  # (the pacer is the gate)
            if not self.crawler.crawling:
                return  # (the crawl ended otherwise: the test's assertions say how)
            await compat.sleep(0.02)
        type(self).closed_at = time.monotonic()
        compat.close_spider(self.crawler, "probe_done")

    async def _follow(self, spec: Req):
        for nxt in spec.then:
            if nxt.pause:
                await compat.sleep(nxt.pause)  # the loop of the crawl, whichever it is
            yield self._request(nxt)

    async def ok(self, response):
        spec: Req = response.meta["probe"]
        self.outcomes.append(
            Outcome(spec.url, status=response.status, at=time.monotonic(), provenance=response.meta.get("rfc9309"))
        )
        self._maybe_close()
        async for request in self._follow(spec):
            yield request

    async def failed(self, failure):
        spec: Req = failure.request.meta["probe"]
        exc = failure.value
        self.outcomes.append(Outcome(spec.url, error=type(exc).__name__, message=str(exc), at=time.monotonic()))
        self._maybe_close()
        async for request in self._follow(spec):
            yield request

    def _maybe_close(self) -> None:
        if self.close_when is None or self.closed_at is not None or not type(self).close_when(self.outcomes):
            return
        type(self).closed_at = time.monotonic()
        engine = self.crawler.engine
        # not awaited: the close waits for this callback's own request to end
        if hasattr(engine, "close_spider_async"):  # 2.14+
            compat.spawn(engine.close_spider_async(reason="probe_done"))
        else:  # pragma: no cover - 2.13
            engine.close_spider(self, reason="probe_done")


async def crawl(
    plan: list[Req | str],
    settings: dict[str, Any] | None = None,
    spider_attrs: dict[str, Any] | None = None,
) -> Result:
    """Crawl ``plan`` (URLs or :class:`Req`) with BASE_SETTINGS updated by
    ``settings``; ``spider_attrs`` become class attributes of the spider
    (``allowed_domains``, ``custom_settings``, ``handle_httpstatus_list``...)."""
    specs = [p if isinstance(p, Req) else Req(p) for p in plan]
    merged = dict(BASE_SETTINGS)
    merged.update(settings or {})
    spider_cls = type("ProbeSpider", (ProbeSpider,), dict(spider_attrs or {}))
    runner = Runner(merged)
    crawler = runner.create_crawler(spider_cls)
    outcomes: list[Outcome] = []
    counter = [0]
    ready: list[tuple[float, dict[str, Any]]] = []
    parsed: list[tuple[float, dict[str, Any]]] = []

    def on_ready(**kwargs: Any) -> None:
        kwargs.pop("signal", None)
        kwargs.pop("sender", None)
        ready.append((time.monotonic(), kwargs))

    def on_parsed(**kwargs: Any) -> None:
        kwargs.pop("signal", None)
        kwargs.pop("sender", None)
        parsed.append((time.monotonic(), kwargs))

    crawler.signals.connect(on_ready, signal=robots_txt_ready)
    if compat.ROBOTS_PARSED is not None:  # Scrapy 2.18+
        crawler.signals.connect(on_parsed, signal=compat.ROBOTS_PARSED)
    await run(runner, crawler, plan=specs, outcomes=outcomes, counter=counter)
    if DEFAULT_REACTOR:  # the crawl really ran on a reactor that is not asyncio's
        from scrapy.utils.reactor import is_asyncio_reactor_installed

        assert compat.reactor_installed() and not is_asyncio_reactor_installed(), compat.loop_name()
    return Result(outcomes, dict(crawler.stats.get_stats()), ready, parsed, counter[0], crawler, spider_cls)


async def run(runner: Any, crawler: Any, **kwargs: Any) -> None:
    """``runner.crawl(crawler, **kwargs)`` to its end, whichever :data:`Runner`
    (a Future from AsyncCrawlerRunner, a Deferred from CrawlerRunner)."""
    done = runner.crawl(crawler, **kwargs)
    await (done if isinstance(done, Deferred) else Deferred.fromFuture(done))


def check_accounting(result: Result) -> None:
    """Every request ended exactly once, and the plugin's stats add up (the
    stats part runs on every crawl anyway: tests/crawl/accounting.py)."""
    assert len(result.outcomes) == result.sent, (len(result.outcomes), result.sent)
    for outcome in result.outcomes:
        assert (outcome.status is None) != (outcome.error is None), outcome
    problems = stats_problems(result.stats, builtin_too(result.crawler))
    assert not problems, problems
    rfc = result.rfc()
    denied = sum(v for k, v in rfc.items() if k.startswith("requests/denied/"))
    # a robots.txt denial is an IgnoreRequest naming its verdict, nothing else is
    forbidden = [o for o in result.outcomes if o.message.startswith("Forbidden by robots.txt: ")]
    # and a usage denial one naming the category and line (docs/usage_preferences.md)
    by_usage = [o for o in result.outcomes if o.message.startswith("Forbidden by usage preferences: ")]
    assert len(by_usage) == rfc.get("requests/denied/usage_preferences", 0), (by_usage, rfc)
    assert len(forbidden) == denied - len(by_usage), (forbidden, rfc)


# -- the loop of this run: the reactor, or asyncio alone (REACTORLESS) ---------------------
class _Delayed:
    def __init__(self, handle: asyncio.TimerHandle) -> None:
        self._handle = handle
        self._done = False

    def active(self) -> bool:
        return not self._done and not self._handle.cancelled()

    def cancel(self) -> None:
        self._handle.cancel()


class _LoopClock:
    """The part of Twisted's ``IReactorTime`` / ``IReactorThreads`` the tests use,
    on the running asyncio loop (``Deferred.addTimeout(seconds, clock())``)."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()

    def callLater(self, delay: float, func: Any, *args: Any, **kwargs: Any) -> _Delayed:  # noqa: N802
        delayed: _Delayed

        def call() -> None:
            delayed._done = True
            func(*args, **kwargs)

        delayed = _Delayed(self._loop.call_later(delay, call))
        return delayed

    def callFromThread(self, func: Any, *args: Any) -> None:  # noqa: N802
        self._loop.call_soon_threadsafe(func, *args)


def clock() -> Any:
    """The reactor, or the running asyncio loop dressed as one (reactorless runs)."""
    if REACTORLESS:
        return _LoopClock()
    from twisted.internet import reactor

    return reactor


async def sleep(seconds: float) -> None:
    """Sleep on this run's loop (from a test driven by ``Deferred.fromCoroutine``)."""
    waiter: Deferred = Deferred()
    clock().callLater(seconds, waiter.callback, None)
    await waiter


def record_middleware_waits(monkeypatch: Any) -> list[str]:
    """The URLs of the requests that wait in the middleware (``_wait``: inside the downloader),
    in order, from now on for the test."""
    from scrapy_rfc9309 import middleware

    waited: list[str] = []
    wait = middleware.RobotsTxtMiddleware._wait

    async def counting(self: Any, request: Any, *args: Any) -> None:
        waited.append(request.url)
        await wait(self, request, *args)

    monkeypatch.setattr(middleware.RobotsTxtMiddleware, "_wait", counting)
    return waited
