"""The middleware around the access results: one fetch per origin, early start,
isolation from page settings, cache, overrides, signals, logs and stats."""

from __future__ import annotations

import logging

import pytest
import pytest_twisted

from scrapy_rfc9309 import RobotsTxt, Verdict, compat
from scrapy_rfc9309 import settings as settings_module
from scrapy_rfc9309.interop import RobotParserAdapter

from .harness import Req, check_accounting, crawl
from .servers import Reply, redirect, robots

DISALLOW_PRIVATE = "User-agent: *\nDisallow: /private\n"


# -- one fetch per origin, started early ---------------------------------------------
@pytest_twisted.ensureDeferred
async def test_50_concurrent_requests_share_one_fetch(servers):
    site = servers()
    site.routes["/robots.txt"] = Reply(200, DISALLOW_PRIVATE, {"Content-Type": "text/plain"}, delay=0.3)
    pages = [site.url(f"/p/{i}") for i in range(45)] + [site.url(f"/private/{i}") for i in range(5)]
    result = await crawl(pages, {"CONCURRENT_REQUESTS": 64, "CONCURRENT_REQUESTS_PER_DOMAIN": 64})

    assert site.count("/robots.txt") == 1
    assert sum(1 for o in result.outcomes if o.status == 200) == 45
    assert sum(1 for o in result.outcomes if o.message.startswith("Forbidden by robots.txt: disallowed")) == 5
    answered = site.answered["/robots.txt"][0]
    assert all(hit.at > answered for hit in site.page_hits())  # no page before its rules
    assert result.stat("fetch/count") == 1
    check_accounting(result)


@pytest.mark.parametrize("early", [True, False], ids=["early_fetch", "default"])
@pytest_twisted.ensureDeferred
async def test_fetch_starts_when_the_request_is_scheduled_with_early_fetch(servers, early):
    """With one download at a time, a slow page fills the downloader.  With
    ``RFC9309_EARLY_FETCH`` the robots.txt of an origin whose request is
    scheduled meanwhile is fetched at once; by default, once that request
    reaches the downloader, after the slow page is done.  (A slow robots.txt
    no longer fills it: robots.txt downloads have a lane of their own.)"""
    seed, slow, other = servers("127.0.0.1"), servers("127.0.0.2"), servers("127.0.0.3")
    slow.routes["/a"] = Reply(200, "<html>a</html>", {"Content-Type": "text/html"}, delay=1.0)
    # /b is scheduled 0.3 s after /a, while /a's page downloads
    plan = [Req(seed.url("/seed"), then=[Req(slow.url("/a")), Req(other.url("/b"), pause=0.3)])]
    settings = {"CONCURRENT_REQUESTS": 1, "CONCURRENT_REQUESTS_PER_DOMAIN": 1, "RFC9309_EARLY_FETCH": early}
    result = await crawl(plan, settings)

    assert result.outcome(slow.url("/a")).status == 200
    assert result.outcome(other.url("/b")).status == 200
    # the other origin's robots.txt was requested while the slow page was still downloading, or after
    assert (other.times("/robots.txt")[0] < slow.answered["/a"][0]) is early
    check_accounting(result)


# -- page settings do not defeat the fetch ---------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_robots_redirected_offsite_is_still_followed(servers):
    site, elsewhere = servers("127.0.0.1"), servers("127.0.0.2")
    site.routes["/robots.txt"] = redirect(elsewhere.url("/robots.txt"))
    elsewhere.routes["/robots.txt"] = robots(DISALLOW_PRIVATE)
    result = await crawl([site.url("/private"), site.url("/public")], spider_attrs={"allowed_domains": ["127.0.0.1"]})

    assert result.outcome(site.url("/private")).message.endswith("(line 2: Disallow: /private)")
    assert result.outcome(site.url("/public")).status == 200
    assert elsewhere.count("/robots.txt") == 1
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_page_settings_do_not_defeat_the_fetch(servers, tmp_path):
    """REDIRECT_ENABLED=False, a spider that handles 3xx itself, HttpCache on,
    and a DOWNLOAD_MAXSIZE smaller than the file."""
    site, elsewhere = servers("127.0.0.1"), servers("127.0.0.2")
    site.routes["/robots.txt"] = redirect(elsewhere.url("/rules.txt"))
    padding = "# " + "-" * 5_000 + "\n"
    elsewhere.routes["/rules.txt"] = robots("User-agent: *\n" + padding + "Disallow: /one\n")
    settings = {
        "REDIRECT_ENABLED": False,
        "HTTPCACHE_ENABLED": True,
        "HTTPCACHE_DIR": str(tmp_path / "cache"),
        "DOWNLOAD_MAXSIZE": 1_000,
        "DOWNLOAD_WARNSIZE": 500,
    }
    attrs = {"handle_httpstatus_list": [301, 302, 404, 503]}
    first = await crawl([site.url("/one"), site.url("/two")], settings, attrs)
    assert first.outcome(site.url("/one")).message.endswith("Disallow: /one)")
    assert first.outcome(site.url("/two")).status == 200

    # The site changes its rules; a cached robots.txt would keep the old ones.
    elsewhere.routes["/rules.txt"] = robots("User-agent: *\n" + padding + "Disallow: /two\n")
    second = await crawl([site.url("/one"), site.url("/two")], settings, attrs)
    assert second.outcome(site.url("/two")).message.endswith("Disallow: /two)")
    assert elsewhere.count("/rules.txt") == 2
    check_accounting(first)
    check_accounting(second)


# -- cache ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("settings", "headers", "fetches"),
    [
        ({"RFC9309_CACHE_SECONDS": 1.5}, {}, 2),  # our own limit
        ({}, {"Cache-Control": "public, max-age=0"}, 2),  # the server's, shorter (floored at 1.5 s)
        ({}, {"Expires": "Thu, 01 Jan 1970 00:00:00 GMT"}, 2),
        ({}, {"Cache-Control": "max-age=3600"}, 1),
        ({}, {}, 1),  # neither: 24 hours
    ],
)
@pytest_twisted.ensureDeferred
async def test_cache_expiry_means_a_second_fetch(servers, settings, headers, fetches, monkeypatch):
    # the floor under a server's freshness is a constant of 60 s (at most RFC9309_CACHE_SECONDS):
    # lowered here, so that a server's shorter lifetime shows within the crawl (1.5 s: /c must come
    # within it after the second fetch, on a loaded machine too)
    monkeypatch.setattr(settings_module, "CACHE_MIN_SECONDS", 1.5)
    site = servers()
    site.routes["/robots.txt"] = [
        robots("User-agent: *\nDisallow: /b\n", **headers),
        robots("User-agent: *\nDisallow: /c\n", **headers),
    ]
    # /b comes well after the first file is stale, /c right after the second was fetched
    plan = [Req(site.url("/a"), then=[Req(site.url("/b"), pause=2.5, then=[Req(site.url("/c"))])])]
    result = await crawl(plan, settings)

    assert site.count("/robots.txt") == fetches
    assert result.stat("cache/expiries") == fetches - 1
    if fetches == 2:  # the second file governs /c
        assert result.outcome(site.url("/b")).status == 200
        assert result.outcome(site.url("/c")).error == "IgnoreRequest"
    else:
        assert result.outcome(site.url("/b")).error == "IgnoreRequest"
        assert result.outcome(site.url("/c")).status == 200
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_cache_floor_keeps_a_no_cache_file_for_a_while(servers):
    site = servers()
    site.routes["/robots.txt"] = robots(DISALLOW_PRIVATE, Cache_Control="no-cache")
    plan = [Req(site.url("/a"), then=[Req(site.url("/b"), pause=0.3)])]
    result = await crawl(plan)  # the floor: 60 s
    assert site.count("/robots.txt") == 1
    assert result.stat("cache/hits") == 1


@pytest_twisted.ensureDeferred
async def test_unreachable_is_retried_after_its_own_delay(servers):
    site = servers()
    site.routes["/robots.txt"] = [Reply(503), robots(DISALLOW_PRIVATE)]
    plan = [Req(site.url("/a"), then=[Req(site.url("/b"), pause=0.5)])]
    result = await crawl(plan, {"RFC9309_CACHE_SECONDS": 0.2})  # the retry: 300 s, at most the lifetime
    assert result.outcome(site.url("/a")).message == "Forbidden by robots.txt: unknown_unreachable"
    assert result.outcome(site.url("/b")).status == 200
    assert site.count("/robots.txt") == 2


@pytest_twisted.ensureDeferred
async def test_unreachable_refetch_keeps_the_cached_file(servers):
    """RFC 9309 section 2.4: when a re-fetch is unreachable the cached file may
    be used; it is, rather than denying everything."""
    site = servers()
    site.routes["/robots.txt"] = [robots(DISALLOW_PRIVATE), Reply(503)]
    plan = [Req(site.url("/a"), then=[Req(site.url("/b"), pause=1.5, then=[Req(site.url("/private"))])])]
    result = await crawl(plan, {"RFC9309_CACHE_SECONDS": 1.0})  # (/private within 1 s of the re-fetch)
    assert site.count("/robots.txt") == 2
    assert result.outcome(site.url("/b")).status == 200
    assert result.outcome(site.url("/private")).message.endswith("(line 2: Disallow: /private)")
    assert result.stat("cache/stale_used") == 1


@pytest_twisted.ensureDeferred
async def test_lru_bound_evicts_and_refetches(servers):
    one, two = servers("127.0.0.1"), servers("127.0.0.2")
    plan = [Req(one.url("/1"), then=[Req(two.url("/1"), then=[Req(one.url("/2"))])])]
    result = await crawl(plan, {"RFC9309_CACHE_MAX_ORIGINS": 1})
    assert one.count("/robots.txt") == 2
    assert two.count("/robots.txt") == 1
    assert result.stat("cache/evictions") >= 1
    check_accounting(result)

    control = await crawl(plan, {"RFC9309_CACHE_MAX_ORIGINS": 2})
    assert control.stat("cache/evictions") == 0
    assert one.count("/robots.txt") == 3  # one more, for the second crawl's first request


# -- overrides -----------------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_per_spider_custom_settings(servers):
    site = servers()
    site.routes["/robots.txt"] = robots("User-agent: specialbot\nDisallow: /special\n\nUser-agent: *\nDisallow: /all\n")
    urls = [site.url("/special"), site.url("/all")]

    special = await crawl(urls, spider_attrs={"custom_settings": {"ROBOTSTXT_USER_AGENT": "SpecialBot"}})
    assert special.outcome(site.url("/special")).error == "IgnoreRequest"
    assert special.outcome(site.url("/all")).status == 200

    off = await crawl(urls, spider_attrs={"custom_settings": {"RFC9309_ENABLED": False}})
    assert [o.status for o in off.outcomes] == [200, 200]
    assert off.rfc() == {}
    assert site.count("/robots.txt") == 1  # only the first crawl fetched it


@pytest_twisted.ensureDeferred
async def test_per_origin_overrides(servers):
    ignored, named, fragile = servers("127.0.0.1"), servers("127.0.0.2"), servers("127.0.0.3")
    ignored.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\n")
    named.routes["/robots.txt"] = robots("User-agent: otherbot\nDisallow: /x\n\nUser-agent: *\nDisallow: /y\n")
    fragile.routes["/robots.txt"] = Reply(503)
    origins = {
        ignored.url("/"): {"obey": False},
        named.url(""): {"user_agent": "OtherBot/2.0"},
        fragile.origin: {"unreachable": "allow"},
    }
    urls = [ignored.url("/a"), named.url("/x"), named.url("/y"), fragile.url("/z")]
    result = await crawl(urls, {"RFC9309_ORIGINS": origins})

    assert result.outcome(ignored.url("/a")).status == 200
    assert ignored.count("/robots.txt") == 0
    assert result.outcome(named.url("/x")).error == "IgnoreRequest"
    assert result.outcome(named.url("/y")).status == 200
    assert result.outcome(fragile.url("/z")).status == 200
    assert result.stat("requests/allowed/allowed_not_obeyed") == 1
    assert result.stat("requests/allowed/allowed_unreachable_opt_in") == 1
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_per_request_meta(servers):
    site = servers()
    site.routes["/robots.txt"] = robots("User-agent: otherbot\nDisallow: /x\n\nUser-agent: *\nDisallow: /y\n")
    plan = [
        Req(site.url("/y"), meta={"dont_obey_robotstxt": True}),
        Req(site.url("/x"), meta={"robotstxt_user_agent": "OtherBot"}),
        Req(site.url("/y?again"), meta={"robotstxt_user_agent": b"Mozilla/5.0 (compatible; OtherBot/1.0)"}),
        Req(site.url("/z"), meta={"robotstxt_user_agent": "B0t/1.0"}),
    ]
    result = await crawl(plan)

    assert result.outcome(site.url("/y")).status == 200
    assert result.outcome(site.url("/x")).message.endswith("(line 2: Disallow: /x)")
    assert result.outcome(site.url("/y?again")).status == 200
    invalid = result.outcome(site.url("/z"))
    assert invalid.error == "IgnoreRequest" and "invalid robotstxt_user_agent" in invalid.message
    assert result.stat("requests/denied/invalid_user_agent") == 1
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_data_and_file_urls_are_never_checked(servers, tmp_path):
    site = servers()
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\n")
    local = tmp_path / "page.html"
    local.write_text("<html></html>")
    result = await crawl(["data:text/plain,hello", local.as_uri()])
    assert [o.status for o in result.outcomes] == [200, 200]
    assert result.rfc() == {}


# -- enabling -------------------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_addon_replaces_the_builtin_middleware(servers):
    site = servers()
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\n", status=404)
    settings = {
        "ADDONS": {"scrapy_rfc9309.Addon": 0},
        "DOWNLOADER_MIDDLEWARES": {},
        "ROBOTSTXT_OBEY": True,  # as `scrapy startproject` writes it
    }
    result = await crawl([site.url("/a")], settings)

    assert result.outcome(site.url("/a")).status == 200  # the built-in would obey the 404's body
    assert site.count("/robots.txt") == 1
    # one robots.txt request (the plugin's, which writes Scrapy's stats too), nothing forbidden
    assert {k: v for k, v in result.stats.items() if k.startswith("robotstxt/")} == {
        "robotstxt/request_count": 1,
        "robotstxt/response_count": 1,
        "robotstxt/response_status_count/404": 1,
    }
    assert result.stat("fetch/4xx") == 1
    # Scrapy's middleware is disabled by its entry; the user's switch keeps its value
    assert result.crawler.settings.getbool("ROBOTSTXT_OBEY") is True
    from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware as Builtin

    from scrapy_rfc9309 import RobotsTxtMiddleware

    running = [type(mw) for mw in result.crawler.engine.downloader.middleware.middlewares]
    assert Builtin not in running and RobotsTxtMiddleware in running
    from scrapy_rfc9309.gate import GateScheduler
    from scrapy_rfc9309.lifecycle import crawl_state

    # the gate wraps the project's scheduler: the one place requests wait (robots.txt, Crawl-delay)
    assert isinstance(crawl_state(result.crawler).gate, GateScheduler)
    assert result.crawler.settings.get("SCHEDULER") == "scrapy_rfc9309.gate.GateScheduler"


# -- start-up, signals, logs, accounting -------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_product_token_is_derived_and_logged_once(servers, caplog):
    site = servers()
    site.routes["/robots.txt"] = robots("User-agent: examplebot\nDisallow: /mine\n")
    ua = "Mozilla/5.0 (compatible; ExampleBot/2.1; +https://example.com/bot)"
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        result = await crawl([site.url("/mine"), site.url("/yours")], {"USER_AGENT": ua})
    assert result.outcome(site.url("/mine")).error == "IgnoreRequest"
    assert result.outcome(site.url("/yours")).status == 200
    lines = [r.getMessage() for r in caplog.records if "product token" in r.getMessage()]
    assert lines == ["RFC 9309 robots.txt: product token 'ExampleBot' (from USER_AGENT); unreachable robots.txt: "
                     "deny; cache 86400s, at most 10000 origins"]  # fmt: skip


@pytest_twisted.ensureDeferred
async def test_invalid_product_token_stops_the_crawl_at_start(servers, caplog):
    site = servers()
    with caplog.at_level(logging.ERROR):
        result = await crawl([site.url("/a")], {"ROBOTSTXT_USER_AGENT": "Bot2000/1.0"})
    assert result.stats.get("finish_reason") == "rfc9309_invalid_setting"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].startswith("ROBOTSTXT_USER_AGENT: cannot derive a robots.txt product token")
    assert site.hits == []


@pytest_twisted.ensureDeferred
async def test_signals_come_before_the_requests_are_released(servers):
    site = servers()
    site.routes["/robots.txt"] = robots("User-agent: examplebot\nCrawl-delay: 0.1\nDisallow: /private\n")
    result = await crawl([site.url("/a"), site.url("/private")])

    assert len(result.ready) == 1
    at, ready = result.ready[0]
    assert ready["origin"] == site.origin
    assert ready["user_agent"] == "ExampleBot"
    assert isinstance(ready["robots"], RobotsTxt)
    assert ready["request"].url in (site.url("/a"), site.url("/private"))
    assert all(hit.at > at for hit in site.page_hits())

    if compat.ROBOTS_PARSED is None:  # Scrapy before 2.18 has no robots_parsed: the adapter still answers
        assert result.parsed == []
        parser = RobotParserAdapter(ready["robots"], ready["user_agent"])
    else:
        assert len(result.parsed) == 1
        parser = result.parsed[0][1]["robotparser"]
    assert parser.allowed(site.url("/private"), "Mozilla/5.0 (compatible; ExampleBot/1.0)") is False
    assert parser.allowed(site.url("/private"), b"OtherBot/1.0") is True
    assert parser.crawl_delay(b"ExampleBot/1.0") == 0.1
    assert parser.crawl_delay("OtherBot") is None


@pytest_twisted.ensureDeferred
async def test_signals_for_policies_too(servers):
    gone, down = servers("127.0.0.1"), servers("127.0.0.2")
    gone.routes["/robots.txt"] = Reply(404)
    down.routes["/robots.txt"] = Reply(500)
    result = await crawl([gone.url("/a"), down.url("/b")])
    verdicts = {r["origin"]: r["robots"].fixed_verdict for _, r in result.ready}
    assert verdicts == {gone.origin: Verdict.ALLOWED_UNAVAILABLE, down.origin: Verdict.UNKNOWN_UNREACHABLE}
    assert len(result.parsed) == (0 if compat.ROBOTS_PARSED is None else 2)


@pytest_twisted.ensureDeferred
async def test_logs_one_debug_line_per_drop_and_a_summary(servers, caplog):
    site = servers()
    site.routes["/robots.txt"] = robots(DISALLOW_PRIVATE)
    urls = [site.url("/private/1"), site.url("/private/2"), site.url("/ok")]
    with caplog.at_level(logging.DEBUG, logger="scrapy_rfc9309"):
        await crawl(urls)
    drops = [r for r in caplog.records if r.getMessage().startswith("Forbidden by robots.txt")]
    assert len(drops) == 2 and all(r.levelno == logging.DEBUG for r in drops)
    assert sorted(str(r.args[1]) for r in drops) == sorted(f"<GET {u}>" for u in urls[:2])
    summary = [
        r.getMessage() for r in caplog.records if r.levelno == logging.INFO and "requests checked" in r.getMessage()
    ]
    assert summary == [
        "RFC 9309 robots.txt: origins with a file: 1, unavailable (allow all): 0, unreachable: 0; "
        "requests checked: 3, allowed: 1, denied: 2"
    ]


@pytest_twisted.ensureDeferred
async def test_accounting_over_a_mixed_crawl(servers):
    ok, gone, down, moved = (servers(h) for h in ("127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.1"))
    ok.routes["/robots.txt"] = robots(DISALLOW_PRIVATE)
    gone.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\n", status=404)
    down.routes["/robots.txt"] = Reply(503)
    moved.routes["/robots.txt"] = redirect(ok.url("/robots.txt"))
    plan: list = []
    for server in (ok, gone, down, moved):
        plan += [server.url(f"/page/{i}") for i in range(4)] + [server.url(f"/private/{i}") for i in range(3)]
    plan.append(Req(ok.url("/private/x"), meta={"dont_obey_robotstxt": True}))
    plan.append("data:,inline")
    plan.append(Req(ok.url("/page/0"), then=[Req(down.url("/again")), Req(moved.url("/private/later"))]))
    result = await crawl(plan)

    check_accounting(result)
    assert result.stat("requests/checked") == result.sent - 1  # all but data:
    statuses = {}
    for o in result.outcomes:
        statuses[o.status or o.message] = statuses.get(o.status or o.message, 0) + 1
    # ok: 4 pages + /private/x + /page/0 again; gone: 7; moved: 4 pages
    assert statuses[200] == 4 + 1 + 1 + 7 + 4 + 1  # + data:
    assert statuses["Forbidden by robots.txt: unknown_unreachable"] == 8
    denied_rules = [k for k in statuses if isinstance(k, str) and "disallowed_explicit" in k]
    assert sum(statuses[k] for k in denied_rules) == 3 + 3 + 1
    assert result.stat("fetch/count") == 4
    assert result.stat("fetch/3xx") == 1
    assert {k: v for k, v in result.rfc().items() if k.startswith("access/")} == {
        "access/success": 2,
        "access/unavailable": 1,
        "access/unreachable": 1,
    }
