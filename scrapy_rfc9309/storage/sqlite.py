"""An embedded store that outlives the process: one SQLite file (stdlib ``sqlite3``).

For a crawl that is paused and resumed (``JOBDIR``: chosen automatically
there) or run again every hour on one machine: a robots.txt fetched within
its freshness (at most 24 hours) is read back instead of fetched again.

The file is touched in one worker thread of its own, so a slow disk never
holds the reactor, and as rarely as the crawl allows: a hand-off to that
thread costs more CPU than the SQLite call itself (about 120 us against
6 us for a read), and a broad crawl meets a new origin every few
milliseconds.  So:

* the origins the file holds are read once, at open (keys only, up to
  :data:`INDEX_MAX`): a new origin's lookup is answered from memory, and only
  an origin the file has is read from it;
* writes are batched: an entry is written within :data:`FLUSH_SECONDS`, with
  the others of its batch, in one transaction and one hand-off (``put``
  returns once it is written; the crawl does not wait for it).

Several crawls may share the file: once another connection has written to it
(``PRAGMA data_version``, looked at on each batch and read), the index is
dropped and every lookup reads the file.  Without a running asyncio loop
(another Twisted reactor), or with ``threaded=False``, every call runs inline
and unbatched, which is quick for a local file.

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
#: seconds an entry waits to be written with the others of its batch
FLUSH_SECONDS = 0.25
#: a batch this large is written at once
BATCH_MAX = 512
#: a file holding more origins than this is read at each lookup (no index in memory)
INDEX_MAX = 250_000


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
        #: the origins the file holds (None: not known, read the file)
        self._index: set[str] | None = None
        #: the file's ``PRAGMA data_version`` as last seen: it changes when another connection writes
        self._data_version: int | None = None
        #: writes waiting for their batch, and what their callers await
        self._writes: dict[str, RobotsEntry] = {}
        self._batch: asyncio.Future[None] | None = None
        self._flush_timer: asyncio.TimerHandle | None = None
        self._flushing: set[asyncio.Future[None]] = set()

    # -- life ------------------------------------------------------------------
    async def open(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rfc9309-sqlite")
        await self._call(self._open)

    async def close(self) -> None:
        if self._executor is None:
            return
        try:
            await self._flush_now()
            await self._call(self._close)
        finally:
            self._executor.shutdown(wait=False)
            self._executor = None

    # -- entries ---------------------------------------------------------------------
    async def get(self, origin: str) -> RobotsEntry | None:
        if origin in self._writes:  # not yet written
            return self._writes[origin]
        if self._index is not None and origin not in self._index:
            return None  # not in the file: no hand-off to the worker thread
        return await self._call(self._get, origin)

    async def put(self, origin: str, entry: RobotsEntry) -> None:
        await self._write(origin, entry)

    # -- batched writes --------------------------------------------------------------------
    async def _write(self, origin: str, entry: RobotsEntry) -> None:
        """Write with the batch; return once written."""
        if self._index is not None:
            self._index.add(origin)
        loop = self._loop()
        if loop is None:
            self._apply({origin: entry})
            return
        if self._executor is None:
            raise StorageUnavailable(f"{self.url} is not open")
        self._writes[origin] = entry
        if self._batch is None:
            self._batch = loop.create_future()
            self._flush_timer = loop.call_later(FLUSH_SECONDS, self._flush)
        batch = self._batch
        if len(self._writes) >= BATCH_MAX:
            self._flush()
        await asyncio.shield(batch)  # a cancelled caller does not cancel the others' batch

    def _flush(self) -> None:
        """Hand the waiting writes to the worker thread, as one transaction."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        writes, self._writes = self._writes, {}
        batch, self._batch = self._batch, None
        if batch is None:
            return
        assert self._executor is not None
        done = asyncio.get_running_loop().run_in_executor(self._executor, self._apply, writes)
        self._flushing.add(done)

        def finished(done: asyncio.Future[None]) -> None:
            self._flushing.discard(done)
            if batch.done():
                return
            if done.cancelled():  # nobody may wait for ever: say the store failed
                batch.set_exception(StorageUnavailable(f"{self.url}: a batch of writes was cancelled"))
                return
            error = done.exception()
            if error is not None:
                batch.set_exception(error)
            else:
                batch.set_result(None)

        done.add_done_callback(finished)

    async def _flush_now(self) -> None:
        """Write what waits, and wait for the batches under way."""
        if self._batch is not None:
            self._flush()
        for done in list(self._flushing):
            try:
                await asyncio.shield(done)  # a cancelled close leaves the batch to finish
            except StorageUnavailable:
                pass  # told to the batch's callers

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
        if self.threaded:
            count = self._execute("SELECT count(*) FROM robots").fetchone()[0]
            if count <= INDEX_MAX:
                self._index = {row[0] for row in self._execute("SELECT origin FROM robots")}
            self._changed_elsewhere()

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
        self._changed_elsewhere()
        if row is None:
            return None
        access, status, body, content_type, fetched_at, expires_at, url = row
        return RobotsEntry(access, status, bytes(body), content_type, fetched_at, expires_at, url)

    def _apply(self, writes: dict[str, RobotsEntry]) -> None:
        """Write a batch in one transaction."""
        rows = [
            (origin, e.access, e.status, e.body, e.content_type, e.fetched_at, e.expires_at, e.url)
            for origin, e in writes.items()
        ]
        conn = self._connection()
        try:
            conn.execute("BEGIN")
            if rows:
                conn.executemany(
                    f"INSERT OR REPLACE INTO robots (origin, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows
                )
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.rollback()
            raise StorageUnavailable(f"{self.url}: {type(exc).__name__}: {exc}") from exc
        self._changed_elsewhere()

    def _changed_elsewhere(self) -> None:
        """Drop the index once another connection has written to the file."""
        version = self._execute("PRAGMA data_version").fetchone()[0]
        if self._data_version is not None and version != self._data_version and self._index is not None:
            self._index = None
            logger.debug("robots.txt cache %s: written by another process; reading it at each lookup", self.path)
        self._data_version = version

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StorageUnavailable(f"{self.url} is not open")
        return self._conn

    def _execute(self, sql: str, params: tuple = ()) -> sqlite3.Cursor:
        conn = self._connection()
        try:
            return conn.execute(sql, params)
        except sqlite3.Error as exc:
            raise StorageUnavailable(f"{self.url}: {type(exc).__name__}: {exc}") from exc

    # -- threading -------------------------------------------------------------------------
    def _loop(self) -> asyncio.AbstractEventLoop | None:
        """The running asyncio loop, or None: run inline (``threaded=False``, another reactor)."""
        if not self.threaded:
            return None
        try:
            return asyncio.get_running_loop()
        except RuntimeError:
            return None

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        loop = self._loop()
        if loop is None:
            return fn(*args)
        if self._executor is None:
            raise StorageUnavailable(f"{self.url} is not open")
        return await loop.run_in_executor(self._executor, fn, *args)
