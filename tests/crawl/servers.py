"""Loopback HTTP servers for crawl tests, with routes set per test.

Each :class:`Server` listens on one host (127.0.0.1, 127.0.0.2, 127.0.0.3 ...)
and an ephemeral port, answers in threads of its own (so what it records does
not depend on the reactor running the crawl), and records every request with
a server-side ``time.monotonic()`` timestamp.

Routes map a path (query string included when the route has one) to a
:class:`Reply`, a list of replies (served in turn, the last one repeating), or
a callable ``hit -> Reply``.  Unrouted paths get a small HTML page.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

#: the longest any reply may hang, so no test can outlive it by much
MAX_HANG = 20.0


@dataclass(frozen=True)
class Reply:
    status: int = 200
    body: bytes | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    #: seconds to wait before answering
    delay: float = 0.0
    #: read the request, then never answer (until the server stops)
    hang: bool = False
    #: header lines sent after ``headers``, in order (a name may repeat)
    header_lines: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Hit:
    #: time.monotonic() when the request was read
    at: float
    path: str
    method: str
    headers: dict[str, str]
    #: the client's port: one per connection
    port: int = 0


Route = Reply | list | Callable[[Hit], Reply]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # the stdlib's backlog of 5 drops SYNs when a crawl opens 50 connections at
    # once, and the kernel's retransmission then adds whole seconds
    request_queue_size = 256


def robots(body: str | bytes, status: int = 200, **headers: str) -> Reply:
    """A robots.txt reply (text/plain unless a Content-Type is given)."""
    hdrs = {"Content-Type": "text/plain"}
    hdrs.update({k.replace("_", "-"): v for k, v in headers.items()})
    return Reply(status, body, hdrs)


def redirect(location: str, status: int = 301) -> Reply:
    return Reply(status, b"", {"Location": location})


class Server:
    """One loopback HTTP/1.1 server.  Use as a context manager, or through
    the ``servers`` fixture, which stops every server it made."""

    def __init__(self, host: str = "127.0.0.1") -> None:
        self.host = host
        self.routes: dict[str, Route] = {}
        self.hits: list[Hit] = []
        #: path -> time.monotonic() when each answer to it was sent
        self.answered: dict[str, list[float]] = {}
        #: requests being handled now, and the most there ever were at once (counted
        #: down before the answer is sent, so a client cannot overlap by reacting to it)
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._turns: dict[str, int] = {}
        self._httpd = _HTTPServer((host, 0), self._handler_class())
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    # -- addresses -------------------------------------------------------------
    @property
    def port(self) -> int:
        return self._httpd.server_address[1]

    @property
    def origin(self) -> str:
        """The canonical origin string, as scrapy_rfc9309.origins writes it."""
        return f"http://{self.host}:{self.port}"

    def url(self, path: str = "/") -> str:
        return f"{self.origin}{path}"

    # -- what happened -------------------------------------------------------------
    def count(self, path: str) -> int:
        with self._lock:
            return sum(1 for hit in self.hits if hit.path == path)

    def times(self, path: str) -> list[float]:
        with self._lock:
            return [hit.at for hit in self.hits if hit.path == path]

    def paths(self) -> list[str]:
        with self._lock:
            return [hit.path for hit in self.hits]

    def page_hits(self) -> list[Hit]:
        with self._lock:
            return [hit for hit in self.hits if hit.path != "/robots.txt"]

    # -- life --------------------------------------------------------------------------
    def stop(self) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(5)

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _reply_for(self, hit: Hit) -> Reply:
        route = self.routes.get(hit.path)
        if route is None:
            route = self.routes.get(hit.path.split("?", 1)[0])
        if route is None:
            return Reply(200, f"<html><body>page {hit.path}</body></html>", {"Content-Type": "text/html"})
        if isinstance(route, list):
            with self._lock:
                turn = self._turns.get(hit.path, 0)
                self._turns[hit.path] = turn + 1
            return route[min(turn, len(route) - 1)]
        if callable(route):
            return route(hit)
        return route

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                hit = Hit(
                    time.monotonic(),
                    self.path,
                    self.command,
                    {k.lower(): v for k, v in self.headers.items()},
                    self.client_address[1],
                )
                with server._lock:
                    server.hits.append(hit)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    reply = server._reply_for(hit)
                    if reply.hang:
                        server._stopping.wait(MAX_HANG)
                        self.close_connection = True
                        return
                    if reply.delay:
                        server._stopping.wait(reply.delay)
                finally:
                    with server._lock:
                        server.in_flight -= 1
                body = reply.body.encode("utf-8") if isinstance(reply.body, str) else reply.body
                with server._lock:  # before the first byte: the client may send its next request at once
                    server.answered.setdefault(hit.path, []).append(time.monotonic())
                self.send_response(reply.status)
                for name, value in (*reply.headers.items(), *reply.header_lines):
                    self.send_header(name, value)
                if not any(name.lower() == "content-length" for name in reply.headers):
                    self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(body)

            do_GET = do_HEAD = do_POST = _serve  # noqa: N815 (stdlib names)

            def log_message(self, format: str, *args: object) -> None:  # noqa: A002
                pass

            def handle(self) -> None:
                try:
                    super().handle()
                except (ConnectionError, OSError):
                    pass  # the crawler gave up on us (timeout, stopped download)

        return Handler


def closed_port(host: str = "127.0.0.1") -> int:
    """A port on ``host`` where nothing listens (bound, then closed): a
    connection to it is refused."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind((host, 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def gaps(times: list[float]) -> list[float]:
    """The gaps between consecutive times (sorted first), in ms-rounded seconds."""
    times = sorted(times)
    return [round(b - a, 3) for a, b in zip(times, times[1:])]


#: how much of a Crawl-delay one gap may lose when a worker sends its request late: the next
#: turn counts from when a request reached its worker's downloader (noted in the store), and
#: the wire is a turn or two of that worker's loop later; the promise is 0.9 of the delay
LATE_SEND = 0.1


def check_paced(times: list[float], delay: float) -> None:
    """Requests seen by a server at *times* were sent on turns *delay* apart.

    A turn counts from when the previous request left its worker (noted in the
    store), not from when its turn was taken: each gap the server sees is at
    least 0.9 of the delay (``LATE_SEND``: the time between a request reaching
    its downloader and reaching the wire), and n requests span at least (n - 1)
    delays less that.  Pacing per worker only (three workers) gives gaps of
    about a third of the delay and fails both."""
    measured = gaps(times)
    assert measured, times
    assert min(measured) >= delay * (1 - LATE_SEND), measured
    assert sum(measured) >= delay * (len(measured) - LATE_SEND), measured
