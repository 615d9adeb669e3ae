"""Provable compliance (issue 15), shown by real crawls of loopback servers:
provenance on every allowed response, the audit trail (one record per fetch
and per denial, bodies kept by SHA-256), its replay with ``scrapy robots
--audit``, changes noticed on a re-fetch, and several product tokens at once."""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

import pytest_twisted

from scrapy_rfc9309 import robots_service
from scrapy_rfc9309 import settings as settings_module
from scrapy_rfc9309.audit import BODIES_DIR

from .command_runner import scrapy_robots
from .harness import Req, check_accounting, crawl
from .servers import Reply, closed_port, redirect, robots

ORDINARY = "User-agent: *\nDisallow: /private\nAllow: /private/ok\n"
FIRST = "User-agent: *\nDisallow: /old\nDisallow: /kept\n"
SECOND = "# rules changed\nUser-agent: *\nDisallow: /kept\nDisallow: /new\n"
FINAL = "User-agent: *\nDisallow: /secret\n"
BOT_GROUP = "User-agent: ExampleBot\nDisallow: /bot-only\n\nUser-agent: *\nDisallow: /\n"
TEMP = "User-agent: *\nDisallow: /tmp/\n"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def verdicts(stdout: str) -> dict[str, str]:
    """``url -> "DENIED <reason>"`` of every verdict line the command printed."""
    found = {}
    for line in stdout.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in ("ALLOWED", "DENIED"):
            found[parts[1]] = f"{parts[0]} {' '.join(parts[2:])}"
    return found


@pytest_twisted.ensureDeferred
async def test_audit_trail_of_eleven_origins_records_every_fetch_and_denial_and_replays_them(
    servers, tmp_path, caplog, monkeypatch
):
    # a server's max-age of 1 s is kept 60 s (the constant floor): no floor here, so it shows
    monkeypatch.setattr(settings_module, "CACHE_MIN_SECONDS", 0.0)
    ordinary, gone, busy, moved, target = (servers(f"127.0.0.{n}") for n in (2, 3, 4, 5, 6))
    changing, bot, empty, temp, limited = (servers(f"127.0.0.{n}") for n in (7, 8, 9, 10, 11))
    refused = f"http://127.0.0.12:{closed_port('127.0.0.12')}"
    ordinary.routes["/robots.txt"] = robots(ORDINARY)
    gone.routes["/robots.txt"] = Reply(404, "User-agent: *\nDisallow: /\n")
    busy.routes["/robots.txt"] = Reply(503, "busy")
    moved.routes["/robots.txt"] = redirect(moved.url("/r1"))
    moved.routes["/r1"] = redirect(target.url("/final.txt"), 302)
    target.routes["/final.txt"] = robots(FINAL)
    target.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    # the second fetch (after max-age) gets another file
    changing.routes["/robots.txt"] = [robots(FIRST, Cache_Control="max-age=1"), robots(SECOND)]
    bot.routes["/robots.txt"] = robots(BOT_GROUP)
    empty.routes["/robots.txt"] = robots("")
    temp.routes["/robots.txt"] = robots(TEMP)
    limited.routes["/robots.txt"] = Reply(429, "slow down")
    audit = tmp_path / "audit" / "crawl.jsonl"

    plan = [
        ordinary.url("/public"), ordinary.url("/private/x"), ordinary.url("/private/ok"),
        gone.url("/anything"), busy.url("/page"), moved.url("/secret/1"), moved.url("/open"),
        target.url("/x"), bot.url("/bot-only/1"), bot.url("/fine"), empty.url("/a"),
        temp.url("/tmp/a"), temp.url("/b"), limited.url("/c"), refused + "/d",
        Req(changing.url("/old"), then=[Req(changing.url("/new"), pause=1.5), Req(changing.url("/other"), pause=1.5)]),
    ]  # fmt: skip
    with caplog.at_level(logging.INFO, logger="scrapy_rfc9309"):
        result = await crawl(plan, {"RFC9309_AUDIT": str(audit)})
    check_accounting(result)

    # -- provenance: every allowed response, hash = the body served --------------------
    allowed = [o for o in result.outcomes if o.status is not None]
    assert len(allowed) == 9
    for outcome in allowed:
        assert outcome.provenance is not None, outcome
        assert outcome.provenance["verdict"].startswith("allowed_")
        assert outcome.provenance["tokens"] == ["ExampleBot"]
    served = {
        ordinary.url("/private/ok"): (ORDINARY, ordinary.url("/robots.txt"), "allowed_explicit", 3),
        moved.url("/open"): (FINAL, target.url("/final.txt"), "allowed_implicit", None),
        bot.url("/fine"): (BOT_GROUP, bot.url("/robots.txt"), "allowed_implicit", None),
        empty.url("/a"): ("", empty.url("/robots.txt"), "allowed_implicit", None),
        changing.url("/other"): (SECOND, changing.url("/robots.txt"), "allowed_implicit", None),
    }
    for url, (body, robots_url, verdict, line) in served.items():
        meta = result.outcome(url).provenance
        assert meta["sha256"] == sha(body), url
        assert (meta["robots_url"], meta["status"], meta["access"]) == (robots_url, 200, "success")
        assert (meta["verdict"], meta["line"]) == (verdict, line)
        assert meta["fetched_at"].endswith("Z")
    assert result.outcome(ordinary.url("/private/ok")).provenance["rule"] == "Allow: /private/ok"
    unavailable = result.outcome(gone.url("/anything")).provenance
    assert (unavailable["verdict"], unavailable["status"], unavailable["sha256"]) == ("allowed_unavailable", 404, None)

    # -- the trail: one record per fetch and per denial -----------------------------------
    trail = records(audit)
    assert trail[0]["type"] == "crawl" and trail[0]["tokens"] == ["ExampleBot"]
    assert trail[-1]["type"] == "closed"
    fetches = [r for r in trail if r["type"] == "fetch"]
    assert len(fetches) == result.stat("fetch/count") == 12
    by_origin: dict[str, list[dict]] = {}
    for record in fetches:
        by_origin.setdefault(record["origin"], []).append(record)
    for server in (ordinary, gone, busy, moved, target, changing, bot, empty, temp, limited):
        assert len(by_origin[server.origin]) == server.count("/robots.txt"), server.origin
    assert len(by_origin[refused]) == 1
    assert [r["access"] for r in by_origin[refused]] == ["unreachable"]
    assert "ConnectionRefused" in by_origin[refused][0]["error"]
    assert [(r["status"], r["access"]) for r in by_origin[busy.origin]] == [(503, "unreachable")]
    assert [(r["status"], r["access"]) for r in by_origin[limited.origin]] == [(429, "unreachable")]
    assert [(r["status"], r["access"], r["sha256"]) for r in by_origin[gone.origin]] == [(404, "unavailable", None)]
    chain = by_origin[moved.origin][0]
    assert chain["chain"] == [moved.url("/robots.txt"), moved.url("/r1"), target.url("/final.txt")]
    assert (chain["redirects"], chain["final_url"], chain["sha256"]) == (2, target.url("/final.txt"), sha(FINAL))
    assert chain["bytes"] == len(FINAL) and chain["truncated_bytes"] == 0
    assert chain["crawl_delay"] == {"ExampleBot": None} and chain["expires_at"] > chain["fetched_at"]

    denials = [r for r in trail if r["type"] == "denied"]
    forbidden = {o.url: o.message for o in result.ignored()}
    assert sorted(r["url"] for r in denials) == sorted(forbidden) and len(denials) == len(forbidden) == 9
    for record in denials:
        expected = forbidden[record["url"]].removeprefix("Forbidden by robots.txt: ")
        line = f" (line {record['line']}: {record['rule']})" if record["line"] else ""
        assert record["verdict"] + line == expected
    assert not [r for r in trail if r["type"] == "allowed"]  # RFC9309_AUDIT's "allowed" is off

    # every body is kept once, under its hash
    bodies = audit.parent / BODIES_DIR
    for record in fetches:
        if record["sha256"]:
            assert hashlib.sha256((bodies / record["sha256"]).read_bytes()).hexdigest() == record["sha256"]
    assert len(list(bodies.iterdir())) == len({r["sha256"] for r in fetches if r["sha256"]})

    # -- the change: both hashes in the trail, one INFO line, a stat ----------------------
    first, second = by_origin[changing.origin]
    assert (first["sha256"], second["sha256"]) == (sha(FIRST), sha(SECOND))
    assert second["changed"] is True and second["previous_sha256"] == sha(FIRST)
    assert second["added"] == ["line 4: Disallow: /new"] and second["removed"] == ["line 2: Disallow: /old"]
    assert "changed" not in first
    assert result.stat("changes") == 1
    changed = [r.getMessage() for r in caplog.records if "changed (sha256" in r.getMessage()]
    assert changed == [
        f"robots.txt of {changing.origin} changed (sha256 {sha(FIRST)[:12]} -> {sha(SECOND)[:12]}); rules for "
        "ExampleBot added: line 4: Disallow: /new; removed: line 2: Disallow: /old"
    ]

    # -- replay: the same verdict and line for every denial, from the kept bodies ----------
    process = scrapy_robots("--audit", str(audit), *forbidden, cwd=tmp_path)
    assert process.returncode == 1, process.stdout + process.stderr
    replayed = verdicts(process.stdout)
    for url, message in forbidden.items():
        assert replayed[url] == "DENIED " + message.removeprefix("Forbidden by robots.txt: "), url
    # /old was denied by the first file, which the server no longer serves
    assert f"fetched {first['fetched_at']}, sha256 {sha(FIRST)}" in process.stdout
    assert changing.count("/robots.txt") == 2  # the replay fetched nothing

    # a URL never requested: the origin's last file in force
    process = scrapy_robots("--audit", str(audit), changing.url("/old"), changing.url("/kept/x"), cwd=tmp_path)
    assert process.returncode == 1
    assert verdicts(process.stdout)[changing.url("/kept/x")] == "DENIED disallowed_explicit (line 3: Disallow: /kept)"

    summary = scrapy_robots("--audit", str(audit), "--summary", cwd=tmp_path)
    assert summary.returncode == 0, summary.stderr
    head, singles, *table = summary.stdout.splitlines()
    rows = {line.split()[0]: line.split() for line in table[1:]}
    # issue 38: the head said "N decision record(s)" above a table whose counts were others; it
    # now gives the table's sums, and the records of single requests apart, by kind
    allowed, denied = (sum(int(row[i]) for row in rows.values()) for i in (-2, -1))
    assert (
        f" {allowed + denied} request(s) decided by robots.txt ({allowed} allowed, {denied} denied, as below)" in head
    )
    assert singles.startswith(f"records of single requests: 0 allowed (written only with RFC9309_AUDIT's allowed), "
                              f"{len(denials)} denied by robots.txt, 0 stopped by usage preferences"), singles  # fmt: skip
    # origin, fetches, result (access, status), changes, allowed, denied
    assert rows[changing.origin] == [changing.origin, "2", "success", "(200)", "1", "1", "2"]
    assert rows[ordinary.origin] == [ordinary.origin, "1", "success", "(200)", "0", "2", "1"]
    assert rows[busy.origin] == [busy.origin, "1", "unreachable", "(503)", "0", "0", "1"]

    usage = scrapy_robots("--audit", str(audit), "not-a-url", cwd=tmp_path)
    assert usage.returncode == 2 and "not an absolute http(s) URL" in usage.stderr


TWO_TOKENS = (
    "User-agent: ExampleBot\nDisallow: /private\nCrawl-delay: 0.1\n\n"
    "User-agent: CCBot\nDisallow: /ai\nCrawl-delay: 0.3\n\n"
    "User-agent: *\nDisallow: /\n"
)


@pytest_twisted.ensureDeferred
async def test_two_tokens_deny_what_either_group_denies_and_the_floor_is_the_largest(servers, tmp_path):
    site, per_origin, by_meta = servers("127.0.0.2"), servers("127.0.0.3"), servers("127.0.0.4")
    for server in (site, per_origin, by_meta):
        server.routes["/robots.txt"] = robots(TWO_TOKENS)
    urls = [site.url("/private/1"), site.url("/ai/1"), site.url("/ok")]
    one = await crawl(urls)  # one token: the CCBot group is not consulted
    assert one.outcome(site.url("/ai/1")).status == 200

    settings = {
        "ROBOTSTXT_USER_AGENT": ["ExampleBot/1.0 (+https://example.com)", "CCBot/2.0"],
        "RFC9309_ORIGINS": {per_origin.origin: {"user_agent": ["ExampleBot", "CCBot"]}},
        "RFC9309_AUDIT": {"path": str(tmp_path / "%(name)s-%(time)s.jsonl"), "allowed": True},
    }
    meta = {"robotstxt_user_agent": ["ExampleBot", "CCBot"]}
    plan = [
        *urls, per_origin.url("/ai/2"), per_origin.url("/fine"),
        Req(by_meta.url("/ai/3"), meta), Req(by_meta.url("/private/3"), meta),
        Req(by_meta.url("/x"), {"robotstxt_user_agent": ["ExampleBot", "bad bot/1.0"]}),
    ]  # fmt: skip
    result = await crawl(plan, settings)
    check_accounting(result)

    assert result.outcome(site.url("/private/1")).message == (
        "Forbidden by robots.txt: disallowed_explicit (line 2: Disallow: /private) for ExampleBot"
    )
    for url, line in ((site.url("/ai/1"), 6), (per_origin.url("/ai/2"), 6), (by_meta.url("/ai/3"), 6)):
        assert (
            result.outcome(url).message
            == f"Forbidden by robots.txt: disallowed_explicit (line {line}: Disallow: /ai) for CCBot"
        )
    assert result.outcome(by_meta.url("/private/3")).message.endswith("(line 2: Disallow: /private) for ExampleBot")
    assert result.outcome(by_meta.url("/x")).message.startswith("Forbidden by robots.txt: invalid robotstxt_user_agent")
    assert result.stat("requests/denied/invalid_user_agent") == 1
    ok = result.outcome(site.url("/ok"))
    assert ok.status == 200 and ok.provenance["tokens"] == ["ExampleBot", "CCBot"]
    assert result.outcome(per_origin.url("/fine")).status == 200

    service = robots_service(result.crawler)
    assert service.known(site.origin).floor == 0.3  # the largest over the two groups
    assert service.known(site.origin).tokens == ("ExampleBot", "CCBot")

    # %(name)s and %(time)s filled; allowed requests recorded too
    (audit,) = tmp_path.glob("probe-*.jsonl")
    trail = records(audit)
    assert trail[0]["tokens"] == ["ExampleBot", "CCBot"]
    decided = {r["url"]: r for r in trail if r["type"] in ("allowed", "denied")}
    assert decided[site.url("/ok")]["type"] == "allowed"
    assert (decided[site.url("/ai/1")]["token"], decided[site.url("/ai/1")]["line"]) == ("CCBot", 6)
    assert decided[by_meta.url("/x")]["verdict"] == "invalid_user_agent"
    fetch = next(r for r in trail if r["type"] == "fetch" and r["origin"] == site.origin)
    assert fetch["crawl_delay"] == {"ExampleBot": 0.1, "CCBot": 0.3} and fetch["floor"] == 0.3

    # the replay checks both tokens too
    process = scrapy_robots("--audit", str(audit), site.url("/ai/9"), site.url("/ok"), cwd=tmp_path)
    assert verdicts(process.stdout)[site.url("/ai/9")] == "DENIED disallowed_explicit (line 6: Disallow: /ai) for CCBot"
    assert verdicts(process.stdout)[site.url("/ok")] == "ALLOWED allowed_implicit"


@pytest_twisted.ensureDeferred
async def test_wait_mode_retries_are_each_a_fetch_record_and_a_stored_result_is_recorded_too(servers, tmp_path):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = [Reply(503, "busy"), robots(FINAL)]
    store = f"sqlite://{tmp_path / 'robots.sqlite'}"
    first = tmp_path / "first.jsonl"
    settings = {"RFC9309_UNREACHABLE": "wait", "RFC9309_STORAGE": store, "RFC9309_AUDIT": str(first)}
    result = await crawl([site.url("/secret/1"), site.url("/open")], settings)
    check_accounting(result)
    fetches = [r for r in records(first) if r["type"] == "fetch"]
    assert [(r["status"], r["in_force"]) for r in fetches] == [(503, False), (200, True)]
    assert "governing_sha256" not in fetches[0] and fetches[1]["governing_sha256"] == sha(FINAL)

    # a second run takes the file from the store: no fetch, one "stored" record, still replayable
    second = tmp_path / "second.jsonl"
    result = await crawl([site.url("/secret/2")], {**settings, "RFC9309_AUDIT": str(second)})
    assert site.count("/robots.txt") == 2
    trail = records(second)
    assert not [r for r in trail if r["type"] == "fetch"]
    (stored,) = [r for r in trail if r["type"] == "stored"]
    assert (stored["governing_sha256"], stored["fetched_at"]) == (sha(FINAL), fetches[1]["fetched_at"])
    (denied,) = [r for r in trail if r["type"] == "denied"]
    assert denied["sha256"] == sha(FINAL)
    process = scrapy_robots("--audit", str(second), site.url("/secret/2"), cwd=tmp_path)
    assert verdicts(process.stdout)[site.url("/secret/2")] == "DENIED disallowed_explicit (line 2: Disallow: /secret)"
    assert "taken from the store" in process.stdout


@pytest_twisted.ensureDeferred
async def test_an_audit_trail_that_cannot_be_opened_stops_the_crawl_before_its_first_request(servers, tmp_path):
    site = servers("127.0.0.2")
    (tmp_path / "a-file").write_text("")
    result = await crawl([site.url("/page")], {"RFC9309_AUDIT": str(tmp_path / "a-file" / "audit.jsonl")})
    assert result.stats["finish_reason"] == "rfc9309_audit_unavailable"
    assert site.paths() == []


def test_scrapy_robots_own_fetch_writes_no_audit_trail(servers, tmp_path):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots(ORDINARY)
    addon = json.dumps({"scrapy_rfc9309.Addon": 0})
    process = scrapy_robots(
        site.url("/private/x"), "-s", f"ADDONS={addon}", "-s", f"RFC9309_AUDIT={tmp_path / 'a.jsonl'}", cwd=tmp_path
    )
    assert process.returncode == 1, process.stderr
    assert not (tmp_path / "a.jsonl").exists()
