"""Fixtures for crawl tests: loopback servers that stop when the test ends."""

from __future__ import annotations

import pytest

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
