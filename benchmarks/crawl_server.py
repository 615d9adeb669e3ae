"""The loopback web the crawl benchmark crawls: many origins, one process.

``python benchmarks/crawl_server.py --origins 50 --robots FILE --slow-delay 0.2 [--cpu N]``
listens on ``2 x origins`` ports of 127.0.0.1 plus one control port, then
prints one JSON line ``{"fast": [...], "slow": [...], "control": port}`` and
serves until its stdin closes (so it never outlives the benchmark), or for an
hour at most.

* every path but ``/robots.txt`` gets a small HTML page (200, keep-alive);
* ``/robots.txt`` gets the given file (text/plain) at once on the *fast*
  ports, and after ``--slow-delay`` seconds on the *slow* ones;
* ``--optouts``: every page also states opt-outs in each place a crawl with a declared purpose
  reads (an ``X-Robots-Tag`` line, robots and ``tdm-reservation`` meta tags), none denying
  ``train-ai``, and ``/.well-known/tdmrep.json`` is served (``crawl_bench.py --optouts``);
* ``GET /__stats`` on the control port answers ``{"robots": n, "pages": n, "connections": n, "cpu": s}``,
  the requests served (and connections accepted) so far, so the crawler's own accounting is checked by a
  count it cannot influence, and the server's own CPU seconds.

``--hosts N --latency S`` (the broad benchmark, ``broad_bench.py``) adds N
origins on N loopback addresses (127.0.1.1, 127.0.1.2 ...: one host each, so
one Scrapy download slot each), every response of which, robots.txt and
pages alike, is sent ``S`` seconds after its request; their ``host:port`` are
listed under ``"hosts"``.  With ``--not-found-every K``, every Kth of them
(the 10th, 20th ... for K = 10) answers robots.txt with a 404.

It is a bare asyncio protocol with pre-built headers, not http.server: the
benchmark measures the crawler, so the server must cost as little CPU as it
can (both share the machine).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import threading
import time
from pathlib import Path

#: the server stops by itself after this long, whatever happens to its parent
MAX_LIFETIME = 3600.0
#: ``--optouts``: every page states something in each place a crawl with a purpose reads, none of
#: which denies train-ai (so every configuration downloads and keeps the same pages): an
#: X-Robots-Tag line for another crawler, a robots meta tag and a tdm-reservation meta tag;
#: /.well-known/tdmrep.json has a reserving rule for a path no page has, and one not reserving
OPTOUT_HEADERS = b"\r\nX-Robots-Tag: otherbot: noai, noindex"
OPTOUT_HEAD = '<meta name="robots" content="index, follow"><meta name="tdm-reservation" content="0">'
TDMREP_FILE = b'[{"location": "/no-page-here/", "tdm-reservation": 1}, {"location": "/", "tdm-reservation": 0}]'
PAGE_TEMPLATE = (
    "<!DOCTYPE html><html><head><title>Page {path}</title></head><body>"
    "<h1>{path}</h1><p>A small page of the crawl benchmark; it links nowhere, "
    "so the crawl is exactly the list of URLs the spider starts with.</p>"
    "</body></html>"
)


class Counters:
    __slots__ = ("robots", "pages", "connections", "tdmrep")

    def __init__(self) -> None:
        self.robots = 0
        self.pages = 0
        self.tdmrep = 0
        #: connections the crawler opened to the origins (a crawl that reuses fewer costs more CPU)
        self.connections = 0


def _response(status: str, content_type: bytes, body: bytes, headers: bytes = b"") -> bytes:
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: ".encode()
        + content_type
        + headers
        + f"\r\nContent-Length: {len(body)}\r\n\r\n".encode()
    )
    return head + body


class Web(asyncio.Protocol):
    """One connection; answers requests one after another (no pipelining
    needed: Scrapy sends the next request on a connection only after the
    previous answer)."""

    def __init__(
        self,
        robots: bytes,
        delay: float,
        counters: Counters,
        control: bool,
        latency: float = 0.0,
        optouts: bool = False,
    ) -> None:
        #: pages state opt-outs in every place (``--optouts``), and tdmrep.json is served
        self.optouts = optouts
        #: the whole robots.txt response (a 200 with the file, or a 404)
        self.robots = robots
        self.delay = delay
        #: seconds before every response (robots.txt and pages)
        self.latency = latency
        self.counters = counters
        self.control = control
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport) -> None:  # type: ignore[override]
        self.transport = transport
        if not self.control:
            self.counters.connections += 1

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head, self.buffer = self.buffer[:end], self.buffer[end + 4 :]
            self._answer(head)

    def _answer(self, head: bytes) -> None:
        line = head.split(b"\r\n", 1)[0].split(b" ")
        path = line[1] if len(line) > 1 else b"/"
        close = b"\r\nconnection: close" in head.lower()
        if self.control:
            counts = {"robots": self.counters.robots, "pages": self.counters.pages, "tdmrep": self.counters.tdmrep}
            # the server's own CPU seconds: what it cost the machine beside the crawler
            body = json.dumps({**counts, "connections": self.counters.connections, "cpu": time.process_time()}).encode()
            self._send(_response("200 OK", b"application/json", body), close)
        elif path == b"/robots.txt":
            self.counters.robots += 1
            if self.delay or self.latency:
                asyncio.get_running_loop().call_later(self.delay or self.latency, self._send, self.robots, close)
            else:
                self._send(self.robots, close)
        elif self.optouts and path == b"/.well-known/tdmrep.json":
            self.counters.tdmrep += 1
            self._send(_response("200 OK", b"application/json", TDMREP_FILE), close)
        else:
            self.counters.pages += 1
            text = PAGE_TEMPLATE.format(path=path.decode("latin-1"))
            if self.optouts:
                text = text.replace("</title>", "</title>" + OPTOUT_HEAD, 1)
            page = _response(
                "200 OK", b"text/html; charset=utf-8", text.encode(), OPTOUT_HEADERS if self.optouts else b""
            )
            if self.latency:
                asyncio.get_running_loop().call_later(self.latency, self._send, page, close)
            else:
                self._send(page, close)

    def _send(self, data: bytes, close: bool) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        self.transport.write(data)
        if close:
            self.transport.close()


def host_address(i: int) -> str:
    """The loopback address of broad origin ``i`` (127.0.1.1 onwards, 254 per /24)."""
    return f"127.0.{1 + i // 254}.{1 + i % 254}"


async def serve(
    origins: int,
    robots_body: bytes,
    slow_delay: float,
    hosts: int = 0,
    latency: float = 0.0,
    not_found_every: int = 0,
    optouts: bool = False,
) -> None:
    loop = asyncio.get_running_loop()
    counters = Counters()
    robots = _response("200 OK", b"text/plain", robots_body)
    missing = _response("404 Not Found", b"text/html", b"<html><body>Not Found</body></html>")

    async def listen(
        delay: float, control: bool = False, host: str = "127.0.0.1", latency: float = 0.0, found: bool = True
    ) -> int:
        answer = robots if found else missing
        server = await loop.create_server(
            lambda: Web(answer, delay, counters, control, latency, optouts), host, 0, backlog=1024, reuse_address=True
        )
        return server.sockets[0].getsockname()[1]

    fast = [await listen(0.0) for _ in range(origins)]
    slow = [await listen(slow_delay) for _ in range(origins)]
    broad = []
    for i in range(hosts):
        address = host_address(i)
        found = not (not_found_every and i % not_found_every == not_found_every - 1)
        broad.append(f"{address}:{await listen(0.0, host=address, latency=latency, found=found)}")
    control = await listen(0.0, control=True)
    print(json.dumps({"fast": fast, "slow": slow, "hosts": broad, "control": control}), flush=True)

    # stop when the parent closes our stdin (or dies), or after MAX_LIFETIME
    stdin_closed = loop.create_future()

    def watch() -> None:  # a daemon thread: it must not keep the process alive
        sys.stdin.buffer.read()
        loop.call_soon_threadsafe(lambda: stdin_closed.done() or stdin_closed.set_result(None))

    threading.Thread(target=watch, daemon=True).start()
    await asyncio.wait_for(stdin_closed, MAX_LIFETIME)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--origins", type=int, default=50)
    ap.add_argument("--robots", type=Path, required=True, help="the robots.txt every origin serves")
    ap.add_argument("--slow-delay", type=float, default=0.2, help="seconds the slow ports take to answer robots.txt")
    ap.add_argument("--hosts", type=int, default=0, help="origins on as many loopback addresses (broad crawl)")
    ap.add_argument("--latency", type=float, default=0.0, help="seconds before each response of those origins")
    ap.add_argument(
        "--not-found-every", type=int, default=0, help="every Nth of those hosts answers robots.txt with a 404"
    )
    ap.add_argument("--cpu", type=int, default=None, help="run on this CPU only (the crawler gets another)")
    ap.add_argument(
        "--optouts", action="store_true", help="pages state opt-outs in headers and meta tags; serve tdmrep.json"
    )
    args = ap.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    try:
        asyncio.run(
            serve(
                args.origins,
                args.robots.read_bytes(),
                args.slow_delay,
                args.hosts,
                args.latency,
                args.not_found_every,
                args.optouts,
            )  # fmt: skip
        )
    except (asyncio.TimeoutError, KeyboardInterrupt):
        pass


if __name__ == "__main__":
    main()
