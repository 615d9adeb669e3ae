"""An embedded store that outlives the process: one SQLite file (stdlib ``sqlite3``).

For a crawl that is paused and resumed (``JOBDIR``: chosen automatically
there) or run again every hour on one machine: a robots.txt fetched within
its freshness (at most 24 hours) is read back instead of fetched again.

Two tables, in the layout of :mod:`.entries` (the Redis store's too):
``entries``, one small row per origin, and ``bodies``, each distinct body
once, compressed, under its SHA-256.  A body no entry names any more is
deleted at open, with the entries too old to stand in for an unreachable
file (30 days).  Every row read is checked (:func:`.entries.read`): an
unusable one is a miss, with a warning.

The file is read in one worker thread and written in another, each with a
connection of its own, so a slow disk never holds the reactor and lookups
never queue behind a write waiting for another process's lock.  Both are
touched as rarely as the crawl allows: a hand-off to a thread costs more CPU
than the SQLite call itself, and a broad crawl meets a new origin every few
milliseconds.  So:

* the origins the file holds are read once, at open (keys only, up to
  :data:`INDEX_MAX`): a new origin's lookup is answered from memory, and only
  an origin the file has is read from it;
* writes are batched: an entry is written within :data:`FLUSH_SECONDS`, with
  the others of its batch, in one transaction and one hand-off (``put``
  returns once it is written; the crawl does not wait for it).

Several crawls may share the file (WAL mode): once another connection has
written to it (``PRAGMA data_version``, looked at on each batch and read),
the index is dropped and every lookup reads the file.  While another process
holds the write lock, a batch waits :data:`WRITE_BUSY_SECONDS` for it, then
is tried again :data:`WRITE_RETRY_SECONDS` later, its entries still served
from memory meanwhile; at close it is tried once more, then dropped with a
warning.  A file locked when the crawl starts (so that the store cannot be
set up) raises :class:`~.base.StorageBusy`: the crawl starts on the
in-process fallback and tries the file again later.  Without a running
asyncio loop (another Twisted reactor), or with ``threaded=False``, every
call runs inline and unbatched, which is quick for a local file.

At ``open`` the file is checked (``PRAGMA quick_check``).  A file that is not
a database, is damaged, or has a schema this version does not know is moved
aside - renamed ``<name>.corrupt-<UTC time>`` with its ``-wal``/``-shm``
companions - and a new one is built, with a warning: a cache is never worth
stopping a crawl for.  A file of the previous layout (schema 1) is emptied
(its entries are fetched again).  A file that cannot be opened at all (no
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

from . import entries
from .base import STALE_MAX_SECONDS, RobotsEntry, RobotsStorage, StorageBusy, StorageUnavailable

logger = logging.getLogger(__name__)

T = TypeVar("T")

SCHEMA_VERSION = 2
_SCHEMA = (
    # keep_until: when the entry is neither fresh nor young enough to stand in (deleted at open)
    "CREATE TABLE IF NOT EXISTS entries ("
    " origin TEXT PRIMARY KEY, digest BLOB, keep_until REAL NOT NULL, entry BLOB NOT NULL) WITHOUT ROWID",
    "CREATE TABLE IF NOT EXISTS bodies (digest BLOB PRIMARY KEY, body BLOB NOT NULL)",
)
#: seconds a batch of writes waits for another process's write lock before it is tried again later
WRITE_BUSY_SECONDS = 0.5
#: seconds between tries of a batch that met another process's lock
WRITE_RETRY_SECONDS = 2.0
#: entries waiting for a locked file beyond this many: the store says it failed (the fallback takes over)
PENDING_MAX = 20_000
#: seconds a read waits for a lock (in WAL mode only a checkpoint or recovery takes one)
READ_BUSY_SECONDS = 0.5
#: seconds the set-up at open waits for another process's lock
OPEN_BUSY_SECONDS = 1.0
#: seconds an entry waits to be written with the others of its batch
FLUSH_SECONDS = 0.25
#: a batch this large is written at once
BATCH_MAX = 512
#: a file holding more origins than this is read at each lookup (no index in memory)
INDEX_MAX = 250_000


class _Corrupt(Exception):
    """The file is not a usable robots database."""


class _Locked(StorageBusy):
    """Another process holds the file's write lock."""


def _locked(exc: sqlite3.Error) -> bool:
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc))


class SqliteStorage(RobotsStorage):
    """Entries in one SQLite file at ``path`` (its directory is created)."""

    def __init__(self, path: str, keep_seconds: float = STALE_MAX_SECONDS, threaded: bool = True) -> None:
        self.threaded = threaded
        self.path = os.path.abspath(os.path.expanduser(path))
        self.url = "sqlite://" + self.path
        self.keep_seconds = keep_seconds
        #: where a corrupt file was moved at open, if one was
        self.moved_to: str | None = None
        self._conn: sqlite3.Connection | None = None  # writes (and everything when not threaded)
        self._reader: sqlite3.Connection | None = None  # reads, in the reader thread
        self._executor: ThreadPoolExecutor | None = None
        self._read_executor: ThreadPoolExecutor | None = None
        #: the file is set up
        self._ready = False
        #: the last open met another process's lock: the next call tries to finish it
        self._reopen = False
        #: the origins the file holds (None: not known, read the file); the event loop's thread only
        self._index: set[str] | None = None
        #: set by a worker thread when another connection wrote to the file: the loop drops the index
        self._written_elsewhere = False
        #: the file's ``PRAGMA data_version`` as the writing connection last saw it
        self._data_version: int | None = None
        #: writes waiting for their batch, and what their callers await
        self._writes: dict[str, RobotsEntry] = {}
        self._batch: asyncio.Future[None] | None = None
        self._flush_timer: asyncio.TimerHandle | None = None
        self._flushing: set[asyncio.Future[None]] = set()
        self._closing = False
        #: the last batch met another process's lock (it is tried again every WRITE_RETRY_SECONDS)
        self._locked = False

    # -- life ------------------------------------------------------------------
    async def open(self) -> None:
        self._closing = False
        if self._loop() is not None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rfc9309-sqlite")
            self._read_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rfc9309-sqlite-read")
        try:
            index = await self._call(self._open)
        except StorageBusy:
            self._reopen = True  # the crawl starts on the fallback; the next call tries again
            raise
        except BaseException:
            self._shutdown_threads()
            raise
        self._index = index
        self._written_elsewhere = False

    async def close(self) -> None:
        self._closing = True
        try:
            if self._executor is not None:
                await self._flush_now()
                await self._call(self._close)
            elif self._loop() is None:  # inline (or never opened: nothing to close)
                self._close()
        finally:
            self._shutdown_threads()

    def _shutdown_threads(self) -> None:
        for executor in (self._executor, self._read_executor):
            if executor is not None:
                executor.shutdown(wait=False)
        self._executor = self._read_executor = None

    # -- entries ---------------------------------------------------------------------
    async def get(self, origin: str) -> RobotsEntry | None:
        if origin in self._writes:  # not yet written
            return self._writes[origin]
        index = self._known()
        if index is not None and origin not in index:
            return None  # not in the file: no hand-off to a worker thread
        return entries.report(self, origin, await self._call(self._get, origin, reading=True))

    async def put(self, origin: str, entry: RobotsEntry) -> None:
        await self._write(origin, entry)

    def _known(self) -> set[str] | None:
        """The index, unless another connection wrote to the file (event loop's thread only)."""
        if self._written_elsewhere and self._index is not None:
            self._index = None
            logger.debug("robots.txt cache %s: written by another process; reading it at each lookup", self.path)
        return self._index

    # -- batched writes --------------------------------------------------------------------
    async def _write(self, origin: str, entry: RobotsEntry) -> None:
        """Write with the batch; return once written."""
        loop = self._loop()
        if loop is None:
            self._apply({origin: entry})
            return
        if self._executor is None:
            raise StorageUnavailable(f"{self.url} is not open")
        index = self._known()
        if index is not None:
            index.add(origin)
        self._writes[origin] = entry
        if len(self._writes) > PENDING_MAX:
            raise StorageUnavailable(f"{self.url}: {len(self._writes)} entries wait for another process's lock")
        if self._batch is None:
            self._batch = loop.create_future()
            self._flush_timer = loop.call_later(FLUSH_SECONDS, self._flush)
        batch = self._batch
        if len(self._writes) >= BATCH_MAX and not self._locked:
            self._flush()
        await asyncio.shield(batch)  # a cancelled caller does not cancel the others' batch

    def _flush(self) -> None:
        """Hand the waiting writes to the writer thread, as one transaction."""
        if self._flush_timer is not None:
            self._flush_timer.cancel()
            self._flush_timer = None
        writes, self._writes = self._writes, {}
        batch, self._batch = self._batch, None
        if batch is None:
            return
        if self._executor is None:
            if not batch.done():
                batch.set_exception(StorageUnavailable(f"{self.url} is not open"))
            return
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
            if isinstance(error, _Locked) and not self._closing:
                self._again(writes, batch)
            elif isinstance(error, _Locked):
                logger.warning(
                    "robots.txt cache %s: %d entries not written, the file is locked by another process",
                    self.path, len(writes),
                )  # fmt: skip
                batch.set_result(None)  # told; a cache need not hold the crawl's close
            elif error is not None:
                batch.set_exception(error)
            else:
                self._locked = False
                batch.set_result(None)

        done.add_done_callback(finished)

    def _again(self, writes: dict[str, RobotsEntry], batch: asyncio.Future[None]) -> None:
        """A batch that met another process's lock: its callers go on, its
        entries wait (served from memory) and are written again later."""
        for origin, entry in writes.items():
            self._writes.setdefault(origin, entry)  # a newer write of the origin wins
        batch.set_result(None)
        loop = asyncio.get_running_loop()
        if self._batch is None:
            self._batch = loop.create_future()
        if self._flush_timer is not None:
            self._flush_timer.cancel()
        self._flush_timer = loop.call_later(WRITE_RETRY_SECONDS, self._flush)
        if not self._locked:
            self._locked = True
            logger.info("robots.txt cache %s is locked by another process; writing again later", self.path)

    async def _flush_now(self) -> None:
        """Write what waits, and wait for the batches under way."""
        while self._batch is not None or self._flushing:
            if self._batch is not None:
                self._flush()
            for done in list(self._flushing):
                try:
                    await asyncio.shield(done)  # a cancelled close leaves the batch to finish
                except StorageUnavailable:
                    pass  # told to the batch's callers
            await asyncio.sleep(0)  # the batches' callbacks run

    # -- in the worker threads ------------------------------------------------------------
    def _open(self) -> set[str] | None:
        """Set the file up; the origins it holds (None: too many, or not threaded)."""
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
        self._conn.execute(f"PRAGMA busy_timeout = {int(WRITE_BUSY_SECONDS * 1000)}")
        self._tidy()
        self._ready = True
        if self._executor is None:  # inline: no reader thread, no index
            return None
        self._reader = sqlite3.connect(
            self.path, timeout=READ_BUSY_SECONDS, isolation_level=None, check_same_thread=False
        )
        count = self._execute("SELECT count(*) FROM entries").fetchone()[0]
        index = {row[0] for row in self._execute("SELECT origin FROM entries")} if count <= INDEX_MAX else None
        self._changed_elsewhere()
        return index

    def _tidy(self) -> None:
        """Delete the entries too old to stand in, and the bodies no entry names."""
        try:
            conn = self._connection()
            conn.execute("BEGIN")
            conn.execute("DELETE FROM entries WHERE keep_until < ?", (time.time(),))
            conn.execute("DELETE FROM bodies WHERE digest NOT IN (SELECT digest FROM entries WHERE digest IS NOT NULL)")
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if self._conn is not None and self._conn.in_transaction:
                self._conn.rollback()
            if not _locked(exc):
                raise StorageUnavailable(f"{self.url}: {type(exc).__name__}: {exc}") from exc
            logger.info("robots.txt cache %s is locked by another process; old entries are deleted later", self.path)

    def _connect(self) -> sqlite3.Connection:
        """Open, check and set up the file; ``_Corrupt`` when it must be replaced."""
        try:
            conn = sqlite3.connect(self.path, timeout=OPEN_BUSY_SECONDS, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StorageUnavailable(f"{self.url}: {exc}") from exc
        try:
            check = conn.execute("PRAGMA quick_check").fetchall()
            if check != [("ok",)]:
                raise _Corrupt("quick_check: " + "; ".join(str(row[0]) for row in check[:3]))
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version not in (0, 1, SCHEMA_VERSION):
                raise _Corrupt(f"schema version {version}, this version of scrapy-rfc9309 reads {SCHEMA_VERSION}")
            if conn.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            if version != SCHEMA_VERSION:
                conn.execute("BEGIN IMMEDIATE")
                if version == 1:  # the layout before compact entries: its entries are fetched again
                    conn.execute("DROP TABLE IF EXISTS robots")
                    logger.info("robots.txt cache %s: emptied, it was in an older layout", self.path)
                for statement in _SCHEMA:
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:  # locked, read-only, I/O: the file may be fine
            conn.close()
            if _locked(exc):
                raise _Locked(f"{self.url}: locked by another process ({exc})") from exc
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
        for conn in (self._conn, self._reader):
            if conn is not None:
                conn.close()
        self._conn = self._reader = None
        self._ready = False

    def _ensure_open(self) -> None:
        """Finish an open that met another process's lock (``StorageBusy`` while it holds)."""
        if self._reopen:
            self._open()
            self._reopen = False

    def _get(self, origin: str) -> entries.Read:
        """The origin's row, checked (told about on the loop's thread: :func:`.entries.report`)."""
        self._ensure_open()
        conn = self._reader or self._connection()
        row = self._execute(
            "SELECT e.entry, b.body FROM entries e LEFT JOIN bodies b ON b.digest = e.digest WHERE e.origin = ?",
            (origin,),
            conn,
        ).fetchone()
        if row is None:
            return entries.Read(None)
        data, body = row
        return entries.check(origin, data, body, time.time())

    def _apply(self, writes: dict[str, RobotsEntry]) -> None:
        """Write a batch in one transaction (``_Locked`` when another process holds the lock)."""
        self._ensure_open()
        rows = []
        bodies: dict[bytes, bytes] = {}
        now = time.time()
        for origin, entry in writes.items():
            data, digest = entries.encode(origin, entry)
            if digest is not None and digest not in bodies:
                bodies[digest] = entries.compress(entry.body)
            rows.append((origin, digest, now + entry.retention(now), data))
        conn = self._connection()
        try:
            conn.execute("BEGIN IMMEDIATE")
            if bodies:
                conn.executemany("INSERT OR REPLACE INTO bodies (digest, body) VALUES (?, ?)", bodies.items())
            conn.executemany(
                "INSERT OR REPLACE INTO entries (origin, digest, keep_until, entry) VALUES (?, ?, ?, ?)", rows
            )
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.rollback()
            if _locked(exc):
                raise _Locked(f"{self.url}: locked by another process ({exc})") from exc
            raise StorageUnavailable(f"{self.url}: {type(exc).__name__}: {exc}") from exc
        self._changed_elsewhere()

    def _changed_elsewhere(self) -> None:
        """Note (for the loop to drop the index) once another connection has
        written to the file: the writer's ``PRAGMA data_version`` moved."""
        version = self._execute("PRAGMA data_version").fetchone()[0]
        if self._data_version is not None and version != self._data_version:
            self._written_elsewhere = True
        self._data_version = version

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StorageUnavailable(f"{self.url} is not open")
        return self._conn

    def _execute(self, sql: str, params: tuple = (), conn: sqlite3.Connection | None = None) -> sqlite3.Cursor:
        conn = conn or self._connection()
        try:
            return conn.execute(sql, params)
        except sqlite3.Error as exc:
            if _locked(exc):
                raise _Locked(f"{self.url}: locked by another process ({exc})") from exc
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

    async def _call(self, fn: Callable[..., T], *args: Any, reading: bool = False) -> T:
        loop = self._loop()
        if loop is None or self._executor is None:
            if loop is not None:
                raise StorageUnavailable(f"{self.url} is not open")
            return fn(*args)
        executor = self._read_executor if reading and self._ready else self._executor
        return await loop.run_in_executor(executor, fn, *args)
