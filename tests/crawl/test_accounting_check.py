"""The accounting check runs on every crawl of the suite (issue 30, item 6).

``tests/crawl/conftest.py`` fails any test whose crawls have stats that do not
add up (tests/crawl/accounting.py), whether the test calls ``check_accounting``
or not, and whether the crawl goes through ``harness.crawl`` or not; a crawl
in a process of its own is checked there (``scrapy crawl``: an extension;
the worker scripts: their report).  These tests make crawls whose stats do
not add up and expect exactly that failure:
``xfail(strict=True, raises=AccountingError)`` turns a check that did not run
(the test passing) into a failure of the suite.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import pytest_twisted
import scrapy

from .accounting import FAILED_MARK, SCRAPY_ARGS, AccountingError, read_report, subprocess_env
from .command_runner import scrapy_crawl
from .harness import BASE_SETTINGS, MODE_ARGS, Runner, crawl, run
from .servers import robots

#: tests/crawl/miscount.py, as a subprocess imports it (accounting.subprocess_env)
MISCOUNT = "miscount.Miscount"

CHECK_MUST_FAIL = pytest.mark.xfail(strict=True, raises=AccountingError, reason="the accounting check must fail it")


class MiscountingSpider(scrapy.Spider):
    """Counts one checked request more than the middleware did."""

    name = "miscounting"
    url = ""

    async def start(self):
        yield scrapy.Request(self.url, dont_filter=True)

    def parse(self, response):
        self.crawler.stats.inc_value("rfc9309/requests/checked")


@CHECK_MUST_FAIL
@pytest_twisted.ensureDeferred
async def test_a_crawl_outside_the_harness_whose_stats_do_not_add_up_fails(servers):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    runner = Runner(dict(BASE_SETTINGS))
    crawler = runner.create_crawler(type("Spider", (MiscountingSpider,), {"url": site.url("/page")}))
    await run(runner, crawler)
    assert crawler.stats.get_value("rfc9309/requests/allowed/allowed_implicit") == 1  # the crawl itself went well


@CHECK_MUST_FAIL
@pytest_twisted.ensureDeferred
async def test_a_harness_crawl_whose_stats_do_not_add_up_fails_without_check_accounting(servers):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    result = await crawl([site.url("/page"), site.url("/private")])
    assert result.outcome(site.url("/private")).error == "IgnoreRequest"
    # a fetch counted that has no access result (as a fetch path that forgot to classify one would)
    result.crawler.stats.inc_value("rfc9309/fetch/count")


@pytest_twisted.ensureDeferred
async def test_the_same_crawls_counted_right_pass(servers):
    """The two crawls above without the extra count: what fails them is the miscount."""
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    runner = Runner(dict(BASE_SETTINGS))
    spider = type("Spider", (MiscountingSpider,), {"url": site.url("/page"), "parse": lambda self, response: None})
    crawler = runner.create_crawler(spider)
    await run(runner, crawler)
    assert crawler.stats.get_value("rfc9309/requests/checked") == 1
    result = await crawl([site.url("/page"), site.url("/private")])
    assert result.outcome(site.url("/private")).error == "IgnoreRequest"


# -- crawls in processes of their own ----------------------------------------------------------
@pytest.mark.main_run_only  # the test harness's own check, in a subprocess
def test_a_scrapy_crawl_subprocess_whose_stats_do_not_add_up_fails(servers, tmp_path):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    (tmp_path / "fine").mkdir()
    (tmp_path / "off").mkdir()
    fine = scrapy_crawl(tmp_path / "fine", [site.url("/page")])  # checked, and adds up
    assert fine.returncode == 0, fine.stderr[-3000:]
    with pytest.raises(AccountingError, match="requests/checked = allowed"):
        scrapy_crawl(tmp_path / "off", [site.url("/page")], custom={"DOWNLOADER_MIDDLEWARES": {MISCOUNT: 950}})


def test_a_scrapy_crawl_whose_stats_do_not_add_up_exits_with_status_1(servers, tmp_path):
    """What check_output reads is the extension's: an ERROR line and a failing exit status."""
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    tmp_path.joinpath("probe.py").write_text(
        "import scrapy\n\nclass Probe(scrapy.Spider):\n    name = 'probe'\n"
        f"    custom_settings = {{'DOWNLOADER_MIDDLEWARES': {{{MISCOUNT!r}: 950}}}}\n"
        f"    start_urls = [{site.url('/page')!r}]\n\n    def parse(self, response):\n        pass\n"
    )
    process = subprocess.run(
        [sys.executable, "-m", "scrapy", "runspider", "probe.py", *SCRAPY_ARGS, *MODE_ARGS,
         "-s", 'ADDONS={"scrapy_rfc9309.Addon": 0}', "-s", "TELNETCONSOLE_ENABLED=False"],
        cwd=tmp_path, env=subprocess_env(), capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert process.returncode == 1, process.stderr[-3000:]
    assert f"ERROR: {FAILED_MARK}" in process.stderr
    # one page checked and allowed; the middleware above counted its response and robots.txt's
    assert "requests/checked = allowed + denied + dropped + errors: 3 != 1" in process.stderr


def test_a_worker_report_without_its_check_or_with_problems_fails(tmp_path):
    path = tmp_path / "worker.json"
    path.write_text(json.dumps({"finish_reason": "finished", "accounting": []}))
    assert read_report(path)["finish_reason"] == "finished"
    path.write_text(json.dumps({"finish_reason": "finished"}))
    with pytest.raises(AccountingError, match="did not check its stats"):
        read_report(path)
    path.write_text(json.dumps({"accounting": ["fetch/count = access/*: 2 != 1"]}))
    with pytest.raises(AccountingError, match="fetch/count"):
        read_report(path)
