"""Promises that hold under attack (issue 23), shown by real crawls: bad
settings, a failing audit trail, an audit path that tries to escape,
redirects into the internal network, secrets in URLs, dot segments."""

from __future__ import annotations

from .command_runner import scrapy_crawl


# -- settings ---------------------------------------------------------------------------------
def test_a_non_finite_setting_refuses_the_crawl_naming_the_setting(servers, tmp_path):
    site = servers("127.0.0.2")
    process = scrapy_crawl(tmp_path, [site.url("/page")], "-s", "RFC9309_FETCH_TIMEOUT=nan")
    assert process.returncode == 1, process.stderr[-2000:]
    assert "ValueError: RFC9309_FETCH_TIMEOUT='nan' is not a finite number" in process.stderr
    assert site.hits == []  # not even robots.txt
