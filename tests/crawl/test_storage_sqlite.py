"""The SQLite store in real crawls: robots.txt outlives the process.

Each test runs several crawls one after another against the same file, as a
crawl run every hour, or paused and resumed with JOBDIR, would.  Where a test
needs a day (or a month) to pass, it moves the stored times back by that
much, as the clock would have.
"""

from __future__ import annotations

import logging
import sqlite3
import time
from dataclasses import asdict
from pathlib import Path

import pytest
import pytest_twisted

from scrapy_rfc9309 import settings as settings_module
from scrapy_rfc9309.storage import entries

from .harness import Req, check_accounting, crawl
from .servers import Reply, robots

DISALLOW_PRIVATE = "User-agent: *\nDisallow: /private\n"
HOUR = 3600.0
DAY = 24 * HOUR


def sqlite_url(path: Path) -> str:
    return f"sqlite://{path}"


def rows(db: Path) -> dict[str, dict]:
    """Every entry the file holds, decoded, by origin."""
    with sqlite3.connect(db) as conn:
        found = conn.execute(
            "SELECT e.origin, e.entry, b.body FROM entries e LEFT JOIN bodies b ON b.digest = e.digest"
        ).fetchall()
    return {origin: asdict(entries.decode(origin, data, body, time.time())) for origin, data, body in found}


def age(db: Path, seconds: float) -> None:
    """Make every stored entry ``seconds`` older."""
    conn = sqlite3.connect(db)
    with conn:
        for origin, data in conn.execute("SELECT origin, entry FROM entries").fetchall():
            head = entries._HEAD
            version, access, status, fetched_at, expires_at, flags = head.unpack_from(data)
            older = head.pack(version, access, status, fetched_at - seconds, expires_at - seconds, flags)
            conn.execute(
                "UPDATE entries SET entry = ?, keep_until = keep_until - ? WHERE origin = ?",
                (older + data[head.size :], seconds, origin),
            )
    conn.close()


@pytest_twisted.ensureDeferred
async def test_a_second_run_within_24_hours_fetches_nothing_and_after_expiry_one(servers, tmp_path):
    site = servers()
    site.routes["/robots.txt"] = robots(DISALLOW_PRIVATE)
    db = tmp_path / "cache" / "robots.sqlite"  # the directory is created
    settings = {"RFC9309_STORAGE": sqlite_url(db)}

    first = await crawl([site.url("/a")], settings)
    assert site.count("/robots.txt") == 1
    stored = rows(db)[site.origin]
    assert stored["access"] == "success" and stored["status"] == 200
    assert stored["body"] == DISALLOW_PRIVATE.encode()
    assert stored["expires_at"] - stored["fetched_at"] == DAY  # fresh for the RFC's 24 hours
    assert first.stat("fetch/count") == 1

    # a new process an hour later: no robots.txt request, the stored rules apply
    age(db, HOUR)
    second = await crawl([site.url("/b"), site.url("/private")], settings)
    assert site.count("/robots.txt") == 1
    assert second.stat("fetch/count") == 0 and second.stat("cache/storage_hits") == 1
    assert second.outcome(site.url("/b")).status == 200
    assert second.outcome(site.url("/private")).message.endswith("(line 2: Disallow: /private)")
    check_accounting(second)

    # a day later the entry has expired: one fetch, and the new file governs
    age(db, DAY)
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /b\n")
    third = await crawl([site.url("/b"), site.url("/private")], settings)
    assert site.count("/robots.txt") == 2
    assert third.stat("fetch/count") == 1 and third.stat("cache/expiries") == 1
    assert third.outcome(site.url("/b")).error == "IgnoreRequest"
    assert third.outcome(site.url("/private")).status == 200
    assert rows(db)[site.origin]["body"] == b"User-agent: *\nDisallow: /b\n"
    check_accounting(third)


@pytest.mark.parametrize(
    ("older_by", "constants", "verdict"),
    [
        (DAY + HOUR, {}, "disallowed_explicit"),  # stale, younger than 30 days: used
        (31 * DAY, {}, "unknown_unreachable"),  # too old to stand in
        (DAY + HOUR, {"STALE_IF_UNREACHABLE": False}, "unknown_unreachable"),
    ],
    ids=["25-hours", "31-days", "turned-off"],
)
@pytest_twisted.ensureDeferred
async def test_a_stored_copy_stands_in_for_an_unreachable_file(
    servers, tmp_path, monkeypatch, older_by, constants, verdict
):
    """RFC 9309 section 2.3.1.4: when robots.txt is unreachable, a stored copy
    younger than 30 days may be used instead of denying everything (always on:
    turned off here through the settings module's constant)."""
    for name, value in constants.items():
        monkeypatch.setattr(settings_module, name, value)
    site = servers()
    site.routes["/robots.txt"] = [robots(DISALLOW_PRIVATE), Reply(503)]
    db = tmp_path / "robots.sqlite"
    settings = {"RFC9309_STORAGE": sqlite_url(db)}
    await crawl([site.url("/a")], settings)
    age(db, older_by)

    result = await crawl([site.url("/private"), site.url("/b")], settings)
    assert site.count("/robots.txt") == 2  # the second one answered 503
    denied = result.outcome(site.url("/private")).message
    assert denied.startswith(f"Forbidden by robots.txt: {verdict}")
    if verdict == "disallowed_explicit":
        assert result.outcome(site.url("/b")).status == 200
        assert result.stat("cache/stale_used") == 1
        # the stand-in is stored as last tried now: the next run uses it until the retry is due
        # (its 25-hour-old fetch time alone would make it stale: capped at 24 h after the fetch)
        again = await crawl([site.url("/private"), site.url("/c")], settings)
        assert site.count("/robots.txt") == 2 and again.stat("cache/storage_hits") == 1
        assert again.outcome(site.url("/c")).status == 200
    else:
        assert result.outcome(site.url("/b")).message == "Forbidden by robots.txt: unknown_unreachable"
        assert result.stat("cache/stale_used") == 0
    check_accounting(result)


@pytest_twisted.ensureDeferred
async def test_jobdir_keeps_robots_txt_in_a_sqlite_file_by_itself(servers, tmp_path):
    site = servers()
    site.routes["/robots.txt"] = robots(DISALLOW_PRIVATE)
    jobdir = tmp_path / "job"
    await crawl([site.url("/a")], {"JOBDIR": str(jobdir)})
    assert site.origin in rows(jobdir / "rfc9309-robots.sqlite")

    resumed = await crawl([Req(site.url("/private"))], {"JOBDIR": str(jobdir)})
    assert site.count("/robots.txt") == 1
    assert resumed.outcome(site.url("/private")).error == "IgnoreRequest"

    # RFC9309_STORAGE, when set, wins over JOBDIR
    other = await crawl([site.url("/c")], {"JOBDIR": str(jobdir), "RFC9309_STORAGE": "memory"})
    assert site.count("/robots.txt") == 2 and other.stat("fetch/count") == 1


@pytest_twisted.ensureDeferred
async def test_a_corrupt_file_is_moved_aside_and_rebuilt(servers, tmp_path, caplog):
    site = servers()
    site.routes["/robots.txt"] = robots(DISALLOW_PRIVATE)
    db = tmp_path / "robots.sqlite"
    garbage = b"this was a robots cache until a disk hiccup\n" * 200
    db.write_bytes(garbage)
    settings = {"RFC9309_STORAGE": sqlite_url(db)}

    with caplog.at_level(logging.WARNING):
        result = await crawl([site.url("/a"), site.url("/private")], settings)
    assert result.stats["finish_reason"] == "finished"
    assert result.outcome(site.url("/a")).status == 200
    assert result.outcome(site.url("/private")).error == "IgnoreRequest"
    moved = [p for p in tmp_path.iterdir() if p.name.startswith("robots.sqlite.corrupt-")]
    assert len(moved) == 1 and moved[0].read_bytes() == garbage  # kept for a look, not deleted
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(str(db) in m and str(moved[0]) in m for m in warnings), warnings
    assert site.origin in rows(db)  # the new file works

    again = await crawl([site.url("/b")], settings)
    assert site.count("/robots.txt") == 1 and again.stat("cache/storage_hits") == 1


@pytest_twisted.ensureDeferred
async def test_an_unusable_path_stops_the_crawl_with_a_clear_error(servers, tmp_path, caplog):
    site = servers()
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the cache directory should be")
    url = sqlite_url(blocker / "robots.sqlite")
    with caplog.at_level(logging.ERROR):
        result = await crawl([site.url("/a")], {"RFC9309_STORAGE": url})
    assert result.stats["finish_reason"] == "rfc9309_storage_unavailable"
    assert site.hits == [] and result.outcomes == []
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any(str(blocker) in m and "RFC9309_STORAGE" in m for m in errors), errors


@pytest_twisted.ensureDeferred
async def test_the_stored_body_is_at_most_the_parse_limit(servers, tmp_path):
    site = servers()
    padding = "".join(f"# line {i:06d} of padding\n" for i in range(30_000))  # about 750 kB
    site.routes["/robots.txt"] = robots("User-agent: *\nDisallow: /early\n" + padding + "Disallow: /late\n")
    db = tmp_path / "robots.sqlite"
    settings = {"RFC9309_STORAGE": sqlite_url(db)}
    await crawl([site.url("/a")], settings)
    assert len(rows(db)[site.origin]["body"]) == 512_000

    result = await crawl([site.url("/early"), site.url("/late")], settings)
    assert site.count("/robots.txt") == 1
    assert result.outcome(site.url("/early")).error == "IgnoreRequest"
    assert result.outcome(site.url("/late")).status == 200  # beyond the limit: never read
