"""RFC 9309 section 2.3.1 access results, one real crawl per row.

Each test starts loopback servers, crawls them with the middleware enabled the
way the README says, and checks what reached the server and what the spider
got back: a response, or an IgnoreRequest naming the verdict.
"""

from __future__ import annotations

import gzip
import logging
import time

import pytest
import pytest_twisted

from scrapy_rfc9309 import settings as settings_module

from .harness import check_accounting, crawl
from .servers import Reply, closed_port, redirect, robots

DISALLOW_PRIVATE = "User-agent: *\nDisallow: /private\n"


# -- 2xx ---------------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_2xx_file_is_obeyed_and_errback_gets_the_rule(servers):
    site = servers()
    site.routes["/robots.txt"] = robots("# rules\nUser-agent: *\nAllow: /private/ok\nDisallow: /private\n")
    result = await crawl([site.url("/public"), site.url("/private/x"), site.url("/private/ok")])

    assert result.outcome(site.url("/public")).status == 200
    assert result.outcome(site.url("/private/ok")).status == 200
    denied = result.outcome(site.url("/private/x"))
    assert denied.error == "IgnoreRequest"
    assert denied.message == "Forbidden by robots.txt: disallowed_explicit (line 4: Disallow: /private)"
    assert "/private/x" not in site.paths()
    assert result.stat("requests/allowed/allowed_implicit") == 1
    assert result.stat("requests/allowed/allowed_explicit") == 1
    assert result.stat("requests/denied/disallowed_explicit") == 1
    assert result.stat("fetch/2xx") == 1
    check_accounting(result)


def _padded(size: int) -> str:
    """A robots.txt whose second Disallow sits after ``size`` bytes of comments."""
    head = "User-agent: *\nDisallow: /early\n"
    line = "# " + "x" * 97 + "\n"
    return head + line * (size // len(line)) + "Disallow: /late\n"


@pytest_twisted.ensureDeferred
async def test_2xx_body_over_the_limit_is_truncated_not_failed(servers):
    site = servers()
    body = _padded(700_000)
    site.routes["/robots.txt"] = robots(body)
    result = await crawl([site.url("/early"), site.url("/late")])

    assert result.outcome(site.url("/early")).error == "IgnoreRequest"  # read: before the limit
    assert result.outcome(site.url("/late")).status == 200  # after the limit: never read
    assert result.stat("fetch/truncated") == 1
    assert result.stat("fetch/bytes_truncated") >= len(body) - 512_000
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_2xx_body_that_decompresses_over_the_limit_is_truncated(servers):
    """A gzip body of a few KB that inflates to 20 MB (far above the parse limit
    and above DOWNLOAD_MAXSIZE here): Scrapy's HttpCompressionMiddleware would
    fail it; the fetch truncates it."""
    site = servers()
    inflated = "User-agent: *\nDisallow: /early\n" + "#" * 20_000_000 + "\nDisallow: /late\n"
    packed = gzip.compress(inflated.encode(), 9)
    assert len(packed) < 100_000
    site.routes["/robots.txt"] = Reply(200, packed, {"Content-Type": "text/plain", "Content-Encoding": "gzip"})
    result = await crawl([site.url("/early"), site.url("/late")], {"DOWNLOAD_MAXSIZE": 1_000_000})

    assert result.outcome(site.url("/early")).message.startswith("Forbidden by robots.txt: disallowed_explicit")
    assert result.outcome(site.url("/late")).status == 200
    assert result.stat("fetch/2xx") == 1
    assert result.stat("fetch/truncated") == 1
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_2xx_gzip_body_under_the_limit_is_read_whole(servers):
    site = servers()
    packed = gzip.compress(DISALLOW_PRIVATE.encode())
    site.routes["/robots.txt"] = Reply(200, packed, {"Content-Type": "text/plain", "Content-Encoding": "gzip"})
    result = await crawl([site.url("/private")])
    assert result.outcome(site.url("/private")).message.endswith("(line 2: Disallow: /private)")
    assert result.stat("fetch/truncated") == 0


# -- 3xx ---------------------------------------------------------------------------
def _chain(hosts, hops: int) -> tuple[str, object]:
    """Point robots.txt of hosts[0] through ``hops`` redirects that visit every
    host in turn; the last target serves DISALLOW_PRIVATE.  Returns the final
    URL and its server."""
    first = hosts[0]
    current, path = first, "/robots.txt"
    for i in range(hops):
        nxt = hosts[(i + 1) % len(hosts)]
        nxt_path = f"/hop{i + 1}.txt"
        current.routes[path] = redirect(nxt.url(nxt_path), 301 if i % 2 else 302)
        current, path = nxt, nxt_path
    current.routes[path] = robots(DISALLOW_PRIVATE)
    return current.url(path), current


@pytest_twisted.ensureDeferred
async def test_3xx_five_redirects_across_hosts_are_followed(servers):
    hosts = [servers("127.0.0.1"), servers("127.0.0.2"), servers("127.0.0.3")]
    final_url, final = _chain(hosts, 5)
    page = hosts[0].url("/private")
    result = await crawl([page, hosts[0].url("/public")], {"REDIRECT_MAX_TIMES": 1})

    # the rules of the last hop apply to the origin first asked
    assert result.outcome(page).message == "Forbidden by robots.txt: disallowed_explicit (line 2: Disallow: /private)"
    assert result.outcome(hosts[0].url("/public")).status == 200
    assert final.count(final_url.split(final.origin)[1]) == 1
    assert result.stat("fetch/3xx") == 5
    assert result.stat("fetch/2xx") == 1
    assert result.stat("fetch/count") == 1
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_3xx_six_redirects_mean_unavailable_with_a_warning(servers, caplog):
    hosts = [servers("127.0.0.1"), servers("127.0.0.2"), servers("127.0.0.3")]
    final_url, final = _chain(hosts, 6)
    page = hosts[0].url("/private")
    with caplog.at_level(logging.WARNING, logger="scrapy_rfc9309"):
        result = await crawl([page])

    assert result.outcome(page).status == 200  # unavailable: allow all
    assert final.count(final_url.split(final.origin)[1]) == 0  # the sixth redirect is not followed
    assert result.stat("fetch/3xx") == 5
    assert result.stat("fetch/too_many_redirects") == 1
    assert result.stat("requests/allowed/allowed_unavailable") == 1
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING and "more than 5 redirects" in r.getMessage()]
    assert len(warnings) == 1
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_3xx_limit_follows_the_constant(servers, monkeypatch):
    monkeypatch.setattr(settings_module, "MAX_REDIRECTS", 1)  # RFC 9309's 5 by default (above)
    hosts = [servers("127.0.0.1"), servers("127.0.0.2")]
    _chain(hosts, 2)
    page = hosts[0].url("/private")
    result = await crawl([page])
    assert result.outcome(page).status == 200
    assert result.stat("fetch/too_many_redirects") == 1


# -- 4xx ---------------------------------------------------------------------------
@pytest.mark.parametrize("status", [401, 403, 404, 410])
@pytest_twisted.ensureDeferred
async def test_4xx_allows_all_and_never_parses_the_body(servers, status):
    site = servers()
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\n", status=status)
    result = await crawl([site.url("/a"), site.url("/b")])

    assert result.outcome(site.url("/a")).status == 200
    assert result.outcome(site.url("/b")).status == 200
    assert result.stat("requests/allowed/allowed_unavailable") == 2
    assert result.stat("fetch/4xx") == 1
    assert result.stat("access/unavailable") == 1
    check_accounting(result)


# -- unreachable -------------------------------------------------------------------
@pytest.mark.parametrize(
    ("status", "klass"),
    [(429, "429"), (500, "5xx"), (503, "5xx")],
)
@pytest_twisted.ensureDeferred
async def test_429_and_5xx_deny_all(servers, status, klass):
    site = servers()
    site.routes["/robots.txt"] = Reply(
        status, "<html><body><h1>Service Unavailable</h1></body></html>", {"Content-Type": "text/html"}
    )
    result = await crawl([site.url("/a"), site.url("/b")])

    for path in ("/a", "/b"):
        outcome = result.outcome(site.url(path))
        assert outcome.message == "Forbidden by robots.txt: unknown_unreachable"
    assert site.page_hits() == []
    assert site.count("/robots.txt") == 1  # no retry of the fetch by RetryMiddleware either
    assert result.stat(f"fetch/{klass}") == 1
    assert result.stat("requests/denied/unknown_unreachable") == 2
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_5xx_denies_even_with_retries_enabled(servers):
    site = servers()
    site.routes["/robots.txt"] = Reply(503, "busy")
    result = await crawl([site.url("/a")], {"RETRY_ENABLED": True, "RETRY_TIMES": 3})
    assert result.outcome(site.url("/a")).message == "Forbidden by robots.txt: unknown_unreachable"
    assert site.count("/robots.txt") == 1


@pytest_twisted.ensureDeferred
async def test_refused_connection_denies(servers):
    port = closed_port("127.0.0.2")
    page = f"http://127.0.0.2:{port}/a"
    result = await crawl([page])

    outcome = result.outcome(page)
    assert outcome.error == "IgnoreRequest"  # dropped by robots.txt, not a connection error of the page
    assert outcome.message == "Forbidden by robots.txt: unknown_unreachable"
    errors = {k: v for k, v in result.rfc().items() if k.startswith("fetch/error/")}
    assert sum(errors.values()) == 1
    assert "Refused" in next(iter(errors))
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_robots_txt_that_never_answers_times_out_and_the_crawl_ends(servers):
    site = servers()
    site.routes["/robots.txt"] = Reply(hang=True)
    result = await crawl([site.url("/a"), site.url("/b")], {"RFC9309_FETCH_TIMEOUT": 0.5})

    assert [o.message for o in result.outcomes] == ["Forbidden by robots.txt: unknown_unreachable"] * 2
    assert site.page_hits() == []
    assert result.stat("fetch/error/DownloadTimeoutError") == 1
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_unreachable_wait_holds_requests_until_the_file_comes(servers):
    site = servers()
    site.routes["/robots.txt"] = [Reply(503), Reply(503), robots(DISALLOW_PRIVATE)]
    result = await crawl(
        [site.url("/public"), site.url("/private")],
        {"RFC9309_UNREACHABLE": "wait:10"},
    )

    assert result.outcome(site.url("/public")).status == 200
    assert result.outcome(site.url("/private")).message.endswith("(line 2: Disallow: /private)")
    robots_times = site.times("/robots.txt")
    assert len(robots_times) == 3
    # the page went out only after the third (successful) fetch
    assert min(hit.at for hit in site.page_hits()) > robots_times[2]
    assert result.stat("fetch/5xx") == 2
    assert result.stat("fetch/2xx") == 1
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_unreachable_wait_gives_up_and_drops(servers):
    site = servers()
    site.routes["/robots.txt"] = Reply(503)
    result = await crawl([site.url("/a")], {"RFC9309_UNREACHABLE": "wait:1.5"})

    assert result.outcome(site.url("/a")).message == "Forbidden by robots.txt: unknown_unreachable"
    assert site.count("/robots.txt") >= 2
    assert site.page_hits() == []
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_an_origin_waits_its_own_seconds(servers):
    """RFC9309_ORIGINS' "wait:<seconds>" is the origin's own: the crawl's 60 s
    do not hold it (nor the other way round: the other origin waits the crawl's)."""
    own, other = servers("127.0.0.2"), servers("127.0.0.3")
    own.routes["/robots.txt"] = Reply(503)
    # retried after 1, 2 and 4 s: the file comes 7 s in, past the other origin's 1.5 s
    other.routes["/robots.txt"] = [Reply(503), Reply(503), Reply(503), robots(DISALLOW_PRIVATE)]
    settings = {"RFC9309_UNREACHABLE": "wait:60", "RFC9309_ORIGINS": {own.origin: {"unreachable": "wait:1.5"}}}
    started = time.monotonic()
    result = await crawl([own.url("/a"), other.url("/a")], settings)

    assert time.monotonic() - started < 30  # not the crawl's 60 s
    assert result.outcome(own.url("/a")).message == "Forbidden by robots.txt: unknown_unreachable"
    assert own.count("/robots.txt") >= 2 and own.page_hits() == []
    assert result.outcome(other.url("/a")).status == 200 and other.count("/robots.txt") == 4
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_unreachable_allow_is_an_explicit_opt_in(servers):
    site = servers()
    site.routes["/robots.txt"] = Reply(500)
    result = await crawl([site.url("/a")], {"RFC9309_UNREACHABLE": "allow"})

    assert result.outcome(site.url("/a")).status == 200
    assert result.stat("requests/allowed/allowed_unreachable_opt_in") == 1
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_a_fetch_logs_its_download_once_and_its_access_result_when_the_download_line_does_not_say_it(
    servers, caplog
):
    """Each download of the lane has its Crawled line, with its size; a robots.txt that succeeded at once has no
    second line (one LogRecord less per origin of a broad crawl); a redirected or unavailable one has its result."""
    plain, moved, missing = servers(), servers(), servers()
    plain.routes["/robots.txt"] = robots(DISALLOW_PRIVATE)
    moved.routes["/robots.txt"] = redirect(plain.url("/robots.txt"))
    missing.routes["/robots.txt"] = Reply(404, "gone")
    with caplog.at_level(logging.DEBUG, logger="scrapy_rfc9309"):
        await crawl([site.url("/page") for site in (plain, moved, missing)])
    lines = [r.getMessage() for r in caplog.records if r.name.startswith("scrapy_rfc9309")]
    crawled = [line for line in lines if line.startswith("Crawled (") and "(robots.txt lane, " in line]
    assert any(f"<GET {plain.url('/robots.txt')}> (robots.txt lane, {len(DISALLOW_PRIVATE)} bytes)" in line
               for line in crawled), crawled  # fmt: skip
    assert len(crawled) == 4, crawled  # plain's, moved's two hops, missing's
    results = [line for line in lines if line.startswith("robots.txt of ")]
    assert not [line for line in results if line.startswith(f"robots.txt of {plain.origin}:")], results
    assert f"robots.txt of {moved.origin}: success, status 200, {len(DISALLOW_PRIVATE)} bytes, 1 redirect(s)" in results
    assert f"robots.txt of {missing.origin}: unavailable, status 404, 0 bytes, 0 redirect(s)" in results
