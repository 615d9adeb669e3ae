"""The embedded demo site: one small HTTP server per origin, on loopback.

Each origin shows one RFC 9309 case (its ``case``), serves its robots.txt
answer from ``routes`` and a small HTML page for any other path.  Every
request is recorded server-side with a ``time.monotonic()`` timestamp, so the
demo's table reports what the servers saw (the robots.txt redirect chain, the
smallest gap between two page requests, pages that should never have arrived)
rather than what the crawler believes it did.

Addresses: origin *n* listens on ``127.0.0.<n+2>``, all on one port
(``RFC9309_DEMO_PORT``, default 9309).  Where only 127.0.0.1 is configured
(macOS), or with ``RFC9309_DEMO_ONE_HOST=1``, origins share 127.0.0.1 and
use consecutive ports instead.  Nothing here touches the internet.

Served on its own (``python -m demo_project.demo_site``, for the cluster demo
and for ``scrapy robots``), every origin also answers ``GET`` :data:`HITS_PATH`
with what all the servers saw so far, as JSON (:meth:`DemoSite.snapshot`),
without recording that request: the crawlers run in other processes, and
:meth:`DemoSite.replay` rebuilds the site's view from it.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

PORT_ENV = "RFC9309_DEMO_PORT"
#: set to 1 to use the one-host layout (as on macOS) where several hosts would work
ONE_HOST_ENV = "RFC9309_DEMO_ONE_HOST"
DEFAULT_PORT = 9309
#: what every origin of a site served on its own answers with the servers' records
HITS_PATH = "/__demo__/hits.json"
#: origin names, in table order; "moved-to" only serves the end of a redirect chain
NAMES = (
    "rules", "allow", "wildcards", "missing", "down", "moved", "moved-to", "delay", "bom", "html", "intranet",
    "usage", "signal", "signal-file", "tdmrep", "tdm-header", "tdm-meta", "x-robots", "x-robots-token",
    "meta-noai", "meta-noindex", "nofollow", "signal-header", "license",
)  # fmt: skip
#: where a site states its TDM reservations (TDMRep); served only where an origin routes it
TDMREP_PATH = "/.well-known/tdmrep.json"
#: where the "license" origin serves its RSL license (named by its robots.txt's License line)
LICENSE_PATH = "/license.xml"


def _multi_host_loopback() -> bool:
    """Whether 127.0.0.2 can be bound (Linux: all of 127/8 is loopback)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.bind(("127.0.0.2", 0))
    except OSError:
        return False
    finally:
        sock.close()
    return True


def _addresses() -> dict[str, tuple[str, int]]:
    base = int(os.environ.get(PORT_ENV, DEFAULT_PORT))
    if os.environ.get(ONE_HOST_ENV) != "1" and _multi_host_loopback():
        return {name: (f"127.0.0.{i + 2}", base) for i, name in enumerate(NAMES)}
    return {name: ("127.0.0.1", base + i) for i, name in enumerate(NAMES)}


ADDRESSES = _addresses()
#: True when every origin is on 127.0.0.1 (one host, several ports)
ONE_HOST = len({host for host, _ in ADDRESSES.values()}) == 1
#: name -> canonical origin, e.g. ORIGINS["intranet"] == "http://127.0.0.12:9309"
ORIGINS: dict[str, str] = {name: f"http://{host}:{port}" for name, (host, port) in ADDRESSES.items()}


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes = b""
    content_type: str = "text/plain"
    location: str | None = None
    #: more response headers, e.g. (("Content-Usage", "train-ai=n"),)
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DemoOrigin:
    name: str
    #: the RFC 9309 case it shows, for the table
    case: str
    #: path -> answer (robots.txt and redirect hops); any other path is a page
    routes: Mapping[str, Answer]
    #: the paths the demo spider requests
    pages: tuple[str, ...] = ()
    #: the one spider that requests these pages (None: every demo spider)
    spider: str | None = None
    #: links of its pages that the demo spider follows (the nofollow case)
    links: tuple[str, ...] = ()

    @property
    def origin(self) -> str:
        return ORIGINS[self.name]

    @property
    def address(self) -> tuple[str, int]:
        return ADDRESSES[self.name]

    def url(self, path: str) -> str:
        return self.origin + path


def _robots(text: str, content_type: str = "text/plain", prefix: bytes = b"") -> Answer:
    return Answer(200, prefix + text.encode("utf-8"), content_type)


ALLOW_ALL = "User-agent: *\nDisallow: /private/\n"


def _page(title: str, head: str = "", body: str = "", headers: tuple[tuple[str, str], ...] = ()) -> Answer:
    """An HTML page; ``head``: what its <head> holds besides its title (line 4 on)."""
    text = (
        f"<!DOCTYPE html>\n<html>\n<head><title>{title}</title>\n{head}</head>\n"
        f"<body><h1>{title}</h1>{body}</body>\n</html>\n"
    )
    return Answer(200, text.encode("utf-8"), "text/html; charset=utf-8", headers=headers)


def plan() -> list[DemoOrigin]:
    """What each origin serves and which pages the demo asks for."""
    o = ORIGINS
    return [
        DemoOrigin(
            "rules",
            "ordinary rules",
            {
                "/robots.txt": _robots(
                    "# Everyone else stays out; DemoBot has a group of its own.\n"
                    "User-agent: *\n"
                    "Disallow: /\n"
                    "\n"
                    "User-agent: DemoBot\n"
                    "Disallow: /private/\n"
                    "Disallow: /drafts/\n"
                    "\n"
                    f"Sitemap: {o['rules']}/sitemap.xml\n"
                ),
                "/sitemap.xml": Answer(
                    200,
                    (
                        '<?xml version="1.0" encoding="UTF-8"?>\n'
                        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n'
                        f"<url><loc>{o['rules']}/about.html</loc></url>\n"
                        f"<url><loc>{o['rules']}/team.html</loc></url>\n"
                        f"<url><loc>{o['rules']}/private/salaries.html</loc></url>\n"
                        "</urlset>\n"
                    ).encode(),
                    "application/xml",
                ),
            },
            ("/about.html", "/private/salaries.html", "/drafts/post.html"),
        ),
        DemoOrigin(
            "allow",
            "Allow inside Disallow",
            {"/robots.txt": _robots("User-agent: *\nDisallow: /shop/\nAllow: /shop/catalog/\n")},
            ("/shop/cart.html", "/shop/catalog/shoes.html"),
        ),
        DemoOrigin(
            "wildcards",
            "wildcards * and $",
            {"/robots.txt": _robots("User-agent: *\nDisallow: /*.pdf$\nDisallow: /*sessionid=\n")},
            ("/docs/manual.pdf", "/docs/manual.pdf.html", "/search?q=shoes", "/search?sessionid=42"),
        ),
        DemoOrigin(
            "missing",
            "404: allow all",
            # An error page that happens to look like rules: a 4xx body is never read.
            {"/robots.txt": Answer(404, b"User-agent: *\nDisallow: /\n")},
            ("/index.html", "/private/notes.html"),
        ),
        DemoOrigin(
            "down",
            "503: deny all",
            {"/robots.txt": Answer(503, b"<html><body>Service Unavailable</body></html>", "text/html")},
            ("/index.html", "/news.html"),
        ),
        DemoOrigin(
            "moved",
            "redirect to other port" if ONE_HOST else "redirect to other host",
            {"/robots.txt": Answer(301, location=f"{o['moved-to']}/old-robots.txt")},
            ("/index.html", "/archive/2019.html"),
        ),
        DemoOrigin(
            "moved-to",
            "redirect target",
            {
                "/old-robots.txt": Answer(302, location=f"{o['moved-to']}/robots.txt"),
                "/robots.txt": _robots("User-agent: *\nDisallow: /archive/\n"),
            },
        ),
        DemoOrigin(
            "delay",
            "Crawl-delay: 1",
            {"/robots.txt": _robots("User-agent: *\nCrawl-delay: 1\nDisallow: /cart/\n")},
            ("/p1.html", "/p2.html", "/p3.html", "/p4.html", "/cart/checkout.html"),
        ),
        DemoOrigin(
            "bom",
            "UTF-8 byte order mark",
            # Without BOM handling the first line is not "User-agent" and the group is lost.
            {"/robots.txt": _robots("User-agent: *\nDisallow: /private/\n", prefix=b"\xef\xbb\xbf")},
            ("/index.html", "/private/x.html"),
        ),
        DemoOrigin(
            "html",
            "HTML page as robots.txt",
            {
                "/robots.txt": _robots(
                    "<!DOCTYPE html>\n<html><head><title>Welcome!</title></head>\n"
                    "<body><h1>Welcome to our shop</h1>\n<p>The page you asked for moved.</p>\n"
                    "</body></html>\n",
                    "text/html",
                )
            },
            ("/index.html", "/private/x.html"),
        ),
        DemoOrigin(
            "intranet",
            "per-origin override",
            {"/robots.txt": _robots("User-agent: *\nDisallow: /\n")},
            ("/wiki/home.html", "/wiki/team.html"),
        ),
        DemoOrigin(
            "usage",
            "Content-Usage rules",
            {
                "/robots.txt": _robots(
                    "User-agent: *\nDisallow: /private/\nContent-Usage: train-ai=n\nContent-Usage: /blog/ train-ai=y\n"
                ),
                # the page itself says no, in its Content-Usage response header
                "/blog/no-ai.html": Answer(
                    200,
                    b"<html><body>no AI training</body></html>",
                    "text/html",
                    headers=(("Content-Usage", "train-ai=n"),),
                ),
            },
            ("/news.html", "/blog/post.html", "/blog/no-ai.html"),
            spider="demo",
        ),
        DemoOrigin(
            "signal",
            "Content-Signal line",
            {"/robots.txt": _robots("User-agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n")},
            ("/index.html",),
            spider="demo",
        ),
        # -- every other place a site says no (issue 32): read on the response, as the
        # demo declares a purpose (RFC9309_USAGE); a crawl that declares none reads none
        DemoOrigin(
            "signal-file",
            "file-wide Content-Signal",
            # before the first group, as Cloudflare's managed robots.txt writes it: for every group
            {"/robots.txt": _robots("Content-Signal: search=yes, ai-train=no\n\nUser-agent: *\nAllow: /\n")},
            ("/index.html",),
            spider="demo",
        ),
        DemoOrigin(
            "tdmrep",
            "tdmrep.json file",
            {
                "/robots.txt": _robots(ALLOW_ALL),
                TDMREP_PATH: Answer(
                    200,
                    (
                        '[{"location": "/reports/", "tdm-reservation": 1, '
                        f'"tdm-policy": "{o["tdmrep"]}/licensing.json"}},\n'
                        ' {"location": "/", "tdm-reservation": 0}]\n'
                    ).encode(),
                    "application/json",
                ),
            },
            ("/reports/2026.html", "/news/today.html"),
            spider="demo",
        ),
        DemoOrigin(
            "tdm-header",
            "tdm-reservation header",
            {
                "/robots.txt": _robots(ALLOW_ALL),
                "/paper.html": _page("A paper", headers=(("tdm-reservation", "1"),)),
                "/preprint.html": _page("A preprint", headers=(("tdm-reservation", "0"),)),
            },
            ("/paper.html", "/preprint.html"),
            spider="demo",
        ),
        DemoOrigin(
            "tdm-meta",
            "tdm-reservation meta tag",
            {
                "/robots.txt": _robots(ALLOW_ALL),
                "/story.html": _page("A story", '<meta name="tdm-reservation" content="1">\n'),
            },
            ("/story.html",),
            spider="demo",
        ),
        DemoOrigin(
            "x-robots",
            "X-Robots-Tag: noai",
            {
                "/robots.txt": _robots(ALLOW_ALL),
                "/gallery.html": _page("A gallery", headers=(("X-Robots-Tag", "noai, noimageai"),)),
            },
            ("/gallery.html",),
            spider="demo",
        ),
        DemoOrigin(
            "x-robots-token",
            "X-Robots-Tag for DemoBot",
            {
                "/robots.txt": _robots(ALLOW_ALL),
                "/mine.html": _page("For DemoBot", headers=(("X-Robots-Tag", "DemoBot: noai"),)),
                "/theirs.html": _page("For another bot", headers=(("X-Robots-Tag", "OtherBot: noai"),)),
            },
            ("/mine.html", "/theirs.html"),
            spider="demo",
        ),
        DemoOrigin(
            "meta-noai",
            "meta robots noai",
            {
                "/robots.txt": _robots(ALLOW_ALL),
                "/art.html": _page("Art", '<meta name="robots" content="noai">\n'),
                "/demobot.html": _page("For DemoBot", '<meta name="DemoBot" content="noimageai">\n'),
            },
            ("/art.html", "/demobot.html"),
            spider="demo",
        ),
        DemoOrigin(
            "meta-noindex",
            "meta robots noindex",
            {
                "/robots.txt": _robots(ALLOW_ALL),
                "/draft.html": _page("A draft", '<meta name="robots" content="noindex">\n'),
            },
            ("/draft.html",),
            spider="demo",
        ),
        DemoOrigin(
            "nofollow",
            "meta robots nofollow",
            {
                "/robots.txt": _robots(ALLOW_ALL),
                "/index.html": _page(
                    "Links not to follow",
                    '<meta name="robots" content="nofollow">\n',
                    '<a href="/linked-1.html">one</a> <a href="/linked-2.html">two</a>',
                ),
            },
            ("/index.html",),
            spider="demo",
            links=("/linked-1.html", "/linked-2.html"),
        ),
        DemoOrigin(
            "signal-header",
            "Content-Signal header",
            # the response header Cloudflare sends, read as robots.txt's Content-Signal line is
            {
                "/robots.txt": _robots(ALLOW_ALL),
                "/article.html": _page("An article", headers=(("Content-Signal", "ai-train=no, search=yes"),)),
                "/open.html": _page("Open to training", headers=(("Content-Signal", "ai-train=yes"),)),
            },
            ("/article.html", "/open.html"),
            spider="demo",
        ),
        DemoOrigin(
            "license",
            "RSL License: line",
            {
                # RSL 1.0: a file-wide License line names the site's license (rslstandard.org's
                # "Prohibit AI training" template, on one directory); fetched once, before any page
                "/robots.txt": _robots(f"License: {o['license']}{LICENSE_PATH}\n\n{ALLOW_ALL}"),
                LICENSE_PATH: Answer(
                    200,
                    b'<?xml version="1.0" encoding="UTF-8"?>\n<rsl xmlns="https://rslstandard.org/rsl">\n'
                    b'  <content url="/articles/">\n    <license>\n'
                    b'      <prohibits type="usage">ai-train</prohibits>\n    </license>\n  </content>\n</rsl>\n',
                    "application/rsl+xml",
                ),
            },
            ("/articles/one.html", "/about.html"),
            spider="demo",
        ),
    ]


@dataclass(frozen=True)
class Hit:
    #: time.monotonic() when the request line was read
    at: float
    path: str
    status: int


@dataclass
class _Origin:
    spec: DemoOrigin
    httpd: ThreadingHTTPServer
    thread: threading.Thread


class DemoSite:
    """Every demo origin, serving in threads of its own until :meth:`stop`."""

    def __init__(self, origins: list[DemoOrigin]) -> None:
        self.origins = origins
        self._by_name = {origin.name: origin for origin in origins}
        self._running: dict[str, _Origin] = {}
        self._hits: dict[str, list[Hit]] = {}
        self._lock = threading.Lock()

    @classmethod
    def start(cls) -> DemoSite:
        """Bind and serve every origin; ``RuntimeError`` naming the address
        when one cannot be bound."""
        site = cls(plan())
        try:
            for origin in site.origins:
                site._serve(origin)
        except BaseException:
            site.stop()
            raise
        return site

    def _serve(self, spec: DemoOrigin) -> None:
        host, port = spec.address
        try:
            httpd = _Server((host, port), _handler(self, spec.name))
        except OSError as exc:
            raise RuntimeError(
                f"the demo site cannot listen on {host}:{port} ({exc.strerror or exc}); "
                f"choose another port, e.g. {PORT_ENV}=19309 scrapy crawl demo"
            ) from exc
        thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
        self._running[spec.name] = _Origin(spec, httpd, thread)
        thread.start()

    def stop(self) -> None:
        """Stop serving (idempotent); what the servers saw stays readable."""
        for running in self._running.values():
            if running.thread.is_alive():
                running.httpd.shutdown()
                running.thread.join(5)
            running.httpd.server_close()

    # -- what the servers saw -------------------------------------------------
    def _record(self, name: str, hit: Hit) -> None:
        with self._lock:
            self._hits.setdefault(name, []).append(hit)

    def by_name(self, name: str) -> DemoOrigin:
        return self._by_name[name]

    def hits(self, name: str) -> list[Hit]:
        with self._lock:
            return list(self._hits.get(name, ()))

    def snapshot(self) -> dict[str, list[list]]:
        """Every hit so far, by origin name: ``[[at, path, status], ...]``."""
        with self._lock:
            return {name: [[hit.at, hit.path, hit.status] for hit in hits] for name, hits in self._hits.items()}

    @classmethod
    def replay(cls, snapshot: dict[str, list[list]]) -> DemoSite:
        """A site that serves nothing and saw what ``snapshot`` says: the
        queries below answer for a site served by another process."""
        site = cls(plan())
        site._hits = {name: [Hit(float(at), str(path), int(status)) for at, path, status in hits]
                      for name, hits in snapshot.items()}  # fmt: skip
        return site

    @classmethod
    def fetch(cls, timeout: float = 5.0) -> DemoSite:
        """:meth:`replay` of the site served by ``python -m demo_project.demo_site``
        (``OSError`` when it is not running)."""
        with urllib.request.urlopen(ORIGINS[NAMES[0]] + HITS_PATH, timeout=timeout) as response:
            return cls.replay(json.loads(response.read()))

    def page_times(self, name: str) -> list[float]:
        """Arrival times of page requests (not robots.txt, not redirect hops)."""
        return sorted(hit.at for hit in self.hits(name) if self._is_page(name, hit.path))

    def pages_seen(self, name: str) -> set[str]:
        return {hit.path for hit in self.hits(name) if self._is_page(name, hit.path)}

    def _is_page(self, name: str, path: str) -> bool:
        """A page request: any path but robots.txt, tdmrep.json and redirect hops (a page may
        have a route of its own)."""
        spec = self._by_name[name]
        if path.startswith("/.well-known/"):
            return False
        return path not in spec.routes or path in spec.pages or path in spec.links

    def min_gap(self, name: str) -> float | None:
        """The smallest time between two page requests to the origin."""
        times = self.page_times(name)
        return min((b - a for a, b in zip(times, times[1:])), default=None)

    def robots_chain(self, name: str) -> list[tuple[str, int]]:
        """``[(url, status), ...]`` of the origin's robots.txt as the servers
        answered it, following the redirects they sent; empty if never asked."""
        chain: list[tuple[str, int]] = []
        url = self._by_name[name].url("/robots.txt")
        while len(chain) < 10:
            parts = urlsplit(url)
            owner = next((o for o in self.origins if o.address == (parts.hostname, parts.port)), None)
            if owner is None or not any(hit.path == parts.path for hit in self.hits(owner.name)):
                break
            answer = owner.routes.get(parts.path)
            status = answer.status if answer else 200
            chain.append((url, status))
            if answer is None or answer.location is None:
                break
            url = answer.location
        return chain


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 64


def _handler(site: DemoSite, name: str) -> type[BaseHTTPRequestHandler]:
    spec = site._by_name[name]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "RFC9309Demo/1.0"

        def do_GET(self) -> None:  # noqa: N802 (stdlib name)
            arrived = time.monotonic()
            if self.path == HITS_PATH:  # not a page: the records, for a report in another process
                answer = Answer(200, json.dumps(site.snapshot()).encode(), "application/json")
                self._send(answer)
                return
            answer = spec.routes.get(self.path)
            if answer is None and self.path.startswith("/.well-known/"):  # (tdmrep.json where none is routed)
                answer = Answer(404, b"<html><body>Not Found</body></html>", "text/html")
            if answer is None:
                page = f"<html><body><h1>{spec.case}</h1><p>{self.path}</p></body></html>"
                answer = Answer(200, page.encode(), "text/html")
            site._record(name, Hit(arrived, self.path, answer.status))
            self._send(answer)

        def _send(self, answer: Answer) -> None:
            self.send_response(answer.status)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            if answer.location:
                self.send_header("Location", answer.location)
            for key, value in answer.headers:
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(answer.body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002
            pass  # the crawl's own log says enough

        def handle(self) -> None:
            try:
                super().handle()
            except (ConnectionError, OSError):
                pass  # the crawler closed the connection

    return Handler


def main() -> None:
    """``python -m demo_project.demo_site``: serve the site alone (Ctrl-C
    stops it), e.g. to try ``scrapy robots`` against it.  A port in use is
    one line on stderr and exit status 1."""
    try:
        site = DemoSite.start()
    except RuntimeError as exc:
        raise SystemExit(f"python -m demo_project.demo_site: {exc}") from None
    for origin in site.origins:
        print(f"{origin.origin}/robots.txt  {origin.case}")
    print(f"what the servers saw: {ORIGINS[NAMES[0]]}{HITS_PATH}")
    print("serving; Ctrl-C to stop", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    finally:
        site.stop()


if __name__ == "__main__":
    main()
