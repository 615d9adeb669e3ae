"""The SQLite store on its own (no crawl, no reactor: ``threaded=False`` runs
its calls inline; the crawl tests use the worker thread)."""

from __future__ import annotations

import logging
import os
import sqlite3
import time

import pytest

from scrapy_rfc9309.storage import STALE_MAX_SECONDS, FallbackStorage, RobotsEntry, StorageUnavailable
from scrapy_rfc9309.storage.sqlite import SqliteStorage


def run(coro):
    """Drive a coroutine that never really waits."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    raise AssertionError("the coroutine waited for something")


def entry(fetched_ago: float = 0.0, fresh_for: float = 86_400.0, **fields) -> RobotsEntry:
    now = time.time()
    values = dict(
        access="success",
        status=200,
        body=b"User-agent: *\nDisallow: /private\n",
        content_type="text/plain; charset=utf-8",
        fetched_at=now - fetched_ago,
        expires_at=now - fetched_ago + fresh_for,
        url="https://example.com/robots.txt",
    )
    values.update(fields)
    return RobotsEntry(**values)


def opened(path) -> SqliteStorage:
    store = SqliteStorage(str(path), threaded=False)
    run(store.open())
    return store


def test_entries_round_trip_and_outlive_the_store(tmp_path):
    path = tmp_path / "sub" / "robots.sqlite"
    store = opened(path)
    first = entry(body=b"\x00\xff binary \r\n kept as is")
    unreachable = entry(access="unreachable", status=None, body=b"", content_type=None, url="")
    run(store.put("https://example.com:443", first))
    run(store.put("http://example.com:80", unreachable))
    assert run(store.get("https://example.com:443")) == first
    assert run(store.get("http://example.com:80")) == unreachable
    assert run(store.get("http://other.example:80")) is None
    replaced = entry(body=b"User-agent: *\nAllow: /\n")
    run(store.put("https://example.com:443", replaced))
    run(store.delete("http://example.com:80"))
    run(store.close())

    again = opened(path)  # another process, a later run
    assert run(again.get("https://example.com:443")) == replaced
    assert run(again.get("http://example.com:80")) is None
    assert again.moved_to is None
    run(again.close())


def test_entries_too_old_to_stand_in_are_dropped_at_open(tmp_path):
    path = tmp_path / "robots.sqlite"
    store = opened(path)
    run(store.put("http://recent:80", entry(fetched_ago=29 * 86_400)))
    run(store.put("http://ancient:80", entry(fetched_ago=STALE_MAX_SECONDS + 3600)))
    # older than 30 days but still fresh by its own lifetime: kept
    run(store.put("http://odd:80", entry(fetched_ago=STALE_MAX_SECONDS + 3600, fresh_for=STALE_MAX_SECONDS * 2)))
    run(store.close())
    store = opened(path)
    assert run(store.get("http://recent:80")) is not None
    assert run(store.get("http://ancient:80")) is None
    assert run(store.get("http://odd:80")) is not None
    run(store.close())


def _garbage(path):
    path.write_bytes(b"\x00not a database at all\n" * 100)


def _damaged_pages(path):
    store = opened(path)
    for i in range(300):
        run(store.put(f"http://host{i}:80", entry(body=os.urandom(400))))
    run(store.close())
    with open(path, "r+b") as fh:
        fh.seek(4096 * 3)
        fh.write(b"\xff" * 4096 * 4)


def _newer_schema(path):
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 99")
    conn.close()


@pytest.mark.parametrize("damage", [_garbage, _damaged_pages, _newer_schema], ids=["garbage", "pages", "schema"])
def test_an_unusable_file_is_moved_aside_and_rebuilt(tmp_path, caplog, damage):
    path = tmp_path / "robots.sqlite"
    damage(path)
    before = path.read_bytes()
    with caplog.at_level(logging.WARNING):
        store = opened(path)
    assert store.moved_to is not None and store.moved_to.startswith(str(path) + ".corrupt-")
    with open(store.moved_to, "rb") as fh:
        assert fh.read() == before
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and str(path) in warnings[0] and store.moved_to in warnings[0]
    fresh = entry()
    run(store.put("http://a:80", fresh))
    assert run(store.get("http://a:80")) == fresh  # the new file works
    run(store.close())


def test_a_path_that_cannot_be_opened_raises_storage_unavailable(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    store = SqliteStorage(str(blocker / "robots.sqlite"), threaded=False)
    with pytest.raises(StorageUnavailable) as info:
        run(store.open())
    assert str(blocker) in str(info.value)
    run(store.close())


def test_fallback_keeps_working_when_the_file_is_lost_and_comes_back(tmp_path, caplog):
    """Mid-crawl failures of the backend go to memory, with one warning; after
    ``retry_after`` the backend is tried again."""
    counted: list[str] = []
    primary = SqliteStorage(str(tmp_path / "robots.sqlite"), threaded=False)
    store = FallbackStorage(primary, retry_after=0.0, count=counted.append)
    run(store.open())
    run(store.put("http://a:80", entry()))
    run(primary.close())  # the backend goes away under the crawl

    with caplog.at_level(logging.INFO):
        run(store.put("http://b:80", entry(body=b"in memory")))
        assert run(store.get("http://b:80")).body == b"in memory"
        assert run(store.get("http://a:80")) is None  # only in the lost backend
        assert run(store.reserve("http://b:80", 1.0)) == 0.0
        assert run(store.claim("http://b:80")) is not None
    assert counted.count("storage/outages") == 1 and counted.count("storage/errors") >= 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "robots.txt store unreachable" in warnings[0] and primary.url in warnings[0]

    run(primary.open())  # back: the next call uses it again
    assert run(store.get("http://a:80")) == run(primary.get("http://a:80")) is not None
    assert any("answers again" in r.getMessage() for r in caplog.records)
    run(store.close())
