"""An embedded store that outlives the process: one SQLite file (stdlib ``sqlite3``).

For a crawl that is paused and resumed (``JOBDIR``: chosen automatically
there) or run again every hour on one machine: a robots.txt fetched within
its freshness (at most 24 hours) is read back instead of fetched again.

Every call runs in one worker thread of its own, so a slow disk never holds
the reactor; without a running asyncio loop (another Twisted reactor), or
with ``threaded=False``, the calls run inline, which is quick for a local
file.

At ``open`` the file is checked (``PRAGMA quick_check``).  A file that is not
a database, is damaged, or has a schema this version does not know is moved
aside - renamed ``<name>.corrupt-<UTC time>`` with its ``-wal``/``-shm``
companions - and a new one is built, with a warning: a cache is never worth
stopping a crawl for.  Entries older than the stale-if-unreachable window (30
days) are deleted then too.  A file that cannot be opened at all (no
permission, no such directory and it cannot be made) raises
:class:`~.base.StorageUnavailable`.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from .base import STALE_MAX_SECONDS, RobotsEntry, RobotsStorage, StorageUnavailable

logger = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA_VERSION = 1
_SCHEMA = """
CREATE TABLE IF NOT EXISTS robots (
    origin       TEXT PRIMARY KEY,
    access       TEXT NOT NULL,
    status       INTEGER,
    body         BLOB NOT NULL,
    content_type TEXT,
    fetched_at   REAL NOT NULL,
    expires_at   REAL NOT NULL,
    url          TEXT NOT NULL
) WITHOUT ROWID
"""
_COLUMNS = "access, status, body, content_type, fetched_at, expires_at, url"
#: seconds a statement waits for another process's write lock
BUSY_TIMEOUT = 10.0


class _Corrupt(Exception):
    """The file is not a usable robots database."""


class SqliteStorage(RobotsStorage):
    """Entries in one SQLite file at ``path`` (its directory is created)."""

    def __init__(self, path: str, keep_seconds: float = STALE_MAX_SECONDS, threaded: bool = True) -> None:
        self.threaded = threaded
        self.path = os.path.abspath(os.path.expanduser(path))
        self.url = "sqlite://" + self.path
        self.keep_seconds = keep_seconds
        #: where a corrupt file was moved at open, if one was
        self.moved_to: str | None = None
        self._conn: sqlite3.Connection | None = None
        self._executor: ThreadPoolExecutor | None = None

    # -- life ------------------------------------------------------------------
    async def open(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rfc9309-sqlite")
        await self._call(self._open)

    async def close(self) -> None:
        if self._executor is None:
            return
        try:
            await self._call(self._close)
        finally:
            self._executor.shutdown(wait=False)
            self._executor = None

    # -- entries ---------------------------------------------------------------------
    async def get(self, origin: str) -> RobotsEntry | None:
        return await self._call(self._get, origin)

    async def put(self, origin: str, entry: RobotsEntry) -> None:
        await self._call(self._put, origin, entry)

    async def delete(self, origin: str) -> None:
        await self._call(self._execute, "DELETE FROM robots WHERE origin = ?", (origin,))

    # -- in the worker thread ------------------------------------------------------------
    def _open(self) -> None:
        directory = os.path.dirname(self.path)
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise StorageUnavailable(f"{self.url}: cannot create {directory}: {exc}") from exc
        try:
            self._conn = self._connect()
        except _Corrupt as exc:
            self.moved_to = self._move_aside()
            logger.warning(
                "robots.txt cache %s is unusable (%s): moved it to %s and started a new one",
                self.path, exc, self.moved_to,
            )  # fmt: skip
            try:
                self._conn = self._connect()
            except _Corrupt as again:  # pragma: no cover - a fresh file is never corrupt
                raise StorageUnavailable(f"{self.url}: {again}") from again
        now = time.time()
        self._execute("DELETE FROM robots WHERE fetched_at < ? AND expires_at < ?", (now - self.keep_seconds, now))

    def _connect(self) -> sqlite3.Connection:
        """Open, check and set up the file; ``_Corrupt`` when it must be replaced."""
        try:
            conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StorageUnavailable(f"{self.url}: {exc}") from exc
        try:
            check = conn.execute("PRAGMA quick_check").fetchall()
            if check != [("ok",)]:
                raise _Corrupt("quick_check: " + "; ".join(str(row[0]) for row in check[:3]))
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, SCHEMA_VERSION):
                raise _Corrupt(f"schema version {version}, this version of scrapy-rfc9309 reads {SCHEMA_VERSION}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        except sqlite3.OperationalError as exc:  # locked, read-only, I/O: the file may be fine
            conn.close()
            raise StorageUnavailable(f"{self.url}: {exc}") from exc
        except sqlite3.DatabaseError as exc:  # "file is not a database", "malformed"
            conn.close()
            raise _Corrupt(str(exc)) from exc
        except _Corrupt:
            conn.close()
            raise
        return conn

    def _move_aside(self) -> str:
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        target = f"{self.path}.corrupt-{stamp}"
        n = 1
        while os.path.exists(target):
            n += 1
            target = f"{self.path}.corrupt-{stamp}-{n}"
        try:
            os.replace(self.path, target)
            for suffix in ("-wal", "-shm", "-journal"):
                if os.path.exists(self.path + suffix):
                    os.replace(self.path + suffix, target + suffix)
        except OSError as exc:
            raise StorageUnavailable(f"{self.url} is corrupt and cannot be moved aside: {exc}") from exc
        return target

    def _close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def _get(self, origin: str) -> RobotsEntry | None:
        row = self._execute(f"SELECT {_COLUMNS} FROM robots WHERE origin = ?", (origin,)).fetchone()
        if row is None:
            return None
        access, status, body, content_type, fetched_at, expires_at, url = row
        return RobotsEntry(access, status, bytes(body), content_type, fetched_at, expires_at, url)

    def _put(self, origin: str, entry: RobotsEntry) -> None:
        self._execute(
            f"INSERT OR REPLACE INTO robots (origin, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                origin,
                entry.access,
                entry.status,
                entry.body,
                entry.content_type,
                entry.fetched_at,
                entry.expires_at,
                entry.url,
            ),
        )

    def _execute(self, sql: str, params: tuple = ()) -> sqlite3.Cursor:
        if self._conn is None:
            raise StorageUnavailable(f"{self.url} is not open")
        try:
            return self._conn.execute(sql, params)
        except sqlite3.Error as exc:
            raise StorageUnavailable(f"{self.url}: {type(exc).__name__}: {exc}") from exc

    # -- threading -------------------------------------------------------------------------
    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        if not self.threaded:
            return fn(*args)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return fn(*args)  # no asyncio loop: run inline
        if self._executor is None:
            raise StorageUnavailable(f"{self.url} is not open")
        return await loop.run_in_executor(self._executor, fn, *args)
