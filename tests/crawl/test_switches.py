"""Scrapy's own switches keep their meaning with the plugin on, and one
product-token rule holds for settings, meta and the command (issue: a plugin
that fits every Scrapy a user runs).  Real crawls and real ``scrapy crawl``
processes against loopback servers."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest
import pytest_twisted

from .accounting import SCRAPY_ARGS, check_output, subprocess_env
from .harness import MIDDLEWARES, MODE_ARGS, Req, check_accounting, crawl
from .servers import robots

ADDON = {"ADDONS": {"scrapy_rfc9309.Addon": 0}, "DOWNLOADER_MIDDLEWARES": {}}
BUILTIN = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"


@pytest.fixture
def site(servers):
    server = servers("127.0.0.2")
    server.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\nCrawl-delay: 0.2\n")
    return server


def info_lines(caplog, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


@pytest.mark.parametrize("where", ["project", "spider"])
@pytest_twisted.ensureDeferred
async def test_robotstxt_obey_false_turns_the_plugin_off_with_one_info_line(site, caplog, where):
    settings = dict(ADDON)
    spider_attrs = {}
    if where == "project":
        settings["ROBOTSTXT_OBEY"] = False
    else:
        spider_attrs["custom_settings"] = {"ROBOTSTXT_OBEY": False}
    with caplog.at_level(logging.INFO):
        result = await crawl([site.url("/private/a")], settings, spider_attrs)
    assert result.outcome(site.url("/private/a")).status == 200
    assert site.count("/robots.txt") == 0
    assert result.rfc() == {}
    lines = info_lines(caplog, "scrapy-rfc9309 is off")
    assert lines == ["scrapy-rfc9309 is off (ROBOTSTXT_OBEY = False): robots.txt is not consulted in this crawl"]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "Disabled" in r.getMessage()]


@pytest.mark.parametrize("obey", [True, None])
@pytest_twisted.ensureDeferred
async def test_with_the_add_on_obey_true_or_unset_means_ours_alone(site, caplog, obey):
    settings = dict(ADDON)
    if obey is not None:
        settings["ROBOTSTXT_OBEY"] = obey  # as `scrapy startproject` writes it
    with caplog.at_level(logging.INFO):
        result = await crawl([site.url("/private/a"), site.url("/ok")], settings)
    assert result.outcome(site.url("/private/a")).message.startswith("Forbidden by robots.txt: disallowed_explicit")
    assert site.count("/robots.txt") == 1
    # Scrapy's middleware did not run: one robots.txt request, the plugin's (it writes Scrapy's stats too)
    assert result.stats["robotstxt/request_count"] == 1 and result.stats["rfc9309/fetch/count"] == 1
    assert result.stats["rfc9309/crawl_delay/origins"] == 1
    assert not info_lines(caplog, "is off") and not info_lines(caplog, "enabled next to")
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_rfc9309_enabled_false_is_said_once_at_info(site, caplog):
    with caplog.at_level(logging.INFO):
        result = await crawl([site.url("/private/a")], {**ADDON, "RFC9309_ENABLED": False})
    assert result.outcome(site.url("/private/a")).status == 200
    assert info_lines(caplog, "scrapy-rfc9309 is off") == [
        "scrapy-rfc9309 is off (RFC9309_ENABLED = False): robots.txt is not consulted in this crawl"
    ]
    assert not [r for r in caplog.records if "Disabled" in r.getMessage() and "rfc9309" in r.getMessage()]


@pytest_twisted.ensureDeferred
async def test_both_middlewares_on_is_a_warning_that_names_the_fix(site, caplog):
    both = {"scrapy_rfc9309.RobotsTxtMiddleware": 100}  # Scrapy's own left in place
    with caplog.at_level(logging.WARNING):
        result = await crawl([site.url("/ok")], {"DOWNLOADER_MIDDLEWARES": both, "ROBOTSTXT_OBEY": True})
    warnings = [r.getMessage() for r in caplog.records if "enabled next to scrapy-rfc9309" in r.getMessage()]
    assert len(warnings) == 1 and BUILTIN in warnings[0] and "Addon" in warnings[0]
    assert result.outcome(site.url("/ok")).status == 200
    # and the usual way (ours in Scrapy's place) warns of nothing
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        await crawl([site.url("/ok")], {"DOWNLOADER_MIDDLEWARES": MIDDLEWARES, "ROBOTSTXT_OBEY": True})
    assert not [r for r in caplog.records if "enabled next to" in r.getMessage()]


# -- one product-token rule ----------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_a_user_agent_with_a_space_in_its_name_stops_the_crawl_at_start(site, caplog):
    with caplog.at_level(logging.ERROR):
        result = await crawl([site.url("/a")], {"ROBOTSTXT_USER_AGENT": "my bot/1.0 (+http://x)"})
    assert result.stats.get("finish_reason") == "rfc9309_invalid_setting"
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and errors[0].startswith("ROBOTSTXT_USER_AGENT: 'my bot/1.0 (+http://x)' is ambiguous")
    assert site.hits == []


@pytest_twisted.ensureDeferred
async def test_a_full_user_agent_string_still_gives_its_name(site):
    site.routes["/robots.txt"] = robots("User-agent: mybot\nDisallow: /\n")
    result = await crawl([site.url("/a")], {"ROBOTSTXT_USER_AGENT": "MyBot/1.0 (+http://x)"})
    assert result.outcome(site.url("/a")).message.startswith("Forbidden by robots.txt: disallowed_explicit")


@pytest_twisted.ensureDeferred
async def test_an_ambiguous_meta_user_agent_is_a_logged_denial_not_a_cut(site, caplog):
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /\nUser-agent: other\nAllow: /\n")
    with caplog.at_level(logging.DEBUG, logger="scrapy_rfc9309"):
        result = await crawl([Req(site.url("/a"), meta={"robotstxt_user_agent": "Other Bot/2.0"})])
    outcome = result.outcome(site.url("/a"))
    assert outcome.message.startswith("Forbidden by robots.txt: invalid robotstxt_user_agent")
    assert "ambiguous" in outcome.message
    assert result.stat("requests/denied/invalid_user_agent") == 1
    assert [r for r in caplog.records if "invalid robotstxt_user_agent" in r.getMessage()]
    check_accounting(result)


# -- scrapy crawl -s ROBOTSTXT_OBEY=False, as a user types it ----------------------------------
SPIDER = """
import scrapy

class Probe(scrapy.Spider):
    name = "probe"
    start_urls = [{url!r}]

    def parse(self, response):
        yield {{"status": response.status}}
"""


def test_command_line_switch_turns_the_plugin_off(site, tmp_path):
    (tmp_path / "scrapy.cfg").write_text("[settings]\ndefault = probe_project.settings\n")
    package = tmp_path / "probe_project"
    (package / "spiders").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "spiders" / "__init__.py").write_text("")
    (package / "spiders" / "probe.py").write_text(SPIDER.format(url=site.url("/private/page")))
    (package / "settings.py").write_text(
        'BOT_NAME = "probe_project"\nSPIDER_MODULES = ["probe_project.spiders"]\n'
        'ADDONS = {"scrapy_rfc9309.Addon": 0}\nROBOTSTXT_OBEY = True\nTELNETCONSOLE_ENABLED = False\n'
    )
    env = subprocess_env({k: v for k, v in os.environ.items() if not k.startswith("SCRAPY_")})

    def run(*extra: str) -> subprocess.CompletedProcess:
        process = subprocess.run(
            [sys.executable, "-m", "scrapy", "crawl", "probe", *SCRAPY_ARGS, *extra, *MODE_ARGS],
            cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        check_output(process.stdout, process.stderr)
        return process

    obeyed = run()
    assert obeyed.returncode == 0, obeyed.stderr
    assert site.count("/robots.txt") == 1 and site.count("/private/page") == 0
    off = run("-s", "ROBOTSTXT_OBEY=False")
    assert off.returncode == 0, off.stderr
    assert site.count("/robots.txt") == 1 and site.count("/private/page") == 1
    assert "scrapy-rfc9309 is off (ROBOTSTXT_OBEY = False)" in off.stderr
