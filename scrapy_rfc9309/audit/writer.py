"""The audit file: its name (feed-style placeholders) and the thread that
writes its records and keeps each robots.txt body once."""

from __future__ import annotations

import contextlib
import logging
import os
import re
import stat
import tempfile
import threading
import time
from collections import deque
from datetime import datetime, timezone
from typing import Any

from .chain import Sealer

logger = logging.getLogger(__name__)

#: the directory, beside the audit file, that keeps each robots.txt body once
BODIES_DIR = "robots-bodies"
#: the writer thread writes and flushes at least this often (a crash loses at most this)
FLUSH_SECONDS = 1.0
#: items (records and bodies) queued for the thread at most: a disk that stalls
#: long enough to leave this many behind fails the trail instead of growing the
#: memory without bound (about 550 bytes a record: 50,000 is about 27 MB, and
#: minutes of the fastest crawl; a healthy disk leaves one second's worth)
MAX_PENDING = 50_000


# -- the file ---------------------------------------------------------------------------------
#: characters a placeholder's value may not bring into the path: separators, NUL, controls
_UNSAFE = re.compile(r"[/\\\x00-\x1f\x7f]")


def safe_part(value: Any) -> str:
    """A placeholder's value as one harmless file-name part: separators and
    control characters become ``_``, and a value of dots only (``..``) too,
    so a spider named ``../../../escaped`` cannot leave the directory."""
    text = _UNSAFE.sub("_", str(value))
    if not text.strip("."):
        text = "_" * max(len(text), 1)
    return text


class _Params(dict):
    """Feed-style placeholders: ``%(name)s``, ``%(time)s`` and any spider
    attribute, each made one safe file-name part (:func:`safe_part`)."""

    def __init__(self, spider: Any, started: float) -> None:
        super().__init__()
        self._spider = spider
        self["name"] = safe_part(getattr(spider, "name", "spider"))
        stamp = datetime.fromtimestamp(started, timezone.utc).replace(microsecond=0, tzinfo=None)
        self["time"] = stamp.isoformat().replace(":", "-")

    def __missing__(self, key: str) -> Any:
        try:
            value = getattr(self._spider, key)
        except AttributeError:
            raise KeyError(key) from None
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else safe_part(value)


def audit_path(template: str, spider: Any, started: float) -> str:
    """``RFC9309_AUDIT`` with its placeholders filled (``ValueError`` for an
    unknown one, or for a result outside the directory the setting names
    before its first placeholder)."""
    try:
        path = template % _Params(spider, started)
    except KeyError as exc:
        raise ValueError(f"RFC9309_AUDIT={template!r}: unknown placeholder %({exc.args[0]})s") from None
    except (TypeError, ValueError) as exc:
        raise ValueError(f"RFC9309_AUDIT={template!r}: {exc}") from None
    fixed = os.path.dirname(template.split("%(", 1)[0]) if "%(" in template else os.path.dirname(template)
    base = os.path.abspath(fixed or os.curdir)
    if os.path.commonpath([base, os.path.abspath(path)]) != base:
        raise ValueError(f"RFC9309_AUDIT={template!r} gives {path!r}, outside {base}")
    return path


def bodies_dir(audit_file: str) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(audit_file)), BODIES_DIR)


def _end_line(handle: Any) -> None:
    """A file whose last line was cut mid-write (a crawl killed while writing)
    gets its newline, so the next crawl's first record starts a line."""
    status = os.fstat(handle.fileno())
    if not stat.S_ISREG(status.st_mode) or status.st_size == 0:
        return
    try:
        with open(handle.name, "rb") as reader:
            reader.seek(-1, os.SEEK_END)
            last = reader.read(1)
    except OSError:  # not readable: the replay will say so
        return
    if last != b"\n":
        handle.write(b"\n")
        handle.flush()


class TrailBehind(OSError):
    """More than :data:`MAX_PENDING` items wait for the writer thread."""


class Writer:
    """Writes records (and bodies) to the file, each record sealed in the
    trail's chain (:mod:`.chain`) in the order written.

    By default a thread of its own writes: the reactor only appends to a
    deque (thread-safe, no lock); the thread wakes every
    :data:`FLUSH_SECONDS` (or when told to close), writes every record queued
    so far as JSON Lines and flushes the file.  With ``sync`` (``RFC9309_AUDIT``'s)
    there is no thread: :meth:`put` writes and flushes the record before it
    returns, so the caller knows it is in the file (:attr:`error` is set when
    it is not).

    When a write fails (a full disk, a file system gone read-only) the
    writing stops and :attr:`error` says why; so it does when more than
    :data:`MAX_PENDING` items wait.  From then on nothing is queued: every
    record the crawl puts is counted as not written (:attr:`unwritten`).
    ``key``: the HMAC key of the chain (``RFC9309_AUDIT``'s ``key``), never written."""

    def __init__(self, path: str, key: bytes | None = None, sync: bool = False) -> None:
        self.path = path
        self.bodies = bodies_dir(path)
        self.sync = sync
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        os.makedirs(self.bodies, exist_ok=True)
        self._file = open(path, "ab")  # noqa: SIM115 - closed by close() / the thread
        try:
            _end_line(self._file)
        except BaseException:
            self._file.close()
            raise
        self._sealer = Sealer(key)
        self._queue: deque[Any] = deque()
        self._wake = threading.Event()
        self._stop = False
        self.written = 0
        #: CPU seconds spent writing (the thread's; with sync, the callers' time in put)
        self.cpu = 0.0
        #: why the trail cannot be written (set once, by either thread), else None
        self.error: BaseException | None = None
        #: records taken from the queue by the thread and lost with a failed write
        self._lost = 0
        #: records refused by put() once the trail had failed
        self._refused = 0
        #: records of the write in progress (a write that never returns keeps them)
        self._writing = 0
        self._thread: threading.Thread | None = None
        if not sync:
            self._thread = threading.Thread(target=self._run, name="rfc9309-audit", daemon=True)
            self._thread.start()

    def describe(self) -> dict[str, Any]:
        """The chain's fields of the crawl's first record (which chain, which key)."""
        return self._sealer.describe()

    @property
    def last_digest(self) -> str:
        """The digest of the last record written (after :meth:`close`: the crawl's final digest)."""
        return self._sealer.last.decode("ascii")

    def put(self, item: Any) -> None:
        """Queue a record (a dict) or a body (``(sha256, bytes)``); with
        ``sync``, write it now."""
        if self.error is None:
            if self.sync:
                self._write_now(item)
                return
            if len(self._queue) < MAX_PENDING:
                self._queue.append(item)
                return
            self.error = TrailBehind(
                f"{MAX_PENDING:,} records and bodies wait to be written: the disk does not keep up"
            )
            self._wake.set()
        if not isinstance(item, tuple):
            self._refused += 1

    @property
    def unwritten(self) -> int:
        """Records not written (bodies not counted): final once :meth:`close` returned."""
        while True:
            try:
                queued = sum(1 for item in list(self._queue) if not isinstance(item, tuple))
            except RuntimeError:  # the thread took one meanwhile ("deque mutated during iteration")
                continue
            return self._lost + self._refused + self._writing + queued

    def close(self, timeout: float = 30.0) -> None:
        if self._thread is None:
            try:
                self._file.close()
            except OSError as exc:  # (every write was flushed: nothing should be left)
                if self.error is None:
                    self.error = exc
            return
        self._stop = True
        self._wake.set()
        self._thread.join(timeout)
        if self._thread.is_alive() and self.error is None:  # a write that never returns (a hung mount)
            self.error = TimeoutError(f"the writer thread did not finish within {timeout:g} s")

    def _write_now(self, item: Any) -> None:
        started = time.thread_time()
        try:
            self._write([item])
        except BaseException as exc:  # disk full, permissions ...: the recorder stops the crawl
            self.error = exc
        finally:
            self.cpu += time.thread_time() - started

    def _run(self) -> None:
        try:
            while not self._stop and self.error is None:
                self._wake.wait(FLUSH_SECONDS)
                self._drain()
            if self.error is None:
                self._drain()
        except BaseException as exc:  # disk full, permissions ...: the recorder stops the crawl
            if self.error is None:
                self.error = exc
        finally:
            try:
                self._file.close()
            except OSError:  # the same full disk, flushing what the failed write left buffered
                pass
            self.cpu = time.thread_time()

    def _drain(self) -> None:
        queue = self._queue
        items = []
        while queue and self.error is None:
            items.append(queue.popleft())
        if items:
            self._write(items)

    def _write(self, items: list[Any]) -> None:
        """Keep the bodies, then seal the records in order and write them in
        one write (and flush)."""
        lines: list[bytes] = []
        seal = self._sealer.seal
        try:
            for item in items:
                if isinstance(item, tuple):  # (sha256, body): kept before the records that name it
                    self._keep_body(*item)
                else:
                    lines.append(seal(item))
            if lines:
                self._writing = len(lines)
                self._file.write(b"".join(lines))
                self._file.flush()
                self.written += len(lines)
                self._writing = 0
        except BaseException:
            self._lost += sum(1 for item in items if not isinstance(item, tuple))
            self._writing = 0
            raise

    def _keep_body(self, sha256: str, body: bytes) -> None:
        target = os.path.join(self.bodies, sha256)
        if os.path.exists(target):
            return
        fd, temporary = tempfile.mkstemp(dir=self.bodies, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(body)
            os.replace(temporary, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
