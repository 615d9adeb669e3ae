"""The plugin's timers run on the loop the crawl has: the asyncio reactor,
another Twisted reactor (run this file with ``--reactor=default``: epoll's), or
asyncio alone (Scrapy 2.15+, ``TWISTED_REACTOR_ENABLED = False``; run this
file with ``-p no:twisted --reactor=none``, see tests/conftest.py).

Without a reactor, importing ``twisted.internet.reactor`` raises ImportError:
a timer taken from the reactor fails in a ``spider_opened`` handler ("Error
caught on signal handler") and never runs; a sleep taken from it fails the
request that waits.  Here every periodic task and sleep of the plugin is
seen to run, and nothing is logged at ERROR.
"""

from __future__ import annotations

import json
import logging

import pytest
import pytest_twisted

from scrapy_rfc9309 import compat, gate

from .command_runner import scrapy_crawl
from .harness import check_accounting, crawl
from .servers import Reply, robots


def _errors(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or "ImportError" in r.getMessage()]


@pytest_twisted.ensureDeferred
async def test_every_timer_runs_and_no_signal_handler_fails(servers, caplog, monkeypatch, tmp_path):
    """The gate's Crawl-delay timers, its sweeper of released requests and the
    audit trail's flush timer tick; the Crawl-delay floor, the SQLite store and
    the audit trail (closed in a worker thread) work; the crawl ends with no error."""
    turns: list[object] = []
    swept: list[object] = []
    turn, sweep = gate.GateScheduler._turn, gate.GateScheduler._sweep

    def counting_turn(self, key, slot):
        turns.append(key)
        turn(self, key, slot)

    def counting_sweep(self):
        swept.append(self)
        sweep(self)

    monkeypatch.setattr(gate.GateScheduler, "_turn", counting_turn)
    monkeypatch.setattr(gate.GateScheduler, "_sweep", counting_sweep)
    monkeypatch.setattr(gate, "UNSEEN_SECONDS", 0.1)
    site = servers("127.0.0.2")
    site.routes["/robots.txt"] = robots("User-agent: *\nCrawl-delay: 0.3\nDisallow: /private\n")
    site.routes["/p/3"] = Reply(200, "slow", {"Content-Type": "text/html"}, delay=0.5)  # tracked that long: swept
    trail = tmp_path / "audit.jsonl"
    settings = {
        "ADDONS": {"scrapy_rfc9309.Addon": 0},
        "DOWNLOADER_MIDDLEWARES": {},
        "RFC9309_STORAGE": f"sqlite://{tmp_path / 'robots.sqlite'}",
        "RFC9309_AUDIT": str(trail),
    }
    caplog.set_level(logging.INFO)
    result = await crawl([site.url(f"/p/{i}") for i in range(4)] + [site.url("/private")], settings)

    assert _errors(caplog) == []
    assert [result.outcome(site.url(f"/p/{i}")).status for i in range(4)] == [200] * 4
    assert result.outcome(site.url("/private")).error == "IgnoreRequest"
    check_accounting(result)
    # four pages 0.3 s apart: about a second of crawl; the gate's timer let out the last three
    starts = sorted(hit.at for hit in site.page_hits())
    assert min(b - a for a, b in zip(starts, starts[1:])) >= 0.3 - 0.02, starts
    assert len(turns) >= 3, len(turns)
    assert len(swept) >= 2, len(swept)
    assert result.stat("crawl_delay/origins") == 1
    records = [json.loads(line) for line in trail.read_text().splitlines()]
    assert records and records[-1]["type"] == "closed", records[-1:]


@pytest_twisted.ensureDeferred
async def test_a_background_task_cancelled_ends_quietly_and_any_other_failure_is_kept():
    """A task the plugin runs in the background (a cluster turn's wait, a note to the
    store) and cancels, or that the loop cancels at its end (without a reactor, at the
    end of every crawl), ends without a failure: before, its CancelledError stayed in
    the Deferred, printed as "Unhandled error in Deferred" with a traceback when it was
    collected, at the end of the crawl.  Any other failure is still the Deferred's."""

    async def waiting() -> None:
        await compat.sleep(30)

    async def failing() -> None:
        await compat.sleep(0)
        raise ValueError("a bug")

    task = compat.spawn(waiting())
    task.cancel()
    assert await task is None
    with pytest.raises(ValueError, match="a bug"):
        await compat.spawn(failing())


@pytest_twisted.ensureDeferred
async def test_sleeps_of_wait_mode_and_steps_of_a_large_file_run(servers, caplog):
    """An origin in "wait" mode (retries after a sleep) and an origin with a
    robots.txt parsed in steps (a turn of the loop between them): every
    request is answered, none fails with an error."""
    waiting, large = servers("127.0.0.2"), servers("127.0.0.3")
    waiting.routes["/robots.txt"] = [Reply(503), robots("User-agent: *\nDisallow: /private\n")]
    body = "User-agent: *\n" + "".join(f"Disallow: /d{i}/*/x$\n" for i in range(20_000)) + "Disallow: /private\n"
    large.routes["/robots.txt"] = robots(body)
    plan = [waiting.url("/a"), waiting.url("/private"), large.url("/a"), large.url("/private")]
    caplog.set_level(logging.INFO)
    result = await crawl(plan, {"RFC9309_UNREACHABLE": "wait:10"})

    assert _errors(caplog) == []
    assert result.stat("requests/errors") == 0
    for site in (waiting, large):
        assert result.outcome(site.url("/a")).status == 200
        assert result.outcome(site.url("/private")).message.startswith("Forbidden by robots.txt: disallowed")
    assert waiting.count("/robots.txt") == 2
    assert result.stat("parse/stepped") == 1
    check_accounting(result)


def test_the_redis_store_on_another_reactor_is_refused_at_start_up(servers, tmp_path):
    """The Redis store runs on ``redis.asyncio``: on a Twisted reactor that is
    not asyncio's (epoll's here, in a ``scrapy crawl`` of its own) the crawl
    stops before its first request with one ERROR line saying what to set,
    and exits with status 1.  (No Redis server is needed: nothing connects.)"""
    site = servers("127.0.0.2")
    process = scrapy_crawl(
        tmp_path,
        [site.url("/page")],
        "-s",
        "TWISTED_REACTOR=twisted.internet.epollreactor.EPollReactor",
        "-s",
        "RFC9309_STORAGE=redis://user:secret@127.0.0.1:1/0",
    )
    errors = [line for line in process.stderr.splitlines() if "] ERROR: " in line]
    assert len(errors) == 1, process.stderr
    assert "the Redis store needs asyncio" in errors[0], errors
    assert "runs on twisted.internet.epollreactor.EPollReactor" in errors[0], errors
    assert "set TWISTED_REACTOR = 'twisted.internet.asyncioreactor.AsyncioSelectorReactor'" in errors[0], errors
    assert "secret" not in process.stderr
    assert "'finish_reason': 'rfc9309_storage_unavailable'" in process.stderr
    assert process.returncode == 1
    assert site.paths() == []  # neither robots.txt nor the page
