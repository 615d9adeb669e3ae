"""One measured crawl, in a process of its own: ``crawl_bench.py --worker CONFIG``.

A fresh interpreter per crawl keeps reactors from clashing and stops one
configuration from warming caches (imports, the allocator, the robots cache)
for the next.  The spider requests one URL list per *pass*, all in one crawl:
a pass starts only once every request of the one before has ended, so pass 1
meets cold robots caches and pass 2 warm ones, with the same process, the same
open connections and the same warmed-up interpreter for every middleware.

Each pass is timed from its first request to the end of its last one (a
response or a failure reaching the spider): wall seconds
(``time.perf_counter``), CPU seconds of this process (``getrusage``: user +
system, all threads), and how many robots.txt files the server served
meanwhile (asked of the server, so it does not depend on any middleware's
own accounting).  The result is one JSON line on stdout.
"""

from __future__ import annotations

import cProfile
import json
import os
import resource
import statistics
import time
import urllib.request
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

from scrapy_rfc9309.compat import request_method

try:  # Scrapy 2.14+
    from scrapy.crawler import AsyncCrawlerProcess as Process
except ImportError:  # Scrapy 2.13
    from scrapy.crawler import CrawlerProcess as Process  # type: ignore[assignment]

#: what every configuration shares; only the robots.txt handling differs
COMMON_SETTINGS: dict[str, Any] = {
    "LOG_LEVEL": "WARNING",
    "TELNETCONSOLE_ENABLED": False,
    "AUTOTHROTTLE_ENABLED": False,
    "DOWNLOAD_DELAY": 0,
    "DOWNLOAD_TIMEOUT": 30,
}

MODES: dict[str, dict[str, Any]] = {
    # (a) nothing reads robots.txt
    "none": {"ROBOTSTXT_OBEY": False},
    # (b) Scrapy's built-in RobotsTxtMiddleware (Protego parser, Scrapy's default)
    "builtin": {"ROBOTSTXT_OBEY": True},
    # (c, d) this plugin, enabled the way the README says: the add-on
    "plugin": {"ADDONS": {"scrapy_rfc9309.Addon": 0}},
    # the audit trail (crawl_bench.py --audit): the add-on writing RFC9309_AUDIT (path from the config),
    # with denials and fetches only, or every allowed request too
    "audit": {"ADDONS": {"scrapy_rfc9309.Addon": 0}},
    "audit_allowed": {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "RFC9309_AUDIT_ALLOWED": True},
    # AI usage preferences enforced (crawl_bench.py --usage): the add-on with a declared purpose
    "usage": {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "RFC9309_USAGE": ["train-ai"]},
    # every opt-out source read (crawl_bench.py --optouts: the pages state them): a declared purpose
    "optouts": {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "RFC9309_USAGE": ["train-ai"]},
    # diagnostics (crawl_bench.py --profile): an async middleware that does nothing,
    # at the plugin's place; and the plugin's middleware without the Crawl-delay extension
    "noop": {"DOWNLOADER_MIDDLEWARES": {"crawl_worker.NoopMiddleware": 100}},
    "middleware": {
        "DOWNLOADER_MIDDLEWARES": {
            "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None,
            "scrapy_rfc9309.RobotsTxtMiddleware": 100,
        }
    },
}

#: (module, attribute) of every plugin hook that runs once per request or per
#: response; ``instrument`` times them
HOOKS = (
    ("scrapy_rfc9309.middleware", "RobotsTxtMiddleware.process_request"),
    ("scrapy_rfc9309.middleware", "RobotsTxtMiddleware._request_scheduled"),
    ("scrapy_rfc9309.fetch", "RobotsFetcher._bytes_received"),
    ("scrapy_rfc9309.fetch", "RobotsFetcher._response_downloaded"),
    ("scrapy_rfc9309.throttle", "CrawlDelayExtension._request_reached_downloader"),
    ("scrapy_rfc9309.slots", "SlotFloors._after_response"),
)
#: calls inside those hooks, timed too (their timers add about 1 us to the hook)
INNER = (
    ("scrapy_rfc9309.middleware", "origin_of_request"),
    ("scrapy_rfc9309.robots.robotstxt", "RobotsTxt.check"),
)
#: signals sent once or more for every page request: their receivers cost a
#: pydispatch call each, whether or not they act on the request
PER_REQUEST_SIGNALS = (
    "request_scheduled",
    "request_reached_downloader",
    "headers_received",
    "bytes_received",
    "response_downloaded",
    "response_received",
    "request_left_downloader",
)
#: the clock of ``profile``: "wall" (cProfile's own, the default) or "thread" (the
#: reactor thread's CPU time, for a machine that other work keeps busy)
PROFILE_CLOCK = ["wall"]
#: hook name -> CPU seconds of each call, cleared when the last pass starts
TIMINGS: dict[str, list[float]] = {}


class FirstSeenMiddleware:
    """First of every downloader middleware (the broad benchmark): notes when
    each origin's first request leaves the scheduler, the start of its "time
    to first page".  The same in every configuration."""

    def __init__(self) -> None:
        self.seen: dict[str, float] = {}

    @classmethod
    def from_crawler(cls, crawler: Any) -> FirstSeenMiddleware:
        middleware = cls()
        crawler.first_seen = middleware.seen
        return middleware

    @request_method
    def process_request(self, request):
        self.seen.setdefault(urlsplit(request.url).netloc, time.perf_counter())


class NoopMiddleware:
    """The cost of any async downloader middleware, to set the plugin's against."""

    @request_method
    async def process_request(self, request):
        return None


def instrument() -> None:
    """Wrap each hook of HOOKS and INNER in a ``time.thread_time`` timer: CPU time of the
    reactor thread, so a preemption by another process is not counted.
    Signal handlers are called by pydispatch with only the keyword arguments
    their signature names, so the wrapper passes on only those."""
    import functools
    import importlib
    import inspect

    for module_name, attribute in HOOKS + INNER:
        owner_name, _, name = attribute.rpartition(".")
        try:
            module = importlib.import_module(module_name)
            owner = getattr(module, owner_name) if owner_name else module
            original = getattr(owner, name)
        except (ImportError, AttributeError):
            continue  # the plugin changed: time what is still there
        cell = TIMINGS.setdefault(attribute, [])
        if inspect.iscoroutinefunction(original):

            async def timed(*args, __original=original, __cell=cell, **kwargs):
                start = time.thread_time()
                try:
                    return await __original(*args, **kwargs)
                finally:
                    __cell.append(time.thread_time() - start)

            setattr(owner, name, functools.wraps(original)(timed))
            continue
        params = inspect.signature(original).parameters
        accepted = None if any(p.kind is p.VAR_KEYWORD for p in params.values()) else set(params)

        def timed_sync(*args, __original=original, __cell=cell, __accepted=accepted, **kwargs):
            if __accepted is not None:
                kwargs = {k: v for k, v in kwargs.items() if k in __accepted}
            start = time.thread_time()
            try:
                return __original(*args, **kwargs)
            finally:
                __cell.append(time.thread_time() - start)

        setattr(owner, name, timed_sync)


def receivers(crawler: Any) -> dict[str, int]:
    """How many receivers each per-request signal has in this crawl."""
    from pydispatch import dispatcher
    from scrapy import signals

    counts = {}
    for name in PER_REQUEST_SIGNALS:
        found = dispatcher.getAllReceivers(crawler.signals.sender, getattr(signals, name))
        counts[name] = sum(1 for _ in dispatcher.liveReceivers(found))
    return counts


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _robots_served(control: int) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{control}/__stats", timeout=10) as reply:
        return int(json.load(reply)["robots"])


class BenchSpider(scrapy.Spider):
    name = "crawl_bench"

    def __init__(
        self, *args: Any, passes: list[list[str]], control: int, profile: str | None, out: dict, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.passes = passes
        self.control = control
        self.profile_path = profile
        self.out = out
        self.profiler: cProfile.Profile | None = None
        #: origin (host:port) -> perf_counter() of its first page reaching the spider
        self.first_page: dict[str, float] = {}

    async def start(self):
        for number, urls in enumerate(self.passes):
            last = number == len(self.passes) - 1
            self.expected, self.ended = len(urls), 0
            self.downloaded = self.dropped = self.errors = 0
            self.finished: Deferred = Deferred()
            robots_before = _robots_served(self.control)
            if last:
                for cell in TIMINGS.values():
                    cell.clear()
                if self.profile_path:
                    # CPU time of the reactor thread: a preemption by another process is not counted
                    clock = time.thread_time if PROFILE_CLOCK[0] == "thread" else time.perf_counter
                    self.profiler = cProfile.Profile(clock)
                    self.profiler.enable()
            self.wall0, self.cpu0, self.thread0 = time.perf_counter(), _cpu(), time.thread_time()
            self.system0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime
            for url in urls:
                yield scrapy.Request(url, callback=self.page, errback=self.failed, dont_filter=True)
            wall, cpu = await maybe_deferred_to_future(self.finished)
            self.out["passes"].append(
                {
                    "wall": wall,
                    "cpu": cpu,
                    "requests": len(urls),
                    "downloaded": self.downloaded,
                    "dropped": self.dropped,
                    "errors": self.errors,
                    "robots_fetches": _robots_served(self.control) - robots_before,
                    "load": os.getloadavg()[0],
                    "system_cpu": self.system_cpu,
                    #: of "cpu", the reactor thread's (the rest: threads, e.g. DNS, SQLite)
                    "reactor_cpu": self.reactor_cpu,
                }
            )
        self.out["receivers"] = receivers(self.crawler)
        seen = getattr(self.crawler, "first_seen", None)
        if seen:
            waits = [self.first_page[origin] - at for origin, at in seen.items() if origin in self.first_page]
            self.out["first_page"] = {"median": statistics.median(waits), "origins": len(waits)}

    def page(self, response):
        self.downloaded += 1
        self.first_page.setdefault(urlsplit(response.url).netloc, time.perf_counter())
        self._ended()

    def failed(self, failure):
        if failure.check(IgnoreRequest):
            self.dropped += 1
        else:
            self.errors += 1
        self._ended()

    def _ended(self) -> None:
        self.ended += 1
        if self.ended == self.expected:
            wall, cpu = time.perf_counter() - self.wall0, _cpu() - self.cpu0
            self.reactor_cpu = time.thread_time() - self.thread0
            #: of which the kernel's (system time: sockets, the loopback network)
            self.system_cpu = resource.getrusage(resource.RUSAGE_SELF).ru_stime - self.system0
            if self.profiler is not None:
                self.profiler.disable()
                self.profiler.dump_stats(self.profile_path)
                self.profiler = None
            self.finished.callback((wall, cpu))


#: CPU seconds (reactor thread) spent in the audit trail's hooks, when timed
AUDIT_CPU = [0.0]
#: the Recorder methods the reactor runs for the audit trail (spider_closed's drain is
#: counted by the writer thread's own CPU)
AUDIT_HOOKS = ("decided", "invalid_token", "_ready", "_fetched", "_tick")


def time_audit() -> None:
    """Wrap the audit trail's reactor-side hooks in ``time.thread_time`` timers
    (the wrapper's own cost is counted too: an overestimate)."""
    from scrapy_rfc9309.audit import Recorder

    for name in AUDIT_HOOKS:
        original = getattr(Recorder, name)

        def timed(self, *args, __original=original, **kwargs):
            start = time.thread_time()
            try:
                return __original(self, *args, **kwargs)
            finally:
                AUDIT_CPU[0] += time.thread_time() - start

        setattr(Recorder, name, timed)


#: CPU seconds (reactor thread) spent reading the responses' opt-outs (mode "optouts")
OPTOUTS_CPU = [0.0]


def time_optouts() -> None:
    """Wrap the middleware's reading of a response's opt-outs in a ``time.thread_time`` timer."""
    from scrapy_rfc9309.middleware import RobotsTxtMiddleware

    original = RobotsTxtMiddleware._read_page

    def timed(self, *args, **kwargs):
        start = time.thread_time()
        try:
            return original(self, *args, **kwargs)
        finally:
            OPTOUTS_CPU[0] += time.thread_time() - start

    RobotsTxtMiddleware._read_page = timed


#: CPU seconds (reactor thread) spent in the store's steps, when timed (``time_store``)
STORE_CPU: dict[str, float] = {}


def _stepped(coro: Any, cell: str) -> Any:
    """Run coroutine ``coro`` step by step, adding each step's CPU time (this
    thread's) to ``STORE_CPU[cell]``: the time it ran, not the time it waited."""
    import types

    @types.coroutine
    def driver() -> Any:
        value: Any = None
        error: BaseException | None = None
        while True:
            began = time.thread_time()
            try:
                yielded = coro.send(value) if error is None else coro.throw(error)
            except StopIteration as done:
                STORE_CPU[cell] = STORE_CPU.get(cell, 0.0) + time.thread_time() - began
                return done.value
            except BaseException:
                STORE_CPU[cell] = STORE_CPU.get(cell, 0.0) + time.thread_time() - began
                raise
            STORE_CPU[cell] = STORE_CPU.get(cell, 0.0) + time.thread_time() - began
            try:
                value, error = (yield yielded), None
            except BaseException as exc:  # thrown in (cancelled): pass it on
                value, error = None, exc

    return driver()


def time_store() -> None:
    """Time the store's steps as the service calls them (the fallback wrapper's
    ``lookup`` and ``store``), and the Redis store's pipelines and lease renewals,
    which run as tasks of their own."""
    import importlib
    import inspect

    targets = [
        ("scrapy_rfc9309.storage.fallback", "FallbackStorage", "lookup"),
        ("scrapy_rfc9309.storage.fallback", "FallbackStorage", "store"),
        ("scrapy_rfc9309.storage.pipelining", "Pipeliner", "_deliver"),
        ("scrapy_rfc9309.storage.redis", "RedisStorage", "_renew_leases"),
        ("scrapy_rfc9309.storage.sqlite", "SqliteStorage", "_apply"),  # in its worker thread
    ]
    for module_name, owner_name, name in targets:
        try:
            owner = getattr(importlib.import_module(module_name), owner_name)
        except (ImportError, AttributeError):
            continue
        original = getattr(owner, name, None)
        if original is None:
            continue

        cell = f"{owner_name}.{name}"
        if not inspect.iscoroutinefunction(original):

            def timed_sync(*args: Any, __original: Any = original, __cell: str = cell, **kwargs: Any) -> Any:
                began = time.thread_time()
                try:
                    return __original(*args, **kwargs)
                finally:
                    STORE_CPU[__cell] = STORE_CPU.get(__cell, 0.0) + time.thread_time() - began

            setattr(owner, name, timed_sync)
            continue

        def timed(*args: Any, __original: Any = original, __cell: str = cell, **kwargs: Any) -> Any:
            STORE_CPU[__cell + " (calls)"] = STORE_CPU.get(__cell + " (calls)", 0) + 1
            return _stepped(__original(*args, **kwargs), __cell)

        setattr(owner, name, timed)


class GcTimer:
    """CPU seconds (this thread's) and counts of the garbage collector's runs, by generation."""

    def __init__(self) -> None:
        import gc

        self.seconds = [0.0, 0.0, 0.0]
        self.runs = [0, 0, 0]
        self._began = 0.0
        gc.callbacks.append(self._event)

    def _event(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.thread_time()
        else:
            generation = info["generation"]
            self.seconds[generation] += time.thread_time() - self._began
            self.runs[generation] += 1

    def result(self) -> dict[str, Any]:
        import gc

        return {"seconds": self.seconds, "runs": self.runs, "tracked": len(gc.get_objects())}


def work(config: dict[str, Any]) -> dict[str, Any]:
    """Run one crawl as ``config`` says: ``mode`` (a key of MODES), ``passes``
    (one URL list per pass), ``control`` (the server's control port),
    ``user_agent``, and optionally ``concurrency``, ``profile`` (a path:
    cProfile the last pass; ``profile_clock`` "thread" to count CPU time) and ``instrument`` (time the plugin's hooks in the
    last pass).
    Returns ``{"passes": [numbers of each pass], "hooks": {name: [seconds of
    each call]}, "receivers": {signal: count}}``."""
    if config.get("instrument"):
        instrument()
    PROFILE_CLOCK[0] = config.get("profile_clock", "wall")
    gc_timer = GcTimer() if config.get("gc") else None
    if config.get("time_store"):
        time_store()
    if config["mode"] == "optouts":
        time_optouts()
    settings = dict(COMMON_SETTINGS)
    settings.update(MODES[config["mode"]])
    settings["USER_AGENT"] = config["user_agent"]
    # every origin is 127.0.0.1, and Scrapy's download slots are per host name:
    # one slot, so the per-domain limit must not be lower than the total
    settings["CONCURRENT_REQUESTS"] = settings["CONCURRENT_REQUESTS_PER_DOMAIN"] = config.get("concurrency", 32)
    if config.get("audit"):
        settings["RFC9309_AUDIT"] = config["audit"]
        time_audit()
    if config.get("per_domain"):  # the broad benchmark: one origin per host, so per-domain limits apply
        settings["CONCURRENT_REQUESTS_PER_DOMAIN"] = config["per_domain"]
    settings.update(config.get("settings", {}))
    if config.get("first_page"):
        middlewares = dict(settings.get("DOWNLOADER_MIDDLEWARES", {}))
        middlewares["crawl_worker.FirstSeenMiddleware"] = 0
        settings["DOWNLOADER_MIDDLEWARES"] = middlewares
    out: dict[str, Any] = {"passes": [], "receivers": {}}
    process = Process(settings)
    crawler = process.create_crawler(BenchSpider)
    process.crawl(crawler, passes=config["passes"], control=config["control"], profile=config.get("profile"), out=out)
    process.start()
    # the whole process's CPU, start-up and close included (the audit trail's last flush is at close)
    out["total_cpu"] = _cpu()
    if gc_timer is not None:
        out["gc"] = gc_timer.result()
    if config.get("time_store"):
        out["store_cpu"] = STORE_CPU
    if config["mode"] == "optouts":
        out["optouts_cpu"] = OPTOUTS_CPU[0]
    if config.get("audit"):
        with open(config["audit"], encoding="utf-8") as handle:
            out["audit_records"] = sum(1 for _ in handle)
        out["audit_reactor_cpu"] = AUDIT_CPU[0]
        out["audit_writer_cpu"] = crawler.stats.get_value("rfc9309/audit/writer_cpu_seconds", 0.0)
    return {**out, "hooks": {name: cell for name, cell in TIMINGS.items() if cell}}
