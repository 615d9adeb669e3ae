"""``scrapy robots URL ...`` against loopback servers, run as a user runs it:
``python -m scrapy robots`` in a subprocess, outside any project, so the
``scrapy.commands`` entry point is what finds the command."""

from __future__ import annotations

import json

import pytest

from .command_runner import scrapy_robots
from .servers import Reply, closed_port, redirect, robots

MAX_BYTES = 512_000


def blocks(stdout: str) -> dict[str, str]:
    """Output by origin: each block starts with the origin alone on a line."""
    found: dict[str, str] = {}
    current = None
    for line in stdout.splitlines():
        if line.startswith("http://"):
            current = line
            found[current] = ""
        elif current is not None:
            found[current] += line + "\n"
    return found


def verdict(block: str, url: str) -> str:
    """``ALLOWED <reason>`` or ``DENIED <reason>`` of ``url`` in a block."""
    for line in block.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] == url:
            return f"{parts[0]} {' '.join(parts[2:])}"
    raise AssertionError(f"{url} not in\n{block}")


@pytest.fixture
def site(servers):
    server = servers("127.0.0.1")
    server.routes["/robots.txt"] = robots(
        "User-agent: *\n"
        "Disallow: /private\n"
        "Allow: /private/press\n"
        "Crawl-delay: 1.5\n"
        "Request-rate: 3/6s\n"
        f"Sitemap: {server.url('/sitemap.xml')}\n"
    )
    return server


def test_all_allowed_exits_0_through_2xx_4xx_truncation_too_many_redirects_and_obey_false(site, servers, tmp_path):
    gone, big, loop, skipped = servers("127.0.0.2"), servers("127.0.0.3"), servers("127.0.0.4"), servers("127.0.0.5")
    gone.routes["/robots.txt"] = Reply(404, "User-agent: *\nDisallow: /\n")  # a 4xx body is never read
    filler = "# " + "x" * 97 + "\n"
    big.routes["/robots.txt"] = robots("User-agent: *\n" + filler * (MAX_BYTES // 100 + 100) + "Disallow: /\n")
    for hop in range(6):
        loop.routes["/robots.txt" if hop == 0 else f"/r{hop}"] = redirect(loop.url(f"/r{hop + 1}"))
    loop.routes["/r6"] = robots("User-agent: *\nDisallow: /\n")
    skipped.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\n")
    origins = json.dumps({skipped.origin: {"obey": False}})

    process = scrapy_robots(
        site.url("/private/press/2024.html"),
        site.url("/public"),
        gone.url("/private"),
        big.url("/page"),
        loop.url("/page"),
        skipped.url("/page"),
        "-s",
        f"RFC9309_ORIGINS={origins}",
        cwd=tmp_path,
    )

    assert process.returncode == 0, process.stdout + process.stderr
    out = blocks(process.stdout)
    ok = out[site.origin]
    press = verdict(ok, site.url("/private/press/2024.html"))
    assert press == "ALLOWED allowed_explicit (line 3: Allow: /private/press)"
    assert verdict(ok, site.url("/public")) == "ALLOWED allowed_implicit"
    assert "crawl-delay:  1.5 s" in ok
    assert "request-rate: 3 per 6 s (one request every 2 s)" in ok
    assert f"sitemaps:     {site.url('/sitemap.xml')}" in ok
    assert ": status 200 (success)" in ok

    assert ": status 404 (unavailable)" in out[gone.origin]
    assert verdict(out[gone.origin], gone.url("/private")) == "ALLOWED allowed_unavailable"

    # the Disallow after the first 512,000 bytes is not read
    assert verdict(out[big.origin], big.url("/page")) == "ALLOWED allowed_implicit"
    assert f"bytes past the {MAX_BYTES:,}-byte limit were ignored" in out[big.origin]

    assert "more than 5 redirects" in out[loop.origin]
    assert verdict(out[loop.origin], loop.url("/page")) == "ALLOWED allowed_unavailable"
    assert loop.count("/r6") == 0

    assert "not fetched (RFC9309_ORIGINS: obey: False)" in out[skipped.origin]
    assert verdict(out[skipped.origin], skipped.url("/page")) == "ALLOWED allowed_not_obeyed"
    assert skipped.count("/robots.txt") == 0

    # the command reads robots.txt, once per origin, and never a page
    assert site.paths() == ["/robots.txt"]
    assert gone.paths() == ["/robots.txt"]
    assert big.paths() == ["/robots.txt"]


def test_any_denied_exits_1_with_5xx_redirects_across_hosts_and_refused_connection(site, servers, tmp_path):
    down, moved, target = servers("127.0.0.2"), servers("127.0.0.3"), servers("127.0.0.4")
    down.routes["/robots.txt"] = Reply(503, "<html>busy</html>", {"Content-Type": "text/html"})
    moved.routes["/robots.txt"] = redirect(target.url("/old-robots.txt"), 301)
    target.routes["/old-robots.txt"] = redirect(target.url("/rules.txt"), 302)
    target.routes["/rules.txt"] = robots("User-agent: *\nDisallow: /archive\n")
    refused = f"http://127.0.0.1:{closed_port()}"

    process = scrapy_robots(
        site.url("/private/x"),
        site.url("/public"),
        down.url("/"),
        moved.url("/archive/2019"),
        moved.url("/news"),
        refused + "/page",
        cwd=tmp_path,
    )

    assert process.returncode == 1, process.stdout + process.stderr
    out = blocks(process.stdout)
    private = verdict(out[site.origin], site.url("/private/x"))
    assert private == "DENIED disallowed_explicit (line 2: Disallow: /private)"
    assert verdict(out[site.origin], site.url("/public")) == "ALLOWED allowed_implicit"

    assert ": status 503 (unreachable)" in out[down.origin]
    assert verdict(out[down.origin], down.url("/")) == "DENIED unknown_unreachable"

    # the file at the end of the chain governs the origin first asked
    assert f"-> 2 redirects -> {target.url('/rules.txt')}: status 200 (success)" in out[moved.origin]
    archive = verdict(out[moved.origin], moved.url("/archive/2019"))
    assert archive == "DENIED disallowed_explicit (line 2: Disallow: /archive)"
    assert verdict(out[moved.origin], moved.url("/news")) == "ALLOWED allowed_implicit"

    refused_block = out[refused]
    assert "(unreachable)" in refused_block and "ConnectionRefused" in refused_block
    assert verdict(refused_block, refused + "/page") == "DENIED unknown_unreachable"

    for server in (site, down, moved):
        assert server.paths() == ["/robots.txt"]
    assert target.paths() == ["/old-robots.txt", "/rules.txt"]


def test_fail_open_opt_in_and_agent(site, servers, tmp_path):
    down = servers("127.0.0.2")
    down.routes["/robots.txt"] = Reply(503)
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n\nUser-agent: PartnerBot\nDisallow: /\n")

    process = scrapy_robots(
        down.url("/x"), site.url("/public"), "--agent", "PartnerBot", "-s", "RFC9309_UNREACHABLE=allow", cwd=tmp_path
    )

    assert process.returncode == 1
    out = blocks(process.stdout)
    assert verdict(out[down.origin], down.url("/x")) == "ALLOWED allowed_unreachable_opt_in"
    assert "not RFC 9309 compliant" in out[down.origin]
    assert "agent:        PartnerBot" in out[site.origin]
    assert verdict(out[site.origin], site.url("/public")) == "DENIED disallowed_explicit (line 5: Disallow: /)"


def make_project(root, settings: str) -> None:
    """A minimal Scrapy project in ``root`` (what ``scrapy startproject`` makes, less the spiders)."""
    (root / "scrapy.cfg").write_text("[settings]\ndefault = probe_project.settings\n")
    package = root / "probe_project"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "settings.py").write_text('BOT_NAME = "probe_project"\n' + settings)


def test_inside_a_project_with_the_add_on_the_answer_is_the_same_as_outside(servers, tmp_path):
    """Fault 3: a 350 KB file whose line 3503 is ``Disallow: /late``.  Inside a
    project that enables the add-on the crawl has the middleware too; there is
    one fetcher per crawl, so the download is not cut short and the rule counts."""
    site = servers("127.0.0.1")
    lines = ["User-agent: *"] + [f"Allow: /filler/{i:05d}/{'x' * 80}" for i in range(3501)] + ["Disallow: /late", ""]
    body = "\n".join(lines)
    assert 340_000 < len(body) < 360_000 and lines[3502] == "Disallow: /late"
    site.routes["/robots.txt"] = robots(body)
    outside, inside = tmp_path / "outside", tmp_path / "inside"
    outside.mkdir()
    inside.mkdir()
    make_project(inside, 'ADDONS = {"scrapy_rfc9309.Addon": 0}\nROBOTSTXT_OBEY = True\nLOG_LEVEL = "INFO"\n')

    answers = {}
    for where in (outside, inside):
        process = scrapy_robots(site.url("/late/page"), site.url("/filler/00001/x"), cwd=where)
        assert process.returncode == 1, process.stderr
        block = blocks(process.stdout)[site.origin]
        answers[where.name] = verdict(block, site.url("/late/page"))
        assert "past the" not in block  # nothing truncated
    assert answers["inside"] == answers["outside"]
    assert answers["inside"].startswith("DENIED") and "line 3503" in answers["inside"]
    assert site.count("/robots.txt") == 2  # once per run


# -- issue 24: unknown options, --spider ------------------------------------------------------
def test_an_unknown_option_is_said_to_be_one(site, tmp_path):
    process = scrapy_robots("--bogus", site.url("/public"), cwd=tmp_path)
    assert process.returncode == 2
    assert "unknown option '--bogus'" in process.stderr and "absolute http(s) URL" not in process.stderr
    assert site.count("/robots.txt") == 0


SPIDER = """
import scrapy


class ProbeSpider(scrapy.Spider):
    name = "probe"
    custom_settings = {custom}
"""


def test_spider_uses_that_spiders_settings_token_origins_and_store(servers, tmp_path):
    site, other = servers("127.0.0.1"), servers("127.0.0.2")
    rules = "User-agent: spiderbot\nDisallow: /spider-only\n\nUser-agent: *\nDisallow: /everyone\n"
    site.routes["/robots.txt"] = robots(rules)
    other.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\n")
    store = tmp_path / "robots.sqlite"
    custom = {
        "ROBOTSTXT_USER_AGENT": "SpiderBot",
        "RFC9309_ORIGINS": {other.origin: {"obey": False}},
        "RFC9309_STORAGE": f"sqlite://{store}",
    }
    make_project(tmp_path, 'ADDONS = {"scrapy_rfc9309.Addon": 0}\nSPIDER_MODULES = ["probe_project.spiders"]\n')
    (tmp_path / "probe_project" / "spiders.py").write_text(SPIDER.format(custom=repr(custom)))
    urls = [site.url("/spider-only/a"), site.url("/everyone/b"), other.url("/x")]

    process = scrapy_robots(*urls, "--spider", "probe", cwd=tmp_path)
    out = blocks(process.stdout)
    assert process.returncode == 1, process.stderr
    assert "agent:        SpiderBot" in out[site.origin]
    assert verdict(out[site.origin], urls[0]).startswith("DENIED disallowed_explicit (line 2")
    assert verdict(out[site.origin], urls[1]) == "ALLOWED allowed_implicit"
    assert verdict(out[other.origin], urls[2]).startswith("ALLOWED allowed_not_obeyed")
    assert store.exists() and other.count("/robots.txt") == 0

    # without --spider: the project's settings (Scrapy's default USER_AGENT: the token "Scrapy")
    process = scrapy_robots(*urls, cwd=tmp_path)
    out = blocks(process.stdout)
    assert verdict(out[site.origin], urls[0]) == "ALLOWED allowed_implicit"
    assert verdict(out[site.origin], urls[1]).startswith("DENIED disallowed_explicit (line 5")
    assert verdict(out[other.origin], urls[2]).startswith("DENIED")

    process = scrapy_robots(urls[0], "--spider", "nobody", cwd=tmp_path)
    assert process.returncode == 2 and "--spider 'nobody': no such spider" in process.stderr
