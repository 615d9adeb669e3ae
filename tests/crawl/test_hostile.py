"""Promises that hold under attack (issue 23), shown by real crawls: bad
settings, a failing audit trail, an audit path that tries to escape,
redirects into the internal network, secrets in URLs, dot segments."""

from __future__ import annotations

import json
from pathlib import Path

from .command_runner import scrapy_crawl
from .servers import robots


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# -- settings ---------------------------------------------------------------------------------
def test_a_non_finite_setting_refuses_the_crawl_naming_the_setting(servers, tmp_path):
    site = servers("127.0.0.2")
    process = scrapy_crawl(tmp_path, [site.url("/page")], "-s", "RFC9309_FETCH_TIMEOUT=nan")
    assert process.returncode == 1, process.stderr[-2000:]
    assert "ValueError: RFC9309_FETCH_TIMEOUT='nan' is not a finite number" in process.stderr
    assert site.hits == []  # not even robots.txt


# -- the audit path ----------------------------------------------------------------------------
def test_a_spider_name_cannot_move_the_audit_trail_out_of_its_directory(servers, tmp_path):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    project = tmp_path / "a" / "b" / "c"
    project.mkdir(parents=True)
    process = scrapy_crawl(
        project, [site.url("/page"), site.url("/private")], "-s", "RFC9309_AUDIT=audit/%(name)s.jsonl",
        name="../../../escaped",
    )  # fmt: skip
    assert process.returncode == 0, process.stderr[-2000:]
    assert not (tmp_path / "escaped.jsonl").exists()
    (trail,) = (project / "audit").glob("*.jsonl")
    assert trail.name == ".._.._.._escaped.jsonl"
    assert [r["type"] for r in records(trail)][0] == "crawl"
    assert sorted(p.name for p in tmp_path.rglob("*.jsonl")) == [trail.name]
