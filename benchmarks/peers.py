"""Uniform adapters around the robots.txt parsers we measure against.

Each adapter has ``parse(body_bytes, body_text) -> object`` and
``allowed(obj, url, token) -> bool``.  Peers get the text already decoded
(outside the timed region, which favours them); this project gets bytes, so
its decoding is inside its time.  A peer that is not installed is skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple


class Peer(NamedTuple):
    name: str
    parse: Callable[[bytes, str], object]
    allowed: Callable[[object, str, str], bool]


def _ours() -> Peer:
    from scrapy_rfc9309 import parse

    return Peer("scrapy-rfc9309", lambda b, t: parse(b), lambda r, url, tok: r.can_fetch(url, tok))


def _protego() -> Peer:
    from protego import Protego

    return Peer("Protego", lambda b, t: Protego.parse(t), lambda r, url, tok: r.can_fetch(url, tok))


def _urllib() -> Peer:
    from urllib.robotparser import RobotFileParser

    def parse(b: bytes, t: str) -> RobotFileParser:
        rp = RobotFileParser()
        rp.parse(t.splitlines())
        return rp

    return Peer("urllib.robotparser", parse, lambda r, url, tok: r.can_fetch(tok, url))


def _rerp() -> Peer:
    from robotexclusionrulesparser import RobotExclusionRulesParser

    def parse(b: bytes, t: str) -> RobotExclusionRulesParser:
        rp = RobotExclusionRulesParser()
        rp.parse(t)
        return rp

    return Peer("robotexclusionrulesparser", parse, lambda r, url, tok: r.is_allowed(tok, url))


def _robotspy() -> Peer:
    import robots

    return Peer("robotspy", lambda b, t: robots.RobotsParser.from_string(t), lambda r, url, tok: r.can_fetch(tok, url))


def _reppy() -> Peer:
    from reppy.robots import Robots

    return Peer("reppy", lambda b, t: Robots.parse("http://x/robots.txt", t), lambda r, url, tok: r.allowed(url, tok))


def _fastrobots() -> Peer:
    import fastrobots  # type: ignore[import-not-found]

    return Peer("fastrobots", lambda b, t: fastrobots.parse(t), lambda r, url, tok: r.can_fetch(tok, url))


def available() -> tuple[list[Peer], list[str]]:
    """The peers that import here, and the names of those that do not."""
    peers, missing = [], []
    for make, name in (
        (_ours, "scrapy-rfc9309"),
        (_protego, "Protego"),
        (_urllib, "urllib.robotparser"),
        (_rerp, "robotexclusionrulesparser"),
        (_robotspy, "robotspy"),
        (_reppy, "reppy"),
        (_fastrobots, "fastrobots"),
    ):
        try:
            peers.append(make())
        except Exception:  # not installed, or fails to import on this Python
            missing.append(name)
    return peers, missing
