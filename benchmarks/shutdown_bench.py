"""SIGINT in the middle of a Crawl-delay crawl (issue 23, point 8).

One origin (127.0.0.2) whose robots.txt says ``Crawl-delay: 1`` (answered
after 0.5 s, so the first requests wait for it inside the middleware) gets
``requests`` requests; the crawl (a ``CrawlerProcess`` in a child process,
``CONCURRENT_REQUESTS`` 16, 8 per domain) is sent SIGINT ``after`` seconds
in.  Measured by the server (in this process): the pages requested after the
signal, and the seconds from the signal to the child's exit.

Configurations: ``plugin`` (the add-on), and ``scrapy`` (Scrapy alone:
``ROBOTSTXT_OBEY = False``, ``DOWNLOAD_DELAY = 1``), which is the reference:
it downloads what is in its downloader (``CONCURRENT_REQUESTS``) one delay
apart, then exits.

``python benchmarks/shutdown_bench.py --rounds 2``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
HOST = "127.0.0.2"


class Site:
    def __init__(self) -> None:
        self.hits: list[float] = []
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.port = asyncio.run_coroutine_threadsafe(self._start(), self.loop).result(10)

    async def _start(self) -> int:
        server = await asyncio.start_server(self._serve, HOST, 0, backlog=1024)
        return server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1]
                if path == b"/robots.txt":
                    await asyncio.sleep(0.5)
                    body, kind = b"User-agent: *\nCrawl-delay: 1\n", b"text/plain"
                else:
                    self.hits.append(time.monotonic())
                    body, kind = b"<html>page</html>", b"text/html"
                writer.write(
                    b"HTTP/1.1 200 OK\r\nContent-Type: " + kind + b"\r\nContent-Length: "
                    + str(len(body)).encode() + b"\r\n\r\n" + body
                )  # fmt: skip
                await writer.drain()
        except (asyncio.IncompleteReadError, OSError):
            pass
        finally:
            writer.close()


def worker(config: str, port: int, requests: int) -> None:
    sys.path.insert(0, str(ROOT))
    import scrapy
    from scrapy.crawler import CrawlerProcess

    class DelaySpider(scrapy.Spider):
        name = "delay"

        async def start(self):
            for i in range(requests):
                yield scrapy.Request(f"http://{HOST}:{port}/p{i}", dont_filter=True, errback=self.failed)

        def parse(self, response):
            pass

        def failed(self, failure):
            pass

    settings = {
        "USER_AGENT": "ExampleBot/1.0",
        "LOG_LEVEL": "WARNING",
        "TELNETCONSOLE_ENABLED": False,
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
    }
    if config == "plugin":
        settings.update({"ADDONS": {"scrapy_rfc9309.Addon": 0}, "ROBOTSTXT_OBEY": True})
    else:
        settings.update({"ROBOTSTXT_OBEY": False, "DOWNLOAD_DELAY": 1.0})
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(DelaySpider)
    process.crawl(crawler)
    print("ready", flush=True)
    process.start()
    print(json.dumps({"dropped": crawler.stats.get_value("rfc9309/requests/dropped/spider_closing", 0)}), flush=True)


def run_one(config: str, requests: int, after: float) -> dict:
    site = Site()
    child = subprocess.Popen(
        [sys.executable, __file__, "--worker", config, str(site.port), str(requests)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT,
    )  # fmt: skip
    assert child.stdout is not None
    child.stdout.readline()  # "ready"
    time.sleep(after)
    signalled = time.monotonic()
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=300)
    exited = time.monotonic()
    last = out.strip().splitlines()[-1] if out.strip() else "{}"
    return {
        "config": config,
        "pages_before": sum(1 for at in site.hits if at <= signalled),
        "pages_after": sum(1 for at in site.hits if at > signalled),
        "exit_after": round(exited - signalled, 2),
        **json.loads(last),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--after", type=float, default=4.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--configs", nargs="+", default=["scrapy", "plugin"])
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        config, port, requests = args.worker
        worker(config, int(port), int(requests))
        return
    rows: dict[str, list[dict]] = {}
    for _ in range(args.rounds):
        for config in args.configs:
            result = run_one(config, args.requests, args.after)
            rows.setdefault(config, []).append(result)
            print(json.dumps(result), flush=True)
    print("\n| configuration | pages after SIGINT (median) | exit after SIGINT (median s) |")
    print("|---|---|---|")
    for config, results in rows.items():
        pages = statistics.median(r["pages_after"] for r in results)
        ended = statistics.median(r["exit_after"] for r in results)
        print(f"| {config} | {pages:g} | {ended:.1f} |")


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    main()
