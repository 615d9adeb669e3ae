"""Every machine-readable opt-out a site states, in real crawls (issue 32).

TDMRep (the origin's ``/.well-known/tdmrep.json``, the ``tdm-reservation`` /
``tdm-policy`` headers and meta tags, in the report's priority), page-level
robots directives (``X-Robots-Tag`` and robots / token meta tags: ``noai``,
``noimageai``, ``noindex``, ``none``, ``nofollow``), read on the response
where a purpose is declared: a page any of them reserves is not handed to the
spider (or is marked), and the reason names the source and its rule, header
or tag.  Without a declared purpose nothing is read and nothing changes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import pytest
import pytest_twisted

from scrapy_rfc9309 import settings as settings_module

from .harness import REACTORLESS, Outcome, Req, check_accounting, clock, crawl
from .servers import Reply, robots

TDM = "/.well-known/tdmrep.json"
POLICY_URL = "https://rights.example/policy.json"
#: the report's own shape: a reserved directory with its policy, an open one
FILE = json.dumps(
    [
        {"location": "/reserved/", "tdm-reservation": 1, "tdm-policy": POLICY_URL},
        {"location": "/open/", "tdm-reservation": 0},
    ]
)
ALLOW_ALL = robots("User-agent: *\nAllow: /\n")
TRAIN = {"RFC9309_USAGE": ["train-ai"]}


def html(head: str = "", body: str = "page", headers: dict[str, str] | None = None) -> Reply:
    text = f"<!DOCTYPE html>\n<html>\n<head>\n<title>t</title>\n{head}\n</head>\n<body>{body}</body>\n</html>\n"
    return Reply(200, text, {"Content-Type": "text/html; charset=utf-8", **(headers or {})})


def tdm_file(body: str | bytes, status: int = 200, **headers: str) -> Reply:
    return Reply(status, body, {"Content-Type": "application/json", **headers})


def site(servers: Any, host: str, file: Reply | None = None) -> Any:
    server = servers(host)
    server.routes["/robots.txt"] = ALLOW_ALL
    server.routes[TDM] = file if file is not None else Reply(404, "not found", {"Content-Type": "text/plain"})
    return server


def pages_seen(server: Any) -> list[str]:
    return [h.path for h in server.hits if h.path not in ("/robots.txt", TDM)]


def train(o: Outcome) -> Any:
    return o.provenance["usage"]["train-ai"]


def sources(o: Outcome, label: str = "train-ai") -> list[tuple[str, int, str]]:
    return [(s["origin"], s["line"], s["text"]) for s in o.provenance["usage"][label]["sources"]]


DROPPED = "Dropped by usage preferences: train-ai disallowed by "


# -- tdmrep.json -------------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_tdmrep_json_reserves_its_paths_and_names_the_rule(servers, tmp_path):
    s = site(servers, "127.0.0.2", tdm_file(FILE))
    audit = tmp_path / "audit.jsonl"
    result = await crawl(
        [s.url("/reserved/a.html"), s.url("/open/b.html"), s.url("/elsewhere.html")],
        {**TRAIN, "RFC9309_AUDIT": str(audit)},
    )
    check_accounting(result)
    o = result.outcome(s.url("/reserved/a.html"))
    assert o.message == (
        DROPPED + f"tdmrep.json: rule 1: location /reserved/, tdm-reservation 1, tdm-policy {POLICY_URL}"
    )
    o = result.outcome(s.url("/open/b.html"))
    assert o.status == 200 and train(o)["value"] is True
    assert sources(o) == [("tdmrep.json", 2, "rule 2: location /open/, tdm-reservation 0")]
    o = result.outcome(s.url("/elsewhere.html"))  # no rule matches: unset
    assert o.status == 200 and train(o)["value"] is None
    assert s.count(TDM) == 1  # once for the origin
    assert result.stat("tdmrep/fetch/count") == 1 and result.stat("tdmrep/files/rules") == 1
    assert result.stat("usage/dropped/train-ai") == 1
    # dropped after the download (the header and the page may supersede the file)
    assert sorted(pages_seen(s)) == ["/elsewhere.html", "/open/b.html", "/reserved/a.html"]
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    (usage,) = [r for r in records if r["type"] == "usage"]
    assert (usage["url"], usage["action"], usage["stage"]) == (s.url("/reserved/a.html"), "dropped", "tdmrep.json")
    assert usage["sources"][0]["line"] == 1
    (file,) = [r for r in records if r["type"] == "tdmrep"]
    assert file["origin"] == s.origin and file["status"] == 200 and file["rules"] == 2
    # the body is kept by its hash beside robots.txt's, and the trail verifies with it
    assert (audit.parent / "robots-bodies" / file["sha256"]).read_bytes() == FILE.encode()


@pytest_twisted.ensureDeferred
async def test_a_missing_broken_or_hanging_file_states_nothing_and_blocks_nothing(servers):
    files = {
        "127.0.0.2": Reply(404, "nope"),
        "127.0.0.3": Reply(500, "oops"),
        "127.0.0.4": tdm_file("{not json"),
        "127.0.0.5": tdm_file('{"location": "/", "tdm-reservation": 1}'),  # no array: nothing
        "127.0.0.6": Reply(hang=True),
    }
    made = {host: site(servers, host, reply) for host, reply in files.items()}
    healthy = site(servers, "127.0.0.7", tdm_file("[]"))
    plan = [server.url("/reserved/p") for server in made.values()]
    plan += [healthy.url(f"/h{i}") for i in range(6)]
    began = time.monotonic()
    result = await crawl(plan, {**TRAIN, "RFC9309_FETCH_TIMEOUT": 2, "CONCURRENT_REQUESTS": 2})
    check_accounting(result)
    for host, server in made.items():
        o = result.outcome(server.url("/reserved/p"))
        assert o.status == 200, (host, o)
        assert train(o)["value"] is None
    hanging = result.outcome(made["127.0.0.6"].url("/reserved/p"))
    # the hanging file's page waited for it in the gate at most the fetch timeout (then the
    # file says nothing) ...
    assert 1.5 <= hanging.at - began < 6, hanging.at - began
    # ... and held no place of the healthy origin's pages: they all came long before
    latest = max(result.outcome(healthy.url(f"/h{i}")).at for i in range(6))
    assert latest - began < 1.5, latest - began
    assert result.stat("tdmrep/fetch/error/DownloadTimeoutError") == 1
    assert result.stat("tdmrep/fetch/4xx") == 1 and result.stat("tdmrep/fetch/5xx") == 1
    assert result.stat("tdmrep/files/invalid") == 2
    assert not any(k.startswith("usage/dropped") for k in result.rfc())


@pytest_twisted.ensureDeferred
async def test_a_file_robots_txt_disallows_is_not_fetched(servers):
    s = site(servers, "127.0.0.2", tdm_file(FILE))
    s.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /.well-known/\n")
    result = await crawl([s.url("/reserved/a.html")], TRAIN)
    assert s.count(TDM) == 0
    assert result.outcome(s.url("/reserved/a.html")).status == 200
    assert result.stat("tdmrep/disallowed") == 1


# -- TDMRep headers and meta tags, and their priority -------------------------------------------
@pytest_twisted.ensureDeferred
async def test_tdm_headers_and_meta_tags_in_the_reports_priority(servers):
    s = site(servers, "127.0.0.2", tdm_file(FILE))
    s.routes["/plain/header1"] = html(headers={"tdm-reservation": "1", "tdm-policy": POLICY_URL})
    s.routes["/plain/meta1"] = html('<meta name="tdm-reservation" content="1">')
    s.routes["/plain/bad"] = html(headers={"tdm-reservation": "yes"})  # a protocol error: unset
    # the header supersedes the file: reserved by rule 1, not reserved by the header
    s.routes["/reserved/header0"] = html(headers={"tdm-reservation": "0"})
    # the meta tag supersedes both
    s.routes["/reserved/meta0"] = html('<meta name="tdm-reservation" content="0">', headers={"tdm-reservation": "1"})
    s.routes["/open/meta1"] = html('<meta name="TDM-Reservation" content="1">', headers={"tdm-reservation": "0"})
    paths = ["/plain/header1", "/plain/meta1", "/plain/bad", "/reserved/header0", "/reserved/meta0", "/open/meta1"]
    result = await crawl([s.url(p) for p in paths], TRAIN)
    check_accounting(result)
    assert (
        result.outcome(s.url("/plain/header1")).message
        == DROPPED + "header: tdm-reservation: 1; header: tdm-policy: " + POLICY_URL
    )
    assert result.outcome(s.url("/plain/meta1")).message == (
        DROPPED + 'html line 5: <meta name="tdm-reservation" content="1">'
    )
    o = result.outcome(s.url("/plain/bad"))
    assert o.status == 200 and train(o)["value"] is None
    o = result.outcome(s.url("/reserved/header0"))
    assert o.status == 200 and sources(o) == [("header", 0, "tdm-reservation: 0")]
    o = result.outcome(s.url("/reserved/meta0"))
    assert o.status == 200 and sources(o) == [("html", 5, '<meta name="tdm-reservation" content="0">')]
    assert result.outcome(s.url("/open/meta1")).message == (
        DROPPED + 'html line 5: <meta name="TDM-Reservation" content="1">'
    )
    assert result.stat("usage/dropped/train-ai") == 3


# -- X-Robots-Tag ------------------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_x_robots_tag_forms(servers):
    s = site(servers, "127.0.0.2")
    s.routes["/noai"] = html(headers={"X-Robots-Tag": "noai"})
    s.routes["/noimageai"] = html(headers={"X-Robots-Tag": "noindex, noimageai"})
    s.routes["/mine"] = html(headers={"X-Robots-Tag": "ExampleBot: noai, nosnippet"})
    s.routes["/theirs"] = html(headers={"X-Robots-Tag": "otherbot: noai"})
    s.routes["/lines"] = Reply(
        200,
        "<html></html>",
        {"Content-Type": "text/html"},
        header_lines=(("X-Robots-Tag", "otherbot: noai"), ("X-Robots-Tag", "exampleBOT: noai")),
    )
    s.routes["/malformed"] = html(headers={"X-Robots-Tag": "noai=please, ;;, no ai, : noai"})
    s.routes["/pdf"] = Reply(200, b"%PDF-1.4", {"Content-Type": "application/pdf", "X-Robots-Tag": "noai"})
    paths = ["/noai", "/noimageai", "/mine", "/theirs", "/lines", "/malformed", "/pdf"]
    result = await crawl([s.url(p) for p in paths], TRAIN)
    check_accounting(result)
    assert result.outcome(s.url("/noai")).message == DROPPED + "header: X-Robots-Tag: noai"
    assert result.outcome(s.url("/noimageai")).message == DROPPED + "header: X-Robots-Tag: noindex, noimageai"
    assert result.outcome(s.url("/mine")).message == DROPPED + "header: X-Robots-Tag: ExampleBot: noai, nosnippet"
    o = result.outcome(s.url("/theirs"))  # another crawler's: nothing for this one
    assert o.status == 200 and train(o)["value"] is None
    assert result.outcome(s.url("/lines")).message == DROPPED + "header: X-Robots-Tag: exampleBOT: noai"
    o = result.outcome(s.url("/malformed"))
    assert o.status == 200 and train(o)["value"] is None
    # any media type: the header is no HTML
    assert result.outcome(s.url("/pdf")).message == DROPPED + "header: X-Robots-Tag: noai"


@pytest_twisted.ensureDeferred
async def test_a_noai_line_after_many_other_x_robots_tag_lines_counts(servers):
    # issue 37: reading stopped after 16 KiB of X-Robots-Tag lines; every line counts now
    s = site(servers, "127.0.0.2")
    if REACTORLESS:  # aiohttp takes at most 128 field lines (of 8,190 bytes): 100 long ones, 20 KB
        others = [("X-Robots-Tag", ", ".join(f"otherbot{i}-{j}: noindex" for j in range(8))) for i in range(100)]
    else:  # 1,000 distinct lines, 23 KB
        others = [("X-Robots-Tag", f"otherbot{i}: noindex, nofollow") for i in range(1_000)]
    assert sum(len(value) for _, value in others) > 16_384
    late = ("X-Robots-Tag", "ExampleBot: noai")
    s.routes["/late"] = Reply(200, "<html></html>", {"Content-Type": "text/html"}, header_lines=(*others, late))
    s.routes["/others"] = Reply(200, "<html></html>", {"Content-Type": "text/html"}, header_lines=tuple(others))
    result = await crawl([s.url("/late"), s.url("/others")], TRAIN)
    check_accounting(result)
    assert result.outcome(s.url("/late")).message == DROPPED + "header: X-Robots-Tag: ExampleBot: noai"
    o = result.outcome(s.url("/others"))  # every line addressed to another crawler: nothing for this one
    assert o.status == 200 and train(o)["value"] is None and o.provenance["usage"]["search"]["value"] is None


# -- Content-Signal as a response header -------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_a_content_signal_header_is_read_as_the_robots_txt_line(servers):
    # issue 37: Cloudflare sends Content-Signal as a response header too
    s = site(servers, "127.0.0.2")
    s.routes["/no"] = html(headers={"Content-Signal": "search=yes, ai-train=no"})
    s.routes["/yes"] = html(headers={"Content-Signal": "ai-train=yes, search=yes, use=reference"})
    s.routes["/spelled"] = html(headers={"Content-Signal": "ai-train=No"})  # not the Token no: unknown
    s.routes["/both"] = html(headers={"Content-Signal": "ai-train=yes", "X-Robots-Tag": "noai"})
    s.routes["/lines"] = Reply(
        200,
        "<html></html>",
        {"Content-Type": "text/html"},
        header_lines=(("Content-Signal", "search=yes"), ("Content-Signal", "ai-input=no, ai-train=no")),
    )
    paths = ["/no", "/yes", "/spelled", "/both", "/lines"]
    result = await crawl([s.url(p) for p in paths], TRAIN)
    check_accounting(result)
    assert result.outcome(s.url("/no")).message == DROPPED + "header: Content-Signal: search=yes, ai-train=no"
    o = result.outcome(s.url("/yes"))
    assert o.status == 200 and train(o)["value"] is True
    assert (
        sources(o) == sources(o, "search") == [("header", 0, "Content-Signal: ai-train=yes, search=yes, use=reference")]
    )
    assert o.provenance["usage"]["use"]["value"] == "reference"
    o = result.outcome(s.url("/spelled"))
    assert o.status == 200 and train(o)["value"] is None
    # most restrictive with every other source
    assert result.outcome(s.url("/both")).message == DROPPED + "header: X-Robots-Tag: noai"
    # field lines joined with ", " (RFC 9651 4.2), as the Content-Usage header's
    assert result.outcome(s.url("/lines")).message == (
        DROPPED + "header: Content-Signal: search=yes, ai-input=no, ai-train=no"
    )
    assert result.stat("usage/dropped/train-ai") == 3


# -- robots meta tags --------------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_meta_tags_robots_and_the_token(servers):
    s = site(servers, "127.0.0.2")
    s.routes["/robots-noai"] = html('<meta name="robots" content="noai">')
    s.routes["/token-noai"] = html('<meta name="examplebot" content="noimageai">')
    s.routes["/other-token"] = html('<meta name="otherbot" content="noai">')
    s.routes["/in-body"] = html(body='<meta name="robots" content="noai">')  # not in the head: not read
    s.routes["/commented"] = html('<!-- <meta name="robots" content="noai"> -->')
    s.routes["/not-html"] = Reply(
        200, '<head><meta name="robots" content="noai"></head>', {"Content-Type": "text/plain"}
    )
    s.routes["/noindex"] = html('<meta name="robots" content="noindex">')
    paths = ["/robots-noai", "/token-noai", "/other-token", "/in-body", "/commented", "/not-html", "/noindex"]
    result = await crawl([s.url(p) for p in paths], TRAIN)
    check_accounting(result)
    assert result.outcome(s.url("/robots-noai")).message == DROPPED + 'html line 5: <meta name="robots" content="noai">'
    assert result.outcome(s.url("/token-noai")).message == (
        DROPPED + 'html line 5: <meta name="examplebot" content="noimageai">'
    )
    for path in ("/other-token", "/in-body", "/commented", "/not-html"):
        o = result.outcome(s.url(path))
        assert o.status == 200 and train(o)["value"] is None, path
    # noindex is no train-ai statement: reported (search=n), not enforced for train-ai
    o = result.outcome(s.url("/noindex"))
    assert o.status == 200 and o.provenance["usage"]["search"]["value"] is False
    assert result.stat("page/heads_read") == 6  # HTML only


@pytest_twisted.ensureDeferred
async def test_noindex_and_none_deny_search(servers):
    s = site(servers, "127.0.0.2")
    s.routes["/noindex"] = html('<meta name="robots" content="noindex">')
    s.routes["/none"] = html(headers={"X-Robots-Tag": "none"})
    s.routes["/noai"] = html('<meta name="robots" content="noai">')
    result = await crawl([s.url("/noindex"), s.url("/none"), s.url("/noai")], {"RFC9309_USAGE": ["search"]})
    check_accounting(result)
    search = "Dropped by usage preferences: search disallowed by "
    assert result.outcome(s.url("/noindex")).message == search + 'html line 5: <meta name="robots" content="noindex">'
    assert result.outcome(s.url("/none")).message == search + "header: X-Robots-Tag: none"
    assert result.outcome(s.url("/noai")).status == 200  # train-ai is not declared
    assert result.stat("usage/dropped/search") == 2


# -- nofollow ----------------------------------------------------------------------------------
#: the nofollow spider middleware enabled by hand, as the README shows
NOFOLLOW = {"SPIDER_MIDDLEWARES": {"scrapy_rfc9309.NofollowMiddleware": 950}}


def follow_ups(server: Any, page: str) -> Req:
    return Req(server.url(page), then=[Req(server.url(f"{page}/link1")), Req(server.url(f"{page}/link2"))])


@pytest_twisted.ensureDeferred
async def test_nofollow_pages_links_are_not_followed(servers, caplog):
    s = site(servers, "127.0.0.2")
    s.routes["/meta"] = html('<meta name="robots" content="nofollow">')
    s.routes["/header"] = html(headers={"X-Robots-Tag": "ExampleBot: none"})
    s.routes["/other"] = html(headers={"X-Robots-Tag": "otherbot: nofollow"})
    caplog.set_level(logging.INFO, logger="scrapy_rfc9309")
    plan = [follow_ups(s, "/meta"), follow_ups(s, "/header"), follow_ups(s, "/other")]
    # enabled by the add-on
    result = await crawl(plan, {"RFC9309_USAGE": ["ai-input"], "ADDONS": {"scrapy_rfc9309.Addon": 0}})
    assert result.outcome(s.url("/meta")).status == 200
    assert result.outcome(s.url("/header")).status == 200
    assert result.outcome(s.url("/meta")).provenance["nofollow"] == {
        "sources": [{"origin": "html", "line": 5, "text": '<meta name="robots" content="nofollow">'}],
        "enforced": True,
    }
    # the links of the nofollow pages never reached the scheduler, nor the server
    assert sorted(pages_seen(s)) == ["/header", "/meta", "/other", "/other/link1", "/other/link2"]
    assert {o.url for o in result.outcomes} == {
        s.url(p) for p in ("/meta", "/header", "/other", "/other/link1", "/other/link2")
    }
    assert result.stat("nofollow/requests_dropped") == 4 and result.stat("nofollow/pages") == 2
    said = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Not following ")]
    assert sorted(said) == [
        f"Not following 2 links of {s.url('/header')}: nofollow (header: X-Robots-Tag: ExampleBot: none)",
        f'Not following 2 links of {s.url("/meta")}: nofollow (html line 5: <meta name="robots" content="nofollow">)',
    ]


def sync_ok(self, response):
    """The harness's callback, as a plain generator (Scrapy's synchronous spider output)."""
    from .harness import Outcome as Out

    spec = response.meta["probe"]
    self.outcomes.append(
        Out(spec.url, status=response.status, at=time.monotonic(), provenance=response.meta.get("rfc9309"))
    )
    for nxt in spec.then:
        yield self._request(nxt)
    yield {"item": spec.url}  # items go on


@pytest_twisted.ensureDeferred
async def test_nofollow_with_a_synchronous_callback_and_switched_off(servers):
    s = site(servers, "127.0.0.2")
    s.routes["/meta"] = html('<meta name="robots" content="nofollow">')
    result = await crawl([follow_ups(s, "/meta")], {**TRAIN, **NOFOLLOW}, spider_attrs={"ok": sync_ok})
    assert pages_seen(s) == ["/meta"]
    assert result.stat("nofollow/requests_dropped") == 2
    assert result.stats.get("item_scraped_count") == 1
    off = await crawl(
        [follow_ups(s, "/meta")],
        {**NOFOLLOW, "RFC9309_USAGE": {"purposes": ["train-ai"], "nofollow": False}},
        spider_attrs={"ok": sync_ok},
    )
    assert sorted(pages_seen(s)) == ["/meta", "/meta", "/meta/link1", "/meta/link2"]
    assert off.outcome(s.url("/meta")).provenance["nofollow"]["enforced"] is False
    assert not any(k.startswith("nofollow/") for k in off.rfc())


# -- mark, report, no purpose ---------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_mark_mode_hands_reserved_pages_over_with_the_source(servers):
    s = site(servers, "127.0.0.2", tdm_file(FILE))
    s.routes["/x-robots"] = html(headers={"X-Robots-Tag": "noai"})
    result = await crawl(
        [s.url("/reserved/a"), s.url("/x-robots")], {"RFC9309_USAGE": {"purposes": ["train-ai"], "header": "mark"}}
    )
    check_accounting(result)
    o = result.outcome(s.url("/reserved/a"))
    assert o.status == 200
    assert o.provenance["usage_denied"]["category"] == "train-ai"
    assert [src["origin"] for src in o.provenance["usage_denied"]["sources"]] == ["tdmrep.json"]
    o = result.outcome(s.url("/x-robots"))
    assert o.provenance["usage_denied"]["sources"] == [{"origin": "header", "line": 0, "text": "X-Robots-Tag: noai"}]
    assert result.stat("usage/marked/train-ai") == 2


def every_source(servers: Any) -> Any:
    s = site(servers, "127.0.0.2", tdm_file(FILE))
    s.routes["/x-robots"] = html(headers={"X-Robots-Tag": "noai"})
    s.routes["/meta"] = html('<meta name="robots" content="noai, nofollow">')
    return s


@pytest_twisted.ensureDeferred
async def test_report_mode_reads_every_source_and_enforces_nothing_new(servers, tmp_path):
    s = every_source(servers)
    audit = tmp_path / "audit.jsonl"
    plan = [s.url("/reserved/a"), s.url("/x-robots"), follow_ups(s, "/meta")]
    result = await crawl(plan, {"RFC9309_USAGE": {"report": True}, "RFC9309_AUDIT": str(audit)})
    check_accounting(result)
    assert s.count(TDM) == 1
    assert all(o.status == 200 for o in result.outcomes) and len(result.outcomes) == 5
    assert sources(result.outcome(s.url("/reserved/a")))[0][0] == "tdmrep.json"
    assert sources(result.outcome(s.url("/x-robots"))) == [("header", 0, "X-Robots-Tag: noai")]
    meta = result.outcome(s.url("/meta"))
    assert sources(meta) == [("html", 5, '<meta name="robots" content="noai, nofollow">')]
    assert meta.provenance["nofollow"]["enforced"] is False  # reported: its links were followed
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    reported = {r["url"] for r in records if r["type"] == "response_usage"}
    assert reported == {s.url("/reserved/a"), s.url("/x-robots"), s.url("/meta")}
    assert [r["type"] for r in records].count("tdmrep") == 1
    assert not any(r["type"] == "usage" for r in records)


@pytest_twisted.ensureDeferred
async def test_without_a_purpose_nothing_is_read_and_no_file_is_fetched(servers):
    """(A guard: it passes on the code before issue 32 too, by design.)"""
    s = every_source(servers)
    result = await crawl([s.url("/reserved/a"), s.url("/x-robots"), follow_ups(s, "/meta")])
    check_accounting(result)
    assert s.count(TDM) == 0
    assert all(o.status == 200 for o in result.outcomes) and len(result.outcomes) == 5
    for o in result.outcomes:
        assert all(item["value"] is None for item in o.provenance["usage"].values())
        assert "nofollow" not in o.provenance
    assert not any(k.startswith(("tdmrep/", "page/", "nofollow/", "usage/")) for k in result.rfc())


@pytest_twisted.ensureDeferred
async def test_purposes_per_origin_and_per_request(servers):
    declared = every_source(servers)
    other = site(servers, "127.0.0.3", tdm_file(FILE))
    settings = {"RFC9309_ORIGINS": {declared.origin: {"usage": ["train-ai"]}}}
    plan = [
        declared.url("/reserved/a"),
        other.url("/reserved/a"),  # no purpose here: nothing read
        Req(other.url("/reserved/b"), meta={"rfc9309_usage": ["train-ai"]}),  # its own purpose
    ]
    result = await crawl(plan, settings)
    check_accounting(result)
    assert result.outcome(declared.url("/reserved/a")).message.startswith(DROPPED + "tdmrep.json: rule 1")
    assert result.outcome(other.url("/reserved/a")).status == 200
    assert result.outcome(other.url("/reserved/b")).message.startswith(DROPPED + "tdmrep.json: rule 1")
    assert declared.count(TDM) == 1 and other.count(TDM) == 1


@pytest_twisted.ensureDeferred
async def test_a_requests_own_purpose_in_a_crawl_that_declares_none_reports_nofollow_only(servers):
    """The nofollow middleware runs only where the crawl or an origin declares a purpose
    (else it would cost every response of every crawl): here the page's nofollow is read
    and reported, and its links are followed."""
    s = every_source(servers)
    plan = [Req(s.url("/meta"), meta={"rfc9309_usage": ["search"]}, then=[Req(s.url("/meta/link"))])]
    result = await crawl(plan, NOFOLLOW)
    assert result.outcome(s.url("/meta")).provenance["nofollow"]["enforced"] is False
    assert result.outcome(s.url("/meta/link")).status == 200


# -- the store ------------------------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_a_second_crawl_reads_tdmrep_json_from_its_sqlite_store(servers, tmp_path):
    s = site(servers, "127.0.0.2", tdm_file(FILE, **{"Cache-Control": "max-age=3600"}))
    store = {"RFC9309_STORAGE": f"sqlite:///{tmp_path / 'robots.sqlite'}"}
    first = await crawl([s.url("/open/a")], {**TRAIN, **store})
    second = await crawl([s.url("/reserved/b")], {**TRAIN, **store})
    assert s.count(TDM) == 1 and s.count("/robots.txt") == 1
    assert first.stat("tdmrep/fetch/count") == 1 and second.stat("tdmrep/storage_hits") == 1
    assert second.outcome(s.url("/reserved/b")).message.startswith(DROPPED + "tdmrep.json: rule 1")
    assert second.stat("cache/storage_hits") == 1  # robots.txt's own entry, beside it


def test_the_store_key_of_a_file_is_no_origin():
    from scrapy_rfc9309.origins import origin_of
    from scrapy_rfc9309.service import store_key

    key = store_key("http://example.com:80")
    assert key == "http://example.com:80/.well-known/tdmrep.json"
    assert origin_of(key) == "http://example.com:80" != key  # no origin is written with a path


@pytest_twisted.ensureDeferred
async def test_with_redis_one_worker_fetches_the_file_and_the_others_read_it(redis_server, servers):
    """Another worker holds the file's lease and stores its result 0.8 s after
    this crawl first needs it: the crawl fetches no tdmrep.json, its pages wait
    for that worker's file and are decided by it.  A second crawl reads it back."""
    from scrapy_rfc9309.origins import resource_url
    from scrapy_rfc9309.service import store_key
    from scrapy_rfc9309.storage import RobotsEntry
    from scrapy_rfc9309.storage.redis import RedisStorage

    from .test_storage_redis import in_task, redis_settings, starter

    s = site(servers, "127.0.0.2", tdm_file(FILE))
    other = RedisStorage(redis_server.url, prefix="t:")
    key = store_key(s.origin)

    async def hold() -> Any:
        await other.open()
        return await other.claim(key)

    lease = await in_task(hold())
    assert lease is not None
    published: list[Any] = []
    theirs = json.dumps([{"location": "/theirs/", "tdm-reservation": 1}]).encode()

    async def publish() -> None:
        await asyncio.sleep(0.8)
        now = time.time()
        entry = RobotsEntry("success", 200, theirs, "application/json", now, now + 3600, resource_url(s.origin, TDM))
        await other.put(key, entry)
        await lease.release()

    loop = clock()
    first = starter(servers, lambda: loop.callFromThread(lambda: published.append(in_task(publish()))))
    first.then = [Req(s.url("/theirs/x")), Req(s.url("/reserved/y"))]
    settings = {**TRAIN, **redis_settings(redis_server, "t:")}
    try:
        result = await crawl([first], settings)
    finally:
        for done in published:
            await done
        await in_task(other.close())
    assert s.count(TDM) == 0
    assert (
        result.outcome(s.url("/theirs/x")).message
        == DROPPED + "tdmrep.json: rule 1: location /theirs/, tdm-reservation 1"
    )
    assert result.outcome(s.url("/reserved/y")).status == 200  # their file has no rule for it
    assert result.stat("tdmrep/storage_hits") == 1 and result.stat("storage/lock_waits") >= 1
    second = await crawl([s.url("/theirs/z")], settings)
    assert s.count(TDM) == 0 and second.stat("tdmrep/storage_hits") == 1
    assert second.outcome(s.url("/theirs/z")).message.startswith(DROPPED + "tdmrep.json: rule 1")


# -- scrapy robots ----------------------------------------------------------------------------------
@pytest.mark.main_run_only  # the command's usage report, with several scrapy subprocesses
@pytest_twisted.ensureDeferred
async def test_command_shows_the_tdmrep_rule_and_with_page_what_the_page_states(servers, tmp_path):
    from .command_runner import scrapy_robots

    s = every_source(servers)
    s.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private/\n")
    bare = site(servers, "127.0.0.3")  # no tdmrep.json (404)
    urls = [s.url("/reserved/a"), s.url("/open/b"), s.url("/x-robots"), s.url("/private/c")]
    process = scrapy_robots(*urls, bare.url("/p"), "--usage", "train-ai", cwd=tmp_path)
    assert process.returncode == 1, process.stderr
    out = process.stdout
    assert f"  tdmrep.json:  GET {s.url(TDM)}: status 200 (success): 2 rules" in out
    assert f"  tdmrep.json:  no tdmrep.json (GET {bare.url(TDM)}: status 404 (unavailable))" in out
    assert "usage: train-ai disallowed by tdmrep.json: rule 1: location /reserved/, tdm-reservation 1" in out
    assert "train-ai: tdmrep.json: rule 2: location /open/, tdm-reservation 0" in out
    assert f"ALLOWED  {s.url('/x-robots')}" in out  # its header is read only with --page
    assert s.count("/x-robots") == 0 and s.count(TDM) == 1
    # --page: the pages robots.txt allows are fetched and read as a crawl reads them
    process = scrapy_robots(*urls, "--usage", "train-ai", "--page", cwd=tmp_path)
    assert process.returncode == 1, process.stderr
    out = process.stdout
    assert "usage: train-ai disallowed by header: X-Robots-Tag: noai" in out
    assert f"  page:         {s.url('/x-robots')}: GET status 200, text/html; charset=utf-8" in out
    assert f"{s.url('/private/c')}: not fetched (robots.txt disallows it)" in out
    assert s.count("/private/c") == 0
    meta = scrapy_robots(s.url("/meta"), "--page", cwd=tmp_path)  # no purpose: reported, exit 0
    assert meta.returncode == 0, meta.stderr
    assert 'train-ai: html line 5: <meta name="robots" content="noai, nofollow">' in meta.stdout
    assert 'nofollow: html line 5: <meta name="robots" content="noai, nofollow">' in meta.stdout
    # refused with one line, exit 2: --page is for URLs fetched online
    refused = scrapy_robots("--file", "-", "/x", "--page", cwd=tmp_path, stdin="User-agent: *\n")
    assert refused.returncode == 2
    assert (
        refused.stderr.strip() == "scrapy robots: --page fetches the pages online: it goes with URLs, not with --file"
    )


# -- the one resolution: what the file's fetch obeys (issue 36) ---------------------------
@pytest_twisted.ensureDeferred
async def test_a_file_one_product_token_may_not_fetch_is_not_fetched(servers):
    """Two product tokens, and robots.txt disallows tdmrep.json to one of them: the
    file is not requested (every token must allow it), and it states nothing."""
    s = site(servers, "127.0.0.2", tdm_file(FILE))
    s.routes["/robots.txt"] = robots("User-agent: SecondBot\nDisallow: /.well-known/\n\nUser-agent: *\nAllow: /\n")
    result = await crawl([s.url("/reserved/a.html")], {**TRAIN, "ROBOTSTXT_USER_AGENT": '["FirstBot", "SecondBot"]'})
    check_accounting(result)
    assert s.count(TDM) == 0
    assert result.stat("tdmrep/disallowed") == 1
    assert result.outcome(s.url("/reserved/a.html")).status == 200  # (the file's reservation never read)


@pytest_twisted.ensureDeferred
async def test_a_stale_file_is_fetched_again_before_the_next_page_goes(servers, monkeypatch):
    """tdmrep.json's lifetime ends mid-crawl: the origin's next page waits in the
    gate for the file fetched again, and the new file's rules decide it."""
    s = site(servers, "127.0.0.2")
    s.routes[TDM] = [tdm_file("[]", **{"Cache-Control": "max-age=1"}), tdm_file(FILE)]
    s.routes["/open/first.html"] = html()
    s.routes["/reserved/later.html"] = html()
    # the first file lives 1 s (the floor under a server's freshness, a constant of 60 s, lowered
    # to 1 s here): expired when the second page goes, while robots.txt (30 s) is still fresh
    monkeypatch.setattr(settings_module, "CACHE_MIN_SECONDS", 1.0)
    plan = [Req(s.url("/open/first.html"), then=[Req(s.url("/reserved/later.html"), pause=1.6)])]
    settings = {**TRAIN, "RFC9309_CACHE_SECONDS": 30}
    result = await crawl(plan, settings)
    check_accounting(result)
    assert s.count(TDM) == 2
    assert s.count("/robots.txt") == 1  # (robots.txt itself still fresh: only the file is fetched again)
    o = result.outcome(s.url("/reserved/later.html"))
    assert o.error == "IgnoreRequest" and o.message.startswith(DROPPED), o
