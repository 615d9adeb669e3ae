"""A loopback HTTP server whose robots.txt misbehaves on purpose.

One :class:`FaultServer` listens on one ephemeral port per *fault* it is given
(``FaultServer(["drip", "huge", "ok"])`` listens on three ports of 127.0.0.1),
so each port is an origin of its own and one server can stand for hundreds of
hostile sites.  ``/robots.txt`` of a port answers with that port's fault;
every other path (a page) answers normally with a small HTML page, so what
happens to a page request is decided by the crawler, not by the server.

All connections are served by one asyncio loop in a thread of its own (not
the crawl's reactor), one request per connection (``Connection: close``).
Every connection is bounded in time (``max_seconds``), a streamed body stops
as soon as the client hangs up, and :meth:`FaultServer.stop` cancels whatever
is left.  A request in absolute form (``GET http://host:port/path``), as a
client sends to a forward proxy, is answered the same way, so the server can
also stand in for an HTTP proxy; ``Proxy-Authorization`` is recorded.

:data:`EXPECTED` says, per fault, which verdict RFC 9309 gives each page path;
:func:`crawl_within`, :func:`verdict_of` and :func:`assert_verdict` are the
crawl helpers the fault tests share.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import socket
import struct
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from twisted.internet.defer import Deferred

from scrapy_rfc9309 import Verdict

from .harness import Outcome, Result, clock, crawl

#: no connection is served longer than this, whatever its fault
MAX_SECONDS = 20.0
#: page paths the tests request; EXPECTED gives their verdict per fault
PAGE_PATHS = ("/public", "/private", "/early", "/late")

RULES = b"User-agent: *\nDisallow: /private\n"
#: the start of the large bodies: /early is read, /late (past the parse limit) never is
EARLY = b"User-agent: *\nDisallow: /early\n"
LATE = b"Disallow: /late\n"
HUGE_SIZE = 10_000_000
#: the gzip bomb decompresses to this many bytes if read to the end (64 GiB);
#: on the wire it is about 1/1000 of that, produced 1 MiB at a time
BOMB_DECODED = 64 << 30
DRIP_INTERVAL = 1.0
RESET_AFTER = 1_000
LOOP_PATH = "/loop/robots.txt"
#: the ftp:// redirect points back at the same port, so a client that tried to
#: follow it would show up as one more connection
FTP_TARGET = "ftp://{host}:{port}/robots.txt"
MAILTO_TARGET = "mailto:webmaster@example.com"
#: Locations that are http(s) yet cannot be requested: an unclosed IPv6
#: bracket (urljoin raises), a port past 65535 (building the request raises)
BAD_HOST_TARGET = "http://[127.0.0.1/robots.txt"
BAD_PORT_TARGET = "http://127.0.0.1:99999/robots.txt"
HTML_PAGE = (
    b"<!DOCTYPE html>\n<html><head><title>robots</title></head><body>\n<pre>\n"
    + RULES
    + b"</pre>\n<p>Served by a content management system.</p></body></html>\n"
)
#: Latin-1 bytes, while the header declares UTF-8: /caf\xe9 is not valid UTF-8
WRONG_CHARSET_BODY = "User-agent: *\nDisallow: /caf\xe9\nDisallow: /private\n".encode("latin-1")
WRONG_CHARSET_TYPE = "text/plain; charset=utf-8"

FAULTS = (
    "drip",  # headers, then the body one byte a second
    "hang",  # reads the request, never answers
    "reset",  # part of the body, then a TCP reset
    "huge",  # 10 MB; a rule before the parse limit, another after it
    "gzip_bomb",  # Content-Encoding: gzip, a rule, then zeros for gigabytes
    "redirect_loop",  # /robots.txt -> /loop/robots.txt -> /robots.txt ...
    "redirect_ftp",  # 301 to ftp://
    "redirect_mailto",  # 302 to mailto:
    "redirect_bad_host",  # 302 to http://[127.0.0.1/... (malformed)
    "redirect_bad_port",  # 302 to http://127.0.0.1:99999/...
    "html",  # 200 text/html: a page with the rules in a <pre> block
    "wrong_charset",  # Latin-1 body declared as UTF-8
    "empty",  # 200, zero bytes
    "binary",  # 200 application/octet-stream: random bytes around a rule block
)
OK = "ok"  # a well-behaved file: RULES


def _unreachable(path: str) -> Verdict:
    return Verdict.UNKNOWN_UNREACHABLE


def _unavailable(path: str) -> Verdict:
    return Verdict.ALLOWED_UNAVAILABLE


def _denies(*denied: str) -> Callable[[str], Verdict]:
    """The files' rules are plain prefixes: ``/private`` also denies ``/private?x``."""

    def verdict(path: str) -> Verdict:
        return Verdict.DISALLOWED_EXPLICIT if path.startswith(denied) else Verdict.ALLOWED_IMPLICIT

    return verdict


#: fault -> (page path -> verdict), as RFC 9309 section 2.3.1 reads:
#: a timeout or a broken transfer is unreachable (complete disallow); a body
#: over the limit is parsed up to the limit; a redirect that cannot or must not
#: be followed is unavailable (allow all); any 2xx body is parsed for the
#: records it has, whatever else it holds.
EXPECTED: dict[str, Callable[[str], Verdict]] = {
    OK: _denies("/private"),
    "drip": _unreachable,
    "hang": _unreachable,
    "reset": _unreachable,
    "huge": _denies("/early"),
    "gzip_bomb": _denies("/early"),
    "redirect_loop": _unavailable,
    "redirect_ftp": _unavailable,
    "redirect_mailto": _unavailable,
    "redirect_bad_host": _unavailable,
    "redirect_bad_port": _unavailable,
    "html": _denies("/private"),
    "wrong_charset": _denies("/private", "/caf%C3%A9", "/café"),
    "empty": _denies(),
    "binary": _denies("/private"),
}


@dataclass
class Hit:
    """One request the server read."""

    #: time.monotonic() when it was read
    at: float
    path: str
    #: the request target as sent (absolute when the server is used as a proxy)
    target: str
    headers: dict[str, str]


@dataclass
class PortLog:
    """What one port (one origin) saw and sent."""

    fault: str
    hits: list[Hit] = field(default_factory=list)
    #: TCP connections accepted (each carries at most one request)
    connections: int = 0
    #: body bytes written for /robots.txt (loop and redirects: 0)
    robots_bytes: int = 0
    #: the client closed a robots.txt connection before its body was complete
    robots_abandoned: int = 0


# -- bodies, built once ------------------------------------------------------------
_HUGE: bytes | None = None
_BOMB: tuple[bytes, bytes] | None = None
_BINARY: bytes | None = None


def huge_body() -> bytes:
    """10 MB: EARLY, comment lines, and LATE as its last line."""
    global _HUGE
    if _HUGE is None:
        line = b"# " + b"x" * 77 + b"\n"
        filler = HUGE_SIZE - len(EARLY) - len(LATE)
        body = EARLY + line * (filler // len(line))
        body += b"#" * (HUGE_SIZE - len(body) - len(LATE) - 1) + b"\n" + LATE
        assert len(body) == HUGE_SIZE
        _HUGE = body
    return _HUGE


def bomb_parts() -> tuple[bytes, bytes]:
    """``(head, block)``: the gzip stream starts with ``head`` (gzip header and
    EARLY) and goes on with ``block`` repeated, each one 1 MiB of zeros.  A
    full flush after each piece resets the compressor, so every block is the
    same bytes and the stream is produced without compressing anything more."""
    global _BOMB
    if _BOMB is None:
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
        head = compressor.compress(EARLY) + compressor.flush(zlib.Z_FULL_FLUSH)
        zeros = bytes(1 << 20)
        block = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
        again = compressor.compress(zeros) + compressor.flush(zlib.Z_FULL_FLUSH)
        assert block == again, "the repeated block must not depend on what came before"
        _BOMB = (head, block)
    return _BOMB


def binary_body(seed: int = 9309) -> bytes:
    """A PNG signature, 16 KiB of seeded random bytes, RULES on lines of their
    own, and 16 KiB more: not text, not UTF-8, yet it holds one valid group."""
    global _BINARY
    if _BINARY is None:
        rnd = random.Random(seed)
        noise = bytes(rnd.getrandbits(8) for _ in range(32_768))
        _BINARY = b"\x89PNG\r\n\x1a\n" + noise[:16_384] + b"\n" + RULES + noise[16_384:]
    return _BINARY


# -- the server ----------------------------------------------------------------------
class FaultServer:
    """Loopback HTTP server, one port per fault.  Use as a context manager."""

    def __init__(
        self,
        faults: Sequence[str],
        host: str = "127.0.0.1",
        max_seconds: float = MAX_SECONDS,
        hosts: Sequence[str] | None = None,
    ) -> None:
        """``hosts``: one address per fault (127.0.1.1, 127.0.1.2 ...), so each
        origin is a download slot of its own; by default every port is on ``host``."""
        unknown = set(faults) - set(FAULTS) - {OK}
        if unknown:
            raise ValueError(f"unknown fault(s) {sorted(unknown)}")
        if hosts is not None and len(hosts) != len(faults):
            raise ValueError("one host per fault")
        self.host = host
        self.hosts = list(hosts) if hosts is not None else [host] * len(faults)
        self.max_seconds = max_seconds
        self.logs: list[PortLog] = [PortLog(fault) for fault in faults]
        self.ports: list[int] = []
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-server", daemon=True)
        self._thread.start()
        self._servers: list[asyncio.AbstractServer] = []
        self._tasks: set[asyncio.Task] = set()
        try:
            self._call(self._start(), timeout=30)
        except BaseException:
            self.stop()
            raise

    # -- addresses ---------------------------------------------------------------
    def origin(self, index: int) -> str:
        """The canonical origin of port ``index``, as scrapy_rfc9309.origins writes it."""
        return f"http://{self.hosts[index]}:{self.ports[index]}"

    def url(self, index: int, path: str = "/") -> str:
        return self.origin(index) + path

    # -- what happened -------------------------------------------------------------
    def hits(self, index: int) -> list[Hit]:
        with self._lock:
            return list(self.logs[index].hits)

    def robots_hits(self, index: int) -> int:
        return sum(1 for hit in self.hits(index) if _is_robots(hit.path))

    def connections(self, index: int) -> int:
        with self._lock:
            return self.logs[index].connections

    def page_paths(self, index: int) -> list[str]:
        return [hit.path for hit in self.hits(index) if not _is_robots(hit.path)]

    def idle(self, timeout: float = 5.0) -> bool:
        """Wait until no connection is being served (a client that hung up is
        noticed by the server a moment later); False on timeout."""
        deadline = time.monotonic() + timeout
        while self._tasks:
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return True

    # -- life ------------------------------------------------------------------------
    def stop(self) -> None:
        if self._loop.is_closed():
            return
        if self._loop.is_running():
            try:
                self._call(self._shutdown(), timeout=10)
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> FaultServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _call(self, coro, timeout: float):
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)

    async def _start(self) -> None:
        for index in range(len(self.logs)):
            server = await asyncio.start_server(
                lambda r, w, i=index: self._track(self._connection(i, r, w)),
                self.hosts[index],
                0,
                limit=1 << 20,  # request heads up to 1 MiB (long URLs)
                backlog=1024,
            )
            self._servers.append(server)
            self.ports.append(server.sockets[0].getsockname()[1])

    async def _shutdown(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=5)
        for server in self._servers:
            await server.wait_closed()

    def _track(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- one connection ----------------------------------------------------------------
    async def _connection(self, index: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await asyncio.wait_for(self._serve(index, reader, writer), self.max_seconds)
            if not writer.transport.is_closing():
                writer.close()  # flushes what is buffered, then closes
                await asyncio.wait_for(writer.wait_closed(), 5)
        except (asyncio.TimeoutError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, OSError):
            pass  # the client went away, or the connection outlived its bound
        finally:
            writer.transport.abort()  # a no-op once closed

    async def _serve(self, index: int, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with self._lock:
            self.logs[index].connections += 1
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        _method, target, _version = (lines[0].split(" ") + ["", ""])[:3]
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            if name:
                headers[name.strip().lower()] = value.strip()
        parts = urlsplit(target)
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        log = self.logs[index]
        with self._lock:
            log.hits.append(Hit(time.monotonic(), path, target, headers))
        # EOF from the client (it hung up), watched while a slow reply is sent
        gone = asyncio.ensure_future(reader.read())
        gone.add_done_callback(lambda f: f.cancelled() or f.exception())  # a reset is no error here
        try:
            if _is_robots(path):
                await self._robots(log, path, writer, gone, self.ports[index])
            else:
                page = b"<html><body>page " + path.encode("latin-1", "replace") + b"</body></html>"
                await _send(writer, 200, page, {"Content-Type": "text/html"})
        finally:
            gone.cancel()

    async def _robots(
        self, log: PortLog, path: str, writer: asyncio.StreamWriter, gone: asyncio.Future, port: int
    ) -> None:
        fault = log.fault
        if fault == "hang":
            await asyncio.wait([gone], timeout=self.max_seconds)
        elif fault == "drip":
            writer.write(_head(200, {"Content-Type": "text/plain", "Content-Length": str(len(RULES))}))
            for i in range(len(RULES)):
                try:
                    writer.write(RULES[i : i + 1])
                    await writer.drain()
                except OSError:  # the client reset the connection
                    log.robots_abandoned += 1
                    return
                log.robots_bytes += 1
                await asyncio.wait([gone], timeout=DRIP_INTERVAL)
                if gone.done():
                    log.robots_abandoned += 1
                    return
        elif fault == "reset":
            body = (RULES * (RESET_AFTER // len(RULES) + 1))[:RESET_AFTER]
            writer.write(_head(200, {"Content-Type": "text/plain", "Content-Length": str(RESET_AFTER * 10)}) + body)
            await writer.drain()
            log.robots_bytes += len(body)
            await asyncio.sleep(0.05)  # let the client read the first part
            sock = writer.get_extra_info("socket")
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            writer.transport.abort()  # SO_LINGER 0: the close is a RST
        elif fault == "huge":
            body = huge_body()
            writer.write(_head(200, {"Content-Type": "text/plain", "Content-Length": str(len(body))}))
            await self._stream(log, writer, gone, (body[i : i + 65_536] for i in range(0, len(body), 65_536)))
        elif fault == "gzip_bomb":
            head, block = bomb_parts()
            writer.write(_head(200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}))
            # 64 blocks (about 64 KiB on the wire) a write: one block a write made the server
            # thread take ~500 turns of the GIL for the client's first 512 KB, past the 4 s
            # fetch timeout once on a loaded machine
            batches = (BOMB_DECODED >> 20) // 64
            await self._stream(log, writer, gone, _chain(head, (block * 64 for _ in range(batches))))
        elif fault == "redirect_loop":
            await _send(writer, 302, b"", {"Location": "/robots.txt" if path == LOOP_PATH else LOOP_PATH})
        elif fault == "redirect_ftp":
            await _send(writer, 301, b"", {"Location": FTP_TARGET.format(host=self.host, port=port)})
        elif fault == "redirect_mailto":
            await _send(writer, 302, b"", {"Location": MAILTO_TARGET})
        elif fault == "redirect_bad_host":
            await _send(writer, 302, b"", {"Location": BAD_HOST_TARGET})
        elif fault == "redirect_bad_port":
            await _send(writer, 302, b"", {"Location": BAD_PORT_TARGET})
        else:
            status, body, content_type = {
                OK: (200, RULES, "text/plain"),
                "html": (200, HTML_PAGE, "text/html; charset=utf-8"),
                "wrong_charset": (200, WRONG_CHARSET_BODY, WRONG_CHARSET_TYPE),
                "empty": (200, b"", "text/plain"),
                "binary": (200, binary_body(), "application/octet-stream"),
            }[fault]
            await _send(writer, status, body, {"Content-Type": content_type})
            log.robots_bytes += len(body)

    async def _stream(self, log: PortLog, writer: asyncio.StreamWriter, gone: asyncio.Future, chunks) -> None:
        """Write ``chunks`` until they end or the client hangs up."""
        for chunk in chunks:
            if gone.done() or writer.transport.is_closing():
                log.robots_abandoned += 1
                return
            writer.write(chunk)
            try:
                await writer.drain()
            except OSError:
                log.robots_abandoned += 1
                return
            log.robots_bytes += len(chunk)


def _is_robots(path: str) -> bool:
    return path in ("/robots.txt", LOOP_PATH)


def _chain(first: bytes, rest):
    yield first
    yield from rest


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}", "Connection: close"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def _send(writer: asyncio.StreamWriter, status: int, body: bytes, headers: dict[str, str]) -> None:
    writer.write(_head(status, {**headers, "Content-Length": str(len(body))}) + body)
    await writer.drain()


_REASONS = {200: "OK", 301: "Moved Permanently", 302: "Found"}


def statm_rss() -> int:
    """Resident set size of this process in bytes (Linux /proc/self/statm),
    or 0 where /proc is missing."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return 0
    return pages * os.sysconf("SC_PAGE_SIZE")


# -- crawl helpers --------------------------------------------------------------------
_FORBIDDEN = re.compile(r"Forbidden by robots\.txt: ([a-z_]+)(?: \(line \d+: (?:Allow|Disallow): .*\))?\Z", re.S)


def verdict_of(outcome: Outcome) -> Verdict | None:
    """The verdict an ``IgnoreRequest`` names, None for a response; anything
    else (another error, a message naming no verdict) fails the test."""
    if outcome.status is not None:
        assert outcome.error is None, outcome
        return None
    assert outcome.error == "IgnoreRequest", f"{outcome.url}: not dropped by robots.txt: {outcome}"
    match = _FORBIDDEN.match(outcome.message)
    assert match is not None, f"{outcome.url}: the drop names no verdict: {outcome.message!r}"
    verdict = Verdict(match.group(1))
    assert not verdict.value.startswith("allowed"), outcome
    return verdict


def assert_verdict(outcome: Outcome, expected: Verdict) -> None:
    """An allowed verdict means a 200 response; a denying one, an
    ``IgnoreRequest`` naming exactly that verdict."""
    got = verdict_of(outcome)
    if expected.value.startswith("allowed"):
        assert got is None and outcome.status == 200, (expected, outcome)
    else:
        assert got is expected, (expected, outcome)


async def crawl_within(seconds: float, plan: list, settings: dict | None = None, **kwargs) -> tuple[Result, float]:
    """:func:`harness.crawl` with :data:`FAST` settings, cancelled (the test
    then fails with ``twisted.internet.defer.TimeoutError``) if it takes longer
    than ``seconds``, so a hang fails instead of hanging the suite.  Returns the
    result and the seconds taken."""
    start = time.monotonic()
    crawling = Deferred.fromCoroutine(crawl(plan, {**FAST, **(settings or {})}, **kwargs))
    crawling.addTimeout(seconds, clock())
    result = await crawling
    return result, time.monotonic() - start


#: settings every fault crawl uses.  The fetch timeout must not cut a 10 MB or
#: bomb transfer on a loaded machine (server and crawler share one GIL); the
#: drip and hang tests lower it to 1 s.
FAST = {"RFC9309_FETCH_TIMEOUT": 4, "DOWNLOAD_TIMEOUT": 5, "LOG_LEVEL": "INFO"}
#: the fetch timeout of the tests that wait it out (drip, hang)
SHORT_TIMEOUT = {"RFC9309_FETCH_TIMEOUT": 1}
