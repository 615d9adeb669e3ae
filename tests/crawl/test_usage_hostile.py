"""Usage preferences in real crawls of hostile and real-world origins (issues 30 and 32).

* A robots.txt of 19,690 identical ``Content-Usage: train-ai=n`` lines (512 KB,
  under the parse limit), default settings, beside a healthy origin: every
  healthy page arrives with no long gap, the hostile origin's pages arrive
  in bounded time, and each carries a small provenance.
* A response with 2,000 ``Content-Usage: train-ai=n`` header lines (past the
  16 KiB the plugin parses; without a reactor, aiohttp's 128 lines at most, so
  4 long lines) is dropped under ``RFC9309_USAGE = ["train-ai"]``.
* A ``Content-Signal`` line before the first ``User-agent`` line (as
  Cloudflare's managed robots.txt writes it) applies to the whole file.
"""

from __future__ import annotations

import json

import pytest_twisted

from scrapy_rfc9309.robots.decode import DEFAULT_PARSE_BYTES
from scrapy_rfc9309.robots.usage import MAX_HEADER_BYTES

from .command_runner import scrapy_robots
from .harness import REACTORLESS, Req, check_accounting, crawl
from .servers import Reply, gaps, robots

PAGE = "<html><body>page</body></html>"
HOSTILE = "User-agent: *\n" + "Content-Usage: train-ai=n\n" * 19_690
CLOUDFLARE = (
    "Content-Signal: search=yes, ai-train=no, use=reference\n"  # 1: before any group
    "\n"
    "User-agent: *\n"
    "Allow: /\n"
)


def html(**headers: str) -> Reply:
    return Reply(200, PAGE, {"Content-Type": "text/html", **headers})


@pytest_twisted.ensureDeferred
async def test_a_file_of_identical_usage_lines_holds_no_one_up(servers):
    assert len(HOSTILE.encode()) < DEFAULT_PARSE_BYTES  # all of it is read
    hostile, healthy = servers("127.0.0.2"), servers("127.0.0.3")
    hostile.routes["/robots.txt"] = robots(HOSTILE)
    healthy.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private/\n")
    for i in range(40):  # about half a second of pages, 4 at a time
        healthy.routes[f"/h/{i}"] = Reply(200, PAGE, {"Content-Type": "text/html"}, delay=0.05)
    hostile_pages = [hostile.url(f"/page/{i}") for i in range(10)]
    healthy_pages = [healthy.url(f"/h/{i}") for i in range(40)]
    # the hostile origin first: its pages are decided while the healthy ones download
    result = await crawl(hostile_pages + healthy_pages, {"CONCURRENT_REQUESTS_PER_DOMAIN": 4})

    check_accounting(result)
    assert [result.outcome(url).status for url in healthy_pages] == [200] * 40
    served = sorted(t for i in range(40) for t in healthy.answered[f"/h/{i}"])
    assert max(gaps(served)) < 2.0, gaps(served)  # 48 s before (the loop held per hostile request)
    # the hostile origin's pages: all of them, soon after its robots.txt
    robots_sent = hostile.answered["/robots.txt"][0]
    outcomes = [result.outcome(url) for url in hostile_pages]
    assert [o.status for o in outcomes] == [200] * 10
    assert max(o.at for o in outcomes) - robots_sent < 8.0  # 48 s for 10 pages before
    for o in outcomes:
        usage = o.provenance["usage"]
        assert usage["train-ai"]["value"] is False
        assert usage["train-ai"]["sources"] == [
            {"origin": "robots.txt", "line": 2, "text": "Content-Usage: train-ai=n", "repeats": 19_689}
        ]
        assert len(json.dumps(o.provenance)) < 2_000  # 1.5 MB per request before


@pytest_twisted.ensureDeferred
async def test_many_header_lines_and_a_file_wide_signal_deny(servers, tmp_path):
    header, signal = servers("127.0.0.2"), servers("127.0.0.3")
    header.routes["/robots.txt"] = robots("User-agent: *\nAllow: /\n")
    if REACTORLESS:  # aiohttp takes at most 128 field lines (of 8,190 bytes): 4 long ones, 28 KB
        lines = tuple(("Content-Usage", ", ".join(["train-ai=n"] * 600)) for _ in range(4))
    else:  # 2,000 field lines, 24 KB joined
        lines = tuple(("Content-Usage", "train-ai=n") for _ in range(2_000))
    members = sum(value.count(",") + 1 for _, value in lines)
    assert len(", ".join(value for _, value in lines)) > MAX_HEADER_BYTES
    header.routes["/many"] = Reply(200, PAGE, {"Content-Type": "text/html"}, header_lines=lines)
    header.routes["/yes"] = html(**{"Content-Usage": "train-ai=y"})
    signal.routes["/robots.txt"] = robots(CLOUDFLARE)
    plan = [
        header.url("/many"),
        header.url("/yes"),
        signal.url("/x"),
        Req(signal.url("/reported"), meta={"rfc9309_usage": []}),  # nothing declared: delivered, reported
    ]
    result = await crawl(plan, {"RFC9309_USAGE": ["train-ai"]})

    check_accounting(result)
    o = result.outcome(header.url("/many"))
    assert o.error == "IgnoreRequest"
    assert o.message == (
        "Dropped by usage preferences: train-ai disallowed by header: Content-Usage: train-ai=n "
        f"(repeated {members - 1:,} more times)"
    )
    assert header.count("/many") == 1  # downloaded, then dropped
    assert result.outcome(header.url("/yes")).status == 200
    assert result.stat("usage/dropped/train-ai") == 1
    # the file-wide Content-Signal line: denied before the download, its line named
    o = result.outcome(signal.url("/x"))
    assert o.message == (
        "Forbidden by usage preferences: train-ai disallowed by robots.txt line 1: "
        "Content-Signal: search=yes, ai-train=no, use=reference"
    )
    assert signal.count("/x") == 0
    assert result.stat("usage/denied/train-ai") == 1
    o = result.outcome(signal.url("/reported"))
    assert o.status == 200
    usage = o.provenance["usage"]
    assert (usage["train-ai"]["value"], usage["search"]["value"], usage["use"]["value"]) == (False, True, "reference")

    # the command says the same of the file, use= level included
    process = scrapy_robots("--file", "-", "/x", "--usage", "train-ai", cwd=tmp_path, stdin=CLOUDFLARE)
    assert process.returncode == 1, process.stderr
    out = process.stdout
    assert "DENIED   /x  usage: train-ai disallowed by robots.txt line 1: Content-Signal: search=yes" in out
    assert "/x: train-ai=n, search=y, ai-input=?, use=reference" in out
    assert "use: robots.txt line 1: Content-Signal: search=yes, ai-train=no, use=reference" in out
    process = scrapy_robots("--lint", "-", cwd=tmp_path, stdin=CLOUDFLARE + "Content-Signal: ai-train=no, nsfw=no\n")
    assert "<stdin>:5: usage_unknown_label" in process.stdout and "nsfw" in process.stdout
    assert "outside_group" not in process.stdout
