"""scrapy-redis worker processes and what they did, for test_scrapy_redis_cluster.py.

:class:`Cluster` runs ``scrapy_redis_worker.py`` processes against one
``redis-server``, starts them together, and stops them with SIGTERM (Scrapy's
graceful stop, as an operator stops scrapy-redis workers: they never close by
themselves).  :func:`push` feeds start URLs the way scrapy-redis reads them
(JSON messages on a Redis list).  :class:`PersistentRedis` is a
``redis-server`` that keeps its data (append-only file, fsync on every write)
and can be killed and started again on the same port.

Everything is bounded: every wait has a deadline, and a worker still running
when the cluster is closed is killed.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pytest

from .accounting import read_report
from .redisd import RedisServer, require_redis

WORKER = Path(__file__).with_name("scrapy_redis_worker.py")
#: the spider's name: scrapy-redis's keys are cluster:start_urls, cluster:requests, cluster:dupefilter
SPIDER = "cluster"
START_URLS = f"{SPIDER}:start_urls"
QUEUE = f"{SPIDER}:requests"
#: seconds a worker may take to import Scrapy and set its crawl up (3 at once on 2 shared cores)
START_TIMEOUT = 60.0
#: seconds a worker may take to stop after SIGTERM
STOP_TIMEOUT = 30.0


def require_scrapy_redis() -> None:
    """Redis as for every Redis test, and the scrapy-redis package: skip
    without it locally, fail under CI (``pip install -e '.[test]'`` has it)."""
    require_redis()
    try:
        import scrapy_redis  # noqa: F401
    except ImportError:
        message = "scrapy-redis tests need the scrapy-redis package (pip install -e '.[test]')"
        if os.environ.get("CI", "").strip().lower() in ("true", "1", "yes"):
            pytest.fail(message + "; .ci/run installs it", pytrace=False)
        pytest.skip(message)


@dataclass
class Ending:
    """What became of one request, in one worker."""

    url: str
    worker: str
    #: time.monotonic() when the worker took the request up (its first downloader
    #: middleware), or None when it never got there; and when it ended
    taken: float | None
    ended: float
    status: int | None = None
    error: str | None = None
    message: str = ""

    @property
    def waited(self) -> float:
        """Seconds from the downloader middlewares to the end: robots.txt,
        Crawl-delay turns, the download."""
        return self.ended - (self.taken if self.taken is not None else self.ended)


class Worker:
    def __init__(self, name: str, redis_url: str, out: Path, settings: dict[str, Any]) -> None:
        self.name = name
        self.out = out
        self.stderr: TextIO = open(out / f"worker{name}.log", "w", encoding="utf-8")  # noqa: SIM115
        extra = [f"{key}={json.dumps(value)}" for key, value in settings.items()]
        self.proc = subprocess.Popen(
            [sys.executable, str(WORKER), redis_url, name, str(out), *extra],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )

    @property
    def killed(self) -> bool:
        return self.proc.returncode == -signal.SIGKILL

    def wait_ready(self, deadline: float) -> None:
        assert self.proc.stdout is not None
        ready = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))[0]
        line = self.proc.stdout.readline().strip() if ready else ""
        assert line == "ready", f"worker {self.name} did not start; see {self.out}/worker{self.name}.log"

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        """SIGKILL: the worker vanishes, with its Redis connections and leases."""
        os.kill(self.proc.pid, signal.SIGKILL)

    def report(self) -> dict[str, Any]:
        return read_report(self.out / f"worker{self.name}.json")  # its stats add up

    def endings(self) -> list[Ending]:
        path = self.out / f"worker{self.name}.jsonl"
        if not path.exists():
            return []
        lines = path.read_text(encoding="utf-8").splitlines()
        return [Ending(**json.loads(line)) for line in lines if line.endswith("}")]

    def log(self) -> str:
        return (self.out / f"worker{self.name}.log").read_text(encoding="utf-8", errors="replace")


class Cluster:
    """Worker processes on one Redis (use as a context manager)."""

    def __init__(self, redis_url: str, out: Path, count: int = 3, settings: dict[str, Any] | None = None) -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.out = out
        self.workers = [Worker(str(i), redis_url, out, settings or {}) for i in range(1, count + 1)]
        #: time.monotonic() when the workers were told to start
        self.started = 0.0

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        for worker in self.workers:
            if worker.proc.poll() is None:
                worker.proc.kill()
            worker.proc.wait(10)
            worker.stderr.close()

    def start(self) -> None:
        """Wait until every worker is ready, then start them all together."""
        deadline = time.monotonic() + START_TIMEOUT
        for worker in self.workers:
            worker.wait_ready(deadline)
        self.started = time.monotonic()
        for worker in self.workers:
            worker.go()

    def worker(self, name: str) -> Worker:
        return next(w for w in self.workers if w.name == name)

    def endings(self) -> list[Ending]:
        return [ending for worker in self.workers for ending in worker.endings()]

    def wait_until_ended(self, urls: Iterable[str], timeout: float, also: Callable[[], bool] = lambda: True) -> None:
        """Until every URL of ``urls`` has ended in some worker (and ``also()``)."""
        wanted = set(urls)
        deadline = time.monotonic() + timeout
        while True:
            missing = wanted - {ending.url for ending in self.endings()}
            if not missing and also():
                return
            dead = [w.name for w in self.workers if w.proc.poll() is not None and not w.killed]
            assert not dead, f"worker(s) {dead} exited early; see {self.out}"
            assert time.monotonic() < deadline, f"{len(missing)} request(s) never ended, e.g. {sorted(missing)[:3]}"
            time.sleep(0.1)

    def stop(self) -> list[dict[str, Any]]:
        """SIGTERM to every live worker (Scrapy's graceful stop); their reports."""
        live = [w for w in self.workers if w.proc.poll() is None]
        for worker in live:
            worker.proc.send_signal(signal.SIGTERM)
        for worker in live:
            assert worker.proc.wait(STOP_TIMEOUT) == 0, f"worker {worker.name} failed; see {worker.out}"
        return [worker.report() for worker in live]


def push(client: Any, urls: Iterable[str]) -> list[str]:
    """Push start URLs as scrapy-redis's JSON messages; returns them."""
    pushed = list(urls)
    if pushed:
        client.rpush(START_URLS, *[json.dumps({"url": url}) for url in pushed])
    return pushed


def interleave(groups: Iterable[list[str]]) -> list[str]:
    """The first URL of every group, then the second of every group, ..."""
    groups = [list(group) for group in groups]
    return [group[i] for i in range(max(map(len, groups), default=0)) for group in groups if i < len(group)]


class PersistentRedis(RedisServer):
    """A ``redis-server`` that survives being killed: an append-only file,
    fsynced on every write, in its own directory, and the same port each time
    it is started (what a restarted server of a real deployment keeps)."""

    def __init__(self, workdir: Path) -> None:
        super().__init__(workdir, persistent=True)
