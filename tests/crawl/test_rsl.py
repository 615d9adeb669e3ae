"""RSL 1.0 licenses in real crawls (issue 37 item 3): robots.txt's ``License:`` line leads to a
license, fetched once per origin through the resolution (robots-checked at every hop, bounded),
whose terms join the usage model before any page of the origin is downloaded; the decision names
the license's URL and the SHA-256 of its body, in the provenance and in the audit trail.
"""

from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import pytest_twisted

from .harness import Req, check_accounting, crawl, record_middleware_waits
from .servers import Reply, redirect, robots

TRAIN = {"RFC9309_USAGE": ["train-ai"]}
DENIED = "Forbidden by usage preferences: train-ai disallowed by license line "


def rsl(body: str) -> bytes:
    return f'<?xml version="1.0"?>\n<rsl xmlns="https://rslstandard.org/rsl">\n{body}\n</rsl>\n'.encode()


#: rslstandard.org's "Prohibit AI training" template, on one directory
PROHIBITS = rsl(
    '<content url="/articles/">\n<license>\n<prohibits type="usage">ai-train</prohibits>\n</license>\n</content>'
)
#: the RSL Collective's royalty license: training permitted against a royalty
ROYALTY = rsl(
    '<content url="/">\n<license>\n<permits type="usage">ai-train</permits>\n'
    '<payment type="royalty"><standard>https://rslcollective.org/license</standard></payment>\n</license>\n</content>'
)


def license_reply(body: bytes) -> Reply:
    return Reply(200, body, {"Content-Type": "application/rsl+xml"})


def site(servers: Any, host: str, license_url: str | None, extra: str = "") -> Any:
    server = servers(host)
    line = f"License: {license_url}\n" if license_url else ""
    server.routes["/robots.txt"] = robots(f"{line}User-agent: *\nAllow: /\n{extra}")
    return server


def pages(server: Any) -> list[str]:
    return sorted(h.path for h in server.hits if h.path.startswith(("/articles", "/about", "/p")))


@pytest_twisted.ensureDeferred
async def test_a_license_that_prohibits_training_drops_its_pages_before_the_download(servers, tmp_path):
    s = site(servers, "127.0.0.2", None)
    s.routes["/robots.txt"] = robots(f"User-agent: *\nAllow: /\nLicense: {s.url('/license.xml')}\n")
    s.routes["/license.xml"] = license_reply(PROHIBITS)
    audit = tmp_path / "audit.jsonl"
    plan = [s.url("/articles/a"), s.url("/articles/b"), s.url("/about")]
    result = await crawl(plan, {**TRAIN, "RFC9309_AUDIT": str(audit)})
    check_accounting(result)
    digest = hashlib.sha256(PROHIBITS).hexdigest()
    denied = result.outcome(s.url("/articles/a"))
    assert denied.error == "IgnoreRequest" and denied.message.startswith(DENIED + "4: ")
    assert s.url("/license.xml") in denied.message and f"sha256={digest[:16]}" in denied.message
    about = result.outcome(s.url("/about"))
    assert about.status == 200 and about.provenance["license"] == {"url": s.url("/license.xml"), "sha256": digest}
    assert pages(s) == ["/about"]  # the reserved pages were never downloaded
    assert s.count("/license.xml") == 1  # once for the origin
    assert result.stat("license/fetch/count") == 1 and result.stat("license/files/terms") == 1
    assert result.stat("usage/denied/train-ai") == 2
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    (lic,) = [r for r in records if r["type"] == "license"]
    assert (lic["url"], lic["sha256"], lic["origin"], lic["status"]) == (s.url("/license.xml"), digest, s.origin, 200)
    assert (audit.parent / "robots-bodies" / digest).read_bytes() == PROHIBITS
    usage = [r for r in records if r["type"] == "usage"]
    assert {r["url"] for r in usage} == {s.url("/articles/a"), s.url("/articles/b")}
    assert all(r["stage"] == "license" and digest[:16] in r["sources"][0]["text"] for r in usage)
    assert all(r["license"] == {"url": s.url("/license.xml"), "sha256": digest} for r in usage)


@pytest_twisted.ensureDeferred
async def test_a_use_permitted_against_payment_is_reserved_unless_the_crawl_holds_the_license(servers):
    lic = servers("127.0.0.3")  # the license on another host, as the RSL Collective's is
    lic.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    lic.routes["/royalty.xml"] = license_reply(ROYALTY)
    a = site(servers, "127.0.0.2", lic.url("/royalty.xml"))
    b = site(servers, "127.0.0.4", lic.url("/royalty.xml"))
    result = await crawl([a.url("/p1"), b.url("/p1")], TRAIN)
    check_accounting(result)
    for s in (a, b):
        o = result.outcome(s.url("/p1"))
        assert o.message.startswith(DENIED + "4: ") and "against royalty; license not held" in o.message
        assert pages(s) == []
    assert lic.count("/royalty.xml") == 2  # once per origin
    held = await crawl(
        [a.url("/p2"), b.url("/p2")],
        {"RFC9309_USAGE": {"purposes": ["train-ai"], "licenses": [lic.url("/royalty.xml")]}},
    )
    for s in (a, b):
        o = held.outcome(s.url("/p2"))
        assert o.status == 200 and o.provenance["usage"]["train-ai"]["value"] is True
        assert "license held" in o.provenance["usage"]["train-ai"]["sources"][0]["text"]
    by_host = await crawl([a.url("/p3")], {"RFC9309_USAGE": {"purposes": ["train-ai"], "licenses": ["127.0.0.3"]}})
    assert by_host.outcome(a.url("/p3")).status == 200


@pytest_twisted.ensureDeferred
async def test_a_license_behind_a_redirect_robots_txt_disallows_is_not_fetched(servers):
    s = site(servers, "127.0.0.2", None)
    s.routes["/robots.txt"] = robots(f"User-agent: *\nDisallow: /private/\nLicense: {s.url('/license.xml')}\n")
    s.routes["/license.xml"] = redirect("/private/license.xml", 302)
    s.routes["/private/license.xml"] = license_reply(PROHIBITS)
    result = await crawl([s.url("/articles/a")], TRAIN)
    check_accounting(result)
    assert s.count("/license.xml") == 1 and s.count("/private/license.xml") == 0
    assert result.outcome(s.url("/articles/a")).status == 200  # a license not read states nothing
    assert result.stat("license/fetch/3xx_disallowed") == 1
    # nor is one robots.txt disallows outright, nor one its own host's robots.txt disallows
    other = servers("127.0.0.3")
    other.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\n")
    other.routes["/license.xml"] = license_reply(PROHIBITS)
    t = site(servers, "127.0.0.4", other.url("/license.xml"))
    u = site(servers, "127.0.0.5", None)
    u.routes["/robots.txt"] = robots(f"User-agent: *\nDisallow: /license.xml\nLicense: {u.url('/license.xml')}\n")
    result = await crawl([t.url("/articles/a"), u.url("/articles/a")], TRAIN)
    assert other.count("/license.xml") == 0 and u.count("/license.xml") == 0
    assert result.stat("license/disallowed") == 2
    assert all(result.outcome(x.url("/articles/a")).status == 200 for x in (t, u))


@pytest_twisted.ensureDeferred
async def test_a_hanging_license_does_not_hold_other_origins(servers):
    slow = site(servers, "127.0.0.2", None)
    slow.routes["/robots.txt"] = robots(f"User-agent: *\nAllow: /\nLicense: {slow.url('/license.xml')}\n")
    slow.routes["/license.xml"] = Reply(hang=True)
    healthy = site(servers, "127.0.0.3", None)
    healthy.routes["/robots.txt"] = robots(f"User-agent: *\nAllow: /\nLicense: {healthy.url('/license.xml')}\n")
    healthy.routes["/license.xml"] = license_reply(PROHIBITS)
    began = time.monotonic()
    plan = [slow.url("/articles/x")] + [healthy.url(f"/p{i}") for i in range(6)]
    result = await crawl(plan, {**TRAIN, "RFC9309_FETCH_TIMEOUT": 2, "CONCURRENT_REQUESTS": 2})
    check_accounting(result)
    latest = max(result.outcome(healthy.url(f"/p{i}")).at for i in range(6))
    assert latest - began < 1.5, latest - began
    hanging = result.outcome(slow.url("/articles/x"))
    assert hanging.status == 200 and 1.5 <= hanging.at - began < 6, hanging.at - began
    assert result.stat("license/fetch/error/DownloadTimeoutError") == 1


@pytest_twisted.ensureDeferred
async def test_hostile_licenses_state_nothing_and_without_a_purpose_none_is_fetched(servers):
    bodies = {
        "127.0.0.2": b'<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>'
        + PROHIBITS.split(b"?>", 1)[1],
        "127.0.0.3": b"<rsl" + b"<x>" * 10_000,
        "127.0.0.4": b"x" * 200_000,
    }
    made = []
    for host, body in bodies.items():
        s = site(servers, host, None)
        s.routes["/robots.txt"] = robots(f"User-agent: *\nAllow: /\nLicense: {s.url('/license.xml')}\n")
        s.routes["/license.xml"] = license_reply(body)
        made.append(s)
    result = await crawl([s.url("/articles/a") for s in made], TRAIN)
    check_accounting(result)
    assert all(result.outcome(s.url("/articles/a")).status == 200 for s in made)
    assert result.stat("license/files/invalid") == 2 and result.stat("license/files/none") == 1
    plain = await crawl([s.url("/articles/b") for s in made])
    assert all(s.count("/license.xml") == 1 for s in made)  # the crawl without a purpose fetched none
    assert not any(k.startswith("license/") for k in plain.rfc())


@pytest_twisted.ensureDeferred
async def test_a_link_header_naming_a_license_is_recorded_in_the_provenance(servers):
    s = site(servers, "127.0.0.2", None)
    link = '<https://pub.example/license.xml>; rel="license"; type="application/rsl+xml", </p2>; rel="next"'
    s.routes["/p1"] = Reply(
        200, "<html><head></head><body>p</body></html>", {"Content-Type": "text/html", "Link": link}
    )
    result = await crawl([s.url("/p1")], TRAIN)
    o = result.outcome(s.url("/p1"))
    assert o.status == 200
    assert o.provenance["license_links"] == [{"url": "https://pub.example/license.xml", "source": "header"}]


@pytest_twisted.ensureDeferred
async def test_an_html_link_naming_a_license_is_recorded_as_the_header_is(servers):
    s = site(servers, "127.0.0.2", None)
    head = (
        '<!-- <link rel="license" type="application/rsl+xml" href="/commented.xml"> -->'
        '<link rel="stylesheet" href="/s.css"><link rel="Alternate License" type="application/RSL+xml" href="l.xml">'
        '<link rel="license" type="application/rsl+xml" href="https://pub.example/license.xml">'
    )
    link = '<https://pub.example/license.xml>; rel="license"; type="application/rsl+xml"'
    s.routes["/p/1"] = Reply(
        200, f"<html><head>{head}</head><body>p</body></html>", {"Content-Type": "text/html", "Link": link}
    )
    s.routes["/p/2"] = Reply(200, f"<html><head><title>t</title></head>{head}<body>p", {"Content-Type": "text/html"})
    result = await crawl([s.url("/p/1"), s.url("/p/2")], TRAIN)
    check_accounting(result)
    header = {"url": "https://pub.example/license.xml", "source": "header"}
    html = {"url": s.url("/p/l.xml"), "source": "html"}
    assert result.outcome(s.url("/p/1")).provenance["license_links"] == [header, html]  # once each, the header first
    after_head = result.outcome(s.url("/p/2")).provenance["license_links"]  # (a link after </head> is in the head)
    assert after_head == [html, {**header, "source": "html"}]


def test_the_command_shows_the_license_its_hash_and_the_decision(servers, tmp_path):
    from .command_runner import scrapy_robots

    s = site(servers, "127.0.0.2", None)
    s.routes["/robots.txt"] = robots(f"User-agent: *\nAllow: /\nLicense: {s.url('/license.xml')}\n")
    s.routes["/license.xml"] = license_reply(PROHIBITS)
    digest = hashlib.sha256(PROHIBITS).hexdigest()
    process = scrapy_robots(s.url("/articles/a"), s.url("/about"), "--usage", "train-ai", cwd=tmp_path)
    assert process.returncode == 1, process.stderr
    out = process.stdout
    assert f"license:      {s.url('/license.xml')} sha256={digest}: status 200 (success): 1 content(s)" in out
    assert f"usage: train-ai disallowed by license line 4: {s.url('/license.xml')} sha256={digest[:16]}" in out
    assert f"ALLOWED  {s.url('/about')}" in out
    assert s.count("/license.xml") == 1 and s.count("/articles/a") == 0


@pytest_twisted.ensureDeferred
async def test_with_a_lasting_store_a_license_is_fetched_once_and_read_back_for_every_origin(servers, tmp_path):
    """The license goes the one per-origin path tdmrep.json goes: with a SQLite store it is kept under
    a key of its URL (no origin's, nor tdmrep.json's), so a later crawl, and another origin naming
    the same license, read it back instead of fetching it; the decision and the trail are the same."""
    from scrapy_rfc9309.service import store_key

    lic = servers("127.0.0.3")
    lic.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    lic.routes["/royalty.xml"] = Reply(
        200, ROYALTY, {"Content-Type": "application/rsl+xml", "Cache-Control": "max-age=3600"}
    )
    a = site(servers, "127.0.0.2", lic.url("/royalty.xml"))
    b = site(servers, "127.0.0.4", lic.url("/royalty.xml"))
    store = {"RFC9309_STORAGE": f"sqlite:///{tmp_path / 'robots.sqlite'}"}
    first = await crawl([a.url("/p1")], {**TRAIN, **store})
    audit = tmp_path / "audit.jsonl"
    second = await crawl([a.url("/p2"), b.url("/p2")], {**TRAIN, **store, "RFC9309_AUDIT": str(audit)})
    check_accounting(second)
    assert lic.count("/royalty.xml") == 1  # once, for all crawls and origins
    assert first.stat("license/fetch/count") == 1 and second.stat("license/storage_hits") == 2
    assert not second.stat("license/fetch/count")
    digest = hashlib.sha256(ROYALTY).hexdigest()
    for s in (a, b):
        o = second.outcome(s.url("/p2"))
        assert o.message.startswith(DENIED + "4: ") and f"sha256={digest[:16]}" in o.message
        assert pages(s) == []
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    licenses = [r for r in records if r["type"] == "license"]
    assert sorted(r["origin"] for r in licenses) == sorted([a.origin, b.origin])
    assert all(r["stored"] and r["sha256"] == digest and r["url"] == lic.url("/royalty.xml") for r in licenses)
    assert store_key(lic.origin, "/.well-known/tdmrep.json", "license") != store_key(lic.origin)


def page(link: str = "", head: str = "") -> Reply:
    headers = {"Content-Type": "text/html", **({"Link": link} if link else {})}
    return Reply(200, f"<html><head>{head}</head><body>p</body></html>", headers)


def after_p1(s: Any, *paths: str) -> list[Req]:
    return [Req(s.url("/p1"), then=[Req(s.url(path)) for path in paths])]


def lic_link(url: str) -> str:
    return f'<{url}>; rel="license"; type="application/rsl+xml"'


@pytest_twisted.ensureDeferred
async def test_a_license_a_page_names_governs_the_next_requests_of_its_origin(servers, monkeypatch):
    """robots.txt names no license; the first page's Link header does: the origin adopts it, its next
    requests wait in the gate while it is fetched once, and its terms deny them before the download.
    The page's HTML link comes after the header: not the one adopted."""
    waited = record_middleware_waits(monkeypatch)
    s = site(servers, "127.0.0.2", None)
    s.routes["/p1"] = page(lic_link("/license.xml"), '<link rel="license" type="application/rsl+xml" href="/o.xml">')
    s.routes["/license.xml"] = license_reply(PROHIBITS)
    s.routes["/o.xml"] = license_reply(ROYALTY)
    result = await crawl(after_p1(s, "/articles/a", "/articles/b", "/about"), TRAIN)
    check_accounting(result)
    digest = hashlib.sha256(PROHIBITS).hexdigest()
    first = result.outcome(s.url("/p1"))  # the page itself is judged as before: downloaded, the links recorded
    assert first.status == 200 and [x["source"] for x in first.provenance["license_links"]] == ["header", "html"]
    for path in ("/articles/a", "/articles/b"):
        denied = result.outcome(s.url(path))
        assert denied.error == "IgnoreRequest" and denied.message.startswith(DENIED + "4: ")
        assert s.url("/license.xml") in denied.message and f"sha256={digest[:16]}" in denied.message
    about = result.outcome(s.url("/about"))
    assert about.status == 200 and about.provenance["license"] == {"url": s.url("/license.xml"), "sha256": digest}
    assert pages(s) == ["/about", "/p1"]  # the reserved pages were never downloaded
    assert s.count("/license.xml") == 1 and s.count("/o.xml") == 0 and s.count("/robots.txt") == 1
    assert result.stat("license/page_named") == 1 and result.stat("license/fetch/count") == 1
    # /p1 held for robots.txt, the next three for the license, unless it was known before the last of them reached
    # the gate (Scrapy 2.13 schedules a callback's requests over turns of the loop): none waited in the downloader
    assert 2 <= result.stat("gate/held") <= 4 and waited == [], (result.stat("gate/held"), waited)


@pytest_twisted.ensureDeferred
async def test_a_license_an_html_link_names_governs_the_next_requests_as_the_header_does(servers):
    s = site(servers, "127.0.0.2", None)
    s.routes["/p1"] = page(head='<link rel="license" type="application/rsl+xml" href="license.xml">')
    s.routes["/license.xml"] = license_reply(PROHIBITS)
    result = await crawl(after_p1(s, "/articles/a", "/about"), TRAIN)
    check_accounting(result)
    denied = result.outcome(s.url("/articles/a"))
    assert denied.message.startswith(DENIED + "4: ") and s.url("/license.xml") in denied.message
    assert result.outcome(s.url("/about")).status == 200
    assert pages(s) == ["/about", "/p1"] and s.count("/license.xml") == 1


@pytest_twisted.ensureDeferred
async def test_a_license_a_page_names_is_robots_checked_and_robots_txt_s_own_wins(servers):
    s = site(servers, "127.0.0.2", None, "Disallow: /license.xml\n")
    s.routes["/p1"] = page(lic_link("/license.xml"))
    s.routes["/license.xml"] = license_reply(PROHIBITS)
    t = site(servers, "127.0.0.3", None)  # its robots.txt names a license that prohibits nothing under /articles/
    t.routes["/robots.txt"] = robots(f"User-agent: *\nAllow: /\nLicense: {t.url('/free.xml')}\n")
    t.routes["/free.xml"] = license_reply(rsl('<content url="/nothing/">\n<license/>\n</content>'))
    t.routes["/p1"] = page(lic_link("/license.xml"))
    t.routes["/license.xml"] = license_reply(PROHIBITS)
    result = await crawl(after_p1(s, "/articles/a") + after_p1(t, "/articles/a"), TRAIN)
    check_accounting(result)
    assert all(result.outcome(x.url("/articles/a")).status == 200 for x in (s, t))
    assert s.count("/license.xml") == 0 and t.count("/license.xml") == 0 and t.count("/free.xml") == 1
    assert result.stat("license/page_named") == 1 and result.stat("license/disallowed") == 1


@pytest_twisted.ensureDeferred
async def test_an_adopted_license_is_forgotten_with_its_origin(servers):
    a = site(servers, "127.0.0.2", None)
    a.routes["/p1"] = page(lic_link("/license.xml"))
    a.routes["/license.xml"] = license_reply(PROHIBITS)
    b = site(servers, "127.0.0.3", None)
    plan = [Req(a.url("/p1"), then=[Req(b.url("/p1"), then=[Req(a.url("/articles/a"))])])]
    result = await crawl(plan, {**TRAIN, "RFC9309_CACHE_MAX_ORIGINS": 1})  # b's robots.txt evicts a
    check_accounting(result)
    assert result.stat("license/page_named") == 1 and result.stat("cache/evictions") >= 1
    assert a.count("/robots.txt") == 2 and a.count("/license.xml") == 0
    assert result.outcome(a.url("/articles/a")).status == 200


@pytest_twisted.ensureDeferred
async def test_requests_released_before_a_page_names_a_license_go_back_to_the_gate_not_wait_downloading(
    servers, monkeypatch
):
    """Twelve requests of one origin are released together when its robots.txt comes; one place in the
    downloader, so the first page's Link header names a license while the rest are released and not yet
    checked.  Each that comes to the middleware while the license is not yet known goes back to the
    gate (returned once) and waits there for it, not in a downloader place; the license decides all."""
    waited = record_middleware_waits(monkeypatch)
    s = site(servers, "127.0.0.2", None)
    s.routes["/p1"] = page(lic_link("/license.xml"))
    s.routes["/license.xml"] = license_reply(PROHIBITS)
    rest = [f"/articles/a{i}" for i in range(6)] + [f"/about{i}" for i in range(5)]
    plan = [Req(s.url("/p1"))] + [Req(s.url(path)) for path in rest]
    result = await crawl(plan, {**TRAIN, "CONCURRENT_REQUESTS": 1})
    check_accounting(result)
    assert waited == []
    assert result.outcome(s.url("/p1")).status == 200
    for path in rest:
        outcome = result.outcome(s.url(path))
        if path.startswith("/articles/"):
            assert outcome.error == "IgnoreRequest" and outcome.message.startswith(DENIED), outcome
        else:
            assert outcome.status == 200 and outcome.provenance["license"]["url"] == s.url("/license.xml"), outcome
    assert pages(s) == sorted(["/p1", *(p for p in rest if p.startswith("/about"))])
    # each returned at most once; how many met the origin stale depends on when the license came in
    assert 1 <= result.stat("gate/returned") <= len(rest) and s.count("/license.xml") == 1
