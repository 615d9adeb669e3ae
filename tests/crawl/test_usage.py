"""AI usage preferences in real crawls of loopback origins (issue 25):
Content-Usage rules with and without paths, conflicting identical paths,
Content-Signal, the Content-Usage header, and robots.txt and header together.
The right pages are skipped with the right line named, and the preferences
are in ``response.meta["rfc9309"]`` and in the audit trail.  With no purpose
declared nothing changes in what is downloaded."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest
import pytest_twisted

from .command_runner import scrapy_robots
from .harness import Req, Result, check_accounting, crawl
from .servers import Reply, robots

PAGE = "<html><body>page</body></html>"
USAGE_RULES = "User-agent: *\nDisallow: /never/\nContent-Usage: train-ai=n\nContent-Usage: /ai-ok/ train-ai=y\n"
CONFLICT = "User-agent: *\nContent-Usage: /p/ train-ai=y, search=y\nContent-Usage: /p/ train-ai=n\n"
SIGNAL = "User-agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n"
BOTH = "User-agent: *\nContent-Usage: train-ai=y\n"


def page(header: str | None = None) -> Reply:
    return Reply(200, PAGE, {"Content-Type": "text/html", **({"Content-Usage": header} if header else {})})


def setup(servers: Any) -> dict[str, Any]:
    rules, conflict, signal, header, both = (servers(f"127.0.0.{n}") for n in (2, 3, 4, 5, 6))
    rules.routes["/robots.txt"] = robots(USAGE_RULES)
    conflict.routes["/robots.txt"] = robots(CONFLICT)
    signal.routes["/robots.txt"] = robots(SIGNAL)
    header.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    header.routes["/h-no"] = page("train-ai=n")
    header.routes["/h-yes"] = page("train-ai=y")
    header.routes["/h-bad"] = page("Train-AI=n")
    both.routes["/robots.txt"] = robots(BOTH)
    both.routes["/search-no"] = page("search=n")
    both.routes["/train-no"] = page("train-ai=n")
    return {"rules": rules, "conflict": conflict, "signal": signal, "header": header, "both": both}


def plan(s: dict[str, Any]) -> list[str]:
    return [
        s["rules"].url("/test"), s["rules"].url("/ai-ok/test"), s["rules"].url("/never/test"),
        s["conflict"].url("/p/x"), s["conflict"].url("/q"),
        s["signal"].url("/x"),
        s["header"].url("/h-no"), s["header"].url("/h-yes"), s["header"].url("/h-bad"),
        s["both"].url("/search-no"), s["both"].url("/train-no"), s["both"].url("/plain"),
    ]  # fmt: skip


def value(prov: dict[str, Any], label: str) -> Any:
    return prov["usage"][label]["value"]


def lines(prov: dict[str, Any], label: str) -> list[tuple[str, int]]:
    return [(s["origin"], s["line"]) for s in prov["usage"][label]["sources"]]


def outcome(result: Result, server: Any, path: str) -> Any:
    return result.outcome(server.url(path))


@pytest_twisted.ensureDeferred
async def test_declared_train_ai_skips_the_right_pages_and_names_the_line(servers, tmp_path):
    s = setup(servers)
    audit = tmp_path / "audit.jsonl"
    result = await crawl(
        plan(s), {"RFC9309_USAGE": ["train-ai"], "RFC9309_AUDIT": {"path": str(audit), "allowed": True}}
    )
    check_accounting(result)
    rules, conflict, signal, header, both = (s[k] for k in ("rules", "conflict", "signal", "header", "both"))

    # Content-Usage without a path: denied, the line named; with a path: allowed
    o = outcome(result, rules, "/test")
    assert o.error == "IgnoreRequest"
    assert (
        o.message
        == "Forbidden by usage preferences: train-ai disallowed by robots.txt line 3: Content-Usage: train-ai=n"
    )
    o = outcome(result, rules, "/ai-ok/test")
    assert o.status == 200 and value(o.provenance, "train-ai") is True
    assert lines(o.provenance, "train-ai") == [("robots.txt", 4)]
    # not crawlable: robots.txt's own denial, no preferences
    assert outcome(result, rules, "/never/test").message.startswith("Forbidden by robots.txt: ")
    # conflicting identical paths: the most restrictive
    o = outcome(result, conflict, "/p/x")
    assert o.message.endswith("robots.txt line 3: Content-Usage: /p/ train-ai=n")
    o = outcome(result, conflict, "/q")
    assert o.status == 200 and value(o.provenance, "train-ai") is None
    # Content-Signal: ai-train=no is train-ai
    o = outcome(result, signal, "/x")
    assert o.message.endswith("robots.txt line 2: Content-Signal: search=yes, ai-train=no")
    # the header: dropped after the download (RFC9309_USAGE's "header": "drop", the default)
    o = outcome(result, header, "/h-no")
    assert o.error == "IgnoreRequest"
    assert o.message == "Dropped by usage preferences: train-ai disallowed by header: Content-Usage: train-ai=n"
    o = outcome(result, header, "/h-yes")
    assert (
        o.status == 200
        and value(o.provenance, "train-ai") is True
        and lines(o.provenance, "train-ai") == [("header", 0)]
    )
    o = outcome(result, header, "/h-bad")  # does not parse: unknown, allowed
    assert o.status == 200 and value(o.provenance, "train-ai") is None
    # robots.txt and header together
    o = outcome(result, both, "/search-no")
    assert o.status == 200
    assert value(o.provenance, "train-ai") is True and lines(o.provenance, "train-ai") == [("robots.txt", 2)]
    assert value(o.provenance, "search") is False and lines(o.provenance, "search") == [("header", 0)]
    o = outcome(result, both, "/train-no")
    assert o.message == "Dropped by usage preferences: train-ai disallowed by header: Content-Usage: train-ai=n"
    assert outcome(result, both, "/plain").status == 200

    assert result.stat("usage/denied/train-ai") == 3
    assert result.stat("usage/dropped/train-ai") == 2
    # the server saw the dropped pages (downloaded), never the denied ones (and, a purpose
    # being declared, the origin's tdmrep.json: issue 32)
    assert [h.path for h in rules.hits if h.path not in ("/robots.txt", "/.well-known/tdmrep.json")] == ["/ai-ok/test"]
    assert {h.path for h in header.hits} >= {"/h-no", "/h-yes"}

    # -- the audit trail -------------------------------------------------------------
    recs = [json.loads(line) for line in Path(audit).read_text().splitlines()]
    usage_recs = {(r["url"], r["action"], r["stage"]): r for r in recs if r["type"] == "usage"}
    assert set(usage_recs) == {
        (rules.url("/test"), "denied", "robots.txt"),
        (conflict.url("/p/x"), "denied", "robots.txt"),
        (signal.url("/x"), "denied", "robots.txt"),
        (header.url("/h-no"), "dropped", "header"),
        (both.url("/train-no"), "dropped", "header"),
    }
    r = usage_recs[(conflict.url("/p/x"), "denied", "robots.txt")]
    assert r["category"] == "train-ai" and [x["line"] for x in r["sources"]] == [3] and r["sha256"]
    allowed = {r["url"]: r for r in recs if r["type"] == "allowed"}
    assert allowed[rules.url("/ai-ok/test")]["usage"]["train-ai"]["value"] is True
    assert "usage" not in allowed[header.url("/h-yes")]  # robots.txt states nothing there
    # the header's preferences, with robots.txt's, once the response arrived
    received = {r["url"]: r["usage"] for r in recs if r["type"] == "response_usage"}
    assert received[header.url("/h-yes")]["train-ai"]["sources"] == [
        {"origin": "header", "line": 0, "text": "Content-Usage: train-ai=y"}
    ]
    assert received[both.url("/search-no")]["search"]["value"] is False
    assert received[both.url("/search-no")]["train-ai"]["sources"][0]["line"] == 2

    # -- replayed with scrapy robots --audit: the crawl's purposes, the file then in force
    process = scrapy_robots(
        "--audit", str(audit), rules.url("/test"), rules.url("/ai-ok/test"), header.url("/h-no"), cwd=tmp_path
    )
    assert process.returncode == 1, process.stderr
    out = process.stdout
    assert f"DENIED   {rules.url('/test')}" in out
    assert "usage: train-ai disallowed by robots.txt line 3: Content-Usage: train-ai=n" in out
    assert f"ALLOWED  {rules.url('/ai-ok/test')}" in out
    assert f"{rules.url('/test')}: the crawl denied it at " in out
    assert "train-ai disallowed by header: Content-Usage: train-ai=n" in out  # /h-no, dropped
    assert f"{header.url('/h-no')}: the crawl dropped it at " in out

    # -- the summary: the requests decided, and the records of single requests by kind (issue 38)
    process = scrapy_robots("--audit", str(audit), "--summary", cwd=tmp_path)
    assert process.returncode == 0, process.stderr
    head, singles, _, *rows = process.stdout.splitlines()
    allowed, denied = (sum(int(row.split()[i]) for row in rows) for i in (-2, -1))
    assert allowed + denied == result.stat("requests/checked")
    assert denied == len(result.ignored()) - 2  # the 2 pages dropped after their download count as allowed
    assert f"{allowed + denied} request(s) decided by robots.txt ({allowed} allowed, {denied} denied, as below)" in head
    kinds = [r["type"] for r in recs]
    assert singles == (
        f"records of single requests: {kinds.count('allowed')} allowed (written only with RFC9309_AUDIT's allowed), "
        f"{kinds.count('denied')} denied by robots.txt, 5 stopped by usage preferences (3 before the download, "
        "counted denied above; 2 after it, counted allowed)"
    )


@pytest.mark.main_run_only  # the command's usage report, with several scrapy subprocesses
@pytest_twisted.ensureDeferred
async def test_command_usage_online_and_file(servers, tmp_path):
    s = setup(servers)
    rules, signal = s["rules"], s["signal"]
    process = scrapy_robots(
        rules.url("/test"), rules.url("/ai-ok/x"), signal.url("/y"), "--usage", "train-ai", cwd=tmp_path
    )
    assert process.returncode == 1, process.stderr
    out = process.stdout
    assert "usage: train-ai disallowed by robots.txt line 3: Content-Usage: train-ai=n" in out
    assert "usage: train-ai disallowed by robots.txt line 2: Content-Signal: search=yes, ai-train=no" in out
    assert f"{rules.url('/ai-ok/x')}: train-ai=y, search=?, ai-input=?" in out
    # without --usage: the preferences are printed, nothing is denied by them
    process = scrapy_robots(rules.url("/test"), cwd=tmp_path)
    assert process.returncode == 0 and "train-ai: robots.txt line 3: Content-Usage: train-ai=n" in process.stdout
    # --file, from stdin, with paths
    process = scrapy_robots("--file", "-", "/p/x", "/q", "--usage", "ai-train", cwd=tmp_path, stdin=CONFLICT)
    assert process.returncode == 1
    assert (
        "DENIED   /p/x  usage: train-ai disallowed by robots.txt line 3: Content-Usage: /p/ train-ai=n"
        in process.stdout
    )
    assert "ALLOWED  /q" in process.stdout
    process = scrapy_robots("--lint", "-", cwd=tmp_path, stdin="User-agent: *\nContent-Usage: /a TRAIN-AI=n\n")
    assert process.returncode == 1 and "<stdin>:2: usage_unparsable" in process.stdout


@pytest_twisted.ensureDeferred
async def test_no_purpose_declared_changes_nothing_downloaded(servers):
    s = setup(servers)
    result = await crawl(plan(s))
    check_accounting(result)
    denied = [o.url for o in result.outcomes if o.error]
    assert denied == [s["rules"].url("/never/test")]  # only robots.txt's own Disallow
    assert not any(k.startswith("usage/") for k in result.rfc())
    # the preferences are still reported
    o = outcome(result, s["rules"], "/test")
    assert value(o.provenance, "train-ai") is False and lines(o.provenance, "train-ai") == [("robots.txt", 3)]
    o = outcome(result, s["both"], "/train-no")
    assert value(o.provenance, "train-ai") is False
    assert lines(o.provenance, "train-ai") == [("header", 0)]  # the disallowing statement


@pytest_twisted.ensureDeferred
async def test_mark_and_overrides(servers, caplog):
    s = setup(servers)
    rules, header = s["rules"], s["header"]
    settings = {
        "RFC9309_USAGE": {"purposes": "train-ai", "header": "mark"},
        "RFC9309_ORIGINS": {s["signal"].url(""): {"usage": []}},  # this origin: nothing declared
    }
    caplog.set_level(logging.INFO, logger="scrapy_rfc9309")
    result = await crawl(
        [
            rules.url("/test"),
            Req(rules.url("/test?again"), meta={"rfc9309_usage": []}),  # per request: off
            Req(rules.url("/ai-ok/a"), meta={"rfc9309_usage": ["search"]}),
            Req(rules.url("/ai-ok/b"), meta={"rfc9309_usage": ["no-such-purpose"]}),
            Req(header.url("/plain"), meta={"rfc9309_usage": "train-ai;"}),  # robots.txt states nothing
            s["signal"].url("/x"),
            header.url("/h-no"),
        ],
        settings,
    )
    assert outcome(result, rules, "/test").error == "IgnoreRequest"
    assert outcome(result, rules, "/test?again").status == 200
    assert outcome(result, rules, "/ai-ok/a").status == 200
    o = outcome(result, rules, "/ai-ok/b")
    assert o.error == "IgnoreRequest" and "invalid rfc9309_usage" in o.message
    assert outcome(result, s["signal"], "/x").status == 200
    o = outcome(result, header, "/h-no")  # marked: reaches the spider with the verdict
    assert o.status == 200
    assert o.provenance["usage_denied"] == {
        "category": "train-ai",
        "sources": [{"origin": "header", "line": 0, "text": "Content-Usage: train-ai=n"}],
    }
    assert result.stat("usage/marked/train-ai") == 1
    o = outcome(result, header, "/plain")
    assert o.message == (
        "Forbidden by usage preferences: invalid rfc9309_usage (rfc9309_usage: 'train-ai;' is not a usage "
        "category; known: ai-input, ai-train, search, train-ai)"
    )
    assert "/plain" not in {h.path for h in header.hits}  # refused before the download
    assert result.stat("usage/denied/invalid_purpose") == 2
    check_accounting(result)  # issue 30: the two invalid values are denials, counted as such
    assert result.stat("requests/denied/usage_preferences") == 3
    (summary,) = [r.getMessage() for r in caplog.records if r.getMessage().startswith("RFC 9309 robots.txt: origins")]
    assert summary.endswith("requests checked: 7, allowed: 4, denied: 3")


@pytest_twisted.ensureDeferred
async def test_an_invalid_purpose_on_a_request_that_skipped_the_check_is_dropped_not_denied(servers):
    # dont_obey_robotstxt: counted as allowed before the download; the header is read after
    # it, and only then is the bad value met: a drop of a downloaded response, not a denial
    s = setup(servers)
    header = s["header"]
    bad = Req(header.url("/h-no"), meta={"dont_obey_robotstxt": True, "rfc9309_usage": "train-ai;"})
    result = await crawl([bad], {"RFC9309_USAGE": ["train-ai"]})
    check_accounting(result)
    o = outcome(result, header, "/h-no")
    assert o.message.startswith("Dropped by usage preferences: invalid rfc9309_usage (")
    assert "/h-no" in {h.path for h in header.hits}
    assert result.stat("requests/allowed/allowed_not_obeyed") == 1
    assert result.stat("usage/dropped/invalid_purpose") == 1
    assert result.stat("requests/denied/usage_preferences") == 0


@pytest_twisted.ensureDeferred
async def test_unknown_deny(servers):
    s = setup(servers)
    rules, header = s["rules"], s["header"]
    result = await crawl(
        [rules.url("/ai-ok/x"), header.url("/h-yes"), header.url("/plain")],
        {"RFC9309_USAGE": {"purposes": ["train-ai"], "unknown": "deny"}},
    )
    check_accounting(result)
    assert outcome(result, rules, "/ai-ok/x").status == 200
    assert outcome(result, header, "/h-yes").status == 200
    o = outcome(result, header, "/plain")  # no statement anywhere
    assert o.message == (
        "Dropped by usage preferences: train-ai disallowed by no statement (RFC9309_USAGE's unknown = 'deny')"
    )
