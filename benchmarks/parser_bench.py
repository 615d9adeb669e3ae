"""Parser and matcher measurements on the shared corpora, for every peer in one run.

* parse: every file of ``corpus/robots`` (4,231 real files), time per file;
* match: every URL of ``corpus/bench/links`` against its own site's file from
  ``corpus/bench/robotfiles``, time per call (files parsed outside the timing);
* memory: bytes retained by all parsed ``corpus/robots`` files (tracemalloc);
* agreement: the share of match answers equal to Google's parser.

Each measurement is repeated ``rounds`` times, the peers taking turns within
each round, and the median kept; a ratio against Protego is the median of the
ratios of the two peers' times in the same round, because the machines are
shared and their speed drifts.
"""

from __future__ import annotations

import gc
import statistics
import time
import tracemalloc
from collections.abc import Callable
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


def parse_runner(peer: Peer, files: list[tuple[bytes, str]]) -> tuple[Callable[[], None], int]:
    """One round of parsing every file (garbage collector on: its cost is real),
    and the number of files."""
    parse = peer.parse

    def run() -> None:
        for b, t in files:
            parse(b, t)

    return run, len(files)


def match_runner(peer: Peer, sites: list) -> tuple[Callable[[], None], int]:
    """One round of ``allowed`` calls, files parsed beforehand, and the
    number of calls (the URLs of the files this peer could parse).

    The runner is called once here, so that any lazy per-agent compilation
    is paid outside the timed rounds: the rounds measure the steady state
    of a long crawl (the first answer has its own measurement).
    """
    parsed = []
    for b, t, urls in sites:
        try:
            parsed.append((peer.parse(b, t), urls))
        except Exception:
            continue
    allowed = peer.allowed

    def run() -> None:
        for robots, urls in parsed:
            for url in urls:
                try:
                    allowed(robots, url, TOKEN)
                except Exception:
                    pass

    run()
    return run, sum(len(urls) for _, urls in parsed)


def first_check_runner(peer: Peer, sites: list) -> tuple[Callable[[], None], int]:
    """One round of parse plus the first answer, per file: what a crawl pays
    once per origin (includes any lazy compilation); and the number of files."""
    allowed, parse = peer.allowed, peer.parse
    firsts = [(b, t, urls[0]) for b, t, urls in sites if urls]

    def run() -> None:
        for b, t, url in firsts:
            try:
                allowed(parse(b, t), url, TOKEN)
            except Exception:
                pass

    return run, len(firsts)


def interleaved(runners: dict[str, Callable[[], None]], rounds: int) -> dict[str, list[float]]:
    """CPU seconds of each runner in each round, the runners taking turns
    within a round.  The machines are shared and their speed drifts over
    seconds; taking turns puts every peer under the same drift, so the
    ratio of two peers in one round is far steadier than their times."""
    times: dict[str, list[float]] = {name: [] for name in runners}
    for _ in range(rounds):
        for name, run in runners.items():
            gc.collect()
            start = time.process_time()
            run()
            times[name].append(time.process_time() - start)
    return times


def median_ratio(slower: list[float], faster: list[float]) -> float:
    """Median over rounds of ``slower / faster`` measured in the same round."""
    return statistics.median(s / f for s, f in zip(slower, faster))


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
