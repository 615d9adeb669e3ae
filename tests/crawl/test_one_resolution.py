"""One per-origin resolution: an origin's tdmrep.json waits in the gate, not in the downloader (issue 36, item 1).

Everything an origin's requests need before they may go on (robots.txt, and
its tdmrep.json when the crawl reads usage statements) is resolved while the
requests wait in the gate.  What a user sees, in real crawls on loopback:

* a healthy origin's pages flow as alone beside origins whose tdmrep.json
  never answers (a response waiting for the file held a ``CONCURRENT_REQUESTS``
  place: gaps of a whole fetch timeout);
* a close asked with ``CLOSESPIDER_TIMEOUT`` ends in its own time whatever
  tdmrep.json hangs (the waiting responses held the close until the fetch timed out);
* every hop of the tdmrep.json fetch, redirects included, is a URL robots.txt
  allows (only the first URL was checked);
* a page that does not obey robots.txt (``dont_obey_robotstxt``, ``obey: False``)
  never makes the plugin fetch a tdmrep.json its robots.txt was never asked about.
"""

from __future__ import annotations

import json
import time
from typing import Any, ClassVar

import pytest
import pytest_twisted
from scrapy import signals

from .faults import crawl_within
from .harness import Req, check_accounting
from .servers import Reply, gaps, redirect, robots

TDM = "/.well-known/tdmrep.json"
TRAIN = {"RFC9309_USAGE": ["train-ai"]}
ALLOW_ALL = "User-agent: *\nAllow: /\n"
#: a file that reserves /reserved/ for text and data mining: applied, it drops the pages there
RESERVING = json.dumps([{"location": "/reserved/", "tdm-reservation": 1}])
PAGE = Reply(200, "<html><body>page</body></html>", {"Content-Type": "text/html"}, delay=0.02)
NOT_FOUND = Reply(404, "not found", {"Content-Type": "text/plain"})


def tdm_file(body: str) -> Reply:
    return Reply(200, body, {"Content-Type": "application/json"})


def site(servers: Any, host: str, rules: str = ALLOW_ALL, file: Reply | None = None) -> Any:
    server = servers(host)
    server.routes["/robots.txt"] = robots(rules)
    server.routes[TDM] = file if file is not None else NOT_FOUND
    return server


class Opened:
    """An extension that notes when the spider opened (``CLOSESPIDER_TIMEOUT`` counts from then)."""

    at: ClassVar[float | None] = None

    def __init__(self, crawler: Any) -> None:
        crawler.signals.connect(self.opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Any) -> Opened:
        cls.at = None
        return cls(crawler)

    def opened(self, spider: Any) -> None:
        type(self).at = time.monotonic()


# -- a healthy origin beside hanging tdmrep.json files -------------------------------------
HEALTHY_PAGES = 40
HANGING_PAGES = 6


async def _healthy_beside(servers, hanging: int) -> tuple[float, Any]:
    """The healthy origin's longest gap between two of its pages reaching the spider,
    with ``hanging`` origins whose tdmrep.json never answers; their pages come after
    the healthy origin's fifth.  The crawl closes once the healthy origin is done."""
    healthy = site(servers, "127.0.0.2")
    for i in range(HEALTHY_PAGES):
        healthy.routes[f"/p{i}"] = PAGE
    healthy.routes["/first"] = PAGE
    stalled = []
    for n in range(hanging):
        other = site(servers, f"127.0.0.{3 + n}", file=Reply(hang=True))
        stalled += [Req(other.url(f"/s{i}")) for i in range(HANGING_PAGES)]
    pages = [Req(healthy.url(f"/p{i}")) for i in range(HEALTHY_PAGES)]
    plan = [Req(healthy.url("/first"), then=[*pages[:5], *stalled, *pages[5:]])]
    done = healthy.origin + "/"

    def healthy_done(outcomes) -> bool:
        return sum(1 for o in outcomes if o.url.startswith(done)) >= HEALTHY_PAGES + 1

    settings = {
        **TRAIN,
        # few places: two origins' responses waiting for their file would take them all
        "CONCURRENT_REQUESTS": 4,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
        "RFC9309_FETCH_TIMEOUT": 10,
        "DOWNLOAD_TIMEOUT": 15,
    }
    result, _ = await crawl_within(60, plan, settings, spider_attrs={"close_when": healthy_done})
    check_accounting(result)
    times = sorted(o.at for o in result.outcomes if o.url.startswith(done) and o.status == 200)
    assert len(times) == HEALTHY_PAGES + 1, (len(times), result.outcomes)
    return max(gaps(times)), result


@pytest_twisted.ensureDeferred
async def test_a_healthy_origin_flows_as_alone_beside_hanging_tdmrep_json_files(servers):
    """Two origins whose tdmrep.json never answers (a purpose declared): the
    healthy origin's pages go on (before: a gap of the fetch timeout, 10 s here,
    while their responses held every place).  The bound is generous, 3 s: this
    runs beside other suites on a shared machine; issue 36's 1.25 x its gap
    alone + 0.5 s is measured by ``benchmarks/hang_bench.py --tdmrep``."""
    together, result = await _healthy_beside(servers, 2)
    print(f"healthy origin's longest gap beside 2 hanging tdmrep.json: {together:.3f} s")
    assert together < 3.0, together
    # the hanging origins' pages waited in the gate, never at their server's door with a place
    assert result.stat("tdmrep/responses_waited") == 0


@pytest_twisted.ensureDeferred
async def test_a_close_ends_in_its_own_time_whatever_tdmrep_json_hangs(servers):
    """CLOSESPIDER_TIMEOUT = 2 with two origins whose tdmrep.json never answers and
    a fetch timeout of 15 s: the crawl ends within 5 s of the close being asked
    (before: 28.8 s with the default timeout, the waiting responses woken only at
    spider_closed); every request ends (accounted)."""
    plan = []
    hanging = []
    for n in range(2):
        other = site(servers, f"127.0.0.{2 + n}", file=Reply(hang=True))
        hanging.append(other)
        plan += [Req(other.url(f"/s{i}")) for i in range(4)]
    settings = {
        **TRAIN,
        "CLOSESPIDER_TIMEOUT": 2,
        "RFC9309_FETCH_TIMEOUT": 15,
        "DOWNLOAD_TIMEOUT": 20,
        "EXTENSIONS": {f"{__name__}.Opened": 0},
    }
    Opened.at = None
    result, _ = await crawl_within(45, plan, settings)
    ended = time.monotonic()
    assert Opened.at is not None
    asked = Opened.at + 2
    print(f"the crawl ended {ended - asked:.2f} s after the close was asked")
    assert result.stats["finish_reason"] == "closespider_timeout"
    assert ended - asked <= 5.0, ended - asked
    assert all(server.count(TDM) == 1 for server in hanging), [s.paths() for s in hanging]
    check_accounting(result)


# -- every hop of the file is one robots.txt allows -----------------------------------------
@pytest_twisted.ensureDeferred
async def test_a_tdmrep_json_redirect_to_a_disallowed_path_is_never_requested(servers):
    """``/.well-known/tdmrep.json`` redirects to ``/private/tdm.json``, on the same
    origin or on another, whose robots.txt says ``Disallow: /private/``: that URL
    is never requested (the other origin's robots.txt is asked first), and the file
    states nothing (before: the redirect was followed and its rules applied)."""
    rules = "User-agent: *\nDisallow: /private/\n"
    same = site(servers, "127.0.0.2", rules, file=redirect("/private/tdm.json"))
    same.routes["/private/tdm.json"] = tdm_file(RESERVING)
    target = site(servers, "127.0.0.4", rules)
    target.routes["/private/tdm.json"] = tdm_file(RESERVING)
    other = site(servers, "127.0.0.3", file=redirect(target.url("/private/tdm.json")))
    plan = [same.url("/reserved/a"), other.url("/reserved/b")]

    result, _ = await crawl_within(30, plan, TRAIN)

    assert same.count("/private/tdm.json") == 0, same.paths()
    assert target.count("/private/tdm.json") == 0, target.paths()
    assert same.count(TDM) == 1 and other.count(TDM) == 1
    # the other origin's robots.txt was fetched to decide the hop, once
    assert target.count("/robots.txt") == 1, target.paths()
    # the file stated nothing: the reserved pages were handed to the spider
    for url in plan:
        assert result.outcome(url).status == 200, result.outcome(url)
    assert result.stat("tdmrep/disallowed") == 2, result.rfc()
    assert not any(key.startswith("usage/dropped") for key in result.rfc()), result.rfc()
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_a_robots_txt_asked_for_the_hops_of_several_origins_files_is_fetched_once(servers):
    """Two origins' tdmrep.json redirect to one file on a third host (a CDN), whose
    robots.txt allows it; a page of that host is crawled after them: the host's
    robots.txt is fetched once in the whole crawl, the file it allows applies to both
    origins (before: fetched for each hop, aside from the cache, and again for the
    host's own page: three times)."""
    cdn = site(servers, "127.0.0.4")
    cdn.routes["/tdm/rules.json"] = tdm_file(RESERVING)
    cdn.routes["/page"] = PAGE
    first = site(servers, "127.0.0.2", file=redirect(cdn.url("/tdm/rules.json")))
    second = site(servers, "127.0.0.3", file=redirect(cdn.url("/tdm/rules.json")))
    for origin in (first, second):
        origin.routes["/open"] = PAGE
    plan = [
        Req(first.url("/open"), then=[Req(cdn.url("/page"))]),
        Req(first.url("/reserved/a")),
        Req(second.url("/open")),
        Req(second.url("/reserved/b")),
    ]

    result, _ = await crawl_within(30, plan, TRAIN)

    assert cdn.count("/robots.txt") == 1, cdn.paths()
    assert cdn.count("/tdm/rules.json") == 2 and cdn.count("/page") == 1, cdn.paths()
    for url in (first.url("/open"), second.url("/open"), cdn.url("/page")):
        assert result.outcome(url).status == 200, result.outcome(url)
    for url in (first.url("/reserved/a"), second.url("/reserved/b")):
        assert "tdmrep.json: rule 1: location /reserved/" in result.outcome(url).message, result.outcome(url)
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_a_file_redirected_to_another_host_with_every_lane_place_taken_does_not_hang(servers):
    """``RFC9309_FETCH_CONCURRENCY = 1``: the one place of the robots.txt lane is the
    tdmrep.json fetch's, whose redirect to another host needs that host's robots.txt
    first.  A hop holds no place while it is checked, so the crawl ends, the other
    host's robots.txt fetched once (an outsider's check, before: it waited for the
    place its own chain held; at the default 64 places, 100 origins whose file
    redirected to one host after 1 s hung the same way, 0 pages)."""
    cdn = site(servers, "127.0.0.4")
    cdn.routes["/tdm/rules.json"] = tdm_file(RESERVING)
    origins = [site(servers, f"127.0.0.{n}", file=redirect(cdn.url("/tdm/rules.json"))) for n in (2, 3)]
    for server in origins:
        server.routes["/open"] = PAGE
    plan = [url for server in origins for url in (server.url("/open"), server.url("/reserved/a"))]

    result, _ = await crawl_within(30, plan, {**TRAIN, "RFC9309_FETCH_CONCURRENCY": 1})

    assert cdn.count("/robots.txt") == 1 and cdn.count("/tdm/rules.json") == 2, cdn.paths()
    for server in origins:
        assert result.outcome(server.url("/open")).status == 200
        assert "tdmrep.json: rule 1" in result.outcome(server.url("/reserved/a")).message
    check_accounting(result)


@pytest.mark.parametrize("order", ["together", "one_after_the_other", "loop"])
@pytest_twisted.ensureDeferred
async def test_two_origins_whose_tdmrep_json_redirect_to_each_other_end(servers, order):
    """A's tdmrep.json redirects to a file on B, and B's to a file on A (``loop``: to
    each other's tdmrep.json, a redirect loop): each resolution asks the other's
    robots.txt, and neither waits for the other's files, so both end at once (no cycle
    of waits), and each robots.txt is fetched once: the other resolution's, read while
    its files are in flight, or the one resolved alone (an outsider's check, before: a
    loop fetched each robots.txt 4 times, once per hop to it).  Each file applies; the
    loop's states nothing (more than 5 redirects)."""
    a = site(servers, "127.0.0.2")
    b = site(servers, "127.0.0.3")
    target = "/.well-known/tdmrep.json" if order == "loop" else "/tdm.json"
    # (the redirects answer after both robots.txt did: a hop's host is then known or resolving its files)
    a.routes[TDM] = Reply(301, b"", {"Location": b.url(target)}, delay=0.3)
    b.routes[TDM] = Reply(301, b"", {"Location": a.url(target)}, delay=0.3)
    for server in (a, b):
        server.routes["/tdm.json"] = tdm_file(RESERVING)
        server.routes["/open"] = PAGE
    later = [Req(b.url("/open")), Req(b.url("/reserved/b"))]
    plan = [Req(a.url("/open"), then=later if order == "one_after_the_other" else []), Req(a.url("/reserved/a"))]
    plan += [] if order == "one_after_the_other" else later

    result, took = await crawl_within(30, plan, {**TRAIN, "RFC9309_FETCH_TIMEOUT": 10})

    assert took < 8.0, took  # no wait for a fetch timeout
    for server in (a, b):
        assert server.count("/robots.txt") == 1, server.paths()
        assert server.count("/tdm.json") == (0 if order == "loop" else 1), server.paths()
        assert result.outcome(server.url("/open")).status == 200
    for url in (a.url("/reserved/a"), b.url("/reserved/b")):
        if order == "loop":
            assert result.outcome(url).status == 200, result.outcome(url)
        else:
            assert "tdmrep.json: rule 1: location /reserved/" in result.outcome(url).message, result.outcome(url)
    check_accounting(result)


@pytest.mark.parametrize("how", ["dont_obey_robotstxt", "obey_false"])
@pytest_twisted.ensureDeferred
async def test_a_page_that_does_not_obey_robots_txt_fetches_no_disallowed_tdmrep_json(servers, how):
    """One page of an origin whose robots.txt says ``Disallow: /.well-known/``,
    sent with ``dont_obey_robotstxt`` (or its origin ``{"obey": False}``), with a
    purpose declared: the plugin never requests that origin's tdmrep.json (before:
    fetched on the page's response, robots.txt never asked)."""
    s = site(servers, "127.0.0.2", "User-agent: *\nDisallow: /.well-known/\n", file=tdm_file(RESERVING))
    settings: dict[str, Any] = dict(TRAIN)
    if how == "dont_obey_robotstxt":
        plan = [Req(s.url("/reserved/a"), meta={"dont_obey_robotstxt": True})]
    else:
        plan = [Req(s.url("/reserved/a"))]
        settings["RFC9309_ORIGINS"] = {s.origin: {"obey": False}}

    result, _ = await crawl_within(30, plan, settings)

    assert s.count(TDM) == 0, s.paths()
    assert result.outcome(s.url("/reserved/a")).status == 200
    assert s.count("/reserved/a") == 1
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_an_origin_whose_usage_is_not_read_waits_for_no_tdmrep_json(servers):
    """A purpose declared for the crawl and one origin opted out of it
    (``RFC9309_ORIGINS = {origin: {"usage": []}}``), its tdmrep.json never
    answering: its pages go on once robots.txt is known, its tdmrep.json is never
    requested, and none of its pages is sent back to the gate (before: the gate let
    them go without the file, the middleware asked for it, sent each back once and
    then waited for it in the downloader, holding a place for the fetch timeout)."""
    opted_out = site(servers, "127.0.0.2", file=Reply(hang=True))
    read = site(servers, "127.0.0.3")
    plan = [opted_out.url(f"/o{i}") for i in range(4)] + [read.url("/r0")]
    settings = {
        **TRAIN,
        "RFC9309_ORIGINS": {opted_out.origin: {"usage": []}},
        "RFC9309_FETCH_TIMEOUT": 10,
        "DOWNLOAD_TIMEOUT": 15,
    }

    result, took = await crawl_within(30, plan, settings)

    assert opted_out.count(TDM) == 0, opted_out.paths()
    assert read.count(TDM) == 1, read.paths()  # the crawl's own purpose: that origin's file is read
    for url in plan:
        assert result.outcome(url).status == 200, result.outcome(url)
    assert result.stat("gate/returned") in (None, 0), result.rfc()
    assert took < 8.0, took  # no page waited out the 10 s fetch timeout
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_a_held_page_that_alone_declares_a_purpose_is_not_let_through_on_robots_txt_alone(servers):
    """Two pages of an origin wait for its slow robots.txt: one declares no purpose (the crawl reads no usage
    statement, so its origin is resolved for robots.txt alone), the other declares ``train-ai`` in its meta,
    sent while the first waits.  Both are released together, not looked at again in the gate; the second
    still waits for the origin's tdmrep.json (fetched once, after robots.txt) and its reservation applies."""
    slow = site(servers, "127.0.0.2", file=tdm_file(RESERVING))
    slow.routes["/robots.txt"] = Reply(200, ALLOW_ALL, {"Content-Type": "text/plain"}, delay=1.0)
    slow.routes["/open"] = slow.routes["/reserved/p"] = PAGE
    fast = site(servers, "127.0.0.3")
    fast.routes["/x"] = PAGE
    declaring = Req(slow.url("/reserved/p"), meta={"rfc9309_usage": ["train-ai"]})
    plan = [Req(slow.url("/open")), Req(fast.url("/x"), then=[declaring])]

    result, _ = await crawl_within(30, plan, {})

    assert result.outcome(slow.url("/open")).status == 200
    assert result.outcome(fast.url("/x")).status == 200
    # the second was held beside the first (it came while robots.txt was on its way)
    assert slow.answered["/robots.txt"][0] > result.outcome(fast.url("/x")).at
    outcome = result.outcome(slow.url("/reserved/p"))
    assert outcome.error == "IgnoreRequest" and "train-ai" in outcome.message, outcome
    assert slow.count(TDM) == 1 and slow.count("/robots.txt") == 1, slow.paths()
    assert slow.paths().index(TDM) > slow.paths().index("/robots.txt")
    print("sent back to the gate by the middleware:", result.stat("gate/returned"))
    check_accounting(result)
