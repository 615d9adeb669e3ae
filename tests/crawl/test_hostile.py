"""Promises that hold under attack (issue 23), shown by real crawls: bad
settings, a failing audit trail, an audit path that tries to escape,
redirects into the internal network, secrets in URLs, dot segments."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import pytest_twisted

from .command_runner import scrapy_crawl
from .harness import check_accounting, crawl
from .servers import Reply, closed_port, robots


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


# -- a failing audit trail ---------------------------------------------------------------------
def _stat(stderr: str, name: str) -> str | None:
    """A stat's value as Scrapy's closing dump prints it (``'name': value,``)."""
    found = re.search(rf"'{re.escape(name)}': ([^,\n}}]+)", stderr)
    return found.group(1) if found else None


def test_a_trail_on_a_full_disk_stops_the_crawl_with_a_failing_exit_status(servers, tmp_path):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    pages = [f"/p{i}" for i in range(300)]
    for path in pages:
        site.routes[path] = Reply(200, "<html>page</html>", {"Content-Type": "text/html"}, delay=0.05)
    (tmp_path / "audit").mkdir()
    (tmp_path / "audit" / "trail.jsonl").symlink_to("/dev/full")  # every write: ENOSPC
    process = scrapy_crawl(
        tmp_path, [site.url(p) for p in pages], "-s", "RFC9309_AUDIT=audit/trail.jsonl", "-s", "RFC9309_AUDIT_ALLOWED=True",
        "-s", "CONCURRENT_REQUESTS=4",
    )  # fmt: skip
    log = process.stderr
    assert process.returncode == 1, log[-3000:]
    assert _stat(log, "finish_reason") == "'rfc9309_audit_failed'", log[-3000:]
    assert "Spider closed (rfc9309_audit_failed)" in log
    unwritten = int(_stat(log, "rfc9309/audit/records_unwritten") or 0)
    assert unwritten > 0
    assert re.search(r"ERROR: RFC9309_AUDIT: cannot write the audit trail .*No space left on device", log)
    assert f"0 records written to audit/trail.jsonl, {unwritten} records NOT written" in log
    # stopped at once: the first write fails about a second in, long before the 300 pages are done
    assert site.count("/robots.txt") == 1
    assert sum(site.count(p) for p in pages) < 200


@pytest.mark.parametrize("refusal", ["storage", "trail"])
def test_a_crawl_refused_at_start_exits_with_a_failing_status(servers, tmp_path, refusal):
    site = servers("127.0.0.2")
    if refusal == "storage":
        setting, reason = f"RFC9309_STORAGE=redis://127.0.0.1:{closed_port('127.0.0.1')}/0", "storage_unavailable"
    else:
        (tmp_path / "a-file").write_text("")
        setting, reason = "RFC9309_AUDIT=a-file/trail.jsonl", "audit_unavailable"
    process = scrapy_crawl(tmp_path, [site.url("/page")], "-s", setting)
    assert process.returncode == 1, process.stderr[-3000:]
    assert _stat(process.stderr, "finish_reason") == f"'rfc9309_{reason}'"
    assert site.hits == []


# -- dot segments --------------------------------------------------------------------------------
@pytest_twisted.ensureDeferred
async def test_a_dot_segment_path_is_denied_when_the_served_path_is_disallowed(servers):
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /private\n")
    sneaky = [site.url("/x/../private"), site.url("/x/%2E%2E/private/a"), site.url("/./private")]
    fine = site.url("/x/../public")
    result = await crawl([*sneaky, fine])
    check_accounting(result)
    for url in sneaky:
        assert result.outcome(url).message.startswith("Forbidden by robots.txt: disallowed_explicit (line 2"), url
    assert result.outcome(fine).status == 200
    assert [hit.path for hit in site.hits if "private" in hit.path] == []
