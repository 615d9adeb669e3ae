"""Parser and matcher measurements on the shared corpora, for every peer in one run.

* parse: every file of ``corpus/robots`` (4,231 real files), time per file;
* match: every URL of ``corpus/bench/links`` against its own site's file from
  ``corpus/bench/robotfiles``, time per call (files parsed outside the timing);
* memory: bytes retained by all parsed ``corpus/robots`` files (tracemalloc);
* agreement: the share of match answers equal to Google's parser.

Each measurement is repeated ``rounds`` times and the median kept; ratios are
against Protego measured in the same run, because the machines are shared.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from pathlib import Path
from typing import Any

from peers import Peer

TOKEN = "ExampleBot"


def load_robots(corpus: Path) -> list[tuple[bytes, str]]:
    files = sorted((corpus / "robots").iterdir())
    return [(b, b.decode("utf-8", "replace")) for b in (f.read_bytes() for f in files)]


def load_match_set(corpus: Path) -> list[tuple[bytes, str, list[str]]]:
    bench = corpus / "bench"
    sites = []
    for links in sorted((bench / "links").iterdir()):
        robots = bench / "robotfiles" / links.name
        if not robots.exists():
            continue
        body = robots.read_bytes()
        urls = [u.strip() for u in links.read_text("utf-8", "replace").splitlines() if u.strip()]
        sites.append((body, body.decode("utf-8", "replace"), urls))
    return sites


def _median_time(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return statistics.median(times)


def measure_parse(peer: Peer, files: list[tuple[bytes, str]], rounds: int) -> float:
    """Median seconds per file (garbage collector on: its cost is real)."""
    parse = peer.parse

    def run() -> None:
        for b, t in files:
            parse(b, t)

    gc.collect()
    return _median_time(run, rounds) / len(files)


def measure_match(peer: Peer, sites: list, rounds: int) -> tuple[float, int]:
    """Median seconds per ``allowed`` call, files parsed beforehand.

    The first round also pays any lazy per-agent compilation; later rounds
    do not, so the median is the steady state of a long crawl.
    """
    parsed = []
    for b, t, urls in sites:
        try:
            parsed.append((peer.parse(b, t), urls))
        except Exception:
            continue
    allowed = peer.allowed
    calls = sum(len(urls) for _, urls in parsed)

    def run() -> None:
        for robots, urls in parsed:
            for url in urls:
                try:
                    allowed(robots, url, TOKEN)
                except Exception:
                    pass

    gc.collect()
    return _median_time(run, rounds) / calls, calls


def measure_first_check(peer: Peer, sites: list, rounds: int) -> float:
    """Median seconds for parse plus the first answer, per file: what a crawl
    pays once per origin (includes any lazy compilation)."""
    allowed, parse = peer.allowed, peer.parse
    firsts = [(b, t, urls[0]) for b, t, urls in sites if urls]

    def run() -> None:
        for b, t, url in firsts:
            try:
                allowed(parse(b, t), url, TOKEN)
            except Exception:
                pass

    gc.collect()
    return _median_time(run, rounds) / len(firsts)


def measure_memory(peer: Peer, files: list[tuple[bytes, str]]) -> int:
    """Bytes still allocated while every parsed file is kept alive."""
    gc.collect()
    tracemalloc.start()
    kept: list[Any] = [peer.parse(b, t) for b, t in files]
    gc.collect()
    current, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del kept
    return current


def google_answers(sites: list) -> list[list[bool]] | None:
    try:
        from jwm.robotstxt import googlebot
    except ImportError:
        return None
    out = []
    for b, _, urls in sites:
        out.append([googlebot.RobotsMatcher().OneAgentAllowedByRobots(b, TOKEN, url) for url in urls])
    return out


def agreement(peer: Peer, sites: list, google: list[list[bool]]) -> float:
    same = total = 0
    for (b, t, urls), answers in zip(sites, google):
        try:
            robots = peer.parse(b, t)
        except Exception:
            total += len(urls)
            continue
        for url, g in zip(urls, answers):
            try:
                mine = bool(peer.allowed(robots, url, TOKEN))
            except Exception:
                mine = None
            same += mine == g
            total += 1
    return same / total if total else 0.0
