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
import sys
import time
import urllib.request
from collections import Counter
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.defer import maybe_deferred_to_future
from twisted.internet.defer import Deferred

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
    # with denials and fetches only, or every allowed request too (RFC9309_AUDIT's "allowed")
    "audit": {"ADDONS": {"scrapy_rfc9309.Addon": 0}},
    "audit_allowed": {"ADDONS": {"scrapy_rfc9309.Addon": 0}},
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
    ("scrapy_rfc9309.gate", "GateScheduler.next_request"),
    ("scrapy_rfc9309.gate", "GateScheduler._reached"),
    ("scrapy_rfc9309.gate", "GateScheduler._left"),
)
#: calls inside those hooks, timed too (their timers add about 1 us to the hook)
INNER = (
    ("scrapy_rfc9309.middleware", "origin_of"),
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


def request_method(method: Any) -> Any:
    """Scrapy 2.13 passes ``spider=`` to a downloader middleware's ``process_request``; later
    releases warn when the method takes it.  (Not the plugin's own helper: a crawl without the
    plugin must not import it, or its start-up would count the plugin's imports.)"""
    if scrapy.version_info >= (2, 14):
        return method

    def without_spider(self: Any, request: Any, spider: Any = None) -> Any:  # pragma: no cover - 2.13
        return method(self, request)

    return without_spider


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


def components(crawler: Any) -> dict[str, Any]:
    """What this crawl really runs: its scheduler's class and its downloader middlewares'."""
    engine = crawler.engine
    slot = getattr(engine, "_slot", None) or getattr(engine, "slot", None)
    scheduler = type(slot.scheduler)
    middlewares = [f"{type(m).__module__}.{type(m).__qualname__}" for m in engine.downloader.middleware.middlewares]
    return {"scheduler": f"{scheduler.__module__}.{scheduler.__qualname__}", "middlewares": middlewares}


def gate_state(crawler: Any) -> dict[str, Any]:
    """The plugin's gate as a pass ends: requests it holds, and those it still follows to the
    end of their download (its downloader signal receivers stay connected while there are any)."""
    if not _runs_plugin(crawler):
        return {}
    try:
        from scrapy_rfc9309.lifecycle import crawl_state

        gate = crawl_state(crawler).gate
    except (ImportError, AttributeError):
        return {}
    if gate is None:
        return {}
    return {"gate_held": gate.held, "gate_tracked": len(getattr(gate, "_tracked", ()))}


def _runs_plugin(crawler: Any) -> bool:
    """Whether the plugin's middleware is in this crawl (else its registry is not asked:
    that would read its settings, and log about them, in a crawl without it)."""
    return any(
        type(m).__module__.startswith("scrapy_rfc9309") for m in crawler.engine.downloader.middleware.middlewares
    )


def call_counts(profiler: cProfile.Profile) -> dict[str, Any]:
    """Python and builtin function calls in the profiled passes: the total, by package,
    and every function called at least 100 times."""
    import pstats

    raw = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    by_package: Counter[str] = Counter()
    functions = {}
    for (filename, line, name), (_primitive, calls, _tt, _ct, _callers) in raw.items():
        parts = filename.replace("\\", "/").split("/")
        package = next(
            (
                p
                for p in ("scrapy_rfc9309", "scrapy", "twisted", "asyncio", "redis", "sqlite3", "protego")
                if p in parts
            ),
            "builtin" if filename == "~" else "other",
        )
        by_package[package] += calls
        if calls >= 100:
            short = "/".join(parts[parts.index(package) :]) if package in parts else filename
            name = name.split(" at 0x")[0]  # a builtin's name holds its address: not the same in another process
            key = f"{short}:{line}({name})"
            functions[key] = functions.get(key, 0) + calls
    return {"total": sum(by_package.values()), "by_package": dict(by_package), "functions": functions}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _server(control: int) -> dict[str, Any]:
    """The server's counts: robots.txt files and pages served, connections accepted, its CPU seconds."""
    with urllib.request.urlopen(f"http://127.0.0.1:{control}/__stats", timeout=10) as reply:
        found: dict[str, Any] = json.load(reply)
        return found


# -- counts that do not depend on the machine's load, and the load itself ----------------------
#: receiver calls per signal object (every ``robustApply`` of Scrapy's ``send_catch_log*``)
SIGNAL_CALLS: Counter[Any] = Counter()
#: calls of the store's steps: round trips to Redis, hand-offs to SQLite's thread, look-ups, stores
STORE_CALLS: Counter[str] = Counter()
#: (module, class, method, what a call is) counted by ``count_store``
STORE_STEPS = (
    ("scrapy_rfc9309.storage.fallback", "FallbackStorage", "lookup", "lookups"),
    ("scrapy_rfc9309.storage.fallback", "FallbackStorage", "store", "stores"),
    ("scrapy_rfc9309.storage.redis", "RedisStorage", "_guard", "redis_round_trips"),
    ("scrapy_rfc9309.storage.sqlite", "SqliteStorage", "_call", "sqlite_thread_calls"),
    ("scrapy_rfc9309.storage.sqlite", "SqliteStorage", "_apply", "sqlite_write_batches"),
)


def count_signals() -> None:
    """Count every signal receiver call, per signal (about 0.2 us each: a dict increment)."""
    import scrapy.utils.signal as module

    original = module.robustApply

    def counted(receiver: Any, *args: Any, **named: Any) -> Any:
        SIGNAL_CALLS[named.get("signal")] += 1
        return original(receiver, *args, **named)

    module.robustApply = counted


def signal_names() -> dict[Any, str]:
    """Signal object -> its name (Scrapy's and the plugin's)."""
    import importlib

    from scrapy import signals

    modules = [signals]
    if "scrapy_rfc9309" in sys.modules:  # (never imported by a crawl without the plugin)
        try:
            modules.append(importlib.import_module("scrapy_rfc9309.signals"))
        except ImportError:
            pass
    return {getattr(m, n): n for m in modules for n in dir(m) if not n.startswith("_") and n.islower()}


def count_store() -> None:
    """Count the store's steps (a dict increment a call): those that cross to Redis (``_guard``:
    one round trip each, a pipeline being one) or to SQLite's thread."""
    import importlib

    for module_name, owner_name, name, what in STORE_STEPS:
        try:
            owner = getattr(importlib.import_module(module_name), owner_name)
        except (ImportError, AttributeError):
            continue
        original = getattr(owner, name, None)
        if original is None:
            continue

        def counted(*args: Any, __original: Any = original, __what: str = what, **kwargs: Any) -> Any:
            STORE_CALLS[__what] += 1
            return __original(*args, **kwargs)

        setattr(owner, name, counted)


def _machine() -> tuple[float, float]:
    """(busy, steal) CPU seconds of the whole machine so far, every core (/proc/stat)."""
    try:
        with open("/proc/stat", encoding="ascii") as handle:
            fields = [int(v) for v in handle.readline().split()[1:]]
    except OSError:
        return 0.0, 0.0
    user, nice, system, _idle, _iowait, irq, softirq, steal = (fields + [0] * 8)[:8]
    tick = os.sysconf("SC_CLK_TCK")
    return (user + nice + system + irq + softirq) / tick, steal / tick


def _time_wait() -> int:
    """TCP sockets in TIME_WAIT on the machine now (IPv4)."""
    try:
        with open("/proc/net/tcp", encoding="ascii") as handle:
            return sum(1 for line in handle if line[34:36] == "06")
    except OSError:
        return 0


class Snapshot:
    """What a pass's counts are measured from: taken just before its first request and
    after its last one; :meth:`since` gives the differences."""

    def __init__(self, control: int, gc_timer: GcTimer | None) -> None:
        import gc

        usage = resource.getrusage(resource.RUSAGE_SELF)
        self.server = _server(control)
        self.machine, self.steal = _machine()
        self.cpu = usage.ru_utime + usage.ru_stime
        self.switches = (usage.ru_nvcsw, usage.ru_nivcsw)
        self.collections = [generation["collections"] for generation in gc.get_stats()]
        self.gc_seconds = list(gc_timer.seconds) if gc_timer is not None else [0.0, 0.0, 0.0]
        self.signals = Counter(SIGNAL_CALLS)
        self.store = Counter(STORE_CALLS)

    def since(self, before: Snapshot) -> dict[str, Any]:
        names = signal_names()
        server_cpu = self.server.get("cpu", 0.0) - before.server.get("cpu", 0.0)
        machine = self.machine - before.machine
        signal_calls = {names.get(s, str(s)): n for s, n in (self.signals - before.signals).items()}
        return {
            "robots_fetches": self.server["robots"] - before.server["robots"],
            "pages_served": self.server["pages"] - before.server["pages"],
            "connections": self.server.get("connections", 0) - before.server.get("connections", 0),
            "server_cpu": server_cpu,
            #: CPU seconds the rest of the machine used meanwhile (other processes, every core)
            "others_cpu": max(0.0, machine - (self.cpu - before.cpu) - server_cpu),
            "steal": self.steal - before.steal,
            "voluntary_switches": self.switches[0] - before.switches[0],
            "involuntary_switches": self.switches[1] - before.switches[1],
            "gc_collections": [a - b for a, b in zip(self.collections, before.collections)],
            "gc_seconds": [a - b for a, b in zip(self.gc_seconds, before.gc_seconds)],
            "signal_calls": signal_calls,
            "signal_calls_total": sum(signal_calls.values()),
            "store_calls": dict(self.store - before.store),
            "load": os.getloadavg()[0],
            "time_wait": _time_wait(),
        }


class BenchSpider(scrapy.Spider):
    name = "crawl_bench"

    def __init__(
        self,
        *args: Any,
        passes: list[list[str]],
        control: int,
        profile: str | None,
        out: dict,
        gc_timer: GcTimer | None = None,
        count_calls: bool = False,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.passes = passes
        self.control = control
        self.profile_path = profile
        self.out = out
        self.profiler: cProfile.Profile | None = None
        self.gc_timer = gc_timer
        #: cProfile every pass, for its call counts only (an untimed run: ``calls`` in the output)
        self.counter: cProfile.Profile | None = cProfile.Profile() if count_calls else None
        #: origin (host:port) -> perf_counter() of its first page reaching the spider
        self.first_page: dict[str, float] = {}

    async def start(self):
        self.out["components"] = components(self.crawler)
        for number, urls in enumerate(self.passes):
            last = number == len(self.passes) - 1
            self.expected, self.ended = len(urls), 0
            self.downloaded = self.dropped = self.errors = 0
            self.finished: Deferred = Deferred()
            before = Snapshot(self.control, self.gc_timer)
            if self.counter is not None:
                self.counter.enable()
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
            if self.counter is not None:
                self.counter.disable()
            self.out["passes"].append(
                {
                    "wall": wall,
                    "cpu": cpu,
                    "requests": len(urls),
                    "origins": len({urlsplit(url).netloc for url in urls}),
                    "downloaded": self.downloaded,
                    "dropped": self.dropped,
                    "errors": self.errors,
                    "system_cpu": self.system_cpu,
                    #: of "cpu", the reactor thread's (the rest: threads, e.g. DNS, SQLite)
                    "reactor_cpu": self.reactor_cpu,
                    # robots_fetches, connections, signal calls, the machine's load ... (Snapshot.since)
                    **Snapshot(self.control, self.gc_timer).since(before),
                    **gate_state(self.crawler),
                }
            )
        if self.counter is not None:
            self.out["calls"] = call_counts(self.counter)
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


PLUGIN_MIDDLEWARE = "scrapy_rfc9309.middleware.RobotsTxtMiddleware"
BUILTIN_MIDDLEWARE = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
GATE = "scrapy_rfc9309.gate.GateScheduler"
#: the class each ``store`` of a plugin configuration must run on
STORE_CLASSES = {
    "memory": "scrapy_rfc9309.storage.memory.MemoryStorage",
    "sqlite": "scrapy_rfc9309.storage.sqlite.SqliteStorage",
    "redis": "scrapy_rfc9309.storage.redis.RedisStorage",
}


def store_of(crawler: Any, middlewares: list[str]) -> str | None:
    """The class of the plugin's store in this crawl (behind its fallback wrapper), or None."""
    if not any(m.startswith("scrapy_rfc9309") for m in middlewares):
        return None  # (its registry would read its settings, and log about them, in a crawl without it)
    try:
        from scrapy_rfc9309.lifecycle import crawl_state
    except ImportError:
        return None
    try:
        service = crawl_state(crawler).service
    except Exception:  # noqa: BLE001 - no plugin in this crawl
        return None
    if service is None:
        return None
    store = getattr(service.storage, "primary", service.storage)
    return f"{type(store).__module__}.{type(store).__qualname__}"


def _has_gate() -> bool:
    import importlib.util

    return importlib.util.find_spec("scrapy_rfc9309.gate") is not None


def verify(config: dict[str, Any], out: dict[str, Any]) -> None:
    """Refuse a result whose crawl did not run what its configuration says: the robots.txt
    middleware (Scrapy's, the plugin's or none), the gate as the plugin's scheduler (where
    the checkout has one), the store, and one robots.txt fetch per origin (counted by the
    server), none in a pass after the first, no store failures."""
    found = out["components"]
    middlewares, mode = found["middlewares"], config["mode"]
    plugin = PLUGIN_MIDDLEWARE in middlewares
    builtin = BUILTIN_MIDDLEWARE in middlewares
    problems = []
    if mode == "none" and (plugin or builtin):
        problems.append("a robots.txt middleware runs in the no-robots crawl")
    if mode == "builtin" and (plugin or not builtin):
        problems.append("the built-in crawl does not run Scrapy's middleware alone")
    if mode not in ("none", "builtin", "noop"):
        if builtin or (mode != "middleware" and not plugin):
            problems.append(f"the plugin crawl runs {middlewares}")
        if mode != "middleware" and _has_gate() and found["scheduler"] != GATE:
            problems.append(f"the plugin crawl's scheduler is {found['scheduler']}, not the gate")
        wanted = STORE_CLASSES.get(config.get("store", "memory"))
        if out["store"] is not None and wanted is not None and out["store"] != wanted:
            problems.append(f"the store is {out['store']}, not {wanted}")
        for key in ("rfc9309/storage/errors", "rfc9309/storage/outages"):
            if out["stats"].get(key):
                problems.append(f"{key} = {out['stats'][key]}: the crawl ran on the in-memory fallback")
    elif found["scheduler"] == GATE:
        problems.append("the gate runs in a crawl without the plugin")
    for number, numbers in enumerate(out["passes"]):
        want = 0 if mode in ("none", "noop") or number else numbers["origins"]
        if numbers["robots_fetches"] != want:
            problems.append(f"pass {number + 1}: {numbers['robots_fetches']} robots.txt fetches, not {want}")
    if problems:
        raise RuntimeError(f"crawl worker {mode}: " + "; ".join(problems))


def work(config: dict[str, Any]) -> dict[str, Any]:
    """Run one crawl as ``config`` says: ``mode`` (a key of MODES), ``passes``
    (one URL list per pass), ``control`` (the server's control port),
    ``user_agent``, and optionally ``concurrency``, ``profile`` (a path:
    cProfile the last pass; ``profile_clock`` "thread" to count CPU time), ``instrument`` (time the plugin's hooks in the
    last pass) and ``bare`` (no counting of the benchmark's own in the crawl: an instruction count).
    Returns ``{"passes": [numbers of each pass], "hooks": {name: [seconds of
    each call]}, "receivers": {signal: count}}``."""
    if config.get("instrument"):
        instrument()
    PROFILE_CLOCK[0] = config.get("profile_clock", "wall")
    # ``bare`` (an instruction count): nothing of the benchmark's own in the crawl's way, no
    # counting wrapper around signal receivers or the store, no collector callback
    bare = bool(config.get("bare"))
    # the collector's time is measured in every other run (a callback per collection): it is where
    # a crawl's CPU moves with what is alive, not with the machine's load
    gc_timer = None if bare else GcTimer()
    if config.get("time_store"):
        time_store()
    if config["mode"] == "optouts":
        time_optouts()
    if not bare:
        count_signals()
        if config["mode"] not in ("none", "builtin", "noop"):  # (a crawl without the plugin does not import it)
            count_store()  # after time_store: its wrappers look for coroutine functions
    settings = dict(COMMON_SETTINGS)
    settings.update(MODES[config["mode"]])
    settings["USER_AGENT"] = config["user_agent"]
    # every origin is 127.0.0.1, and Scrapy's download slots are per host name:
    # one slot, so the per-domain limit must not be lower than the total
    settings["CONCURRENT_REQUESTS"] = settings["CONCURRENT_REQUESTS_PER_DOMAIN"] = config.get("concurrency", 32)
    if config.get("audit"):
        allowed = config["mode"] == "audit_allowed"
        settings["RFC9309_AUDIT"] = {"path": config["audit"], "allowed": True} if allowed else config["audit"]
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
    process.crawl(
        crawler, passes=config["passes"], control=config["control"], profile=config.get("profile"), out=out,
        gc_timer=gc_timer, count_calls=bool(config.get("count_calls")),
    )  # fmt: skip
    process.start()
    # the whole process's CPU, start-up and close included (the audit trail's last flush is at close)
    out["total_cpu"] = _cpu()
    if gc_timer is not None:
        out["gc"] = gc_timer.result()
    out["store"] = store_of(crawler, out["components"]["middlewares"])
    out["stats"] = {
        k: v
        for k, v in crawler.stats.get_stats().items()
        if isinstance(v, (int, float)) and k.startswith(("rfc9309/", "robotstxt/", "downloader/request_count"))
    }
    verify(config, out)
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
