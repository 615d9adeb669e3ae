"""Hanging robots.txt servers next to a healthy site (issue 23, point 1).

``hanging`` origins (127.0.1.1, 127.0.1.2 ...: one host each, so one Scrapy
download slot each) read the request for ``/robots.txt`` and never answer;
one healthy origin (127.0.0.2) serves ``pages`` pages, each ``latency``
seconds after its request.  The spider sends one page of every hanging origin
first, then the healthy pages (the harshest order: every hanging fetch has
started before the healthy origin's robots.txt is asked for), with
``CONCURRENT_REQUESTS`` 16 and 8 per domain.  When the last healthy page has
reached the spider the spider is closed, so a run takes about as long as the
healthy site needs (plus Scrapy's close).

Per run, in a fresh process: the seconds from the spider's opening to its
last healthy page, and the longest gap between two healthy pages reaching
the spider (the first page counts from the spider's opening).
``hanging = 0`` is the healthy site alone.

``python benchmarks/hang_bench.py --hanging 0 16 48 --timeout 30 5 --rounds 3``
"""

from __future__ import annotations

import argparse
import asyncio
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
HEALTHY_HOST = "127.0.0.2"


#: ``--same-host``: the hanging origins are ports of the healthy origin's host (one download slot)
SAME_HOST = False
#: ``--known-first``: the healthy origin's robots.txt is known and its pages flowing (its first
#: ten) before the hanging origins appear (issue 31: "appearing in a crawl")
KNOWN_FIRST = False
#: ``--reactorless``: the crawl runs without a Twisted reactor (Scrapy 2.15+, aiohttp's handler)
REACTORLESS = False
#: ``--tdmrep``: the hanging origins answer robots.txt at once and hang on their
#: /.well-known/tdmrep.json instead, in a crawl that declares a purpose (issue 36, item 1)
TDMREP = False


def hanging_host(index: int) -> str:
    """127.1.0.1, 127.1.0.2 ...: one host (one download slot) each, for up to 62,500 origins."""
    return HEALTHY_HOST if SAME_HOST else f"127.1.{index // 250}.{index % 250 + 1}"


class Web:
    """One asyncio loop in a thread: the healthy origin and the hanging ones."""

    def __init__(self, hanging: int, latency: float) -> None:
        self.latency = latency
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.healthy_port = 0
        self.hanging_ports: list[int] = []
        asyncio.run_coroutine_threadsafe(self._start(hanging), self.loop).result(30)

    async def _start(self, hanging: int) -> None:
        server = await asyncio.start_server(self._healthy, HEALTHY_HOST, 0, backlog=1024)
        self.healthy_port = server.sockets[0].getsockname()[1]
        for index in range(hanging):
            server = await asyncio.start_server(self._hang, hanging_host(index), 0, backlog=1024)
            self.hanging_ports.append(server.sockets[0].getsockname()[1])

    async def _healthy(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1]
                if path == b"/robots.txt":
                    body, kind = b"User-agent: *\nDisallow: /private\n", b"text/plain"
                elif path == b"/.well-known/tdmrep.json":
                    body, kind = b"[]", b"application/json"
                else:
                    await asyncio.sleep(self.latency)
                    body, kind = b"<html><body>page " + path + b"</body></html>", b"text/html"
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: " + kind + b"\r\nContent-Length: "
                    + str(len(body)).encode() + b"\r\n\r\n" + body
                )  # fmt: skip
                await writer.drain()
        except (asyncio.IncompleteReadError, OSError):
            pass
        finally:
            writer.close()

    async def _hang(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while TDMREP:  # robots.txt answered, anything else never
                head = await reader.readuntil(b"\r\n\r\n")
                if head.split(b" ", 2)[1] != b"/robots.txt":
                    break
                body = b"User-agent: *\nAllow: /\n"
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body)
                )
                await writer.drain()
            await reader.read()  # until the client hangs up
        except OSError:
            pass
        finally:
            writer.close()


def crawl(hanging: int, timeout: float, pages: int, latency: float) -> dict[str, Any]:
    """One crawl in this process (the worker side)."""
    import scrapy
    from scrapy.utils.defer import deferred_from_coro

    try:
        from scrapy.crawler import AsyncCrawlerProcess as Process
    except ImportError:  # Scrapy 2.13
        from scrapy.crawler import CrawlerProcess as Process  # type: ignore[assignment]

    web = Web(hanging, latency)
    healthy = [f"http://{HEALTHY_HOST}:{web.healthy_port}/page{i}" for i in range(pages)]
    stalled = [f"http://{hanging_host(i)}:{port}/page" for i, port in enumerate(web.hanging_ports)]
    seen: list[float] = []
    opened: list[float] = []

    class HangSpider(scrapy.Spider):
        name = "hang"

        async def start(self):
            opened.append(time.monotonic())
            order = healthy[:10] + stalled + healthy[10:] if KNOWN_FIRST else stalled + healthy
            for url in order:
                yield scrapy.Request(url, callback=self.page, errback=self.failed, dont_filter=True)

        async def page(self, response):
            now = time.monotonic()
            if response.url.startswith(f"http://{HEALTHY_HOST}:"):
                seen.append(now)
                if len(seen) == len(healthy):
                    # not awaited: the close waits for this callback's request to end
                    deferred_from_coro(self.crawler.engine.close_spider_async(reason="healthy_done"))

        def failed(self, failure):
            pass

    settings = {
        "ADDONS": {"scrapy_rfc9309.Addon": 0},
        "ROBOTSTXT_OBEY": True,
        "USER_AGENT": "ExampleBot/1.0",
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "RETRY_ENABLED": False,
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "RFC9309_FETCH_TIMEOUT": timeout,
        **({"TWISTED_REACTOR_ENABLED": False} if REACTORLESS else {}),
        **({"RFC9309_USAGE": ["train-ai"]} if TDMREP else {}),
    }
    process = Process(settings)
    crawler = process.create_crawler(HangSpider)
    started = time.monotonic()
    process.crawl(crawler)
    process.start()
    ended = time.monotonic()
    stats = crawler.stats.get_stats()
    times = sorted(seen)
    base = opened[0] if opened else started
    gaps = [b - a for a, b in zip([base, *times], times)]
    return {
        "hanging": hanging,
        "timeout": timeout,
        "healthy_pages": len(times),
        "healthy_done": round(times[-1] - opened[0], 3) if times else None,
        "max_gap": round(max(gaps), 3) if gaps else None,
        "exit": round(ended - started, 3),
        "dropped": stats.get("rfc9309/requests/dropped/spider_closing", 0),
    }


def run_one(hanging: int, timeout: float, pages: int, latency: float) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, __file__, "--worker", str(hanging), str(timeout), str(pages), str(latency)]
        + (["--same-host"] if SAME_HOST else [])
        + (["--known-first"] if KNOWN_FIRST else [])
        + (["--reactorless"] if REACTORLESS else [])
        + (["--tdmrep"] if TDMREP else []),
        capture_output=True, text=True, timeout=timeout + 120, cwd=ROOT,
    )  # fmt: skip
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-3000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hanging", type=int, nargs="+", default=[0, 16, 48])
    parser.add_argument("--timeout", type=float, nargs="+", default=[30.0, 5.0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--same-host", action="store_true", help="hanging origins on the healthy host's other ports")
    parser.add_argument("--known-first", action="store_true", help="the healthy origin known before they appear")
    parser.add_argument("--reactorless", action="store_true", help="without a Twisted reactor (Scrapy 2.15+)")
    parser.add_argument(
        "--tdmrep", action="store_true", help="robots.txt answers; tdmrep.json hangs (a purpose declared)"
    )
    parser.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    global SAME_HOST, KNOWN_FIRST, REACTORLESS, TDMREP
    SAME_HOST, KNOWN_FIRST, REACTORLESS, TDMREP = args.same_host, args.known_first, args.reactorless, args.tdmrep
    if args.worker:
        sys.path.insert(0, str(ROOT))
        hanging, timeout, pages, latency = args.worker
        print(json.dumps(crawl(int(hanging), float(timeout), int(pages), float(latency))))
        return
    rows: dict[tuple[int, float], list[dict[str, Any]]] = {}
    for _ in range(args.rounds):
        for timeout in args.timeout:
            for hanging in args.hanging:
                result = run_one(hanging, timeout, args.pages, args.latency)
                rows.setdefault((hanging, timeout), []).append(result)
                print(json.dumps(result), flush=True)
    print("\n| hanging origins | fetch timeout | healthy pages done (median s) | longest gap (median s) | exit (s) |")
    print("|---|---|---|---|---|")
    for (hanging, timeout), results in sorted(rows.items(), key=lambda kv: (-kv[0][1], kv[0][0])):
        done = statistics.median(r["healthy_done"] for r in results)
        gap = statistics.median(r["max_gap"] for r in results)
        ended = statistics.median(r["exit"] for r in results)
        print(f"| {hanging} | {timeout:g} s | {done:.2f} | {gap:.2f} | {ended:.1f} |")


if __name__ == "__main__":
    main()
