"""One meaning for "don't obey" (issue 37, item 6), in real crawls on loopback.

``ROBOTSTXT_OBEY = False``, a request's ``dont_obey_robotstxt`` and an origin's
``{"obey": False}`` turn off robots.txt's access rules (Allow/Disallow) and
mean the same for usage preferences: a purpose the crawl declared is still
enforced on what a page states (headers, meta tags, nofollow); robots.txt's own
usage lines and tdmrep.json count where they are already known, and nothing is
fetched for them.  Before: ``ROBOTSTXT_OBEY = False`` turned the plugin off, a
``noai`` page reached the spider.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
import pytest_twisted

from .harness import Req, check_accounting, crawl
from .servers import Reply, robots

TDM = "/.well-known/tdmrep.json"
TRAIN = {"RFC9309_USAGE": ["train-ai"]}
ADDON = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "DOWNLOADER_MIDDLEWARES": {}}
#: robots.txt disallows /private/ and states train-ai=n for /ai-no/; tdmrep.json reserves /reserved/
ROBOTS = "User-agent: *\nDisallow: /private/\nContent-Usage: /ai-no/ train-ai=n\n"
RESERVING = json.dumps([{"location": "/reserved/", "tdm-reservation": 1}])
DROPPED = "Dropped by usage preferences: train-ai disallowed by "
SWITCHES = ["ROBOTSTXT_OBEY", "dont_obey_robotstxt", "obey_false"]


def html(head: str = "", body: str = "page", **headers: str) -> Reply:
    text = f"<!DOCTYPE html>\n<html>\n<head>\n<title>t</title>\n{head}\n</head>\n<body>{body}</body>\n</html>\n"
    return Reply(200, text, {"Content-Type": "text/html; charset=utf-8", **headers})


def site(servers: Any, host: str = "127.0.0.2") -> Any:
    s = servers(host)
    s.routes["/robots.txt"] = robots(ROBOTS)
    s.routes[TDM] = Reply(200, RESERVING, {"Content-Type": "application/json"})
    s.routes["/noai-header"] = html(**{"X-Robots-Tag": "noai"})
    s.routes["/noai-meta"] = html('<meta name="robots" content="noai">')
    s.routes["/signal"] = html(**{"Content-Signal": "ai-train=no, search=yes"})
    s.routes["/nofollow"] = html('<meta name="robots" content="nofollow">')
    return s


def switched(how: str, s: Any, plan: list[Req], settings: dict[str, Any]) -> tuple[list[Req], dict[str, Any]]:
    """``plan`` and ``settings`` with robots.txt turned off by ``how``."""
    if how == "ROBOTSTXT_OBEY":
        return plan, {**ADDON, **settings, "ROBOTSTXT_OBEY": False}
    if how == "dont_obey_robotstxt":
        marked = [Req(r.url, meta={**r.meta, "dont_obey_robotstxt": True}, then=r.then) for r in plan]
        return marked, {**ADDON, **settings}
    return plan, {**ADDON, **settings, "RFC9309_ORIGINS": {s.origin: {"obey": False}}}


@pytest.mark.parametrize("how", SWITCHES)
@pytest_twisted.ensureDeferred
async def test_every_switch_turns_off_access_rules_and_keeps_page_statements(servers, how, caplog):
    """The three switches side by side: Disallow does not apply, what a page states
    does (``X-Robots-Tag``, the robots meta tag, the ``Content-Signal`` header, a
    nofollow page's links), and the plugin fetches nothing of the origin."""
    s = site(servers)
    follow = Req(s.url("/followed"))
    plan = [
        Req(s.url("/private/a")), Req(s.url("/plain")), Req(s.url("/noai-header")), Req(s.url("/noai-meta")),
        Req(s.url("/signal")), Req(s.url("/nofollow"), then=[follow]),
    ]  # fmt: skip
    plan, settings = switched(how, s, plan, TRAIN)
    with caplog.at_level(logging.INFO):
        result = await crawl(plan, settings)
    result.sent -= 1  # the nofollow page's link: dropped before it was scheduled, it has no outcome
    check_accounting(result)
    assert result.outcome(s.url("/private/a")).status == 200  # access rules off
    assert result.outcome(s.url("/plain")).status == 200
    assert result.outcome(s.url("/nofollow")).status == 200
    assert result.outcome(s.url("/noai-header")).message == DROPPED + "header: X-Robots-Tag: noai"
    assert result.outcome(s.url("/noai-meta")).message.startswith(DROPPED + "html line ")
    assert result.outcome(s.url("/signal")).message == DROPPED + "header: Content-Signal: ai-train=no, search=yes"
    assert s.count("/followed") == 0 and result.stat("nofollow/requests_dropped") == 1
    assert s.count("/robots.txt") == 0 and s.count(TDM) == 0  # nothing fetched for them
    assert result.stat("requests/allowed/allowed_not_obeyed") == 6
    assert result.stat("usage/dropped/train-ai") == 3
    assert result.outcome(s.url("/plain")).provenance["verdict"] == "allowed_not_obeyed"
    if how == "ROBOTSTXT_OBEY":  # said once, at start-up; the plugin is not off
        said = [r.getMessage() for r in caplog.records if "access rules are off" in r.getMessage()]
        assert len(said) == 1 and said[0].startswith("scrapy-rfc9309: robots.txt's access rules are off")
        assert not [r for r in caplog.records if "scrapy-rfc9309 is off" in r.getMessage()]
        # nor the line of a crawl that obeys robots.txt (its token, unreachable mode, cache)
        assert not [r for r in caplog.records if r.getMessage().startswith("RFC 9309 robots.txt: product token")]


@pytest_twisted.ensureDeferred
async def test_robotstxt_obey_false_in_a_spider_with_an_origin_purpose_keeps_it(servers):
    """``ROBOTSTXT_OBEY = False`` in the spider's custom_settings, a purpose declared only
    for one origin (``RFC9309_ORIGINS``' ``usage``, which also says ``obey: True``):
    access rules are off everywhere, that origin's purpose holds, the other has none."""
    s, other = site(servers), site(servers, "127.0.0.3")
    settings = {**ADDON, "RFC9309_ORIGINS": {s.origin: {"usage": ["train-ai"], "obey": True}}}
    result = await crawl(
        [s.url("/noai-header"), s.url("/private/a"), other.url("/noai-header")],
        settings,
        {"custom_settings": {"ROBOTSTXT_OBEY": False}},
    )
    check_accounting(result)
    assert result.outcome(s.url("/noai-header")).message == DROPPED + "header: X-Robots-Tag: noai"
    assert result.outcome(s.url("/private/a")).status == 200
    assert result.outcome(other.url("/noai-header")).status == 200  # no purpose declared there
    assert s.count("/robots.txt") == 0 and other.count("/robots.txt") == 0


@pytest_twisted.ensureDeferred
async def test_a_dont_obey_request_of_a_known_origin_meets_its_usage_lines_before_the_download(servers, tmp_path):
    """Once the origin is resolved (an obeyed page went first), a ``dont_obey_robotstxt``
    request meets robots.txt's ``Content-Usage`` and tdmrep.json as any request does:
    denied before the download (not downloaded), or dropped on the response, the line
    named; its Disallow still does not apply to it."""
    s = site(servers)
    later = [
        Req(s.url(path), meta={"dont_obey_robotstxt": True})
        for path in ("/ai-no/x", "/reserved/y", "/private/ai-no/z", "/private/p")
    ]
    audit = tmp_path / "audit.jsonl"
    result = await crawl([Req(s.url("/first"), then=later)], {**TRAIN, "RFC9309_AUDIT": str(audit)})
    check_accounting(result)
    assert result.outcome(s.url("/first")).status == 200
    denied = (
        "Forbidden by usage preferences: train-ai disallowed by robots.txt line 3: Content-Usage: /ai-no/ train-ai=n"
    )
    assert result.outcome(s.url("/ai-no/x")).message == denied
    assert s.count("/ai-no/x") == 0  # never downloaded
    assert (
        result.outcome(s.url("/reserved/y")).message
        == DROPPED + "tdmrep.json: rule 1: location /reserved/, tdm-reservation 1"
    )
    assert result.outcome(s.url("/private/p")).status == 200  # Disallow: /private/ is not obeyed
    assert result.stat("usage/denied/train-ai") == 1 and result.stat("requests/denied/usage_preferences") == 1
    assert s.count("/robots.txt") == 1 and s.count(TDM) == 1
    prov = result.outcome(s.url("/private/p")).provenance
    assert prov["verdict"] == "allowed_not_obeyed"
    # the trail has both usage decisions: before the download (robots.txt's line) and after it
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    usage = {r["url"]: (r["action"], r["stage"]) for r in records if r["type"] == "usage"}
    assert usage == {s.url("/ai-no/x"): ("denied", "robots.txt"), s.url("/reserved/y"): ("dropped", "tdmrep.json")}


# -- scrapy robots: what a crawl would download ---------------------------------------------------
def verdict(out: str, url: str) -> str:
    """The report's ``ALLOWED``/``DENIED`` line of ``url``, its column padding squeezed."""
    (line,) = [" ".join(x.split()) for x in out.splitlines() if x.split()[1:2] == [url]]
    return line


@pytest.mark.main_run_only  # the command's report, with several scrapy subprocesses
def test_command_page_does_not_fetch_what_a_crawl_never_downloads(servers, tmp_path):
    """``--page`` with a purpose: a page robots.txt's ``Content-Usage`` denies is reported
    denied and not fetched (before: downloaded and read), unless ``--fetch-denied``;
    a ``Disallow`` holds either way."""
    from .command_runner import scrapy_robots

    s = site(servers)
    urls = [s.url("/ai-no/x"), s.url("/plain"), s.url("/private/a")]
    process = scrapy_robots(*urls, "--usage", "train-ai", "--page", cwd=tmp_path)
    assert process.returncode == 1, process.stderr
    out = process.stdout
    assert verdict(out, s.url("/ai-no/x")).startswith(
        f"DENIED {s.url('/ai-no/x')} usage: train-ai disallowed by robots"
    )
    assert f"{s.url('/ai-no/x')}: not fetched (denied before the download, as in a crawl; --fetch-denied" in out
    assert f"{s.url('/plain')}: GET status 200" in out
    assert s.count("/ai-no/x") == 0 and s.count("/plain") == 1 and s.count("/private/a") == 0
    anyway = scrapy_robots(*urls, "--usage", "train-ai", "--page", "--fetch-denied", cwd=tmp_path)
    assert anyway.returncode == 1, anyway.stderr
    assert f"{s.url('/ai-no/x')}: GET status 200" in anyway.stdout
    assert s.count("/ai-no/x") == 1 and s.count("/private/a") == 0
    alone = scrapy_robots(s.url("/plain"), "--fetch-denied", cwd=tmp_path)
    assert alone.returncode == 2
    assert alone.stderr.strip() == "scrapy robots: --fetch-denied goes with --page (it fetches pages a crawl would not)"


@pytest.mark.parametrize("how", ["ROBOTSTXT_OBEY", "obey_false"])
def test_command_fetches_nothing_of_an_origin_not_obeyed_but_its_pages(servers, tmp_path, how):
    """As a crawl: no robots.txt, no tdmrep.json; the page is fetched and what it states
    decides (before: tdmrep.json fetched for an ``obey: False`` origin, and
    ``ROBOTSTXT_OBEY = False`` ignored)."""
    from .command_runner import scrapy_robots

    s = site(servers)
    switch = (
        "ROBOTSTXT_OBEY=False"
        if how == "ROBOTSTXT_OBEY"
        else f"RFC9309_ORIGINS={json.dumps({s.origin: {'obey': False}})}"
    )
    urls = [s.url("/noai-header"), s.url("/private/a")]
    process = scrapy_robots(*urls, "--usage", "train-ai", "--page", "-s", switch, cwd=tmp_path)
    assert process.returncode == 1, process.stderr
    out = process.stdout
    said = "ROBOTSTXT_OBEY = False" if how == "ROBOTSTXT_OBEY" else "RFC9309_ORIGINS: obey: False"
    assert f"robots.txt:   not fetched ({said})" in out
    assert "tdmrep.json:  not fetched (robots.txt not obeyed: a crawl fetches nothing of this origin)" in out
    denied = f"DENIED {s.url('/noai-header')} usage: train-ai disallowed by header: X-Robots-Tag: noai"
    assert verdict(out, s.url("/noai-header")) == denied
    assert verdict(out, s.url("/private/a")).startswith(f"ALLOWED {s.url('/private/a')} allowed_not_obeyed")
    assert s.count("/robots.txt") == 0 and s.count(TDM) == 0
    assert s.count("/noai-header") == 1 and s.count("/private/a") == 1
