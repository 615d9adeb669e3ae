"""The audit file: its name (feed-style placeholders) and the thread that
writes its records and keeps each robots.txt body once."""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
import threading
import time
from collections import deque
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)

#: the directory, beside the audit file, that keeps each robots.txt body once
BODIES_DIR = "robots-bodies"
#: the writer thread writes and flushes at least this often (a crash loses at most this)
FLUSH_SECONDS = 1.0


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


class Writer:
    """A thread that writes queued records (and bodies) to the file.

    The reactor only appends to a deque (thread-safe, no lock); the thread
    wakes every :data:`FLUSH_SECONDS` (or when told to close), writes every
    record queued so far as JSON Lines and flushes the file."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.bodies = bodies_dir(path)
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        os.makedirs(self.bodies, exist_ok=True)
        self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by the thread
        self._queue: deque[Any] = deque()
        self._wake = threading.Event()
        self._stop = False
        self.written = 0
        #: CPU seconds the writer thread used (known once it ended)
        self.cpu = 0.0
        self.failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="rfc9309-audit", daemon=True)
        self._thread.start()

    def put(self, item: Any) -> None:
        self._queue.append(item)

    def close(self, timeout: float = 30.0) -> None:
        self._stop = True
        self._wake.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            while not self._stop:
                self._wake.wait(FLUSH_SECONDS)
                self._drain()
            self._drain()
        except BaseException as exc:  # disk full, permissions ...: said once, at ERROR
            self.failed = exc
            logger.error("RFC9309_AUDIT: cannot write the audit trail %s: %s", self.path, exc)
        finally:
            self._file.close()
            self.cpu = time.thread_time()

    def _drain(self) -> None:
        queue = self._queue
        lines: list[str] = []
        dumps = json.dumps
        while queue:
            item = queue.popleft()
            if isinstance(item, tuple):  # (sha256, body)
                self._keep_body(*item)
            else:
                lines.append(dumps(item, ensure_ascii=False, separators=(",", ":")))
        if lines:
            self._file.write("\n".join(lines) + "\n")
            self._file.flush()
            self.written += len(lines)

    def _keep_body(self, sha256: str, body: bytes) -> None:
        target = os.path.join(self.bodies, sha256)
        if os.path.exists(target):
            return
        fd, temporary = tempfile.mkstemp(dir=self.bodies, prefix=".tmp-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(body)
        os.replace(temporary, target)


# -- the recorder -------------------------------------------------------------------------------
