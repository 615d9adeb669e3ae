"""The SQLite store on its own (no crawl, no reactor: ``threaded=False`` runs
its calls inline; the crawl tests use the worker thread)."""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from concurrent.futures import ThreadPoolExecutor

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
    run(store.close())

    again = opened(path)  # another process, a later run
    assert run(again.get("https://example.com:443")) == replaced
    assert run(again.get("http://example.com:80")) == unreachable
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
        assert run(store.take_turn("http://b:80", 1.0)) == 0.0
        assert run(store.claim("http://b:80")) is not None
    assert counted.count("storage/outages") == 1 and counted.count("storage/errors") >= 2
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "robots.txt store unreachable" in warnings[0] and primary.url in warnings[0]

    run(primary.open())  # back: the next call uses it again
    assert run(store.get("http://a:80")) == run(primary.get("http://a:80")) is not None
    assert any("answers again" in r.getMessage() for r in caplog.records)
    assert counted.count("storage/recoveries") == 1
    run(store.close())


# -- in a running asyncio loop: the worker thread, the index of origins, batched writes ---------
def in_loop(main) -> None:
    """``asyncio.run(main())`` in a thread of its own (pytest's thread runs the reactor's loop)."""
    with ThreadPoolExecutor(1) as thread:
        thread.submit(asyncio.run, main()).result(timeout=60)


def statements(store: SqliteStorage) -> list[str]:
    """Every SQL statement the store's connection runs from now on (SQLite's own trace)."""
    seen: list[str] = []
    assert store._conn is not None and store._reader is not None
    store._conn.set_trace_callback(seen.append)
    store._reader.set_trace_callback(seen.append)
    return seen


def test_a_new_origin_costs_no_read_and_writes_share_one_transaction(tmp_path):
    """A broad crawl meets a new origin every few milliseconds: its lookup is
    answered from the index read at open, and the entries of many origins
    are written together."""
    path = str(tmp_path / "robots.sqlite")

    async def crawl_like(trace: list[str]) -> None:
        store = SqliteStorage(path)
        await store.open()
        await store.put("http://known:80", entry(body=b"User-agent: *\nDisallow: /k\n"))
        seen = statements(store)
        origins = [f"http://site{i}:80" for i in range(40)]
        looked = await asyncio.gather(*(store.lookup(o, time.time()) for o in origins))
        assert all(found is None and lease is not None for found, lease in looked)
        assert [s for s in seen if "SELECT" in s] == []  # no origin was read from the file
        known, _ = await store.lookup("http://known:80", time.time())
        assert known is not None and known.body == b"User-agent: *\nDisallow: /k\n"
        await asyncio.gather(*(store.put(o, entry(url=o + "/robots.txt")) for o in origins))
        await store.close()
        trace += seen

    seen: list[str] = []
    in_loop(lambda: crawl_like(seen))
    assert sum(1 for s in seen if s.startswith("INSERT OR REPLACE INTO entries")) == 40
    assert sum(1 for s in seen if s.startswith("INSERT OR REPLACE INTO bodies")) == 1  # one file, kept once
    assert sum(1 for s in seen if s.startswith("BEGIN")) == 1  # one transaction for the 40 entries
    reopened = opened(tmp_path / "robots.sqlite")
    assert run(reopened.get("http://site39:80")).url == "http://site39:80/robots.txt"
    run(reopened.close())


def test_an_entry_is_seen_before_its_batch_is_written(tmp_path):
    async def go() -> None:
        store = SqliteStorage(str(tmp_path / "robots.sqlite"))
        await store.open()
        writing = asyncio.ensure_future(store.put("http://a:80", entry(body=b"first")))
        await asyncio.sleep(0)
        assert (await store.get("http://a:80")).body == b"first"  # waiting for its batch
        await writing
        await store.put("http://a:80", entry(body=b"again"))
        await store.close()

    in_loop(go)
    store = opened(tmp_path / "robots.sqlite")
    assert run(store.get("http://a:80")).body == b"again"
    run(store.close())


def test_closing_writes_what_waits_for_its_batch(tmp_path):
    async def go() -> None:
        store = SqliteStorage(str(tmp_path / "robots.sqlite"))
        await store.open()
        waiting = asyncio.ensure_future(store.put("http://late:80", entry(body=b"late")))
        await asyncio.sleep(0)
        await store.close()  # before the batch's timer
        await waiting

    in_loop(go)
    store = opened(tmp_path / "robots.sqlite")
    assert run(store.get("http://late:80")).body == b"late"
    run(store.close())


def test_another_process_writing_the_file_makes_every_lookup_read_it(tmp_path):
    """Two crawls may share one file: once the other has written, its entries
    are found (the index read at open no longer answers for the file)."""
    path = str(tmp_path / "robots.sqlite")

    async def go() -> None:
        ours = SqliteStorage(path)
        await ours.open()
        theirs = opened(path)  # another connection: another process would do the same
        run(theirs.put("http://theirs:80", entry(body=b"theirs")))
        run(theirs.close())
        await ours.put("http://ours:80", entry(body=b"ours"))  # a batch: the file is looked at
        found, lease = await ours.lookup("http://theirs:80", time.time())
        assert found is not None and found.body == b"theirs" and lease is None
        await ours.close()

    in_loop(go)


def test_a_failed_batch_reaches_every_caller_as_storage_unavailable(tmp_path):
    async def go() -> None:
        store = SqliteStorage(str(tmp_path / "robots.sqlite"))
        await store.open()
        store._conn.execute("PRAGMA query_only = ON")  # every write fails (not a lock: no retry)
        results = await asyncio.gather(
            store.put("http://a:80", entry()), store.put("http://b:80", entry()), return_exceptions=True
        )
        assert all(isinstance(r, StorageUnavailable) for r in results), results
        store._conn.execute("PRAGMA query_only = OFF")
        await store.put("http://c:80", entry())  # the next batch goes through
        await store.close()

    in_loop(go)


def test_the_index_is_only_dropped_on_the_loop_thread(tmp_path):
    """The worker thread that sees another connection's write only notes it;
    the loop thread drops the index at its next lookup (before, the worker
    set it to None while the loop was reading it)."""
    path = str(tmp_path / "robots.sqlite")

    async def go() -> None:
        ours = SqliteStorage(path)
        await ours.open()
        index = ours._index
        assert index is not None
        theirs = opened(path)
        run(theirs.put("http://theirs:80", entry(body=b"theirs")))
        run(theirs.close())
        await ours.put("http://ours:80", entry(body=b"ours"))  # the writer thread sees the change
        assert ours._index is index and ours._written_elsewhere
        found = await ours.get("http://theirs:80")  # the loop drops the index, reads the file
        assert found is not None and found.body == b"theirs" and ours._index is None
        await ours.close()

    in_loop(go)


def test_a_file_of_the_layout_before_is_emptied_not_moved_aside(tmp_path, caplog):
    path = tmp_path / "robots.sqlite"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE robots (origin TEXT PRIMARY KEY, access TEXT NOT NULL, status INTEGER, body BLOB NOT NULL,"
        " content_type TEXT, fetched_at REAL NOT NULL, expires_at REAL NOT NULL, url TEXT NOT NULL) WITHOUT ROWID"
    )
    now = time.time()
    old.execute("INSERT INTO robots VALUES ('http://a:80', 'success', 200, x'00', NULL, ?, ?, '')", (now, now + 60))
    old.execute("PRAGMA user_version = 1")
    old.commit()
    old.close()
    with caplog.at_level(logging.INFO):
        store = opened(path)
    assert store.moved_to is None and run(store.get("http://a:80")) is None  # fetched again
    assert any("older layout" in r.getMessage() for r in caplog.records)
    run(store.put("http://a:80", entry()))
    run(store.close())
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert tables == {"entries", "bodies"}


def test_bodies_are_kept_once_and_swept_when_no_entry_names_them(tmp_path):
    path = tmp_path / "robots.sqlite"
    store = opened(path)
    shared = b"User-agent: *\nDisallow: /wp-admin/\n"
    for origin in ("http://a:80", "http://b:80", "http://c:80"):
        run(store.put(origin, entry(body=shared)))
    run(store.put("http://a:80", entry(body=b"User-agent: *\nDisallow: /old\n")))
    run(store.put("http://a:80", entry(body=b"User-agent: *\nDisallow: /new\n")))  # /old is named no more
    run(store.close())
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM bodies").fetchone()[0] == 3
    again = opened(path)  # the sweep at open
    assert run(again.get("http://b:80")).body == shared and run(again.get("http://a:80")).body.endswith(b"/new\n")
    run(again.close())
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM bodies").fetchone()[0] == 2
