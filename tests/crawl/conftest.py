"""Fixtures for crawl tests: loopback servers (and a Redis server) that stop when the test ends."""

from __future__ import annotations

import pytest

from .accounting import Watch
from .redisd import RedisServer, require_redis
from .servers import Server


@pytest.fixture
def servers():
    """``servers("127.0.0.2")`` starts a :class:`servers.Server` on that host
    (ephemeral port); all are stopped after the test."""
    made: list[Server] = []

    def make(host: str = "127.0.0.1") -> Server:
        server = Server(host)
        made.append(server)
        return server

    yield make
    for server in made:
        server.stop()


@pytest.fixture
def redis_server(tmp_path):
    """A real ``redis-server`` of the test's own (skipped, or failed under CI, without one)."""
    require_redis()
    server = RedisServer(tmp_path / "redis")
    yield server
    server.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """Every crawl a test makes in this process must have stats that add up
    (tests/crawl/accounting.py): checked once the test's own body is over."""
    with Watch() as watch:
        result = yield
    watch.assert_added_up()
    return result
