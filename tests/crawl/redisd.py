"""A real ``redis-server`` for the tests: its own loopback port and temp dir.

``.ci/run`` installs the Debian package when it is missing.  Without
``redis-server`` (or the ``redis`` Python package) the Redis tests fail under
CI (``CI=true``) and are skipped, with the reason, elsewhere.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

#: seconds redis-server may take to answer PING after it was started
START_TIMEOUT = 10.0


def require_redis() -> None:
    """Skip (locally) or fail (under CI) when Redis cannot be used."""
    missing = []
    if shutil.which("redis-server") is None:
        missing.append("redis-server (apt-get install redis-server)")
    try:
        import redis  # noqa: F401
    except ImportError:
        missing.append("the redis package (pip install -e '.[test,redis]')")
    if not missing:
        return
    message = "Redis tests need " + " and ".join(missing)
    if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
        pytest.fail(message + "; .ci/run installs both", pytrace=False)
    pytest.skip(message)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _ping(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


class RedisServer:
    """One redis-server process; ``stop()`` (or ``kill()``) ends it.

    ``persistent=True``: an append-only file fsynced on every write, so that
    ``start()`` after ``kill()`` brings the same data back on the same port
    (what a restarted server of a real deployment keeps)."""

    def __init__(self, workdir: Path, persistent: bool = False) -> None:
        workdir.mkdir(parents=True, exist_ok=True)
        self.workdir = workdir
        self.persistent = persistent
        self.port = _free_port()
        self.log = workdir / "redis.log"
        self._proc: subprocess.Popen | None = None
        self.start()

    def start(self) -> None:
        durability = ["--appendonly", "yes", "--appendfsync", "always"] if self.persistent else ["--appendonly", "no"]
        self._proc = subprocess.Popen(
            [
                "redis-server",
                "--port", str(self.port),
                "--bind", "127.0.0.1",
                "--save", "",
                *durability,
                "--dir", str(self.workdir),
                "--logfile", str(self.log),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + START_TIMEOUT
        while not _ping(self.port):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.kill()
                raise RuntimeError(f"redis-server did not start on port {self.port}; see {self.log}")
            time.sleep(0.02)

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self):
        """A synchronous client, for the test's own look at the keys."""
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, db=0, socket_timeout=5)

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def kill(self) -> None:
        """SIGKILL: the server vanishes as in a crash."""
        if self._proc is None:
            return
        if self._proc.poll() is None:
            self._proc.kill()
        self._proc.wait(10)

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)
