"""Scrapy's own robots.txt middleware tests, case by case, as real crawls.

Each case of Scrapy's ``tests/test_downloadermiddleware_robotstxt.py`` (which
drives ``scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware`` with a
mocked engine) is asked here of the plugin, in a real crawl against loopback
servers.  Where RFC 9309 allows Scrapy's behaviour, the plugin must show it.
Where the plugin differs by design, the test says so (``RFC 9309:``) and
asserts the RFC behaviour instead; each such difference is a row of the README
table "Moving from Scrapy's middleware".  The rest of the file covers what
issue 24 asked for drop-in parity: the request's own ``User-Agent`` header in
Scrapy's order, Scrapy's ``robotstxt/*`` stats, Scrapy's constructor and
Scrapy's own middleware back when ``RFC9309_ENABLED = False``.

CI runs the file in Scrapy's three reactor modes: the asyncio reactor (the
main suite), the platform's default Twisted reactor (``--reactor=default``:
epoll's) and no reactor (``-p no:twisted --reactor=none``); see tests/conftest.py.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar

import pytest
import pytest_twisted
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http.request import NO_CALLBACK

from scrapy_rfc9309 import RobotsTxtMiddleware, compat

from .harness import MIDDLEWARES, Req, check_accounting, crawl
from .servers import Reply, redirect, robots

ADDON = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "DOWNLOADER_MIDDLEWARES": {}}

#: the robots.txt of Scrapy's "successful" case (a Wikipedia excerpt and a group
#: whose name is not a valid product token)
WIKI_ROBOTS = """
User-Agent: *
Disallow: /admin/
Disallow: /static/
# taken from https://en.wikipedia.org/robots.txt
Disallow: /wiki/K%C3%A4ytt%C3%A4j%C3%A4:
Disallow: /wiki/Käyttäjä:
User-Agent: UnicödeBöt
Disallow: /some/randome/page.html
""".encode()


class RobotsRequests:
    """A downloader middleware that sees every request before the network:
    records the robots.txt ones, and raises ``error`` for them when set."""

    seen: ClassVar[list[Any]] = []
    error: ClassVar[BaseException | None] = None

    def process_request(self, request: Any, spider: Any = None) -> None:
        if request.url.endswith("/robots.txt"):
            RobotsRequests.seen.append(request)
            if RobotsRequests.error is not None:
                raise RobotsRequests.error


@pytest.fixture
def watch():
    RobotsRequests.seen = []
    RobotsRequests.error = None
    yield RobotsRequests
    RobotsRequests.seen = []
    RobotsRequests.error = None


WATCHED = {**MIDDLEWARES, f"{__name__}.RobotsRequests": 50}


@pytest.fixture
def site(servers):
    server = servers("127.0.0.3")
    server.routes["/robots.txt"] = robots(WIKI_ROBOTS, content_type="text/plain; charset=utf-8")
    return server


def denied(result, url: str) -> bool:
    outcome = result.outcome(url)
    return outcome.error == "IgnoreRequest" and outcome.message.startswith("Forbidden by robots.txt")


def scrapy_stats(result) -> dict[str, Any]:
    return {k: v for k, v in result.stats.items() if k.startswith("robotstxt/")}


def messages(caplog, level: int = logging.DEBUG) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= level]


# -- test_robotstxt_settings ----------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_robotstxt_obey_unset_is_on(site):
    """Scrapy: ROBOTSTXT_OBEY unset (Scrapy's default False) -> NotConfigured.
    RFC 9309 difference by design (README table): an installed plugin obeys
    unless ROBOTSTXT_OBEY = False is set by the user."""
    result = await crawl([site.url("/admin/main")])  # the harness leaves ROBOTSTXT_OBEY unset
    assert denied(result, site.url("/admin/main"))


@pytest_twisted.ensureDeferred
async def test_robotstxt_obey_false_is_off(site):
    result = await crawl([site.url("/admin/main")], {"ROBOTSTXT_OBEY": False})
    assert result.outcome(site.url("/admin/main")).status == 200
    assert site.count("/robots.txt") == 0


# -- test_robotstxt, test_robotstxt_ready_parser ---------------------------------------------
@pytest_twisted.ensureDeferred
async def test_robotstxt(site, watch):
    urls = [
        site.url("/allowed"),
        site.url("/admin/main"),
        site.url("/static/"),
        site.url("/wiki/K%C3%A4ytt%C3%A4j%C3%A4:"),
        site.url("/wiki/Käyttäjä:"),
    ]
    result = await crawl(urls, {"DOWNLOADER_MIDDLEWARES": WATCHED})
    assert result.outcome(urls[0]).status == 200
    assert all(denied(result, url) for url in urls[1:])
    # robots.txt of the origin, asked once, without a callback
    assert [r.url for r in watch.seen] == [site.url("/robots.txt")]
    assert watch.seen[0].callback is NO_CALLBACK
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_robotstxt_ready_parser(site):
    url = site.url("/allowed")
    result = await crawl([Req(url, then=[Req(url + "?again")])])
    assert result.outcome(url).status == 200 and result.outcome(url + "?again").status == 200
    assert site.count("/robots.txt") == 1
    assert result.stat("cache/hits") == 1


# -- test_robotstxt_emits_robots_parsed_signal --------------------------------------------
@pytest.mark.skipif(compat.ROBOTS_PARSED is None, reason="Scrapy's robots_parsed signal came with Scrapy 2.18")
@pytest_twisted.ensureDeferred
async def test_robotstxt_emits_robots_parsed_signal(site):
    url = site.url("/allowed")
    result = await crawl([url])
    assert len(result.parsed) == 1
    kwargs = result.parsed[0][1]
    assert kwargs["request"].url == url  # the request that made the fetch
    assert kwargs["robotparser"] is not None
    assert kwargs["robotparser"].allowed(url, "ExampleBot") and not kwargs["robotparser"].allowed(
        site.url("/admin/"), "ExampleBot"
    )


# -- test_robotstxt_multiple_reqs(_asyncio) -------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_robotstxt_multiple_reqs(site):
    urls = [site.url("/allowed1"), site.url("/allowed2")]
    result = await crawl(urls)
    assert [result.outcome(u).status for u in urls] == [200, 200]
    assert site.count("/robots.txt") == 1  # one fetch for both


# -- test_robotstxt_meta ----------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_robotstxt_meta(site):
    meta = {"dont_obey_robotstxt": True}
    urls = [site.url("/allowed"), site.url("/admin/main"), site.url("/static/")]
    result = await crawl([Req(u, meta=meta) for u in urls])
    assert [result.outcome(u).status for u in urls] == [200, 200, 200]
    assert site.count("/robots.txt") == 0


# -- test_robotstxt_garbage, test_robotstxt_empty_response ---------------------------------
@pytest.mark.parametrize(
    "reply",
    [
        Reply(200, b"GIF89a\xd3\x00\xfe\x00\xa2", {"Content-Type": "image/gif"}),  # garbage
        Reply(200, b"", {}),  # empty
    ],
    ids=["garbage", "empty"],
)
@pytest_twisted.ensureDeferred
async def test_robotstxt_garbage_or_empty_allows_all(site, reply):
    site.routes["/robots.txt"] = reply
    urls = [site.url("/"), site.url("/allowed"), site.url("/admin/main"), site.url("/static/")]
    result = await crawl(urls)
    assert [result.outcome(u).status for u in urls] == [200] * 4


# -- test_robotstxt_error, test_robotstxt_immediate_error -----------------------------------
@pytest.mark.parametrize("unreachable", ["deny", "allow"])
@pytest_twisted.ensureDeferred
async def test_robotstxt_error(site, caplog, unreachable):
    """Scrapy: a failed robots.txt download is logged and every request is
    allowed.  RFC 9309 difference by design (section 2.3.1.4, README table):
    unreachable means complete disallow, RFC9309_UNREACHABLE = "deny" by
    default; "allow" gives Scrapy's behaviour."""
    site.routes["/robots.txt"] = Reply(hang=True)
    url = site.url("/allowed")
    with caplog.at_level(logging.INFO):
        result = await crawl([url], {"RFC9309_FETCH_TIMEOUT": 0.5, "RFC9309_UNREACHABLE": unreachable})
    if unreachable == "deny":
        assert denied(result, url) and "unreachable" in result.outcome(url).message
    else:
        assert result.outcome(url).status == 200
    # the error is said, and counted as Scrapy counts it
    exceptions = [k for k in scrapy_stats(result) if k.startswith("robotstxt/exception_count/<class '")]
    assert len(exceptions) == 1 and "Timeout" in exceptions[0], scrapy_stats(result)
    assert result.stats["robotstxt/request_count"] == 1 and "robotstxt/response_count" not in result.stats


@pytest_twisted.ensureDeferred
async def test_robotstxt_immediate_error(site, watch):
    """The download fails at once (before the network).  RFC 9309 difference
    as above: denied (unreachable)."""
    from twisted.internet.error import DNSLookupError

    watch.error = DNSLookupError("Robotstxt address not found")
    url = site.url("/allowed")
    result = await crawl([url], {"DOWNLOADER_MIDDLEWARES": WATCHED})
    assert denied(result, url)
    assert site.count("/robots.txt") == 0
    result = await crawl([url], {"DOWNLOADER_MIDDLEWARES": WATCHED, "RFC9309_UNREACHABLE": "allow"})
    assert result.outcome(url).status == 200
    assert result.stats["robotstxt/exception_count/<class 'twisted.internet.error.DNSLookupError'>"] == 1


# -- test_ignore_robotstxt_request ----------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_ignore_robotstxt_request(site, watch, caplog):
    """Scrapy: a robots.txt request dropped by another middleware
    (IgnoreRequest) allows every request, silently.  Difference by design
    (README table): no robots.txt is unreachable, not an allow-all; it is an
    ERROR (a filter of pages should not catch robots.txt) and the requests are
    denied.  Like Scrapy, it is no robotstxt/exception_count."""
    watch.error = IgnoreRequest("filtered")
    url = site.url("/allowed")
    with caplog.at_level(logging.ERROR):
        result = await crawl([url], {"DOWNLOADER_MIDDLEWARES": WATCHED})
    assert denied(result, url)
    assert [m for m in messages(caplog, logging.ERROR) if "could not be fetched" in m]
    assert result.stats["robotstxt/request_count"] == 1
    assert not [k for k in result.stats if k.startswith("robotstxt/exception_count/")]


# -- test_robotstxt_user_agent_setting ------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_robotstxt_user_agent_setting(site):
    site.routes["/robots.txt"] = robots("User-agent: examplebot\nDisallow: /\n")
    url = site.url("/allowed")
    settings = {"ROBOTSTXT_USER_AGENT": "Examplebot", "USER_AGENT": "Mozilla/5.0 (X11; Linux x86_64)"}
    result = await crawl([Req(url, headers={"User-Agent": "OtherBot/1.0"})], settings)
    assert denied(result, url)  # the group of Examplebot, not of the header nor of USER_AGENT


# -- test_robotstxt_local_file ----------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_robotstxt_local_file(site, tmp_path):
    page = tmp_path / "nothinghere.html"
    page.write_text("<html></html>")
    local = ["data:text/plain,Hello World data", page.as_uri()]
    result = await crawl([*local, site.url("/admin/main")])
    assert [result.outcome(u).status for u in local] == [200, 200]
    assert denied(result, site.url("/admin/main"))
    assert result.stat("requests/checked") == 1  # data: and file: were never checked


# -- TestRobotsTxtMiddlewareWithRerp: ROBOTSTXT_PARSER -----------------------------------------
@pytest_twisted.ensureDeferred
async def test_robotstxt_parser_setting_is_not_used(site):
    """Difference by design (README table): ROBOTSTXT_PARSER is not used; the
    plugin's own RFC 9309 parser decides.  With Python's parser (first match)
    /a/b would be denied; RFC 9309 takes the longest match: allowed."""
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /a\nAllow: /a/b\n")
    urls = [site.url("/a/b"), site.url("/a/c")]
    result = await crawl(urls, {"ROBOTSTXT_PARSER": "scrapy.robotstxt.PythonRobotParser"})
    assert result.outcome(urls[0]).status == 200
    assert denied(result, urls[1])


# -- drop-in parity (issue 24) ----------------------------------------------------------------
TWO_GROUPS = "User-agent: examplebot\nAllow: /\n\nUser-agent: otherbot\nDisallow: /\n"


@pytest_twisted.ensureDeferred
async def test_a_requests_own_user_agent_header_comes_before_user_agent(site):
    site.routes["/robots.txt"] = robots(TWO_GROUPS)
    own, plain = site.url("/own"), site.url("/plain")
    plan = [Req(own, headers={"User-Agent": "Mozilla/5.0 (compatible; OtherBot/2.0)"}), Req(plain)]
    result = await crawl(plan)  # USER_AGENT = ExampleBot/1.0 (harness)
    assert denied(result, own) and "(line 5: Disallow: /)" in result.outcome(own).message  # otherbot's group
    assert result.outcome(plain).status == 200
    check_accounting(result)


@pytest.mark.parametrize("where", ["ROBOTSTXT_USER_AGENT", "per-origin user_agent"])
@pytest_twisted.ensureDeferred
async def test_a_token_setting_comes_before_the_header(site, where):
    site.routes["/robots.txt"] = robots(TWO_GROUPS)
    if where == "ROBOTSTXT_USER_AGENT":
        settings: dict[str, Any] = {"ROBOTSTXT_USER_AGENT": "ExampleBot"}
    else:
        settings = {"RFC9309_ORIGINS": {site.origin: {"user_agent": "ExampleBot"}}}
    settings["USER_AGENT"] = "OtherBot/1.0"
    url = site.url("/own")
    result = await crawl([Req(url, headers={"User-Agent": "OtherBot/2.0"})], settings)
    assert result.outcome(url).status == 200


@pytest.mark.parametrize("header", ["my bot/1.0", "Mozilla/5.0 (compatible; Foo Bar/1.0)", "Bot2000/1.0"])
@pytest_twisted.ensureDeferred
async def test_a_header_naming_no_valid_token_is_a_logged_denial(site, caplog, header):
    url, plain = site.url("/own"), site.url("/plain")
    with caplog.at_level(logging.DEBUG):
        result = await crawl([Req(url, headers={"User-Agent": header}), Req(plain)])
    outcome = result.outcome(url)
    assert denied(result, url) and "invalid User-Agent header" in outcome.message
    assert [m for m in messages(caplog) if m.startswith("Forbidden by robots.txt: invalid User-Agent header")]
    assert result.stat("requests/denied/invalid_user_agent") == 1
    assert result.stats["robotstxt/forbidden"] == 1
    assert result.outcome(plain).status == 200
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_a_mozilla_style_user_agent_with_a_space_in_its_name_stops_the_crawl(site, caplog):
    with caplog.at_level(logging.ERROR):
        result = await crawl([site.url("/a")], {"USER_AGENT": "Mozilla/5.0 (compatible; Foo Bar/1.0)"})
    assert result.stats.get("finish_reason") == "rfc9309_invalid_setting"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and "is ambiguous" in errors[0] and errors[0].startswith("USER_AGENT: ")
    assert site.hits == []


@pytest.mark.parametrize(
    ("route", "status"),
    [
        (robots(WIKI_ROBOTS), 200),
        (Reply(404, b"User-agent: *\nDisallow: /\n"), 404),  # README table: a 4xx body is not read
        (Reply(503, b"busy"), 503),
        ([redirect("/elsewhere.txt")], 200),
    ],
    ids=["200", "404", "503", "redirect"],
)
@pytest_twisted.ensureDeferred
async def test_scrapy_stats_are_written_with_scrapys_meaning(site, route, status):
    site.routes["/robots.txt"] = route
    site.routes["/elsewhere.txt"] = robots(WIKI_ROBOTS)
    urls = [site.url("/allowed"), site.url("/admin/a"), site.url("/static/b")]
    result = await crawl(urls)
    expected = {
        "robotstxt/request_count": 1,
        "robotstxt/response_count": 1,
        f"robotstxt/response_status_count/{status}": 1,
    }
    forbidden = sum(1 for u in urls if result.outcome(u).error == "IgnoreRequest")
    if forbidden:
        expected["robotstxt/forbidden"] = forbidden
    assert scrapy_stats(result) == expected
    # RFC 9309 differences (README table): 4xx allows all, whatever its body says; 5xx is
    # unreachable, so all denied (Scrapy parses either body)
    assert forbidden == {200: 2, 404: 0, 503: 3}[status]
    # beside the plugin's own
    assert result.stat("fetch/count") == 1


@pytest_twisted.ensureDeferred
async def test_scrapys_constructor_is_accepted(site):
    """``RobotsTxtMiddleware(crawler)``, as Scrapy builds its own."""
    built: list[Any] = []

    class Plain(RobotsTxtMiddleware):
        @classmethod
        def from_crawler(cls, crawler):
            middleware = cls(crawler)  # Scrapy's signature
            built.append(middleware)
            return middleware

    name = f"{__name__}.PlainMiddleware"
    globals()["PlainMiddleware"] = Plain
    try:
        middlewares = {"scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware": None, name: 100}
        result = await crawl([site.url("/admin/x"), site.url("/ok")], {"DOWNLOADER_MIDDLEWARES": middlewares})
        assert denied(result, site.url("/admin/x")) and result.outcome(site.url("/ok")).status == 200
        assert len(built) == 1 and built[0].settings.user_agent == "ExampleBot"
        # and, as Scrapy's, NotConfigured when robots.txt is off
        with pytest.raises(NotConfigured):
            Plain(_OffCrawler())
    finally:
        del globals()["PlainMiddleware"]


class _OffCrawler:
    """The least a crawler needs for the constructor to read its settings."""

    def __init__(self) -> None:
        from scrapy.settings import Settings

        self.settings = Settings({"ROBOTSTXT_OBEY": False})
        self.settings.set("ROBOTSTXT_OBEY", False, priority="project")


@pytest_twisted.ensureDeferred
async def test_rfc9309_enabled_false_gives_scrapys_own_middleware_back(site, caplog):
    url, ok = site.url("/admin/main"), site.url("/allowed")
    settings = {**ADDON, "RFC9309_ENABLED": False, "ROBOTSTXT_OBEY": True}
    with caplog.at_level(logging.INFO):
        result = await crawl([url, ok], settings)
    assert result.outcome(url).error == "IgnoreRequest" and result.outcome(url).message == "Forbidden by robots.txt"
    assert result.outcome(ok).status == 200
    assert site.count("/robots.txt") == 1
    assert result.stats["robotstxt/forbidden"] == 1 and result.rfc() == {}
    assert [m for m in messages(caplog, logging.INFO) if "scrapy-rfc9309 is off" in m] == [
        "scrapy-rfc9309 is off (RFC9309_ENABLED = False): Scrapy's own RobotsTxtMiddleware obeys robots.txt "
        "(ROBOTSTXT_OBEY = True)"
    ]
