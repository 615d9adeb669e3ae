"""A release burst next to a healthy site (issue 36, item 3).

One origin (127.0.0.3) has ``denied`` requests, all of which its robots.txt
denies; its robots.txt answers after ``delay`` seconds, so they are all held
(in the gate with the plugin, in the downloader with Scrapy's middleware)
and released at once.  A healthy origin (127.0.0.2) serves ``pages`` pages,
``latency`` seconds each: its first page is the first start request, the
denied ones follow, then its other pages (``--order interleaved``: its pages
spread among the denied ones, so they are in the scheduler when the denials
are released; ``--order lazy``: interleaved, and ``start()`` waits while
``engine.needs_backout()``, as Scrapy's docs show for lazy start requests, so
Scrapy never reads the rest of ``start()`` in one turn of the loop; ``--order callback``: ``start()``
yields the first healthy page only, whose callback yields the denied requests, then the other
healthy pages: a burst met while crawling, not read from ``start()``; ``--order known``: as ``after``,
but a first request of the denying origin goes ``delay`` + 1 s before the rest, so its robots.txt has
answered and the 20,000 are denials of a known origin, none held: the control for ``after``).  Per run, in a fresh process: the longest gap between two
healthy pages reaching the spider, the longest time the event loop was held (a
5 ms timer's lateness), and when ``start()`` yielded the second healthy page
(with the default order, Scrapy reads it only after the 20,000 denied ones: the
gap then includes reading them); and, per round, how much later than Scrapy's
own k-th healthy page the plugin's k-th came, at most over k (negative: every
page came earlier).  The longest gap alone can favour Scrapy: where its first
healthy page waits behind the denied ones too, every page is late and the gaps
between them small.

``python benchmarks/release_bench.py --denied 20000 --rounds 3`` (the plugin's add-on, then
Scrapy's own RobotsTxtMiddleware, one after the other in each round)
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import inspect
import json
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


class Web:
    """One asyncio loop in a thread: the healthy origin and the denying one."""

    def __init__(self, delay: float, latency: float) -> None:
        self.delay, self.latency = delay, latency
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.ports: dict[str, int] = {}
        asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(30)

    async def _start(self) -> None:
        for host, handler in (("127.0.0.2", self._healthy), ("127.0.0.3", self._denying)):
            server = await asyncio.start_server(handler, host, 0, backlog=1024)
            self.ports[host] = server.sockets[0].getsockname()[1]

    async def _serve(self, reader: Any, writer: Any, robots: bytes, delay: float) -> None:
        try:
            while True:
                path = (await reader.readuntil(b"\r\n\r\n")).split(b" ", 2)[1]
                if path == b"/robots.txt":
                    await asyncio.sleep(delay)
                    body, kind = robots, b"text/plain"
                else:
                    await asyncio.sleep(self.latency)
                    body, kind = b"<html><body>page</body></html>", b"text/html"
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n%s" % (kind, len(body), body)
                )
                await writer.drain()
        except (asyncio.IncompleteReadError, OSError):
            pass
        finally:
            writer.close()

    async def _healthy(self, reader: Any, writer: Any) -> None:
        await self._serve(reader, writer, b"User-agent: *\nDisallow: /private\n", 0.0)

    async def _denying(self, reader: Any, writer: Any) -> None:
        await self._serve(reader, writer, b"User-agent: *\nDisallow: /\n", self.delay)


def time_the_gate() -> dict[str, Any]:
    """Wrap the gate's own (synchronous) methods: the longest single call into it from the loop, the inner
    scheduler's work within it included (item 3: no hold over 10 ms from the gate). A call during which a garbage
    collection ran is kept apart (a full collection of 20,000 live requests is the interpreter's, not the gate's)."""
    from scrapy_rfc9309.gate import GateScheduler

    longest: dict[str, Any] = {"ms": 0.0, "call": "", "with_gc_ms": 0.0, "calls": 0}
    state = {"depth": 0, "collections": 0}
    gc.callbacks.append(lambda phase, _: state.__setitem__("collections", state["collections"] + (phase == "start")))

    def wrap(name: str, method: Any) -> Any:
        @functools.wraps(method)
        def timed(*args: Any, **kwargs: Any) -> Any:
            state["depth"] += 1
            began, collections = time.perf_counter(), state["collections"]
            try:
                return method(*args, **kwargs)
            finally:
                state["depth"] -= 1
                if not state["depth"]:
                    took = (time.perf_counter() - began) * 1e3
                    longest["calls"] += 1
                    if state["collections"] != collections:
                        longest["with_gc_ms"] = max(longest["with_gc_ms"], took)
                    elif took > longest["ms"]:
                        longest.update(ms=took, call=name)

        return timed

    for name, method in list(vars(GateScheduler).items()):
        if inspect.isfunction(method) and not inspect.iscoroutinefunction(method):
            if name not in ("__init__", "from_crawler", "open", "close"):  # (start-up and the close: not the crawl)
                setattr(GateScheduler, name, wrap(name, method))
    return longest


def crawl(
    plugin: bool, denied: int, pages: int, delay: float, latency: float, order: str = "after", timers: bool = False
) -> dict[str, Any]:
    """One crawl in this process (the worker side)."""
    import scrapy

    try:
        from scrapy.crawler import AsyncCrawlerProcess as Process
    except ImportError:  # Scrapy 2.13
        from scrapy.crawler import CrawlerProcess as Process  # type: ignore[assignment]

    web = Web(delay, latency)
    healthy = f"http://127.0.0.2:{web.ports['127.0.0.2']}"
    denying = f"http://127.0.0.3:{web.ports['127.0.0.3']}"
    seen: list[float] = []
    holds: list[float] = []
    marks: dict[str, float] = {}

    async def watch() -> None:
        while True:
            before = time.monotonic()
            await asyncio.sleep(0.005)
            holds.append(time.monotonic() - before - 0.005)

    class ReleaseSpider(scrapy.Spider):
        name = "release"

        async def start(self):
            # (start requests are taken as the engine asks for them, not all in one callback)
            asyncio.get_running_loop().create_task(watch())
            if order == "callback":  # the burst comes from the first page's callback, not from start()
                yield scrapy.Request(f"{healthy}/first", callback=self.burst, dont_filter=True)
                return
            if order == "known":  # as `after`, but the denying origin's robots.txt has answered before it is read
                yield scrapy.Request(f"{denying}/warm", callback=self.page, errback=self.failed, dont_filter=True)
                await asyncio.sleep(delay + 1)
            yield scrapy.Request(f"{healthy}/first", callback=self.page, dont_filter=True)
            every = max(1, denied // pages) if order not in ("after", "known") else 0
            page = 0
            for i in range(denied):
                while order == "lazy" and self.crawler.engine.needs_backout():
                    await asyncio.sleep(0.01)
                yield scrapy.Request(f"{denying}/d{i}", callback=self.page, errback=self.failed, dont_filter=True)
                if every and i % every == 0 and page < pages:
                    yield self.healthy_page(page)
                    page += 1
            for i in range(page, pages):
                yield self.healthy_page(i)

        def burst(self, response):
            self.page(response)
            for i in range(denied):
                yield scrapy.Request(f"{denying}/d{i}", callback=self.page, errback=self.failed, dont_filter=True)
            for i in range(pages):
                yield self.healthy_page(i)

        def healthy_page(self, i: int) -> scrapy.Request:
            marks.setdefault("second_page_read", time.monotonic())
            return scrapy.Request(f"{healthy}/p{i}", callback=self.page, errback=self.failed, dont_filter=True)

        def page(self, response):
            if response.url.startswith(healthy):
                seen.append(time.monotonic())

        def failed(self, failure):
            pass

    settings: dict[str, Any] = {
        "ROBOTSTXT_OBEY": True,
        "USER_AGENT": "ExampleBot/1.0",
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "RETRY_ENABLED": False,
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    }
    gate: dict[str, Any] = {}
    if plugin:
        settings["ADDONS"] = {"scrapy_rfc9309.Addon": 0}
        gate = time_the_gate() if timers else {}
    process = Process(settings)
    crawler = process.create_crawler(ReleaseSpider)
    started = time.monotonic()
    process.crawl(crawler)
    process.start()
    times = sorted(seen)
    gaps = [b - a for a, b in zip(times, times[1:])]
    return {
        "plugin": plugin,
        "denied": denied,
        "healthy_pages": len(times),
        "max_gap": round(max(gaps), 3) if gaps else None,
        "max_hold_ms": round(max(holds) * 1e3, 1) if holds else None,
        "second_page_read": round(marks["second_page_read"] - started, 2) if marks else None,
        "seconds": round(time.monotonic() - started, 2),
        "held": crawler.stats.get_value("rfc9309/gate/held") if plugin else None,  # for robots.txt: the release
        "gate_max_ms": round(gate["ms"], 2) if gate else None,  # the longest call into the gate (no collection in it)
        "gate_max_call": gate.get("call"),
        "gate_max_with_gc_ms": round(gate["with_gc_ms"], 1) if gate else None,
        "times": [round(t - started, 3) for t in times],  # each healthy page, from the crawl's start
    }


def run_one(
    plugin: bool, denied: int, pages: int, delay: float, latency: float, order: str, timers: bool
) -> dict[str, Any]:
    args = ["--worker", str(int(plugin)), str(denied), str(pages), str(delay), str(latency), order, str(int(timers))]
    out = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True, timeout=900, cwd=ROOT)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--denied", type=int, default=20_000)
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--delay", type=float, default=1.0)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--order", choices=("after", "interleaved", "lazy", "callback", "known"), default="after")
    parser.add_argument(
        "--gate-timers",
        action="store_true",
        help="time each call into the gate (the plugin's crawls; its wrappers cost the crawl a little)",
    )
    parser.add_argument("--worker", nargs=7, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        plugin, denied, pages, delay, latency, order, timers = args.worker
        result = crawl(plugin == "1", int(denied), int(pages), float(delay), float(latency), order, timers == "1")
        print(json.dumps(result))
        return
    runs: dict[bool, list[dict[str, Any]]] = {True: [], False: []}
    later: list[float] = []  # per round: how much later the plugin's k-th healthy page came, at most
    for _ in range(args.rounds):
        for plugin in (True, False):
            result = run_one(plugin, args.denied, args.pages, args.delay, args.latency, args.order, args.gate_timers)
            print(json.dumps({k: v for k, v in result.items() if k != "times"}), flush=True)
            runs[plugin].append(result)
        ours, theirs = runs[True][-1]["times"], runs[False][-1]["times"]
        later.append(max(a - b for a, b in zip(ours, theirs)))
    print(
        "\n| | healthy pages | longest gap (median s) | longest hold (median ms) | k-th page later than "
        "Scrapy's k-th, at most (median s) | the gate's longest call (ms, largest of the rounds) |"
        "\n|---|---|---|---|---|---|"
    )
    for plugin, label in ((True, "scrapy-rfc9309"), (False, "Scrapy's RobotsTxtMiddleware")):
        rs = runs[plugin]
        gap = statistics.median(r["max_gap"] for r in rs if r["max_gap"] is not None)
        hold = statistics.median(r["max_hold_ms"] for r in rs if r["max_hold_ms"] is not None)
        late = f"{statistics.median(later):+.2f}" if plugin else "0"
        own = f"{max(r['gate_max_ms'] for r in rs):.1f}" if plugin and args.gate_timers else "-"
        print(f"| {label} | {rs[0]['healthy_pages']} | {gap:.2f} | {hold:.0f} | {late} | {own} |")


if __name__ == "__main__":
    main()
